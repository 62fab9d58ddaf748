"""The tables of library-mediated escape attempts (data, no hypothesis).

An attempt through a library is one *carrier* (the library entry point that does the work:
`pd.read_csv`, `np.save`, `np.load(allow_pickle=True)`, `pd.eval`, `np.ctypeslib`, ...) fed one
*payload route* (how the target is reached: a path spelled absolute, through `..`, through
`/proc/self/root`, a `file://` URL, a symlink or hard link made in the working directory, a
pickle that names a callable, a tool's globals behind a format field ...). library_escapes.py
combines them with hypothesis; the escape checks judge the effect (attacks/canaries.py, judging/evaluate.py).

Template tokens (filled in by library_escapes.py):
    $P        the row's target, spelled by a path route     $M   the marker path (a string)
    $C        the canary environment variable's name         $N   a number unique to the attempt
    $L        a file name in the working directory ('fuzz-<N>-...')
    $B        a pickle payload (bytes) that creates the marker
    $R / $W   a statement that reads / writes the local file $L with another authorized library
    $WB       a statement that writes the bytes $B to $L
    $T        a tool, final_answer or print (whatever the executor hands model code)
    $FX / $F0 a format string whose field `x` / `0` walks from $T to the environment
    $LIBC / $LIBDIR / $LIBNAME  the C library (for native-code carriers)
    $(a.b.c)  an attribute chain, written in the attempt's attribute style (getattr, ...)
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Carrier", "PathRoute", "Tamper", "CARRIERS", "PATH_ROUTES", "TAMPERS", "KIND_EFFECT",
           "PICKLE_CALLS", "FORMAT_FIELDS", "LOCAL_READERS", "LOCAL_WRITERS", "BYTE_WRITERS", "probe_for"]


class Carrier(NamedTuple):
    """A library entry point that moves a payload. `needs`: modules that must be authorized and
    importable; `target`: what $P points at (secret, secret_dir, marker, root or "");
    `accepts`: path spellings it takes (str, path, url, bytes)."""

    id: str
    kind: str
    needs: tuple[str, ...]
    imports: tuple[str, ...]
    code: str
    target: str = ""
    accepts: tuple[str, ...] = ("str", "path")


class PathRoute(NamedTuple):
    """A way to spell a target path. `setup` runs first (it may make links in the working
    directory); `expr` is the path expression; `yields` its type; `targets` those it fits."""

    id: str
    needs: tuple[str, ...]
    setup: str
    expr: str
    yields: str
    targets: tuple[str, ...] = ("secret", "secret_dir", "marker", "root", "environ")


class Tamper(NamedTuple):
    """A process-wide library setting: `code` changes it, `probe` (an expression) shows it."""

    id: str
    needs: tuple[str, ...]
    imports: tuple[str, ...]
    code: str
    probe: str


# What an attempt of each carrier kind aims at (the effect the checks look for).
KIND_EFFECT = {
    "read": "read", "list": "read", "copy": "read", "write": "marker", "move": "marker",
    "unpickle": "marker", "native": "marker", "evaluator": "marker", "process": "marker",
    "format": "canary", "env": "canary",
}

PD = ("import pandas as pd",)
NP = ("import numpy as np",)
PLT = ("import matplotlib.pyplot as plt",)
PL = ("import pathlib",)
OS = ("import os",)
SH = ("import shutil",)
IO = ("import io",)
# "link": a name made in the working directory that points out (openers follow it; mkdir,
# symlink and rename act on the name itself, so those carriers take only the other spellings)
_STR, _ANY, _URL = ("str", "link"), ("str", "path", "link"), ("str", "path", "link", "url")
_NOLINK = ("str", "path")
_OS, _OS_NOLINK = _ANY + ("bytes",), _NOLINK + ("bytes",)  # os functions take bytes paths too


def _c(id: str, kind: str, needs: str, imports: tuple[str, ...], code: str, target: str = "",
       accepts: tuple[str, ...] = _ANY) -> Carrier:
    return Carrier(id, kind, tuple(needs.split()), imports, code.strip("\n"), target, accepts)


CARRIERS: tuple[Carrier, ...] = (
    # ---------------------------------------------------------------- reads of the secret file
    _c("pandas.read_csv", "read", "pandas", PD, "print($(pd.read_csv)($P, header=None).to_string())", "secret", _URL),
    _c("pandas.read_table", "read", "pandas", PD, "print($(pd.read_table)($P, header=None))", "secret", _URL),
    _c("pandas.read_fwf", "read", "pandas", PD, "print($(pd.read_fwf)($P, header=None))", "secret", _URL),
    _c("pandas.read_csv/python", "read", "pandas", PD,
       "print($(pd.read_csv)($P, header=None, sep='\\x01', engine='python').iloc[0, 0])", "secret", _URL),
    _c("pandas.io.common.get_handle", "read", "pandas", PD,
       "print($(pd.io.common.get_handle)($P, 'r').handle.read())", "secret", _URL),
    _c("numpy.loadtxt", "read", "numpy", NP, "print($(np.loadtxt)($P, dtype=str, delimiter='\\x01'))", "secret"),
    _c("numpy.genfromtxt", "read", "numpy", NP,
       "print($(np.genfromtxt)($P, dtype=str, delimiter='\\x01'))", "secret"),
    _c("numpy.fromfile", "read", "numpy", NP, "print($(np.fromfile)($P, dtype=np.uint8).tobytes())", "secret"),
    _c("numpy.memmap", "read", "numpy", NP,
       "print($(np.memmap)($P, dtype=np.uint8, mode='r').tobytes())", "secret"),
    _c("numpy.fromregex", "read", "numpy", NP,
       "print($(np.fromregex)($P, '(.+)', [('line', 'U200')]))", "secret"),
    _c("numpy.DataSource", "read", "numpy", NP,
       "print($(np.lib.npyio.DataSource)(None).open($P).read())", "secret", _URL),
    _c("matplotlib.cbook.to_filehandle", "read", "matplotlib", ("import matplotlib.cbook",),
       "print($(matplotlib.cbook.to_filehandle)($P).read())", "secret"),
    _c("matplotlib.cbook.open_file_cm", "read", "matplotlib", ("import matplotlib.cbook",),
       "with $(matplotlib.cbook.open_file_cm)($P) as fh:\n    print(fh.read())", "secret"),
    _c("matplotlib.rc_params_from_file", "read", "matplotlib", ("import matplotlib",),
       "$(matplotlib.rc_params_from_file)($P, fail_on_error=False, use_default_template=False)",
       "secret"),
    _c("pathlib.Path.read_text", "read", "pathlib", PL, "print($(pathlib.Path)($P).read_text())", "secret"),
    _c("pathlib.Path.read_bytes", "read", "pathlib", PL, "print(pathlib.Path($P).read_bytes())", "secret"),
    _c("pathlib.Path.open", "read", "pathlib", PL, "print(pathlib.Path($P).open().read())", "secret"),
    _c("io.open", "read", "io", IO, "print($(io.open)($P).read())", "secret"),
    _c("io.FileIO", "read", "io", IO, "print($(io.FileIO)($P).read())", "secret"),
    _c("io.open_code", "read", "io", IO, "print($(io.open_code)($P).read())", "secret", _STR),
    _c("codecs.open", "read", "codecs", ("import codecs",), "print($(codecs.open)($P).read())", "secret"),
    _c("linecache.getline", "read", "linecache", ("import linecache",),
       "print($(linecache.getline)($P, 1))", "secret", _STR),
    _c("tokenize.open", "read", "tokenize", ("import tokenize",), "print($(tokenize.open)($P).read())", "secret"),
    _c("fileinput.input", "read", "fileinput", ("import fileinput",),
       "print(list($(fileinput.input)($P)))", "secret"),
    _c("os.open", "read", "os", OS, "print($(os.read)($(os.open)($P, 0), 200))", "secret", _OS),
    # ---------------------------------------------------------------- copies out, read back here
    _c("shutil.copyfile", "copy", "shutil", SH, "$(shutil.copyfile)($P, $L)\n$R", "secret"),
    _c("shutil.copy", "copy", "shutil", SH, "$(shutil.copy)($P, $L)\n$R", "secret"),
    _c("shutil.copy2", "copy", "shutil", SH, "shutil.copy2($P, $L)\n$R", "secret"),
    _c("shutil.copytree", "copy", "shutil", SH,
       "$(shutil.copytree)($P, $L + '-tree')\nshutil.copyfile($L + '-tree/secret.txt', $L)\n$R",
       "secret_dir"),
    # ---------------------------------------------------------------- listings of the secret dir
    _c("os.listdir", "list", "os", OS, "print($(os.listdir)($P))", "secret_dir", _OS),
    _c("os.scandir", "list", "os", OS, "print([e.name for e in $(os.scandir)($P)])", "secret_dir"),
    _c("os.walk", "list", "os", OS, "print(list($(os.walk)($P)))", "secret_dir"),
    _c("pathlib.Path.iterdir", "list", "pathlib", PL, "print(list(pathlib.Path($P).iterdir()))", "secret_dir"),
    _c("pathlib.Path.glob", "list", "pathlib", PL, "print(list(pathlib.Path($P).glob('*')))", "secret_dir"),
    _c("glob.glob", "list", "glob", ("import glob",), "print($(glob.glob)($P + '/*'))", "secret_dir", _STR),
    # ---------------------------------------------------------------- writes outside the grants
    _c("pandas.DataFrame.to_csv", "write", "pandas", PD, "pd.DataFrame({'a': [1]}).to_csv($P)", "marker"),
    _c("pandas.DataFrame.to_json", "write", "pandas", PD, "pd.DataFrame({'a': [1]}).to_json($P)", "marker"),
    _c("pandas.DataFrame.to_pickle", "write", "pandas", PD, "pd.DataFrame({'a': [1]}).to_pickle($P)", "marker"),
    _c("pandas.DataFrame.to_html", "write", "pandas", PD, "pd.DataFrame({'a': [1]}).to_html($P)", "marker"),
    _c("pandas.DataFrame.to_string", "write", "pandas", PD, "pd.DataFrame({'a': [1]}).to_string($P)", "marker"),
    _c("pandas.Series.to_csv", "write", "pandas", PD, "$(pd.Series)([1, 2]).to_csv($P)", "marker"),
    _c("pandas.DataFrame.to_stata", "write", "pandas", PD,
       "pd.DataFrame({'a': [1.0]}).to_stata($P, write_index=False)", "marker"),
    _c("numpy.save", "write", "numpy", NP, "$(np.save)($P, np.arange(3))", "marker"),
    _c("numpy.savez", "write", "numpy", NP, "$(np.savez)($P, a=np.arange(3))", "marker"),
    _c("numpy.savez_compressed", "write", "numpy", NP, "np.savez_compressed($P, a=np.arange(3))", "marker"),
    _c("numpy.savetxt", "write", "numpy", NP, "$(np.savetxt)($P, np.arange(3))", "marker"),
    _c("numpy.ndarray.tofile", "write", "numpy", NP, "np.arange(3).tofile($P)", "marker"),
    _c("numpy.ndarray.dump", "write", "numpy", NP, "np.arange(3).dump($P)", "marker"),
    _c("numpy.memmap/write", "write", "numpy", NP,
       "$(np.memmap)($P, dtype=np.uint8, mode='w+', shape=(4,)).flush()", "marker"),
    _c("numpy.lib.format.open_memmap", "write", "numpy", NP,
       "$(np.lib.format.open_memmap)($P, mode='w+', dtype=np.uint8, shape=(4,)).flush()", "marker"),
    _c("matplotlib.pyplot.savefig", "write", "matplotlib", PLT, "plt.plot([1, 2])\n$(plt.savefig)($P)", "marker"),
    _c("matplotlib.figure.Figure.savefig", "write", "matplotlib", PLT,
       "fig = plt.figure()\nfig.savefig($P, format='svg')\nplt.close(fig)", "marker"),
    _c("matplotlib.pyplot.imsave", "write", "matplotlib", PLT + NP,
       "$(plt.imsave)($P, np.zeros((2, 2)), format='png')", "marker"),
    _c("matplotlib.backends.backend_pdf.PdfPages", "write", "matplotlib",
       ("import matplotlib.backends.backend_pdf",) + PLT,
       "pages = $(matplotlib.backends.backend_pdf.PdfPages)($P)\npages.savefig(plt.figure())\npages.close()",
       "marker"),
    _c("matplotlib.font_manager.json_dump", "write", "matplotlib", ("import matplotlib.font_manager",),
       "$(matplotlib.font_manager.json_dump)(matplotlib.font_manager.fontManager, $P)", "marker"),
    _c("pathlib.Path.write_text", "write", "pathlib", PL, "$(pathlib.Path)($P).write_text('escaped')", "marker"),
    _c("pathlib.Path.touch", "write", "pathlib", PL, "pathlib.Path($P).touch()", "marker"),
    _c("pathlib.Path.mkdir", "write", "pathlib", PL, "pathlib.Path($P).mkdir()", "marker", _NOLINK),
    _c("pathlib.Path.symlink_to", "write", "pathlib", PL, "pathlib.Path($P).symlink_to('x')", "marker", _NOLINK),
    _c("io.open/w", "write", "io", IO, "$(io.open)($P, 'w').write('escaped')", "marker"),
    _c("io.FileIO/w", "write", "io", IO, "$(io.FileIO)($P, 'w').write(b'escaped')", "marker"),
    _c("os.mkdir", "write", "os", OS, "$(os.mkdir)($P)", "marker", _OS_NOLINK),
    _c("os.makedirs", "write", "os", OS, "$(os.makedirs)($P)", "marker", _NOLINK),
    _c("os.symlink", "write", "os", OS, "$(os.symlink)('x', $P)", "marker", _NOLINK),
    _c("os.open/w", "write", "os", OS, "os.close($(os.open)($P, 65))", "marker"),
    _c("shutil.copyfile/w", "write", "shutil", SH, "$(shutil.copyfile)('/dev/null', $P)", "marker"),
    _c("shutil.make_archive", "write", "shutil", SH, "$(shutil.make_archive)($P, 'zip', '.')", "marker", _STR),
    _c("tempfile.mkstemp", "write", "tempfile", ("import tempfile",), "$(tempfile.mkstemp)(dir=$P)", "root", _STR),
    _c("tempfile.mkdtemp", "write", "tempfile", ("import tempfile",), "tempfile.mkdtemp(dir=$P)", "root", _STR),
    _c("tempfile.NamedTemporaryFile", "write", "tempfile", ("import tempfile",),
       "$(tempfile.NamedTemporaryFile)(dir=$P, delete=False).write(b'x')", "root", _STR),
    _c("sqlite3.connect", "write", "sqlite3", ("import sqlite3",),
       "$(sqlite3.connect)($P).execute('create table t (x)')", "marker"),
    _c("sqlite3.attach", "write", "sqlite3", ("import sqlite3",),
       "db = sqlite3.connect(':memory:')\ndb.execute('attach database ? as x', ($P,))\n"
       "db.execute('create table x.t (a)')", "marker", _STR),
    _c("zipfile.ZipFile", "write", "zipfile", ("import zipfile",), "$(zipfile.ZipFile)($P, 'w').close()", "marker"),
    _c("gzip.open", "write", "gzip", ("import gzip",), "$(gzip.open)($P, 'wb').write(b'x')", "marker"),
    _c("tarfile.open", "write", "tarfile", ("import tarfile",), "$(tarfile.open)($P, 'w').close()", "marker"),
    # ---------------------------------------------------------------- moved out of the workdir
    _c("os.rename", "move", "os", OS, "$W\n$(os.rename)($L, $P)", "marker", _NOLINK),
    _c("os.replace", "move", "os", OS, "$W\n$(os.replace)($L, $P)", "marker", _NOLINK),
    _c("os.renames", "move", "os", OS, "$W\nos.renames($L, $P)", "marker", _NOLINK),
    _c("os.rename/workdir", "move", "os", OS, "$(os.rename)(os.getcwd(), $P)", "marker", _NOLINK),
    _c("shutil.move", "move", "shutil", SH, "$W\n$(shutil.move)($L, $P)", "marker", _NOLINK),
    _c("pathlib.Path.rename", "move", "pathlib", PL, "$W\npathlib.Path($L).rename($P)", "marker", _NOLINK),
    _c("pathlib.Path.replace", "move", "pathlib", PL, "$W\npathlib.Path($L).replace($P)", "marker", _NOLINK),
    # ---------------------------------------------------------------- unpickling (runs $B)
    _c("pandas.read_pickle/bytes", "unpickle", "pandas", PD + IO, "$(pd.read_pickle)(io.BytesIO($B))"),
    _c("pandas.read_pickle/file", "unpickle", "pandas", PD, "$WB\n$(pd.read_pickle)($L)"),
    _c("numpy.load/bytes", "unpickle", "numpy", NP + IO, "$(np.load)(io.BytesIO($B), allow_pickle=True)"),
    _c("numpy.load/file", "unpickle", "numpy", NP, "$WB\n$(np.load)($L, allow_pickle=True)"),
    _c("pickle.loads", "unpickle", "pickle", ("import pickle",), "$(pickle.loads)($B)"),
    _c("pickle.load", "unpickle", "pickle", ("import pickle",) + IO, "$(pickle.load)(io.BytesIO($B))"),
    _c("pickle.Unpickler", "unpickle", "pickle", ("import pickle",) + IO,
       "$(pickle.Unpickler)(io.BytesIO($B)).load()"),
    # ---------------------------------------------------------------- native code
    _c("numpy.ctypeslib.load_library", "native", "numpy", NP,
       "$(np.ctypeslib.load_library)($LIBNAME, $LIBDIR).mkdir($M.encode(), 448)"),
    _c("numpy.ctypeslib.ctypes.CDLL", "native", "numpy", NP,
       "$(np.ctypeslib.ctypes.CDLL)(None).mkdir($M.encode(), 448)"),
    _c("numpy.ctypeslib.ctypes.cdll", "native", "numpy", NP,
       "$(np.ctypeslib.ctypes.cdll.LoadLibrary)($LIBC).mkdir($M.encode(), 448)"),
    _c("numpy.ctypeslib/import", "native", "numpy.ctypeslib", ("import numpy.ctypeslib as nc",),
       "$(nc.load_library)($LIBNAME, $LIBDIR).mkdir($M.encode(), 448)"),
    _c("numpy.ctypeslib/from", "native", "numpy.ctypeslib", ("from numpy.ctypeslib import load_library",),
       "load_library($LIBNAME, $LIBDIR).mkdir($M.encode(), 448)"),
    _c("ctypes.CDLL", "native", "ctypes", ("import ctypes",), "$(ctypes.CDLL)(None).mkdir($M.encode(), 448)"),
    # ---------------------------------------------------------------- string evaluators
    _c("pandas.eval/subclasses", "evaluator", "pandas", PD,
       "subs = $(pd.eval)('(1).__class__.__base__.__subclasses__()', engine='python')\n"
       "wc = [c for c in subs if c.__name__ == '_wrap_close'][0]\n"
       "pd.eval(\"w.__init__.__globals__.get('sys').modules.get('os').mkdir(m)\", local_dict={'w': wc, 'm': $M},"
       " engine='python')"),
    _c("pandas.eval/tool", "evaluator", "pandas", PD,
       "$(pd.eval)(\"t.__globals__['os'].mkdir(m)\", local_dict={'t': $T, 'm': $M}, engine='python')"),
    _c("pandas.DataFrame.eval", "evaluator", "pandas", PD,
       "df = pd.DataFrame({'a': [1]})\n"
       "df.eval(\"@t.__globals__['os'].mkdir(@m)\", local_dict={'t': $T, 'm': $M}, engine='python')"),
    _c("pandas.DataFrame.query", "evaluator", "pandas", PD,
       "t, m = $T, $M\ndf = pd.DataFrame({'a': [1]})\n"
       "$(df.query)(\"a == @t.__globals__['os'].mkdir(@m)\", engine='python')"),
    # ---------------------------------------------------------------- format fields over real objects
    _c("matplotlib.ticker.StrMethodFormatter", "format", "matplotlib", ("import matplotlib.ticker",),
       "print($(matplotlib.ticker.StrMethodFormatter)($FX)($T))"),
    _c("pandas.Series.map/format", "format", "pandas", PD, "print($(pd.Series)([$T]).map($F0.format).iloc[0])"),
    _c("numpy.vectorize/format", "format", "numpy", NP,
       "print($(np.vectorize)($F0.format, otypes=[object])([$T]))"),
    _c("pandas.DataFrame.to_string/formatters", "format", "pandas", PD,
       "print(pd.DataFrame({'a': [$T]}).to_string(formatters={'a': $F0.format}))"),
    _c("map/format", "format", "", (), "print(list(map($F0.format, [$T])))"),
    # ---------------------------------------------------------------- the environment
    _c("os.environ", "env", "os", OS, "print($(os.environ)[$C])"),
    _c("os.getenv", "env", "os", OS, "print($(os.getenv)($C))"),
    _c("os.path.expandvars", "env", "os", OS, "print($(os.path.expandvars)('$' + $C))"),
    _c("os.environb", "env", "os", OS, "print($(os.environb)[$C.encode()])"),
    _c("numpy.ctypeslib.getenv", "env", "numpy", NP,
       "libc = $(np.ctypeslib.ctypes.CDLL)(None)\nlibc.getenv.restype = np.ctypeslib.ctypes.c_char_p\n"
       "print(libc.getenv($C.encode()))"),
    # ---------------------------------------------------------------- processes
    _c("os.system", "process", "os", OS, "$(os.system)('mkdir ' + $M)"),
    _c("os.popen", "process", "os", OS, "print($(os.popen)('mkdir ' + $M).read())"),
    _c("os.spawnlp", "process", "os", OS, "$(os.spawnlp)(0, 'mkdir', 'mkdir', $M)"),
    _c("os.posix_spawnp", "process", "os", OS, "os.waitpid($(os.posix_spawnp)('mkdir', ['mkdir', $M], {}), 0)"),
    _c("subprocess.run", "process", "subprocess", ("import subprocess",), "$(subprocess.run)(['mkdir', $M])"),
    _c("subprocess.getoutput", "process", "subprocess", ("import subprocess",),
       "print($(subprocess.getoutput)('mkdir ' + $M))"),
    _c("matplotlib.testing.subprocess_run_for_testing", "process", "matplotlib",
       ("import matplotlib.testing",),
       "$(matplotlib.testing.subprocess_run_for_testing)(['mkdir', $M])"),
)

# Ways to spell a target path. The working-directory links are made by the setup with os or
# pathlib (whichever is authorized); every other route is a plain expression.
PATH_ROUTES: tuple[PathRoute, ...] = (
    PathRoute("absolute", (), "", "$ENC", "str"),
    PathRoute("dotdot", (), "", "'../' * 24 + $ENC_REL", "str"),
    PathRoute("proc_root", (), "", "'/proc/self/root' + $ENC", "str"),
    PathRoute("proc_cwd", (), "", "'/proc/self/cwd/' + '../' * 24 + $ENC_REL", "str"),
    PathRoute("dot_segments", (), "", "$ENC_DOTS", "str"),
    PathRoute("file_url", (), "", "'file://' + $ENC", "url"),
    PathRoute("bytes", (), "", "$ENC.encode()", "bytes"),
    PathRoute("pathlib", ("pathlib",), "", "pathlib.Path($ENC)", "path"),
    PathRoute("os_path", ("os",), "", "os.path.join(os.getcwd(), '../' * 24 + $ENC_REL)", "str"),
    PathRoute("symlink/os", ("os",), "$(os.symlink)($ENC, $L)", "$L", "link"),
    PathRoute("symlink/pathlib", ("pathlib",), "$(pathlib.Path)($L).symlink_to($ENC)", "$L", "link"),
    PathRoute("symlink_dir/os", ("os",), "os.symlink($ENC_PARENT, $L)", "$L + '/' + $ENC_BASE", "str"),
    PathRoute("symlink_dir/pathlib", ("pathlib",), "pathlib.Path($L).symlink_to($ENC_PARENT)",
              "$L + '/' + $ENC_BASE", "str"),
    PathRoute("symlink_chain/os", ("os",), "os.symlink($ENC, $L + '-a')\nos.symlink($L + '-a', $L)",
              "$L", "link"),
    PathRoute("hardlink/os", ("os",), "$(os.link)($ENC, $L)", "$L", "link", ("secret",)),
    PathRoute("hardlink/pathlib", ("pathlib",), "pathlib.Path($L).hardlink_to($ENC)", "$L", "link",
              ("secret",)),
)

# Pickle payloads (protocol 0): (module, callable, arguments); each creates the marker.
PICKLE_CALLS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("os", "mkdir", ("$MARKER",)),
    ("posix", "mkdir", ("$MARKER",)),
    ("io", "open", ("$MARKER", "w")),
    ("os", "system", ("mkdir $MARKER",)),
    ("builtins", "exec", ("import os; os.mkdir('$MARKER')",)),
    ("shutil", "copyfile", ("/dev/null", "$MARKER")),
)

# Format fields that walk from a tool (or final_answer/print) to the environment.
FORMAT_FIELDS: tuple[str, ...] = (
    ".__globals__[os].environ",
    ".__globals__[sys].modules[os].environ",
    ".func.__globals__[os].environ",
    ".__self__.backend.environ",
    ".backend.environ",
    ".__init__.__globals__[os].environ",
    ".__call__.__func__.__globals__[os].environ",
    ".__class__.__init__.__globals__[os].environ",
    ".__closure__[0].cell_contents.environ",
    ".keywords[index][os].environ",
)

# Statements that read / write the local file $L (the second half of a copy or a move); the
# first one whose module is authorized and importable is used.
LOCAL_READERS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("pandas", PD, "print(pd.read_csv($L, header=None).to_string())"),
    ("numpy", NP, "print(np.fromfile($L, dtype=np.uint8).tobytes())"),
    ("pathlib", PL, "print(pathlib.Path($L).read_text())"),
)
LOCAL_WRITERS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("pandas", PD, "pd.DataFrame({'a': [1]}).to_csv($L)"),
    ("numpy", NP, "np.arange(3).tofile($L)"),
    ("pathlib", PL, "pathlib.Path($L).write_text('escaped')"),
)
BYTE_WRITERS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("numpy", NP, "np.frombuffer($B, dtype=np.uint8).tofile($L)"),
    ("pathlib", PL, "pathlib.Path($L).write_bytes($B)"),
)

TAMPERS: tuple[Tamper, ...] = (
    Tamper("pandas.set_option", ("pandas",), PD, "$(pd.set_option)('display.max_rows', 3)",
           "pd.get_option('display.max_rows')"),
    Tamper("pandas.options", ("pandas",), PD, "pd.options.display.precision = 1",
           "pd.get_option('display.precision')"),
    Tamper("pandas.option_context", ("pandas",), PD,
           "held = $(pd.option_context)('display.max_columns', 2)\nheld.__enter__()", "pd.get_option('display.max_columns')"),
    Tamper("pandas.plotting.plot_params", ("pandas",), PD, "pd.plotting.plot_params['x_compat'] = True",
           "pd.plotting.plot_params['x_compat']"),
    Tamper("numpy.set_printoptions", ("numpy",), NP, "$(np.set_printoptions)(precision=1)",
           "np.get_printoptions()['precision']"),
    Tamper("numpy.printoptions", ("numpy",), NP, "held = $(np.printoptions)(threshold=5)\nheld.__enter__()",
           "np.get_printoptions()['threshold']"),
    Tamper("numpy.seterr", ("numpy",), NP, "$(np.seterr)(all='raise')", "np.geterr()['divide']"),
    Tamper("numpy.errstate", ("numpy",), NP, "np.errstate(all='raise').__enter__()", "np.geterr()['over']"),
    Tamper("numpy.setbufsize", ("numpy",), NP, "$(np.setbufsize)(16384)", "np.getbufsize()"),
    Tamper("numpy.seterrcall", ("numpy",), NP, "np.seterrcall(print)", "np.geterrcall()"),
    Tamper("matplotlib.rcParams", ("matplotlib",), ("import matplotlib",),
           "$(matplotlib.rcParams)['lines.linewidth'] = 9", "matplotlib.rcParams['lines.linewidth']"),
    Tamper("matplotlib.rcParams.update", ("matplotlib",), ("import matplotlib",),
           "matplotlib.rcParams.update({'font.size': 3})", "matplotlib.rcParams['font.size']"),
    Tamper("matplotlib.rc", ("matplotlib",), ("import matplotlib",), "$(matplotlib.rc)('lines', linewidth=7)",
           "matplotlib.rcParams['lines.linewidth']"),
    Tamper("matplotlib.rc_context", ("matplotlib",), ("import matplotlib",),
           "held = matplotlib.rc_context({'axes.grid': True})\nheld.__enter__()", "matplotlib.rcParams['axes.grid']"),
    Tamper("matplotlib.style.use", ("matplotlib",), ("import matplotlib.style",),
           "$(matplotlib.style.use)('ggplot')", "matplotlib.rcParams['axes.facecolor']"),
    Tamper("matplotlib.use", ("matplotlib",), ("import matplotlib",), "$(matplotlib.use)('pdf')",
           "matplotlib.get_backend()"),
    Tamper("matplotlib.interactive", ("matplotlib",), ("import matplotlib",), "matplotlib.interactive(True)",
           "matplotlib.is_interactive()"),
    Tamper("matplotlib.pyplot.figure", ("matplotlib",), PLT, "$(plt.figure)(num=4242)", "plt.get_fignums()"),
    Tamper("matplotlib.colormaps.register", ("matplotlib",), ("import matplotlib",),
           "matplotlib.colormaps.register(matplotlib.colormaps['viridis'], name='fuzz_cmap')",
           "'fuzz_cmap' in matplotlib.colormaps"),
    Tamper("matplotlib.units.registry", ("matplotlib",), ("import matplotlib.units",),
           "matplotlib.units.registry[complex] = matplotlib.units.ConversionInterface()",
           "complex in matplotlib.units.registry"),
    # process-wide containers and registries reached as public members (item assignment and
    # methods mutate them; nothing restores them after the step)
    Tamper("numpy.sctypeDict", ("numpy",), NP, "$(np.sctypeDict)['float'] = np.int8", "str(np.dtype('float'))"),
    Tamper("numpy.typecodes", ("numpy",), NP, "np.typecodes['All'] = 'f'", "np.typecodes['All']"),
    Tamper("numpy.ma.default_filler", ("numpy",), NP + ("import numpy.ma.core",),
           "$(numpy.ma.core.default_filler)['f'] = 7.0", "np.ma.default_fill_value(np.float64(1.0))"),
    Tamper("matplotlib.colors.named", ("matplotlib",), ("import matplotlib.colors",),
           "$(matplotlib.colors.get_named_colors_mapping)()['red'] = '#00ff00'", "matplotlib.colors.to_hex('red')"),
    Tamper("matplotlib.style.library", ("matplotlib",), ("import matplotlib.style",),
           "$(matplotlib.style.library)['fuzz_style'] = {}", "'fuzz_style' in matplotlib.style.library"),
    Tamper("matplotlib.rcParamsDefault", ("matplotlib",), ("import matplotlib",),
           "$(matplotlib.rcParamsDefault)['lines.linewidth'] = 9", "matplotlib.rcParamsDefault['lines.linewidth']"),
    Tamper("matplotlib.RcParams.validate", ("matplotlib",), ("import matplotlib",),
           "$(matplotlib.RcParams.validate)['lines.linewidth'] = str",
           "matplotlib.RcParams.validate['lines.linewidth'] is str"),
    Tamper("matplotlib.scale.register_scale", ("matplotlib",), ("import matplotlib.scale",),
           "class FuzzScale(matplotlib.scale.LinearScale):\n    name = 'fuzz_scale'\n\n"
           "$(matplotlib.scale.register_scale)(FuzzScale)", "'fuzz_scale' in matplotlib.scale.get_scale_names()"),
    Tamper("matplotlib.projections.register_projection", ("matplotlib",),
           ("import matplotlib.projections", "import matplotlib.projections.polar"),
           "class FuzzAxes(matplotlib.projections.polar.PolarAxes):\n    name = 'fuzz_proj'\n\n"
           "$(matplotlib.projections.register_projection)(FuzzAxes)",
           "'fuzz_proj' in matplotlib.projections.get_projection_names()"),
    Tamper("matplotlib.markers.MarkerStyle.markers", ("matplotlib",), ("import matplotlib.markers",),
           "$(matplotlib.markers.MarkerStyle.markers)['fuzz'] = 'nothing'",
           "'fuzz' in matplotlib.markers.MarkerStyle.markers"),
    Tamper("matplotlib.lines.Line2D.lineStyles", ("matplotlib",), ("import matplotlib.lines",),
           "matplotlib.lines.Line2D.lineStyles['fuzz'] = '_draw_nothing'",
           "'fuzz' in matplotlib.lines.Line2D.lineStyles"),
    Tamper("matplotlib.font_manager.fontManager", ("matplotlib",), ("import matplotlib.font_manager",),
           "$(matplotlib.font_manager.fontManager.defaultFamily)['ttf'] = 'fuzz'",
           "matplotlib.font_manager.fontManager.defaultFamily['ttf']"),
    Tamper("matplotlib.backend_bases.register_backend", ("matplotlib",),
           ("import matplotlib.backend_bases", "import matplotlib.figure"),
           "$(matplotlib.backend_bases.register_backend)('fuzzfmt', 'matplotlib.backends.backend_agg')",
           "'fuzzfmt' in matplotlib.figure.Figure().canvas.get_supported_filetypes()"),
    Tamper("matplotlib.colors.ColorConverter.colors", ("matplotlib",), ("import matplotlib.colors",),
           "$(matplotlib.colors.ColorConverter.colors)['blue'] = '#00ff00'", "matplotlib.colors.to_hex('blue')"),
    Tamper("matplotlib.color_sequences.register", ("matplotlib",), ("import matplotlib",),
           "$(matplotlib.color_sequences.register)('fuzz_seq', ['red'])", "'fuzz_seq' in matplotlib.color_sequences"),
    Tamper("matplotlib.animation.writers.register", ("matplotlib",), ("import matplotlib.animation",),
           "class FuzzWriter(matplotlib.animation.FileMovieWriter):\n    @classmethod\n"
           "    def isAvailable(cls):\n        return True\n\n"
           "$(matplotlib.animation.writers.register)('fuzz_writer')(FuzzWriter)",
           "'fuzz_writer' in matplotlib.animation.writers.list()"),
    Tamper("matplotlib.rcParamsOrig", ("matplotlib",), ("import matplotlib",),
           "$(matplotlib.rcParamsOrig)['lines.linewidth'] = 9", "matplotlib.rcParamsOrig['lines.linewidth']"),
    Tamper("numpy.polynomial.set_default_printstyle", ("numpy",), ("import numpy.polynomial",),
           "$(numpy.polynomial.set_default_printstyle)('ascii')", "str(numpy.polynomial.Polynomial([1, 2]))"),
    Tamper("numpy.finfo", ("numpy",), NP, "np.finfo(np.float64).eps = 1.0", "float(np.finfo(np.float64).eps)"),
    Tamper("pandas.set_eng_float_format", ("pandas",), PD, "$(pd.set_eng_float_format)(accuracy=1)",
           "repr(pd.get_option('display.float_format'))[:20]"),
    Tamper("matplotlib.ticker.Locator.MAXTICKS", ("matplotlib",), ("import matplotlib.ticker",),
           "matplotlib.ticker.Locator.MAXTICKS = 3", "matplotlib.ticker.Locator.MAXTICKS"),
)

_TAMPER_BY_ID = {t.id: t for t in TAMPERS}


def probe_for(label: str) -> tuple[str, str] | None:
    """(imports, expression) showing the setting a library tamper attempt changes, from its label
    ("library/tamper/<id>/..."); None for every other attempt."""
    parts = label.split("/")
    if len(parts) < 3 or parts[:2] != ["library", "tamper"] or parts[2] not in _TAMPER_BY_ID:
        return None
    t = _TAMPER_BY_ID[parts[2]]
    return "\n".join(t.imports), t.probe
