"""Members of authorized modules that model code never gets, even when the host authorizes them.

The policy's module proxies hand model code only public, non-module members. Some modules are
dangerous by nature (they exist to run processes, load code, or reach the interpreter); others
have a few dangerous members among many useful ones. This table says which, and why. The audit
hook (capabilities.py) is the backstop for what the table misses: a member that is not hidden
here still cannot start a process or open a file outside the grants.

Three shapes, all `module -> {member: reason}`:
  - `"*"` hides every member except those named in `ONLY_MEMBERS[module]`;
  - other keys hide that member;
  - `DANGEROUS_MODULES` are those whose authorization deserves a warning to the host, once.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable
from typing import Any

from .registries import REFUSED_MEMBERS

_PROCESS = "it starts processes as the host"
_ENV = "it reads or changes the host's environment"
_INTERP = "it reaches the interpreter's internals (frames, modules, hooks)"
_GLOBAL = "it changes a process-wide setting shared with the host"
_CODE = "it loads or runs code by name"
_THREADS = "threads started by model code would run outside the step's limits and guard"
_REGISTRY = "it is a process-wide registry shared with the host; nothing restores it after the step"
_LOKY = ("loky's executors start worker processes, and a step never creates a process; "
         "joblib.Parallel and n_jobs=-1 run sequentially in a step instead")
_NATIVE_FS = ("a native file system or dataset opens any path from native code, where the guard "
              "cannot see; read and write with pyarrow's readers and writers (their paths are "
              "checked)")
_NATIVE_READER = ("its native reader or writer (.reader, .writer) opens any path later from native "
                  "code; use read_table/write_table (their paths are checked)")
_NATIVE_FILE = ("it opens a path from native code, where the guard cannot see; use pa.memory_map, "
                "pa.input_stream or pa.output_stream (their paths are checked)")
_EXEC_FRAME = "it runs a string as code in its caller's namespace"
_GC = "it turns the process's garbage collector off and on and walks every object"
_DEFAULTS = "the host's default settings (rcdefaults() and style resets read them); rcParams is the step's own"

DANGEROUS_MEMBERS: dict[str, dict[str, str]] = {
    # Modules that exist to do what the sandbox forbids.
    "subprocess": {"*": _PROCESS},
    "pty": {"*": _PROCESS},
    "multiprocessing": {"*": _PROCESS},
    "concurrent.futures": {"ProcessPoolExecutor": _PROCESS, "ThreadPoolExecutor": _THREADS},
    "threading": {"*": _THREADS},
    "_thread": {"*": _THREADS},
    "asyncio": {"*": "its event loops start threads and processes outside the step"},
    "signal": {"*": "signal handlers would run model code on the host later"},
    "ctypes": {"*": "native code and raw memory"},
    "cffi": {"*": "native code and raw memory"},
    "importlib": {"*": _CODE},
    "importlib.util": {"*": _CODE},
    "importlib.machinery": {"*": _CODE},
    "pkgutil": {"*": _CODE},
    "runpy": {"*": _CODE},
    "zipimport": {"*": _CODE},
    "code": {"*": "an interactive interpreter without the policy"},
    "codeop": {"*": "compiles code without the policy"},
    "site": {"*": _INTERP},
    "gc": {"*": "walks every object of the host"},
    # Introspection reads what the policy keeps from model code (closures, globals, frames) with
    # the host's own getattr: a tool's closure, a host function's globals -> os.environ.
    "inspect": {"*": _INTERP + " (a closure's or a function's globals are the host's)"},
    "dis": {"*": _INTERP + " (code objects)"},
    "pydoc": {"*": _INTERP + " (it imports any module by name and reads closures)"},
    "traceback": {"walk_stack": _INTERP, "walk_tb": _INTERP, "print_stack": _INTERP,
                  "extract_stack": _INTERP, "format_stack": _INTERP},
    "atexit": {"*": "functions registered here would run model code when the host exits"},
    "webbrowser": {"*": _PROCESS},
    "getpass": {"*": "it reads the host's terminal"},
    "pickle": {"load": "unpickling runs code", "loads": "unpickling runs code",
               "Unpickler": "unpickling runs code"},
    "_pickle": {"*": "unpickling runs code"},
    "marshal": {"load": "code objects from bytes", "loads": "code objects from bytes"},
    "shelve": {"*": "a pickle store: unpickling runs code"},
    "locale": {"setlocale": _GLOBAL, "resetlocale": _GLOBAL},
    "resource": {"setrlimit": _GLOBAL, "prlimit": _GLOBAL},
    "socket": {"sethostname": _GLOBAL, "setdefaulttimeout": _GLOBAL, "fromfd": "host descriptors",
               "socketpair": "host descriptors"},
    "shutil": {"chown": "ownership changes need privileges the code must not use"},
    "tempfile": {"tempdir": _GLOBAL},
    "os": {"*": _ENV},
    "posix": {"*": _ENV},
    "sys": {"*": _INTERP},
    "builtins": {"*": "model code gets the sandbox's own builtins"},
    # Libraries.
    "numpy": {"ctypeslib": "native code", "f2py": "compiles and loads native code",
              "distutils": _PROCESS},
    "numpy.ctypeslib": {"*": "native code"},
    "numpy.f2py": {"*": "compiles and loads native code"},
    # numpy.testing's assertions are data code; these members are not
    "numpy.testing": {"extbuild": "it compiles and loads native code",
                      "run_threaded": _THREADS, "test": "it runs numpy's test suite (pytest)",
                      "rundocs": "it runs a module's doctests, named by a string",
                      "measure": _EXEC_FRAME, "runstring": _EXEC_FRAME,
                      "assert_no_gc_cycles": _GC, "break_cycles": _GC,
                      "check_support_sve": _PROCESS,
                      "decorate_methods": "it replaces the methods of any class, the host's too"},
    "matplotlib": {"set_loglevel": "it changes the host's logging",
                   "rcParamsDefault": _DEFAULTS, "rcParamsOrig": _DEFAULTS,
                   "color_sequences": _REGISTRY},
    "matplotlib.pyplot": {"switch_backend": "it imports any module named by a string",
                          "install_repl_displayhook": _INTERP,
                          "uninstall_repl_displayhook": _INTERP,
                          "rcParamsDefault": _DEFAULTS, "rcParamsOrig": _DEFAULTS,
                          "color_sequences": _REGISTRY},
    "matplotlib.pylab": {"rcParamsDefault": _DEFAULTS, "rcParamsOrig": _DEFAULTS,
                         "color_sequences": _REGISTRY},
    "matplotlib.style": {"rcParamsDefault": _DEFAULTS},
    "matplotlib.units": {"registry": _REGISTRY + " (a converter registered there runs in the "
                                     "host's later plots)"},
    "matplotlib.colors": {"get_named_colors_mapping": "it hands out the process-wide color names "
                                                      "(changing 'red' changes every host plot)"},
    "matplotlib.scale": {"register_scale": _REGISTRY},
    "matplotlib.projections": {"register_projection": _REGISTRY, "projection_registry": _REGISTRY},
    "matplotlib.font_manager": {"fontManager": "the host's font manager (its default families "
                                               "and font list are process-wide)"},
    "matplotlib.text": {"fontManager": "the host's font manager"},
    "matplotlib.animation": {"writers": _REGISTRY},
    "matplotlib.dates": {"set_epoch": _GLOBAL + " (every host date plot would shift)"},
    "matplotlib.backends": {"backend_registry": _REGISTRY},
    "matplotlib.backends.registry": {"backend_registry": _REGISTRY},
    "pandas": {"read_clipboard": _PROCESS},
    # joblib's Parallel runs sequentially in a step (hooks.py); loky's executors are
    # process pools by nature.
    "joblib.externals.loky": {"*": _LOKY},
    # Native file access the audit hook cannot see (native_files.py checks the readers' and
    # writers' paths; these hand out file systems or readers that open any path later).
    "pyarrow": {"OSFile": _NATIVE_FILE, "MemoryMappedFile": _NATIVE_FILE},
    "pyarrow.lib": {"OSFile": _NATIVE_FILE, "MemoryMappedFile": _NATIVE_FILE},  # (the same classes)
    "pyarrow.csv": {"CSVWriter": _NATIVE_READER},
    "pyarrow.fs": {"*": _NATIVE_FS},
    "pyarrow.dataset": {"*": _NATIVE_FS},
    "pyarrow.flight": {"*": "native network connections the guard cannot see"},
    "pyarrow.parquet": {"ParquetFile": _NATIVE_READER, "ParquetDataset": _NATIVE_FS,
                        "ParquetWriter": _NATIVE_READER, "write_to_dataset": _NATIVE_FS},
    "pyarrow.orc": {"ORCFile": _NATIVE_READER, "ORCWriter": _NATIVE_READER},
    "polars": {"read_clipboard": "it reads the host's desktop clipboard",
               "read_database": "native database connections the guard cannot see",
               "read_database_uri": "native database connections the guard cannot see",
               "scan_pyarrow_dataset": _NATIVE_FS, "scan_external_reader": _NATIVE_FS},
    "pandas.api.extensions": {
        "register_dataframe_accessor": "it adds a member to every host DataFrame",
        "register_series_accessor": "it adds a member to every host Series",
        "register_index_accessor": "it adds a member to every host Index",
        "register_extension_dtype": "it changes a process-wide registry"},
    # (the same objects as pandas.api.extensions': hidden_object() finds them there too)
    "pandas.core.accessor": {
        "register_dataframe_accessor": "it adds a member to every host DataFrame",
        "register_series_accessor": "it adds a member to every host Series",
        "register_index_accessor": "it adds a member to every host Index"},
    "pandas.core.dtypes.base": {"register_extension_dtype": "it changes a process-wide registry"},
    "pandas.core.computation.expressions": {
        "set_use_numexpr": _GLOBAL, "set_numexpr_threads": _GLOBAL, "set_test_mode": _GLOBAL},
    # (sympy.init_printing runs: what it sets, sys.displayhook included, is put back after every
    # step by registries.py)
    "sympy": {"init_session": "it replaces sys.displayhook and starts an interactive session"},
    "pandas.plotting": {"register_matplotlib_converters": _GLOBAL,
                        "deregister_matplotlib_converters": _GLOBAL,
                        "plot_params": _GLOBAL},
    # Process-wide registries and hooks of the stdlib.
    "os.path": {"expandvars": _ENV},
    "wsgiref.handlers": {"*": _ENV + " (its handlers keep a copy of it, made at import)"},
    "posixpath": {"expandvars": _ENV},
    "ntpath": {"expandvars": _ENV},
    "sqlite3": {"*": "SQL's ATTACH DATABASE creates and writes files with no audit event"},
    "logging": {"*": "it configures the host's logging: handlers write to the host's streams "
                     "and files; print instead"},
    "codecs": {"register": _GLOBAL, "unregister": _GLOBAL, "register_error": _GLOBAL},
    "copyreg": {"*": _GLOBAL},
    "mimetypes": {"add_type": _GLOBAL, "init": _GLOBAL, "read_mime_types": _GLOBAL},
    "faulthandler": {"*": "it writes to the host's stderr and installs signal handlers"},
    "warnings": {"filterwarnings": _GLOBAL, "simplefilter": _GLOBAL, "resetwarnings": _GLOBAL,
                 "showwarning": _GLOBAL},
    "scipy.io": {"mmread": "it reads files in C++ with no audit event",
                 "mmwrite": "it writes files in C++ with no audit event"},
}

# Registries and process-wide library state that would call host code later (registries.py).
for _module, _members in REFUSED_MEMBERS.items():
    DANGEROUS_MEMBERS.setdefault(_module, {}).update(_members)

# For modules hidden with "*": the members model code still gets (all harmless or judged by the
# audit hook). os/posix: path handling and the file operations that the grants govern.
_OS_FILES = frozenset({
    "path", "sep", "altsep", "extsep", "pathsep", "linesep", "curdir", "pardir", "devnull",
    "name", "fspath", "fsencode", "fsdecode", "PathLike", "getcwd", "listdir", "scandir", "walk",
    "stat", "lstat", "makedirs", "mkdir", "remove", "unlink", "rmdir", "removedirs", "rename",
    "renames", "replace", "cpu_count", "urandom", "strerror", "SEEK_SET", "SEEK_CUR", "SEEK_END",
    "DirEntry", "stat_result", "terminal_size", "get_terminal_size", "error", "getpid",
})
ONLY_MEMBERS: dict[str, frozenset[str]] = {
    "os": _OS_FILES,
    "posix": frozenset(_OS_FILES - {"path", "walk", "makedirs", "removedirs", "renames"}),
    "sys": frozenset({
        "version", "version_info", "hexversion", "platform", "maxsize", "maxunicode",
        "float_info", "int_info", "hash_info", "byteorder", "float_repr_style",
        "getrecursionlimit", "getsizeof", "getdefaultencoding", "getfilesystemencoding",
        "implementation", "api_version", "copyright", "thread_info",
    }),
}

# Authorizing one of these is worth a warning to the host: the table above keeps the worst out,
# but the module's purpose is close to what the sandbox forbids.
DANGEROUS_MODULES: dict[str, str] = {
    name: next(iter(members.values()))
    for name, members in DANGEROUS_MEMBERS.items()
    if "*" in members and name not in ("builtins", "sys", "os", "posix")
} | {
    "os": "it holds process, environment and file-descriptor calls (the sandbox hides them)",
    "posix": "the same as os",
    "sys": "it holds the interpreter's modules, paths, streams and hooks (the sandbox hides them)",
    "builtins": "model code gets the sandbox's builtins, not the host's",
    "shutil": "file operations (judged against the grants)",
    "pathlib": "file operations (judged against the grants)",
    "socket": "network access (refused unless the network is granted)",
    "pickle": "unpickling runs code (refused)",
    "tempfile": "file creation (judged against the grants)",
    "io": "only in-memory streams unless files are granted",
}


def hidden_reason(module: str, member: str) -> str | None:
    """Why `module.member` is kept from model code, or None when it may have it."""
    rules = DANGEROUS_MEMBERS.get(module)
    if not rules:
        return None
    if member in rules:
        return rules[member]
    if "*" in rules and member not in ONLY_MEMBERS.get(module, ()):
        return rules["*"]
    return None


# -- the same members wherever they are found ------------------------------------------------------
# Every public module of an authorized package can be imported, so a member the table hides is
# hidden by what it *is*, not by the path it was found under: `pandas.core.accessor` hands out the
# very register_dataframe_accessor that pandas.api.extensions does, a library module that did
# `from subprocess import Popen` hands out subprocess's. Resolved from each table module once it
# is loaded (the objects are kept: their ids stay theirs).
_BY_OBJECT: dict[int, tuple[Any, str]] = {}
_PENDING: set[str] = {name for name in DANGEROUS_MEMBERS if name != "builtins"}
_SEEN = [0]  # len(sys.modules) when the pending modules were last looked for
_SCALARS = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset)


def hidden_object(value: Any) -> str | None:
    """Why `value` is kept from model code wherever a module hands it out (it is a member the
    table hides, under another name or module), or None."""
    if _PENDING and len(sys.modules) != _SEEN[0]:  # (a table module may have loaded since)
        _SEEN[0] = len(sys.modules)
        _resolve_loaded()
    found = _BY_OBJECT.get(id(value))
    return found[1] if found is not None and found[0] is value else None


def _resolve_loaded() -> None:
    for name in [name for name in _PENDING if name in sys.modules]:
        _PENDING.discard(name)
        module = sys.modules[name]
        rules = DANGEROUS_MEMBERS[name]
        own = getattr(module, "__dict__", {})
        if "*" in rules:  # what the module itself defines (not what it re-exports from others)
            homes = _homes(name)
            members = [m for m in own if type(m) is str and not m.startswith("_")
                       and _home(own[m]) in homes]
        else:
            members = [m for m in rules if m in own]
        for member in members:
            reason = hidden_reason(name, member)
            value = own[member]
            if reason is not None and not isinstance(value, (types.ModuleType, *_SCALARS)):
                _BY_OBJECT.setdefault(id(value), (value, reason))


def _homes(name: str) -> set[str]:
    """The module and its C twin (os: posix; threading: _thread; pyarrow.fs: pyarrow._fs)."""
    parent, _, last = name.rpartition(".")
    twin = f"{parent}._{last}" if parent else f"_{last}"
    return {name, twin} | ({"posix", "nt"} if name == "os" else set())


def _home(value: Any) -> Any:
    home = getattr(value, "__module__", None) if isinstance(value, (type, types.FunctionType,
                                                                    types.BuiltinFunctionType)) \
        else getattr(type(value), "__module__", None)
    return home if type(home) is str else None


def module_refusal(name: str) -> str | None:
    """Why importing `name` is refused even though it is authorized, or None."""
    parts = name.split(".")
    for i in range(1, len(parts)):
        reason = hidden_reason(".".join(parts[:i]), parts[i])
        if reason is not None:
            return reason
    rules = DANGEROUS_MEMBERS.get(name)
    if rules and "*" in rules and name not in ONLY_MEMBERS and name != "builtins":
        return rules["*"]
    return None


_WARNED: set[str] = set()


def warn_dangerous(authorized: Iterable[str]) -> list[str]:
    """Log, once per module and process, that the host authorized a module the table marks
    dangerous (what the sandbox does about it). Returns the modules warned about now."""
    import logging

    log = logging.getLogger("executors")
    warned = []
    from ...base import DEFAULT_AUTHORIZED_IMPORTS

    for name in authorized:
        base = name[:-2] if name.endswith(".*") else name
        reason = DANGEROUS_MODULES.get(base)
        if base in DEFAULT_AUTHORIZED_IMPORTS:
            continue  # the defaults are ours: io gives in-memory streams only
        if reason is None or base in _WARNED:
            continue
        _WARNED.add(base)
        warned.append(base)
        refused = module_refusal(base)
        what = f"importing it stays refused ({refused})" if refused else \
            "its dangerous members stay hidden and the capability guard judges what it does"
        log.warning("authorized_imports includes %r: %s; %s", base, reason, what)
    return warned
