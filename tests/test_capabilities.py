"""The capability guard on its own: an audit hook that judges actions on the step's thread only.

These tests run plain Python inside `GUARD.step(...)`: what a library would do on the model's
behalf. The guard is process-wide and permanent once installed, like in every executor.
"""

from __future__ import annotations

import ast
import os
import pickle
import socket
import subprocess
import sys
import threading

import pytest

from executors.restricted.capabilities import GUARD, CapabilityError, Grants
from executors.restricted.capabilities.table import ALLOWED, PREFIX_RULES, ROWS


def _policy(source):
    """A stand-in for the restricted policy: no dunder/underscore attribute or name."""
    tree = source if isinstance(source, ast.AST) else ast.parse(source)
    for node in ast.walk(tree):
        name = getattr(node, "attr", None) or getattr(node, "id", None)
        if isinstance(name, str) and name.startswith("_"):
            return f"'{name}' is private"
    return None


@pytest.fixture
def dirs(tmp_path):
    read, write, outside = tmp_path / "read", tmp_path / "write", tmp_path / "outside"
    for d in (read, write, outside):
        d.mkdir()
    (read / "data.csv").write_text("a,b\n1,2\n")
    (outside / "secret.txt").write_text("TOKEN-123")
    return read, write, outside


def grants(dirs, **kw):
    read, write, _ = dirs
    return Grants.of(read=[read], write=[write], check_source=_policy, **kw)


def test_reads_and_writes_follow_the_grants(dirs):
    read, write, outside = dirs
    with GUARD.step(grants(dirs)) as step:
        assert (read / "data.csv").read_text().startswith("a,b")
        (write / "out.txt").write_text("ok")
        assert (write / "out.txt").read_text() == "ok"
        with pytest.raises(CapabilityError, match="files.read"):
            (outside / "secret.txt").read_text()
        with pytest.raises(CapabilityError, match="files.write"):
            (read / "new.txt").write_text("no")
        with pytest.raises(CapabilityError, match="files.write"):
            open(read / "data.csv", "r+")
        with pytest.raises(CapabilityError):
            os.open(str(outside / "secret.txt"), os.O_RDONLY)
        with pytest.raises(CapabilityError, match="files.read"):
            os.listdir(outside)
        with pytest.raises(CapabilityError):
            open("/etc/passwd")
        assert len(step.refusals) == 6
    assert not (read / "new.txt").exists()
    assert open("/etc/passwd").read()  # outside the step: the host's own capabilities


def test_paths_are_judged_on_what_they_resolve_to(dirs):
    read, write, outside = dirs
    (write / "link").symlink_to(outside / "secret.txt")
    (write / "dirlink").symlink_to(outside)
    with GUARD.step(grants(dirs)):
        for path in (write / "link", write / "dirlink" / "secret.txt",
                     f"{write}/../outside/secret.txt", f"/proc/self/root{outside}/secret.txt"):
            with pytest.raises(CapabilityError):
                open(path).read()
        fd_holder = None
    fd_holder = open(outside / "secret.txt")  # opened by the host
    try:
        with GUARD.step(grants(dirs)):
            with pytest.raises(CapabilityError):
                open(f"/proc/self/fd/{fd_holder.fileno()}").read()
            with pytest.raises(CapabilityError, match="descriptor"):
                open(fd_holder.fileno(), closefd=False)
    finally:
        fd_holder.close()


def test_links_and_renames(dirs):
    read, write, outside = dirs
    with GUARD.step(grants(dirs)):
        with pytest.raises(CapabilityError):
            os.link(outside / "secret.txt", write / "hard")
        with pytest.raises(CapabilityError):
            os.link(read / "data.csv", write / "hard")  # would make a read-only file writable
        with pytest.raises(CapabilityError):
            os.rename(read / "data.csv", write / "moved.csv")
        os.symlink("/etc/passwd", write / "sym")  # only a name ...
        with pytest.raises(CapabilityError):
            open(write / "sym").read()  # ... judged by its target
    assert not (write / "hard").exists() and (read / "data.csv").exists()


def test_processes_native_code_and_unpickling_are_refused(tmp_path, dirs):
    marker = tmp_path / "marker"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    payload = pickle.dumps(Evil())
    with GUARD.step(grants(dirs)):
        with pytest.raises(CapabilityError, match="process"):
            os.system(f"touch {marker}")
        with pytest.raises(CapabilityError, match="process"):
            subprocess.run(["touch", str(marker)])
        with pytest.raises(CapabilityError, match="unpickle"):
            pickle.loads(payload)
        with pytest.raises(CapabilityError, match="native"):
            import ctypes

            ctypes.CDLL("libc.so.6")
        with pytest.raises(CapabilityError, match="unpickle"):
            import marshal

            marshal.loads(marshal.dumps(compile("1", "x", "eval")))
        with pytest.raises(CapabilityError, match="process"):
            os.kill(os.getpid(), 0)
        with pytest.raises(CapabilityError, match="environment"):
            os.putenv("CODEAGENT_X", "1")
        with pytest.raises(CapabilityError, match="environment"):
            os.chdir("/")
    assert not marker.exists()
    assert pickle.loads(pickle.dumps([1, 2]))  # plain data needs no class lookup: fine anyway


def test_interpreter_internals(dirs):
    import gc

    with GUARD.step(grants(dirs)):
        for call in (lambda: sys.settrace(None), lambda: sys.setprofile(None),
                     sys._current_frames,
                     gc.get_objects, lambda: gc.get_referrers(object()),
                     lambda: (lambda: 0).__code__.replace(co_name="x")):
            with pytest.raises(CapabilityError, match="interpreter"):
                call()
        with pytest.raises(CapabilityError, match="interpreter"):
            sys._getframe(0)  # this test's frame called into the step: a host frame
        # CPython swallows an Exception raised against sys.addaudithook: the hook is simply not added
        calls = []
        sys.addaudithook(lambda *a: calls.append(a))
    sys.audit("codeagent.test")
    assert calls == []


def test_library_evaluators_go_through_the_policy(dirs):
    import collections
    import dataclasses
    import typing

    def f(x: ().__class__.__base__):  # noqa: F722 - a forward reference that escapes
        return x

    with GUARD.step(grants(dirs)):
        with pytest.raises(CapabilityError, match="evaluator"):
            eval("().__class__.__base__.__subclasses__()")
        with pytest.raises(CapabilityError, match="evaluator"):
            typing.get_type_hints(f)
        assert eval("1 + 2") == 3  # clean source passes the policy

        def model_code():  # a frame made inside the step, as model code's are
            Point = collections.namedtuple("Point", "x y")  # stdlib code generators pass
            assert Point(1, 2).x == 1

            @dataclasses.dataclass
            class D:
                a: int = 1

            return D().a

        assert model_code() == 1


def test_imports_made_during_a_step_still_work(dirs):
    sys.modules.pop("json.tool", None)
    sys.modules.pop("xml.dom.minidom", None)
    with GUARD.step(grants(dirs)):
        import json.tool  # noqa: F401 - unmarshals its .pyc: the import system's own load
        import xml.dom.minidom

        assert xml.dom.minidom.parseString("<a/>").documentElement.tagName == "a"


def test_network_needs_the_grant(dirs):
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    try:
        with GUARD.step(grants(dirs)):
            with pytest.raises(CapabilityError, match="network"):
                socket.create_connection(("127.0.0.1", port), timeout=2)
            with pytest.raises(CapabilityError, match="network"):
                socket.gethostname()
        with GUARD.step(grants(dirs, network=True)):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            with pytest.raises(CapabilityError):
                s = socket.socket(socket.AF_UNIX)
                try:
                    s.connect("/run/codeagent-docker.sock")
                finally:
                    s.close()
    finally:
        server.close()


def test_other_threads_and_tools_keep_the_hosts_capabilities(dirs):
    read, write, outside = dirs
    results = []
    started, release = threading.Event(), threading.Event()

    def host_thread():
        started.set()
        release.wait(5)
        results.append((outside / "secret.txt").read_text())

    t = threading.Thread(target=host_thread)
    t.start()
    with GUARD.step(grants(dirs)):
        started.wait(5)
        release.set()
        t.join(5)
        with GUARD.suspended():  # a host tool called from the step
            results.append((outside / "secret.txt").read_text())
        with pytest.raises(CapabilityError):
            (outside / "secret.txt").read_text()
    assert results == ["TOKEN-123", "TOKEN-123"]


def test_refusals_survive_except_clauses_in_library_code(dirs, tmp_path):
    # The import system swallows PermissionError when it cannot write a .pyc: fine, nothing written.
    pkg = dirs[0] / "modpkg_cap"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("VALUE = 7\n")
    sys.path.insert(0, str(dirs[0]))
    try:
        with GUARD.step(grants(dirs)):
            import modpkg_cap

            assert modpkg_cap.VALUE == 7
        assert not (pkg / "__pycache__").exists()
    finally:
        sys.path.remove(str(dirs[0]))
        sys.modules.pop("modpkg_cap", None)


def test_every_event_this_interpreter_raises_is_classified():
    """A user can read what is enforced: every audit event is in the table or allowed on purpose."""
    import sysconfig

    events = {row.event for row in ROWS} | set(ALLOWED)
    stdlib = sysconfig.get_paths()["stdlib"]
    import re

    found = set()
    pattern = re.compile(r"""\baudit\(\s*["']([A-Za-z_][\w./]*)["']""")
    for root, _dirs, files in os.walk(stdlib):
        if "site-packages" in root or "/test" in root or "idlelib" in root:
            continue
        for name in files:
            if name.endswith(".py"):
                try:
                    text = open(os.path.join(root, name), encoding="utf-8").read()
                except (OSError, UnicodeDecodeError):
                    continue
                found.update(pattern.findall(text))
    found.discard("test_event")
    missing = sorted(e for e in found if e not in events and e.partition(".")[0] not in PREFIX_RULES)
    assert not missing, f"audit events raised by the stdlib but not classified: {missing}"
