"""executors.worker.hardening: Landlock, privilege drop and namespaces, checked against the real kernel.

Every confinement happens in a fresh child Python (never in the pytest process: it is
irreversible). The child imports the package standalone, as the worker will (only the stdlib on
sys.path besides executors/worker/), applies the hardening the test asks for, runs probes and prints
their outcomes with repr() (not json: `import json` after confinement is one of the probes).
Refusals in the Landlock-only tests happen while the child is still root (DAC bypassed), so
each one is Landlock's doing.
"""

from __future__ import annotations

import ast
import marshal
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unavailable import unavailable

WORKER_DIR = str(Path(__file__).resolve().parent.parent / "executors" / "worker")
sys.path.insert(0, WORKER_DIR)
import hardening  # noqa: E402  (standalone, as the worker imports it; safe: nothing applied here)

sys.path.remove(WORKER_DIR)

ABI = hardening.abi_version()
IS_ROOT = os.geteuid() == 0
DOCKER_SOCKET = "/run/codeagent-docker.sock"

CHILD = textwrap.dedent(
    r"""
    import errno, marshal, os, sys
    spec = marshal.loads(bytes.fromhex(sys.argv[1]))
    sys.path.insert(0, spec["worker_dir"])
    import hardening
    fds = {path: os.open(path, os.O_RDONLY) for path in spec.get("pre_open", ())}
    for step in spec.get("before", ()):
        exec(step)
    before = sorted(sys.modules)
    report = None
    if spec.get("harden") is not None:
        report = hardening.harden(**spec["harden"]).to_dict()
    elif spec.get("restrict") is not None:
        grants = dict(spec["restrict"])
        grants["read"] = hardening.python_paths() + grants["read"]  # the child's runtime
        report = hardening.restrict(**grants).to_dict()

    def probe(op, *args):
        if op == "read":
            with open(args[0], "rb") as f:
                return f.read(64)
        if op == "write":
            fd = os.open(args[0], os.O_WRONLY | os.O_APPEND)
            os.write(fd, b"w")
            return os.close(fd)
        if op == "create":
            return os.close(os.open(args[0], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        if op == "read_fd":
            os.lseek(fds[args[0]], 0, 0)
            return os.read(fds[args[0]], 1 << 16)
        if op == "proc_fd":
            with open(f"/proc/self/fd/{fds[args[0]]}", "rb") as f:
                return f.read(64)
        if op == "spawn":
            pid = os.posix_spawn(args[0], [args[0]], {})
            return os.waitpid(pid, 0)[1]
        if op in ("tcp_connect", "tcp_bind", "udp_send", "unix_connect", "abstract_connect"):
            import socket
            if op == "tcp_connect":
                with socket.create_connection(("127.0.0.1", args[0]), timeout=5):
                    return None
            if op == "tcp_bind":
                with socket.socket() as s:
                    return s.bind(("127.0.0.1", 0))
            if op == "udp_send":
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                    return s.sendto(b"ping", ("127.0.0.1", args[0]))
            with socket.socket(socket.AF_UNIX) as s:
                return s.connect(args[0] if op == "unix_connect" else "\0" + args[0])
        if op == "import":
            __import__(args[0])
            return args[0] in before
        if op == "kill_self":
            return os.kill(os.getpid(), args[0])
        if op == "setuid":
            return os.setuid(args[0])
        if op == "ids":
            return os.getresuid(), os.getresgid(), os.getgroups()
        if op == "status":
            with open("/proc/self/status") as f:
                return {k: v.strip() for k, _, v in (l.partition(":") for l in f) if k.startswith("Cap")}
        if op == "harden":
            return hardening.harden(**args[0]).to_dict()
        if op == "restrict":
            return hardening.restrict(*args[0], **args[1]).to_dict()
        return getattr(os, op)(*args)

    results = []
    for op, *args in spec.get("probes", ()):
        try:
            results.append({"ok": True, "value": probe(op, *args)})
        except OSError as exc:
            name = errno.errorcode.get(exc.errno)
            results.append({"ok": False, "errno": name, "type": type(exc).__name__, "msg": str(exc)})
        except Exception as exc:
            results.append({"ok": False, "errno": None, "type": type(exc).__name__, "msg": str(exc)})
    print(repr({"report": report, "results": results}))
    """
)


def run_child(probes=(), *, restrict=None, harden=None, pre_open=(), before=(), timeout=60):
    spec = {
        "worker_dir": WORKER_DIR,
        "restrict": plain(restrict),
        "harden": plain(harden),
        "pre_open": list(pre_open),
        "before": list(before),
        "probes": [[plain(a) for a in p] for p in probes],
    }
    proc = subprocess.run(
        [sys.executable, "-I", "-c", CHILD, marshal.dumps(spec).hex()],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr
    out = ast.literal_eval(proc.stdout.strip().splitlines()[-1])
    return out["report"], out["results"]


def plain(value):
    """Paths to str, recursively: the spec crosses to the child with marshal."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def landlock_only(read=(), write=(), network=False, **kw):
    """restrict() kwargs for the test's grants (the child adds its runtime's read set); the
    child stays root, so every refusal is Landlock's."""
    return {
        "read": [str(p) for p in read],
        "write": [str(p) for p in write],
        "network": network,
        **kw,
    }


@pytest.fixture
def needs_landlock():
    if ABI == 0:
        unavailable(f"Landlock is not usable here: {hardening.landlock.landlock_status()[1]}")


@pytest.fixture
def needs_root():
    if not IS_ROOT:
        unavailable("the privilege-drop and namespace tests need root")


@pytest.fixture
def tree(tmp_path):
    """read/ (granted read), write/ (granted write), outside/ (not granted), a file in each."""
    dirs = {name: tmp_path / name for name in ("read", "write", "outside", "write2")}
    for name, d in dirs.items():
        d.mkdir()
        (d / "file").write_bytes(name.encode())
        (d / "sub").mkdir()
    return dirs


def refused(result, *errnos):
    assert not result["ok"], result
    assert result["errno"] in (errnos or ("EACCES",)), result


def ok(result, whole=False):
    assert result["ok"], result
    value = result["value"]
    return value if whole or not isinstance(value, bytes) else value[:64]


# ------------------------------------------------------------------------------- file system


def test_grants_read_write_and_nothing_else(needs_landlock, tree):
    r, w, o = tree["read"], tree["write"], tree["outside"]
    report, res = run_child(
        [
            ("read", r / "file"),
            ("write", r / "file"),
            ("create", r / "new"),
            ("mkdir", r / "newdir"),
            ("unlink", r / "file"),
            ("read", w / "file"),
            ("write", w / "file"),
            ("create", w / "new"),
            ("mkdir", w / "newdir"),
            ("unlink", w / "new"),
            ("read", o / "file"),
            ("write", o / "file"),
            ("create", o / "new"),
            ("listdir", o),
            ("read", "/etc/passwd"),
            ("read", w / ".." / "outside" / "file"),
            ("write", r / ".." / "outside" / "file"),
            ("read", f"{w}/sub/../../outside/file"),
        ],
        restrict=landlock_only(read=[r], write=[w]),
    )
    assert report["restricted"] and report["abi"] == ABI and report["fs"]
    assert ok(res[0]) == b"read"
    for i in (1, 2, 3, 4):
        refused(res[i])
    assert ok(res[5]) == b"write"
    for i in (6, 7, 8, 9):
        ok(res[i])
    for i in range(10, 18):
        refused(res[i])
    assert (w / "file").read_bytes() == b"writew" and (o / "file").read_bytes() == b"outside"


def test_symlinks_and_hard_links_do_not_leave_the_grants(needs_landlock, tree):
    r, w, o = tree["read"], tree["write"], tree["outside"]
    (r / "to_passwd").symlink_to("/etc/passwd")
    (r / "to_outside").symlink_to(o / "file")
    (w / "to_read").symlink_to(r / "file")
    _, res = run_child(
        [
            ("read", r / "to_passwd"),
            ("read", r / "to_outside"),
            ("symlink", "/etc/passwd", w / "made_by_child"),
            ("read", w / "made_by_child"),
            ("link", o / "file", w / "hardlink"),
            ("link", "/etc/passwd", w / "hardlink2"),
            ("link", w / "file", w / "sub" / "hardlink_inside"),
            ("read", w / "to_read"),
            ("write", w / "to_read"),
        ],
        restrict=landlock_only(read=[r], write=[w]),
    )
    refused(res[0])
    refused(res[1])
    ok(res[2])  # MAKE_SYM is granted in write dirs: the link may exist...
    refused(res[3])  # ...but opening it checks the target
    refused(res[4], "EACCES", "EXDEV")
    refused(res[5], "EACCES", "EXDEV")
    ok(res[6])
    assert ok(res[7]) == b"read"  # a symlink in a write grant to a read grant: read only
    refused(res[8])
    assert not (w / "hardlink").exists() and not (w / "hardlink2").exists()


def test_proc_self_magic_links_resolve_to_their_target(needs_landlock, tree):
    """/proc granted read: /proc/self/root/etc/passwd is still refused (Landlock checks the
    object the magic link resolves to), while /proc/self/root/<read grant>/file is allowed."""
    r = tree["read"]
    _, res = run_child(
        [
            ("read", "/proc/self/status"),
            ("read", "/proc/self/root/etc/passwd"),
            ("read", f"/proc/self/root{r}/file"),
            ("read", f"/proc/self/cwd/{'../' * 16}etc/passwd"),
        ],
        restrict=landlock_only(read=[r, "/proc"]),
    )
    assert ok(res[0]).startswith(b"Name:")
    refused(res[1])
    assert ok(res[2]) == b"read"
    refused(res[3])


def test_fds_opened_before_confinement_stay_usable_but_cannot_be_reopened(needs_landlock, tree):
    """Landlock does not revoke open descriptors: the worker must close what it does not need
    before it confines itself. Re-opening through /proc/self/fd/N is a new open, and refused."""
    secret = tree["outside"] / "file"
    _, res = run_child(
        [("read_fd", str(secret)), ("proc_fd", str(secret))],
        restrict=landlock_only(),
        pre_open=[str(secret)],
    )
    assert ok(res[0]) == b"outside"
    refused(res[1])


def test_rename_and_refer(needs_landlock, tree):
    r, w, w2, o = tree["read"], tree["write"], tree["write2"], tree["outside"]
    (w / "sub" / "inner").write_text("x")
    _, res = run_child(
        [
            ("rename", w / "sub", w / "moved"),
            ("rename", w / "moved", w2 / "moved"),
            ("rename", w2 / "moved", r / "moved"),
            ("rename", w2 / "moved", o / "moved"),
            ("rename", r / "file", w / "stolen"),
            ("rename", w, o / "write_renamed"),
            ("rename", r / "sub", r / "sub_renamed"),
        ],
        restrict=landlock_only(read=[r], write=[w, w2]),
    )
    ok(res[0])
    ok(res[1])  # between two write grants: REFER allows it
    for i in range(2, 7):
        refused(res[i], "EACCES", "EXDEV")
    assert (w2 / "moved" / "inner").read_text() == "x" and (r / "file").exists()


def test_truncate_and_exec_are_refused(needs_landlock, tree):
    r = tree["read"]
    _, res = run_child(
        [("truncate", r / "file", 0), ("spawn", "/bin/true"), ("spawn", sys.executable)],
        restrict=landlock_only(read=[r, "/bin", "/usr/bin"]),
    )
    if ABI >= 3:
        refused(res[0])
    refused(res[1])  # no EXECUTE anywhere: not even the interpreter may be exec'd again
    refused(res[2])
    assert (r / "file").read_bytes() == b"read"


def test_execute_grants_allow_exec_of_exactly_those_files(needs_landlock, tree):
    """execve needs EXECUTE on the binary and on its ELF interpreter (the kernel opens both)."""
    true = shutil.which("true")
    libs = [d for d in ("/lib", "/lib64", "/usr/lib", "/usr/lib64") if os.path.isdir(d)]
    _, res = run_child(
        [("spawn", true), ("spawn", sys.executable)],
        restrict=landlock_only(execute=[true, *libs]),
    )
    assert ok(res[0]) == 0
    refused(res[1])


def test_missing_paths_are_skipped_and_file_rules_get_file_rights(needs_landlock, tree):
    missing = tree["read"] / "does-not-exist"
    report, _ = run_child(
        restrict=landlock_only(
            read=[missing, tree["read"] / "file"], write=[tree["write"] / "file"]
        )
    )
    assert report["skipped"] == [{"path": str(missing), "reason": "does not exist"}]
    rules = {rule["path"]: rule for rule in report["rules"]}
    assert rules[str(tree["read"] / "file")] == {
        "path": str(tree["read"] / "file"),
        "kind": "file",
        "access": ["READ_FILE"],
    }
    write_rule = rules[str(tree["write"] / "file")]
    assert write_rule["kind"] == "file" and "MAKE_REG" not in write_rule["access"]
    assert {"WRITE_FILE", "READ_FILE"} <= set(write_rule["access"])


# ------------------------------------------------------------------------------------ network


@pytest.fixture
def listeners():
    servers = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    yield [s.getsockname()[1] for s in servers]
    for s in servers:
        s.close()


@pytest.mark.parametrize(
    "network, expect_first, expect_second, expect_bind",
    [(False, False, False, False), (True, True, True, True), ("first", True, False, False)],
)
def test_tcp(needs_landlock, listeners, network, expect_first, expect_second, expect_bind):
    if ABI < 4:
        unavailable(f"TCP rules need Landlock ABI 4, this kernel has {ABI}")
    first, second = listeners
    grant = [first] if network == "first" else network
    report, res = run_child(
        [("tcp_connect", first), ("tcp_connect", second), ("tcp_bind",)],
        restrict=landlock_only(network=grant),
    )
    assert report["tcp"] == {False: "denied", True: "open"}.get(network, "ports")
    for result, expected in zip(res, (expect_first, expect_second, expect_bind), strict=True):
        if expected:
            ok(result)
        else:
            refused(result)


def test_udp_is_not_landlocks_but_the_network_namespace_stops_it(needs_landlock, needs_root):
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(5)
    port = receiver.getsockname()[1]
    try:
        report, res = run_child([("udp_send", port)], restrict=landlock_only(network=False))
        ok(res[0])
        assert receiver.recv(16) == b"ping"  # Landlock (ABI < 10) lets UDP through
        assert "UDP and other non-TCP sockets" in report["not_covered"]
        report, res = run_child([("udp_send", port), ("tcp_bind",)], harden={"network": False})
        assert report["namespaces"]["net"] == "on"
        assert report["namespaces"]["interfaces"] == ["lo"]
        refused(res[0], "ENETUNREACH")
        refused(res[1], "EACCES", "EADDRNOTAVAIL")
        receiver.settimeout(0.3)
        with pytest.raises(TimeoutError):
            receiver.recv(16)
    finally:
        receiver.close()


# --------------------------------------------------------------------------- UNIX sockets, IPC


@pytest.fixture
def root_only_socket(tmp_path):
    """A pathname UNIX socket outside every grant, mode 0600 root, in a world-searchable dir."""
    d = Path(tempfile.mkdtemp(prefix="hardening-sock-"))
    d.chmod(0o755)
    path = d / "s"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(8)
    path.chmod(0o600)
    yield str(path)
    server.close()
    shutil.rmtree(d)


def test_pathname_unix_sockets_need_the_privilege_drop(
    needs_landlock, needs_root, root_only_socket
):
    """Below ABI 9 Landlock does not govern connect() to an existing pathname socket: as root the
    confined child still reaches a socket outside its grants. Fully hardened, the socket is not
    in the worker's own root at all (and the drop to nobody would refuse it), and so for the
    Docker engine's root-only socket."""
    _, res = run_child([("unix_connect", root_only_socket)], restrict=landlock_only())
    if ABI < 9:
        ok(res[0])
    else:
        refused(res[0])
    probes = [("unix_connect", root_only_socket)]
    if os.path.exists(DOCKER_SOCKET):
        probes.append(("unix_connect", DOCKER_SOCKET))
    report, res = run_child(probes, harden={"network": False})
    assert report["privileges"]["dropped"]
    for result in res:
        refused(result, "ENOENT")


@pytest.fixture
def abstract_listener():
    name = f"codeagent-hardening-{os.getpid()}"
    server = socket.socket(socket.AF_UNIX)
    server.bind("\0" + name)
    server.listen(8)
    yield name
    server.close()


@pytest.mark.parametrize("scope", [True, False])
def test_scopes_signals_and_abstract_sockets(needs_landlock, abstract_listener, scope):
    if ABI < 6:
        unavailable(f"scopes need Landlock ABI 6, this kernel has {ABI}")
    parent = os.getpid()
    report, res = run_child(
        [("kill", parent, 0), ("kill_self", 0), ("abstract_connect", abstract_listener)],
        restrict=landlock_only(scope=scope),
    )
    assert report["scopes"] == (["ABSTRACT_UNIX_SOCKET", "SIGNAL"] if scope else [])
    if scope:
        refused(res[0], "EPERM")
        refused(res[2], "EPERM")
    else:
        ok(res[0])
        ok(res[2])
    ok(res[1])  # itself: inside its own domain


def test_signals_to_itself_are_delivered(needs_landlock):
    """The worker's own timers and self-signals keep working inside the domain."""
    _, res = run_child(
        [("kill_self", int(signal.SIGUSR1)), ("getpid",)],
        restrict=landlock_only(),
        before=["import signal; signal.signal(signal.SIGUSR1, lambda *a: print('got it'))"],
    )
    ok(res[0])
    ok(res[1])


def test_workers_of_the_same_user_cannot_signal_each_other(needs_landlock, needs_root):
    """All workers become `nobody`: uid alone would let one signal another. Each has its own
    Landlock domain, and the signal scope keeps them apart (with scope=False the kill succeeds)."""
    if ABI < 6:
        unavailable(f"scopes need Landlock ABI 6, this kernel has {ABI}")
    sleeper = subprocess.Popen(
        [
            sys.executable,
            "-I",
            "-c",
            "import sys, time; sys.path.insert(0, sys.argv[1]); import hardening; "
            "hardening.harden(network=False); print('ready', flush=True); time.sleep(30)",
            WORKER_DIR,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert sleeper.stdout.readline().strip() == "ready"
        report, res = run_child([("kill", sleeper.pid, 0)], harden={"network": False})
        assert report["privileges"]["uid"] == pwd.getpwnam("nobody").pw_uid
        refused(res[0], "EPERM")
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


# -------------------------------------------------------------------------------- privileges


@pytest.fixture
def shared_tree():
    """Grant dirs the dropped user can use: world-searchable parent, write dir owned by nobody."""
    nobody = pwd.getpwnam("nobody")
    base = Path(tempfile.mkdtemp(prefix="hardening-"))
    base.chmod(0o755)
    dirs = {name: base / name for name in ("read", "write", "outside")}
    for name, d in dirs.items():
        d.mkdir(mode=0o755)
        (d / "file").write_bytes(name.encode())
        (d / "file").chmod(0o644)
    os.chown(dirs["write"], nobody.pw_uid, nobody.pw_gid)
    os.chown(dirs["write"] / "file", nobody.pw_uid, nobody.pw_gid)
    yield dirs
    shutil.rmtree(base)


def test_full_hardening_drops_root_for_good(needs_landlock, needs_root, shared_tree):
    r, w, o = shared_tree["read"], shared_tree["write"], shared_tree["outside"]
    report, res = run_child(
        [
            ("ids",),
            ("setuid", 0),
            ("read_fd", "/proc/self/status"),
            ("setgroups", [0]),
            ("read", r / "file"),
            ("write", w / "file"),
            ("read", o / "file"),
            ("read", "/etc/passwd"),
        ],
        harden={"read": [str(r)], "write": [str(w)], "network": False},
        pre_open=["/proc/self/status"],  # /proc is not granted: read it through an earlier fd
    )
    nobody = pwd.getpwnam("nobody")
    priv = report["privileges"]
    assert priv["dropped"] and priv["regain_refused"] and priv["uid"] == nobody.pw_uid
    assert not any(priv["capabilities"].values())
    assert report["unusable_grants"] == []
    uid, gid = nobody.pw_uid, nobody.pw_gid
    assert ok(res[0]) == ((uid, uid, uid), (gid, gid, gid), [])
    refused(res[1], "EPERM")
    caps = [line for line in ok(res[2], whole=True).splitlines() if line.startswith(b"Cap")]
    assert len(caps) == 5 and all(int(line.split()[1], 16) == 0 for line in caps), caps
    refused(res[3], "EPERM")
    assert ok(res[4]) == b"read"
    ok(res[5])
    refused(res[6], "ENOENT")  # not in the worker's own root at all
    refused(res[7], "ENOENT")


def test_grants_the_dropped_user_cannot_use_are_reported(needs_landlock, needs_root, tree):
    tree["write"].chmod(0o700)  # root's, as tempfile makes them
    report, _ = run_child(harden={"write": [str(tree["write"])], "network": False})
    assert report["unusable_grants"] == [[str(tree["write"]), "write"]]


def test_imports_still_work_after_full_hardening(needs_landlock, needs_root):
    """Modules not yet imported load after Landlock + drop to nobody, even though this machine's
    Python lives under /root (0700): the worker's own root binds the runtime at its own path
    under directories every user may search."""
    modules = ["decimal", "sqlite3", "json", "zoneinfo", "ssl"]
    report, res = run_child([("import", m) for m in modules], harden={"network": False})
    assert report["privileges"]["dropped"] and report["landlock"]["restricted"]
    for module, result in zip(modules, res, strict=True):
        assert ok(result) is False, f"{module} was imported before confinement"
    assert report["mounts"]["namespace"] == "on"
    assert os.path.realpath(sys.base_prefix) in report["mounts"]["read"]


def test_a_fresh_network_namespace_is_shareable_and_a_populated_one_is_refused(needs_landlock, needs_root):
    """`shareable` says which namespaces a later worker may join; joining verifies: the host's
    own network namespace (interfaces besides lo) is refused before anything else happens."""
    report, _ = run_child(harden={"network": False})
    assert report["shareable"] == {"net": True}
    host_net = "import os\nos.dup2(os.open('/proc/self/ns/net', os.O_RDONLY), 50)"
    _, res = run_child([("harden", {"network": False, "join": {"net": 50}}), ("ids",)], before=[host_net])
    assert res[0]["type"] == "HardeningError" and "not empty" in res[0]["msg"], res[0]
    assert ok(res[1])[0] == (0, 0, 0)  # nothing was applied: still root


def test_numpy_imports_after_full_hardening(needs_landlock, needs_root):
    try:
        import numpy  # noqa: F401
    except ImportError:
        pytest.skip("numpy is not installed in this environment")
    _, res = run_child([("import", "numpy")], harden={"network": False})
    assert ok(res[0]) is False


def test_without_root_the_drop_is_a_reported_no_op(needs_landlock, tree):
    """What a developer's non-root worker gets: Landlock still, no drop, no namespaces."""
    before = [
        "os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)"
    ]
    if not IS_ROOT:
        before = []
    report, res = run_child([("read", "/etc/passwd")], harden={"network": False}, before=before)
    assert not report["privileges"]["was_root"] and not report["privileges"]["dropped"]
    assert report["privileges"]["note"].startswith("not root")
    assert not any(report["privileges"]["capabilities"].values())
    # an ordinary user's worker gets its own user namespace, and in it the network and mounts
    assert report["namespaces"]["user"] == "on" and report["namespaces"]["net"] == "on"
    assert report["mounts"]["namespace"] == "on"
    assert report["landlock"]["restricted"]
    refused(res[0], "ENOENT")


def test_the_host_mount_namespace_is_untouched(needs_landlock, needs_root):
    def mount_points():
        return {line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()}

    before = mount_points()
    report, _ = run_child(harden={"network": False})
    assert report["mounts"]["namespace"] == "on"
    assert mount_points() == before  # the tmpfs root, the binds, the private /tmp: none here
    assert os.path.isdir("/tmp") and os.listdir("/root")  # the host's own, as they were


# ---------------------------------------------------------------------------- contract, errors


def test_threads_are_refused_and_nothing_is_applied(needs_landlock):
    _, res = run_child(
        [("restrict", [[], []], {"network": False}), ("read", "/etc/passwd")],
        before=[
            "import threading, time; threading.Thread(target=time.sleep, args=(5,), daemon=True).start()"
        ],
    )
    assert res[0]["type"] == "HardeningError" and "threads" in res[0]["msg"]
    assert ok(res[1])


def test_bad_input_is_refused_before_anything_is_applied(needs_landlock):
    calls = [
        ([["/tmp"], []], {"network": "yes"}),
        ([["/tmp"], []], {"network": [0]}),
        ([["/tmp"], []], {"network": [70000]}),
        ([["/tmp"], []], {"network": [True]}),
        (["/tmp", []], {}),
        ([[1], []], {}),
    ]
    _, res = run_child([("restrict", a, k) for a, k in calls] + [("read", "/etc/passwd")])
    assert [r["type"] for r in res[:-1]] == [
        "TypeError",
        "ValueError",
        "ValueError",
        "ValueError",
        "TypeError",
        "TypeError",
    ]
    assert ok(res[-1])


def test_harden_checks_its_arguments_before_any_irreversible_step(needs_root, listeners):
    """A bad user or grant list raises before the network namespace, the mounts or the drop."""
    bad = [{"user": "no-such-user-xyz"}, {"read": "/tmp"}, {"network": "no"}]
    _, res = run_child(
        [("harden", kw) for kw in bad]
        + [("ids",), ("tcp_connect", listeners[0]), ("read", "/etc/passwd")]
    )
    assert [r["type"] for r in res[:3]] == ["ValueError", "TypeError", "TypeError"]
    assert ok(res[3])[0] == (0, 0, 0)  # still root
    ok(res[4])  # still in the host's network
    ok(res[5])  # no Landlock domain


def test_bad_users_are_refused():
    for user, exc in (
        ("no-such-user-xyz", ValueError),
        (0, ValueError),
        ((0, 0), ValueError),
        (1.5, TypeError),
    ):
        with pytest.raises(exc):
            hardening.privileges.resolve_user(user)  # pure: looks the user up, changes nothing


def test_users_given_as_ids_resolve_without_the_password_database():
    """A (uid, gid) pair is what the executors pass: no /etc/passwd lookup, no `pwd` import."""
    assert hardening.privileges.resolve_user((65534, 65534)) == ("65534", 65534, 65534)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import hardening; sys.modules.pop('pwd', None); "
            "hardening.privileges.resolve_user((65534, 65534)); print('pwd' in sys.modules)")
    out = subprocess.run([sys.executable, "-I", "-c", code, WORKER_DIR], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


def test_the_runtime_read_set_follows_sys_path(tmp_path, monkeypatch):
    """python_paths() is memoized per process (a zygote computes it for its workers), on the
    sys values it reads: a sys.path entry added or removed is seen at once."""
    before = hardening.python_paths()
    assert hardening.python_paths() == before and hardening.python_paths() is not hardening.python_paths()
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path)])
    added = hardening.python_paths()
    assert set(added) - set(before) == {str(tmp_path)} and len(added) == len(before) + 1
    monkeypatch.undo()
    assert hardening.python_paths() == before
    assert hardening.python_paths(network=True) == [p for p, _ in hardening.python_paths_explained(network=True)]


def test_the_interface_list_is_the_same_with_or_without_the_socket_module(monkeypatch):
    """The network namespace check lists interfaces with if_nameindex when _socket is loaded
    (cheaper in a forked worker) and from /proc/self/net/dev otherwise: the same names."""
    import _socket  # noqa: F401 - loaded, so the first answer uses it

    with_socket = hardening.privileges._interfaces()
    monkeypatch.delitem(sys.modules, "_socket")
    without = hardening.privileges._interfaces()
    assert with_socket and sorted(with_socket) == sorted(without)


def test_reports_are_frozen_and_plain(needs_landlock):
    report, _ = run_child(restrict=landlock_only())
    rebuilt = hardening.LandlockReport(**{k: v for k, v in report.items()})
    with pytest.raises(AttributeError):
        rebuilt.abi = 0
    assert rebuilt.to_dict()["abi"] == ABI and rebuilt == hardening.LandlockReport(**report)


def test_the_package_is_stdlib_only():
    code = (
        "import sys; before = set(sys.modules); sys.path.insert(0, sys.argv[1]); import hardening; "
        "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
        "print(sorted(new - set(sys.stdlib_module_names) - {'hardening'}))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", code, WORKER_DIR],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "[]"


def test_abi_is_zero_off_linux_or_on_unverified_arches(monkeypatch):
    monkeypatch.setattr(
        hardening._kernel.os, "uname", lambda: os.uname_result(("L", "h", "r", "v", "mips"))
    )
    assert "mips" in hardening._kernel.unsupported_reason()
    monkeypatch.setattr(hardening._kernel.sys, "platform", "darwin")
    assert "not Linux" in hardening._kernel.unsupported_reason()


# ------------------------------------------------------------------------------ the law


@st.composite
def trees(draw):
    """Directories with a role, files in them, and symlinks (possibly chained) across them."""
    roles = draw(st.lists(st.sampled_from(["read", "write", "none"]), min_size=2, max_size=5))
    files = [(d, f"f{i}") for d in range(len(roles)) for i in range(draw(st.integers(1, 3)))]
    links = []
    for i in range(draw(st.integers(0, 8))):
        home = draw(st.integers(0, len(roles) - 1))
        targets = [("file", t) for t in range(len(files))] + [
            ("link", t) for t in range(len(links))
        ]
        links.append((home, f"l{i}", draw(st.sampled_from(targets))))
    dotdot = draw(
        st.lists(
            st.tuples(st.integers(0, len(roles) - 1), st.integers(0, len(files) - 1)), max_size=4
        )
    )
    return roles, files, links, dotdot


def _build(base: Path, roles, files, links, dotdot) -> list[str]:
    dirs = [base / f"d{i}_{role}" for i, role in enumerate(roles)]
    for d in dirs:
        d.mkdir()
    paths = []
    for d, name in files:
        (dirs[d] / name).write_text(name)
        paths.append(str(dirs[d] / name))
    file_paths = list(paths)
    link_paths: list[str] = []
    for home, name, (kind, t) in links:
        link = dirs[home] / name
        link.symlink_to(file_paths[t] if kind == "file" else link_paths[t])
        link_paths.append(str(link))
    paths += link_paths
    for d, f in dotdot:
        paths.append(f"{dirs[d]}/../{os.path.relpath(file_paths[f], base)}")
    return paths


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(trees())
def test_what_succeeds_is_exactly_what_the_grants_allow(needs_landlock, spec):
    """Law: reading a path succeeds iff the file it resolves to lies under a read or write
    grant; opening it for writing succeeds iff that file lies under a write grant."""
    roles, files, links, dotdot = spec
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(os.path.realpath(tmp))
        paths = _build(base, roles, files, links, dotdot)
        granted = {
            role: [str(base / f"d{i}_{r}") for i, r in enumerate(roles) if r == role]
            for role in roles
        }
        read_dirs, write_dirs = granted.get("read", []), granted.get("write", [])
        probes = [("read", p) for p in paths] + [("write", p) for p in paths]
        _, res = run_child(probes, restrict=landlock_only(read=read_dirs, write=write_dirs))

        def under(path, dirs):
            real = os.path.realpath(path)
            return any(real.startswith(d + "/") for d in dirs)

        expected = [under(p, read_dirs + write_dirs) for p in paths] + [
            under(p, write_dirs) for p in paths
        ]
        assert [r["ok"] for r in res] == expected, list(zip(probes, res, strict=True))
        assert all(r["ok"] or r["errno"] == "EACCES" for r in res)


def test_closed_ancestors_follow_the_permission_bits(needs_root, tmp_path):
    """Pure (stat only): which directories above a path the dropped user could not enter."""
    outer = tmp_path / "outer"
    inner = outer / "inner"
    (inner / "deep").mkdir(parents=True)
    target = str(inner / "deep" / "file")
    Path(target).write_text("x")
    tmp_path.chmod(0o755)
    outer.chmod(0o755)
    inner.chmod(0o700)
    nobody = pwd.getpwnam("nobody")
    found = hardening.runtime.closed_ancestors(target, nobody.pw_uid, nobody.pw_gid)
    assert [p for p in found if p.startswith(str(tmp_path))] == [str(inner)]
    outer.chmod(0o711)  # search without read is enough to pass through
    found = hardening.runtime.closed_ancestors(target, nobody.pw_uid, nobody.pw_gid)
    assert [p for p in found if p.startswith(str(tmp_path))] == [str(inner)]
    outer.chmod(0o700)
    found = hardening.runtime.closed_ancestors(target, nobody.pw_uid, nobody.pw_gid)
    assert [p for p in found if p.startswith(str(tmp_path))] == [str(outer), str(inner)]
    os.chown(inner, nobody.pw_uid, nobody.pw_gid)  # the owner's bits apply to the owner
    found = hardening.runtime.closed_ancestors(target, nobody.pw_uid, nobody.pw_gid)
    assert [p for p in found if p.startswith(str(tmp_path))] == [str(outer)]
