"""Access grants held by the capability guard alone: LocalExecutor, and SubprocessExecutor with
harden=False (no Landlock, no namespaces: only the audit hook in the worker holds).

Model code runs under the restricted policy with `os`, `pathlib`, `shutil`, `socket` (and the data
libraries) authorized: the libraries are the way to files, and every route out of the grants a
user could fear — symlinks and hard links made in the workdir, `..`, `/proc/self/root`,
`/proc/self/fd/N`, `/dev/fd/N`, renaming a granted directory, the project engine's Docker socket,
TCP without the network grant — must end in a PermissionError that names the setting, with
nothing created, changed or read outside. Files outside the grants are world-readable and
-writable, so every refusal seen is the guard's doing. (tests/test_grants_remote.py holds the
same grants with the kernel layer, tests/test_capabilities.py tests the guard alone.)
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from executors import Limits, LocalExecutor
from executors.access import Access
from executors.process import SubprocessExecutor

pytestmark = pytest.mark.timeout(180)

KINDS = ("local", "subprocess")
DOCKER_SOCKET = "/run/codeagent-docker.sock"
FILES = ["os", "pathlib", "shutil"]
DATA = ["numpy.*", "pandas.*"]


def make(kind: str, access: Access, imports: list[str]) -> Any:
    limits = Limits(timeout_s=30)  # cold pandas imports on a busy 2-core machine take seconds
    if kind == "local":
        return LocalExecutor(authorized_imports=imports, access=access, limits=limits)
    return SubprocessExecutor(authorized_imports=imports, access=access, harden=False,
                              unconfined_native=True, limits=limits)


def make_area() -> dict[str, Path]:
    """read/ write/ outside/ under one directory, a file in each; outside is open to everyone."""
    base = Path(tempfile.mkdtemp(prefix="codeagent-local-grants-", dir="/tmp"))
    area = {"base": base}
    for name in ("read", "write", "outside"):
        d = base / name
        d.mkdir()
        (d / "data.txt").write_text(f"{name} data\n")
        area[name] = d
    area["outside"].chmod(0o777)
    (area["outside"] / "data.txt").chmod(0o666)
    return area


@pytest.fixture
def area() -> Iterator[dict[str, Path]]:
    area = make_area()
    yield area
    shutil.rmtree(area["base"], ignore_errors=True)


def grants(area: dict[str, Path], **kw: Any) -> Access:
    return Access(read=[area["read"]], write=[area["write"]], **kw)


def ok(ex: Any, code: str) -> Any:
    r = ex.execute(textwrap.dedent(code))
    assert r.error is None, (r.error, r.logs)
    return r.output


def refused(ex: Any, code: str, *, setting: str | None = None) -> str:
    """The code fails with a PermissionError (naming `setting` when given); returns the message."""
    r = ex.execute(textwrap.dedent(code))
    assert r.error is not None, f"not refused: {code!r} -> {r.output!r} {r.logs!r}"
    assert r.error.type == "PermissionError", r.error
    if setting:
        assert setting in r.error.message, r.error.message
    return r.error.message + r.logs + repr(r.output)


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under root with its content (files) or target (links): to see any change."""
    state = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p.is_symlink():
                state[str(p)] = ("link", os.readlink(p))
            elif p.is_file():
                state[str(p)] = ("file", p.read_bytes(), p.stat().st_mode)
            else:
                state[str(p)] = ("dir", p.stat().st_mode)
    return state


# ----------------------------------------------------------------------------- inside the grants


@pytest.mark.parametrize("kind", KINDS)
def test_reads_and_writes_inside_the_grants_work(kind: str, area: dict[str, Path]) -> None:
    """pandas, numpy, pathlib and os read the read grant and write the write grant and the workdir."""
    (area["read"] / "table.csv").write_text("a,b\n1,2\n3,4\n")
    read, write = str(area["read"]), str(area["write"])
    with make(kind, grants(area), FILES + DATA) as ex:
        out = ok(ex, f"""
            import os, pathlib
            import numpy as np
            import pandas as pd
            df = pd.read_csv({read + '/table.csv'!r})
            df.assign(c=df.a + df.b).to_csv({write + '/out.csv'!r}, index=False)
            np.save('matrix.npy', df.to_numpy())            # the workdir: relative paths
            back = np.load('matrix.npy').tolist()
            text = pathlib.Path({read + '/data.txt'!r}).read_text()
            pathlib.Path({write + '/copy.txt'!r}).write_text(text.upper())
            os.makedirs({write + '/sub/dir'!r})
            os.rename({write + '/copy.txt'!r}, {write + '/sub/moved.txt'!r})
            (back, text, sorted(os.listdir({read!r})), sorted(os.listdir('.')))
        """)
        assert out == ([[1, 2], [3, 4]], "read data\n", ["data.txt", "table.csv"], ["matrix.npy"])
        assert (area["write"] / "out.csv").read_text() == "a,b,c\n1,2,3\n3,4,7\n"
        assert (area["write"] / "sub" / "moved.txt").read_text() == "READ DATA\n"


@pytest.mark.parametrize("kind", KINDS)
def test_numpy_file_methods_written_in_c_follow_the_grants(kind: str, area: dict[str, Path]) -> None:
    """ndarray.tofile and np.fromfile open files from C through the frame's builtins: inside the
    grants they work, outside they are refused like any open (they used to fail with SystemError
    everywhere), and model code still cannot name `open` itself."""
    write, outside = str(area["write"]), str(area["outside"])
    with make(kind, grants(area), DATA) as ex:
        out = ok(ex, f"""
            import numpy as np
            np.arange(4, dtype=np.uint8).tofile({write + '/raw.bin'!r})
            np.arange(3, dtype=np.uint8).tofile('local.bin')
            (np.fromfile({write + '/raw.bin'!r}, dtype=np.uint8).tolist(),
             np.fromfile('local.bin', dtype=np.uint8).tolist())
        """)
        assert out == ([0, 1, 2, 3], [0, 1, 2])
        refused(ex, f"import numpy as np\nnp.fromfile({outside + '/data.txt'!r}, dtype=np.uint8)",
                setting="Access(read=")
        refused(ex, f"import numpy as np\nnp.arange(3).tofile({outside + '/new.bin'!r})",
                setting="Access(write=")
        assert ex.execute("open('local.bin')").error.type == "PolicyError"
    assert sorted(os.listdir(area["outside"])) == ["data.txt"]


@pytest.mark.parametrize("kind", KINDS)
def test_an_authorized_builtins_module_never_hands_out_the_forbidden_builtins(kind: str) -> None:
    """The frames' builtins carry `open` for C code; `import builtins` (when a host authorizes it)
    gives the sandbox's builtins without it, or eval/exec/compile, by any spelling."""
    with make(kind, Access(), ["builtins"]) as ex:
        for code in ("import builtins\nbuiltins.open", "import builtins\ngetattr(builtins, 'open')",
                     "import builtins\nbuiltins.eval"):
            assert ex.execute(code).error is not None, code
        names = ex.execute("import builtins\nsorted(set(dir(builtins)) & {'open', 'eval', 'exec', 'compile'})")
        assert names.error is None and names.output == []


# ----------------------------------------------------------------------------- outside the grants


def _outside_codes(area: dict[str, Path]) -> list[tuple[str, str, str]]:
    """(what, code, the setting its refusal must name)."""
    read, outside = str(area["read"]), str(area["outside"])
    return [
        ("pandas read", f"import pandas as pd\npd.read_csv({outside + '/data.txt'!r})", "Access(read="),
        ("numpy read", f"import numpy as np\nnp.loadtxt({outside + '/data.txt'!r}, dtype=str)", "Access(read="),
        ("pathlib read", f"import pathlib\npathlib.Path({outside + '/data.txt'!r}).read_text()", "Access(read="),
        ("os listdir", f"import os\nos.listdir({outside!r})", "Access(read="),
        ("pathlib read /etc/passwd", "import pathlib\npathlib.Path('/etc/passwd').read_text()", "Access(read="),
        ("pandas write", f"import pandas as pd\npd.DataFrame({{'a': [1]}}).to_csv({outside + '/new.csv'!r})",
         "Access(write="),
        ("numpy write", f"import numpy as np\nnp.save({outside + '/new.npy'!r}, np.arange(3))", "Access(write="),
        ("pathlib write", f"import pathlib\npathlib.Path({outside + '/new.txt'!r}).write_text('x')",
         "Access(write="),
        ("pathlib append", f"import pathlib\npathlib.Path({outside + '/data.txt'!r}).open('a').write('x')",
         "Access(write="),
        ("os mkdir", f"import os\nos.mkdir({outside + '/d'!r})", "Access(write="),
        ("write into a read grant", f"import pathlib\npathlib.Path({read + '/new.txt'!r}).write_text('x')",
         "Access(write="),
        ("truncate a read grant's file", f"import pathlib\npathlib.Path({read + '/data.txt'!r}).write_text('')",
         "Access(write="),
        ("remove a read grant's file", f"import os\nos.remove({read + '/data.txt'!r})", "Access(write="),
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_outside_the_grants_fails_clearly_and_leaves_no_trace(kind: str, area: dict[str, Path]) -> None:
    before = snapshot(area["base"])
    with make(kind, grants(area), FILES + DATA) as ex:
        for what, code, setting in _outside_codes(area):
            text = refused(ex, code, setting=setting)
            assert "outside data" not in text and "root:" not in text, what
    assert snapshot(area["base"]) == before


# ----------------------------------------------------------------------------- escapes


def _escapes(area: dict[str, Path], host_fd: int) -> dict[str, str]:
    """File-system escapes through the authorized os/pathlib/shutil/socket (restricted policy)."""
    outside, write, read = str(area["outside"]), str(area["write"]), str(area["read"])
    secret = outside + "/data.txt"
    from_root = os.path.relpath(secret, "/")
    every_fd = ("import pathlib\nfound = []\nfor n in range(64):\n    try:\n"
                "        found.append(pathlib.Path({fmt}).read_text())\n    except (OSError, ValueError):\n"
                "        pass\nassert not [t for t in found if 'outside' in t], found\n"
                "raise PermissionError('no descriptor led out: ' + str(len(found)))")
    return {
        "symlink to /etc/passwd": "import pathlib\npathlib.Path('pw').symlink_to('/etc/passwd')\n"
                                  "pathlib.Path('pw').read_text()",
        "symlink to a directory outside": f"import pathlib\npathlib.Path('od').symlink_to({outside!r})\n"
                                          "pathlib.Path('od/data.txt').read_text()",
        "write through a symlink": f"import pathlib\npathlib.Path('wl').symlink_to({secret!r})\n"
                                   "pathlib.Path('wl').open('a').write('x')",
        "create through a dangling symlink": f"import pathlib\npathlib.Path('dl').symlink_to({outside + '/new'!r})\n"
                                             "pathlib.Path('dl').write_text('x')",
        "symlink in the write grant": f"import pathlib\npathlib.Path({write + '/sl'!r}).symlink_to({secret!r})\n"
                                      f"pathlib.Path({write + '/sl'!r}).read_text()",
        "host-planted file symlink": f"import pathlib\npathlib.Path({write + '/planted-file'!r}).read_text()",
        "host-planted directory symlink": f"import pathlib\npathlib.Path({write + '/planted-dir/data.txt'!r}).read_text()",
        "shutil copy through a planted link": f"import shutil\nshutil.copyfile({write + '/planted-file'!r}, 'copy')",
        "hard link from outside": f"import pathlib\npathlib.Path('hard').hardlink_to({secret!r})\n"
                                  "pathlib.Path('hard').read_text()",
        "hard link into the read grant": f"import pathlib\npathlib.Path('hard2').hardlink_to({read + '/data.txt'!r})\n"
                                         "pathlib.Path('hard2').write_text('x')",
        "dot-dot traversal": f"import pathlib\npathlib.Path({write + '/../outside/data.txt'!r}).read_text()",
        "dot-dot from the workdir": f"import pathlib\npathlib.Path('../' * 30 + {from_root!r}).read_text()",
        "/proc/self/root": f"import pathlib\npathlib.Path('/proc/self/root' + {secret!r}).read_text()",
        "/proc/self/cwd": f"import pathlib\npathlib.Path('/proc/self/cwd/' + '../' * 30 + {from_root!r}).read_text()",
        "/proc/self/fd/N (a host descriptor)": f"import pathlib\npathlib.Path('/proc/self/fd/{host_fd}').read_text()",
        "/dev/fd/N (a host descriptor)": f"import pathlib\npathlib.Path('/dev/fd/{host_fd}').read_text()",
        "/proc/self/fd/N, every N": every_fd.format(fmt="f'/proc/self/fd/{n}'"),
        "/dev/fd/N/.., every N": every_fd.format(fmt="f'/dev/fd/{n}/../outside/data.txt'"),
        "rename a granted directory out": f"import os\nos.rename({write!r}, {write + '-moved'!r})",
        "rename a granted directory into the workdir": f"import os\nos.rename({write!r}, 'stolen')",
        "rename the workdir": "import os\nos.rename(os.getcwd(), os.getcwd() + '-moved')",
        "remove a granted directory": f"import shutil\nshutil.rmtree({write!r})",
        "rename out of the grants": f"import pathlib, shutil\npathlib.Path('f').write_text('x')\n"
                                    f"shutil.move('f', {outside + '/moved'!r})",
        "rename /dev/null (onto itself)": "import pathlib\npathlib.Path('/dev/null').rename('/dev/null')",
        "chmod /dev/null (to its own mode)": "import pathlib\npathlib.Path('/dev/null').chmod(0o666)",
        "the Docker socket": f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({DOCKER_SOCKET!r})",
        "the Docker socket through a symlink": f"import pathlib, socket\npathlib.Path('ds').symlink_to({DOCKER_SOCKET!r})\n"
                                               "s = socket.socket(socket.AF_UNIX)\ns.connect('ds')",
    }


ESCAPES = sorted(_escapes({"outside": Path("/o"), "write": Path("/w"), "read": Path("/r")}, 0))


@pytest.fixture(scope="module")
def escape_area() -> Iterator[dict[str, Path]]:
    area = make_area()
    os.symlink(area["outside"] / "data.txt", area["write"] / "planted-file")  # planted by the host
    os.symlink(area["outside"], area["write"] / "planted-dir")
    fd = os.open(area["outside"] / "data.txt", os.O_RDONLY)  # a host descriptor to the secret
    area["fd"] = fd  # type: ignore[assignment]
    yield area
    os.close(fd)
    shutil.rmtree(area["base"], ignore_errors=True)


@pytest.fixture(scope="module", params=KINDS)
def escape_ex(request: pytest.FixtureRequest, escape_area: dict[str, Path]) -> Iterator[Any]:
    ex = make(request.param, grants(escape_area), FILES + ["socket"])
    yield ex
    ex.close()


@pytest.mark.parametrize("name", ESCAPES)
def test_file_system_escapes_are_refused(escape_area: dict[str, Path], escape_ex: Any, name: str) -> None:
    before = snapshot(escape_area["base"])
    dev_null = os.stat("/dev/null")
    text = refused(escape_ex, _escapes(escape_area, escape_area["fd"])[name])  # type: ignore[arg-type]
    assert "outside data" not in text and "root:" not in text
    after = snapshot(escape_area["base"])
    # nothing that was there changed or went; new names only inside the write grant
    assert {k: after.get(k) for k in before} == before
    assert all(k.startswith(str(escape_area["write"]) + "/") for k in set(after) - set(before))
    workdir = escape_ex.workdir if isinstance(escape_ex, LocalExecutor) else escape_ex.access.workdir
    assert os.path.isdir(workdir) and not os.path.exists(workdir + "-moved")
    now = os.stat("/dev/null")
    assert (now.st_ino, now.st_mode, now.st_rdev) == (dev_null.st_ino, dev_null.st_mode, dev_null.st_rdev)


# ----------------------------------------------------------------------------- the network


class Listener:
    """A TCP listener on 127.0.0.1 that answers every connection with a tiny HTTP reply."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            with conn:
                conn.settimeout(1)
                try:
                    conn.recv(1024)
                    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello")
                except OSError:
                    pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2)
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_local_listener_is_reached_only_with_the_network_grant(kind: str, area: dict[str, Path],
                                                                 listener: Listener) -> None:
    raw = f"import socket\nc = socket.create_connection(('127.0.0.1', {listener.port}), timeout=5)\nc.close()"
    url = f"import urllib.request\nurllib.request.urlopen('http://127.0.0.1:{listener.port}/', timeout=5).read()"
    with make(kind, grants(area), ["socket", "urllib.request"]) as ex:
        refused(ex, raw, setting="Access(network=True)")
        refused(ex, url, setting="Access(network=True)")
        refused(ex, f"import socket\ns = socket.socket()\ns.connect(('127.0.0.1', {listener.port}))",
                setting="Access(network=True)")
    assert listener.connections == 0
    with make(kind, grants(area, network=True), ["socket", "urllib.request"]) as ex:
        ok(ex, raw)
        assert ok(ex, url) == b"hello"
    assert listener.connections == 2


# ----------------------------------------------------------------------------- the law


def _tree_strategy() -> st.SearchStrategy:
    """Each probe: where its link sits, where its target sits, and how it is reached."""
    where = st.sampled_from(["read", "write", "outside", "workdir"])
    return st.lists(st.tuples(where, where, st.sampled_from(["direct", "file-link", "dir-link"])),
                    min_size=1, max_size=6)


def _law(kind: str, probes: list[tuple[str, str, str]]) -> None:
    area = make_area()
    workdir = Path(tempfile.mkdtemp(prefix="codeagent-local-law-", dir="/tmp"))
    places = {"read": area["read"], "write": area["write"], "outside": area["outside"], "workdir": workdir}
    try:
        paths, expected_read, expected_write = [], set(), set()
        for i, (link_at, target_at, how) in enumerate(probes):
            target_dir = places[target_at] / f"t{i}"
            target_dir.mkdir()
            (target_dir / "file").write_text(str(i))
            if how == "direct":
                path = target_dir / "file"
            elif how == "file-link":
                path = places[link_at] / f"l{i}"
                os.symlink(target_dir / "file", path)
            else:
                os.symlink(target_dir, places[link_at] / f"d{i}")
                path = places[link_at] / f"d{i}" / "file"
            paths.append(str(path))
            resolved = os.path.realpath(path)  # the grants hold what a path resolves to
            if not resolved.startswith(str(area["outside"]) + "/"):
                expected_read.add(str(path))
            if resolved.startswith((str(area["write"]) + "/", str(workdir) + "/")):
                expected_write.add(str(path))
        access = Access(read=[area["read"]], write=[area["write"]], workdir=str(workdir))
        with make(kind, access, ["pathlib"]) as ex:
            result = ok(ex, f"""
                import pathlib
                read, wrote = [], []
                for p in {paths!r}:
                    try:
                        pathlib.Path(p).read_text()
                        read.append(p)
                    except PermissionError:
                        pass
                    try:
                        with pathlib.Path(p).open('a') as f:
                            f.write('+')
                        wrote.append(p)
                    except PermissionError:
                        pass
                (read, wrote)
            """)
        assert set(result[0]) == expected_read
        assert set(result[1]) == expected_write
        for i, (_link_at, target_at, _how) in enumerate(probes):  # nothing outside was changed
            content = (places[target_at] / f"t{i}" / "file").read_text()
            assert content.startswith(str(i)) and (target_at in ("write", "workdir") or content == str(i))
    finally:
        shutil.rmtree(area["base"], ignore_errors=True)
        shutil.rmtree(workdir, ignore_errors=True)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(probes=_tree_strategy())
def test_what_local_code_reaches_is_exactly_what_is_granted(probes: list[tuple[str, str, str]]) -> None:
    """Random files and symlinks in and out of the grants (a link in one place, its target in
    another): the paths the code read, and wrote, through pathlib are exactly those granted."""
    _law("local", probes)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(probes=_tree_strategy())
def test_what_unhardened_worker_code_reaches_is_exactly_what_is_granted(
        probes: list[tuple[str, str, str]]) -> None:
    """The same law in the worker with the audit hook alone (harden=False)."""
    _law("subprocess", probes)
