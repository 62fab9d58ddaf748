"""The owned worker: what code that already owns the worker's interpreter can reach, per
configuration. Helpers of tests/test_owned_worker.py, and a command for its unprivileged half.

The probe (PROBE) runs in a SubprocessExecutor worker after every layer is in force, under the
open policy: no guard at all, ctypes and raw system calls through libc, the position of an
attacker who turned the guard off with raw memory. It tries each thing of the threat model
(files outside the grants, sockets of every family, the host's processes, new namespaces, the
kernel surface a worker does not need, privileges) and returns, per check, the errno it got or
"REACHED". The host side (Traps) listens on every way back: a canary in the host user's home,
UDP/TCP listeners on its loopback (IPv4 and IPv6), a world-writable UNIX datagram socket and a
UNIX stream listener in its /tmp, an abstract UNIX listener; after the probe, nothing may have
arrived and nothing may have changed.

    python tests/owned_worker.py --as-user UID GID HOME CONFIG...   (as root: the ordinary user's
        half; the runtime under /root is exposed in a private mount namespace, then the process
        becomes UID:GID and runs `--run`)
    python tests/owned_worker.py --run CONFIG...                    (prints one JSON line)

x86_64 only (the probe's syscall numbers); the tests say so elsewhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Each configuration: the layers left out (as a kernel without them would).
CONFIGS = {
    "full": (),
    "no Landlock": ("landlock",),
    "no namespaces": ("namespaces",),
    "no namespaces, no Landlock": ("namespaces", "landlock"),
    "no seccomp": ("seccomp",),
}

PROBE = textwrap.dedent(r'''
    import ctypes, errno, os, struct, sys
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    L = ctypes.c_long
    HOST, HOME, CANARY, TAG = {host_pid}, {home!r}, {canary!r}, {tag!r}
    PORTS, UNIX_DGRAM, UNIX_STREAM, ABSTRACT = {ports!r}, {unix_dgram!r}, {unix_stream!r}, {abstract!r}
    SYSTEM_SOCKETS = [p for p in ("/dev/log", "/run/systemd/journal/socket", "/run/dbus/system_bus_socket",
                                  "/var/run/docker.sock", "/run/codeagent-docker.sock")]
    out = {{}}

    def sys_(nr, *args):
        ctypes.set_errno(0)
        r = libc.syscall(L(nr), *[a if isinstance(a, (bytes, ctypes.Array)) or a is None else L(a) for a in args])
        return r, ctypes.get_errno()

    def check(name, r, err, held):
        out[name] = errno.errorcode.get(err, str(err)) if r < 0 and err in held else f"REACHED ({{r}}, {{errno.errorcode.get(err, err)}})"

    FILES = {{errno.EACCES, errno.ENOENT, errno.EROFS, errno.EPERM}}
    AT_FDCWD, O_RDONLY, O_WRONLY, O_CREAT = -100, 0, 1, 0o100
    def openat(path, flags=O_RDONLY):
        r, e = sys_(257, AT_FDCWD, path.encode() + b"\0", flags, 0o644)
        if r >= 0:
            os.close(r)
        return r, e
    check("read a file in the host's home", *openat(CANARY), FILES)
    check("create a file in the host's home", *openat(HOME + "/owned-" + TAG, O_WRONLY | O_CREAT), FILES)
    try:
        st = os.stat(HOME)
        out["stat the host's home"] = f"STAT {{st.st_dev}} {{st.st_ino}}"  # the host compares
    except OSError as e:
        out["stat the host's home"] = errno.errorcode[e.errno]
    check("read /etc/shadow", *openat("/etc/shadow"), FILES)
    check("write into the runtime", *openat(sys.prefix + "/owned-" + TAG, O_WRONLY | O_CREAT), FILES)
    check("open /proc/<host>/mem", *openat(f"/proc/{{HOST}}/mem"), FILES)
    check("open /proc/<host>/environ", *openat(f"/proc/{{HOST}}/environ"), FILES)

    # sockets: creating one is already too much with network=False (seccomp answers EPERM)
    SOCK = {{errno.EPERM, errno.EACCES, errno.EAFNOSUPPORT}}
    AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET = 1, 2, 10, 16, 17
    DGRAM, STREAM, RAW = 2, 1, 3
    def sock(family, kind, proto=0):
        return sys_(41, family, kind, proto)
    def addr_in(port):
        return struct.pack("=H", AF_INET) + struct.pack("!H", port) + bytes([127, 0, 0, 1]) + bytes(8)
    def addr_in6(port):
        return struct.pack("=H", AF_INET6) + struct.pack("!HI", port, 0) + bytes(15) + b"\1" + bytes(4)
    def addr_un(path):
        return struct.pack("=H", AF_UNIX) + path.encode() + b"\0"
    def attempt(name, family, kind, address, send):
        fd, e = sock(family, kind)
        if fd < 0:
            check(name, fd, e, SOCK)
            return
        buf = ctypes.create_string_buffer(address)
        if send:
            r, e = sys_(44, fd, b"owned", 5, 0, buf, len(address))
        else:
            r, e = sys_(42, fd, buf, len(address))
        os.close(fd)
        out[name] = ("sent" if r >= 0 else errno.errorcode.get(e, str(e))) + " (socket made)"
    attempt("UDP to the host's loopback", AF_INET, DGRAM, addr_in(PORTS["udp4"]), True)
    attempt("TCP to the host's loopback", AF_INET, STREAM, addr_in(PORTS["tcp4"]), False)
    if PORTS.get("udp6"):
        attempt("UDP6 to the host's loopback", AF_INET6, DGRAM, addr_in6(PORTS["udp6"]), True)
        attempt("TCP6 to the host's loopback", AF_INET6, STREAM, addr_in6(PORTS["tcp6"]), False)
    attempt("datagram to a world-writable host UNIX socket", AF_UNIX, DGRAM, addr_un(UNIX_DGRAM), True)
    attempt("connect to a host UNIX listener", AF_UNIX, STREAM, addr_un(UNIX_STREAM), False)
    attempt("connect to a host abstract UNIX listener", AF_UNIX, STREAM,
            struct.pack("=H", AF_UNIX) + b"\0" + ABSTRACT.encode(), False)
    for path in SYSTEM_SOCKETS:
        attempt(f"datagram to {{path}}", AF_UNIX, DGRAM, addr_un(path), True)
    check("netlink socket", *sock(AF_NETLINK, RAW, 0), SOCK)
    check("packet socket", *sock(AF_PACKET, RAW, 0), SOCK)

    # other processes
    GONE = {{errno.EPERM, errno.ESRCH}}
    check("ptrace attach the host", *sys_(101, 16, HOST, 0, 0), GONE)
    check("ptrace seize the host", *sys_(101, 0x4206, HOST, 0, 0), GONE)
    local, remote = ctypes.create_string_buffer(16), struct.pack("=QQ", 0x400000, 16)
    iov = struct.pack("=QQ", ctypes.addressof(local), 16)
    check("process_vm_readv of the host", *sys_(310, HOST, iov, 1, remote, 1, 0), GONE)
    check("process_vm_writev of the host", *sys_(311, HOST, iov, 1, remote, 1, 0), GONE)
    check("signal the host", *sys_(62, HOST, 0), GONE)
    # (not kill(-1, ...): it answers 0 when every target refused it, and a broken configuration
    # would signal every process of the user)
    check("pidfd_open the host", *sys_(434, HOST, 0), GONE | {{errno.ENOSYS}})

    # programs and namespaces
    EXEC = {{errno.EPERM, errno.EACCES, errno.ENOENT}}
    for program in ("/bin/sh", sys.executable):
        pid = os.fork()
        if pid == 0:
            argv = (ctypes.c_char_p * 2)(program.encode(), None)
            r, e = sys_(59, program.encode(), argv, None)
            os._exit(100 + min(e, 100))
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        err = status - 100 if status >= 100 else 0
        check(f"execve {{program}}", -1 if err else 0, err, EXEC)
    SURFACE = {{errno.EPERM, errno.ENOSYS}}
    for name, flag in (("user", 0x10000000), ("mount", 0x20000), ("network", 0x40000000), ("PID", 0x20000000)):
        check(f"unshare a {{name}} namespace", *sys_(272, flag), SURFACE)
    r, e = sys_(56, 0x10000000 | 17, 0, 0, 0, 0)  # clone(CLONE_NEWUSER | SIGCHLD)
    if r == 0:
        os._exit(0)
    if r > 0:
        os.waitpid(r, 0)
    check("clone into a new user namespace", r, e, SURFACE)
    check("setns", *sys_(308, 0, 0), SURFACE)
    check("mount a tmpfs", *sys_(165, b"none\0", b"/tmp\0", b"tmpfs\0", 0, None), SURFACE)
    check("umount /", *sys_(166, b"/\0", 2), SURFACE)
    check("chroot", *sys_(161, b"/tmp\0"), SURFACE)
    check("pivot_root", *sys_(155, b".\0", b".\0"), SURFACE)
    check("bpf", *sys_(321, 0, 0, 0), SURFACE)
    check("perf_event_open", *sys_(298, 0, 0, -1, -1, 0), SURFACE)
    check("keyctl", *sys_(250, 0, -3, 0), SURFACE)
    check("add_key", *sys_(248, b"user\0", b"x\0", b"y", 1, -3), SURFACE)
    check("userfaultfd", *sys_(323, 0), SURFACE)
    check("io_uring_setup", *sys_(425, 1, 0), SURFACE)
    check("init_module", *sys_(175, 0, 0, b"\0"), SURFACE)
    check("kexec_load", *sys_(246, 0, 0, 0, 0), SURFACE)
    check("open_by_handle_at", *sys_(304, AT_FDCWD, 0, 0), SURFACE)
    check("setuid(0)", *sys_(105, 0), SURFACE)
    check("setresuid(0, 0, 0)", *sys_(117, 0, 0, 0), SURFACE)
    out
''')


class Traps:
    """Everything the probe may try to reach on the host, and whether anything arrived."""

    def __init__(self, home: str) -> None:
        self.home = home
        self.tag = f"{os.getpid()}-{os.urandom(3).hex()}"
        self.canary = os.path.join(home, f".codeagent-owned-canary-{self.tag}")
        Path(self.canary).write_text("host secret\n")
        os.chmod(self.canary, 0o644)  # readable by anyone: only the layers may stop the read
        self._dir = tempfile.mkdtemp(prefix="codeagent-owned-", dir="/tmp")
        os.chmod(self._dir, 0o777)
        self.sockets: dict[str, socket.socket] = {}
        self.ports: dict[str, int] = {}
        for name, family, kind, host in (("udp4", socket.AF_INET, socket.SOCK_DGRAM, "127.0.0.1"),
                                         ("tcp4", socket.AF_INET, socket.SOCK_STREAM, "127.0.0.1"),
                                         ("udp6", socket.AF_INET6, socket.SOCK_DGRAM, "::1"),
                                         ("tcp6", socket.AF_INET6, socket.SOCK_STREAM, "::1")):
            try:
                s = socket.socket(family, kind)
                s.bind((host, 0))
            except OSError:  # no IPv6 loopback here
                continue
            if kind == socket.SOCK_STREAM:
                s.listen(8)
            s.setblocking(False)
            self.sockets[name] = s
            self.ports[name] = s.getsockname()[1]
        self.unix_dgram = os.path.join(self._dir, "dgram.sock")
        self.unix_stream = os.path.join(self._dir, "stream.sock")
        self.abstract = f"codeagent-owned-{self.tag}"
        for name, kind, address in (("unix_dgram", socket.SOCK_DGRAM, self.unix_dgram),
                                    ("unix_stream", socket.SOCK_STREAM, self.unix_stream),
                                    ("abstract", socket.SOCK_STREAM, "\0" + self.abstract)):
            s = socket.socket(socket.AF_UNIX, kind)
            s.bind(address)
            if kind == socket.SOCK_STREAM:
                s.listen(8)
            s.setblocking(False)
            self.sockets[name] = s
        for path in (self.unix_dgram, self.unix_stream):
            os.chmod(path, 0o777)  # world-writable, as the system's own sockets are

    def probe(self) -> str:
        return PROBE.format(host_pid=os.getpid(), home=self.home, canary=self.canary, tag=self.tag,
                            ports=self.ports, unix_dgram=self.unix_dgram,
                            unix_stream=self.unix_stream, abstract=self.abstract)

    def arrived(self) -> list[str]:
        """What reached the host: messages or connections on a trap, a changed canary, a file
        the worker made in the home directory."""
        hits = []
        for name, s in self.sockets.items():
            try:
                if s.type == socket.SOCK_STREAM:
                    conn, _ = s.accept()
                    conn.close()
                    hits.append(f"{name}: a connection")
                else:
                    hits.append(f"{name}: {s.recv(64)!r}")
            except (BlockingIOError, OSError):
                continue
        if Path(self.canary).read_text() != "host secret\n":
            hits.append("the canary changed")
        made = [p for p in os.listdir(self.home) if p.startswith("owned-")]
        hits += [f"{self.home}/{p} was created" for p in made]
        return hits

    def close(self) -> None:
        for s in self.sockets.values():
            s.close()
        with contextlib.suppress(OSError):
            os.unlink(self.canary)
        for p in os.listdir(self.home):
            if p.startswith(f"owned-{self.tag}"):
                os.unlink(os.path.join(self.home, p))
        import shutil

        shutil.rmtree(self._dir, ignore_errors=True)


def run_config(name: str, home: str) -> dict:
    """One configuration: start the worker, run the probe, read the traps. Returns
    {"config", "started", "error" (why it refused to start), "report" (kernel_layers),
    "results" (the probe's), "arrived" (the traps'), "home_stat" (the real one)}."""
    from executors import SubprocessExecutor
    from executors.base import ExecutorError

    class Configured(SubprocessExecutor):
        leave_out = CONFIGS[name]

    traps = Traps(home)
    st = os.stat(home)
    out: dict = {"config": name, "uid": os.getuid(), "home_stat": f"STAT {st.st_dev} {st.st_ino}"}
    try:
        try:
            with Configured(policy="open") as ex:
                ex.start()
                r = ex.execute(traps.probe())
                out.update(started=True, results=r.output, error=None if r.error is None else
                           f"{r.error.type}: {r.error.message}", layers=ex.isolation.kernel_layers)
        except ExecutorError as exc:
            out.update(started=False, error=str(exc), results=None)
        out["arrived"] = traps.arrived()
    finally:
        traps.close()
    return out


def run_corpus(name: str, home: str) -> dict:
    """The raw-memory routes (tests/raw_memory_routes.py) under the restricted policy with numpy,
    pandas, pyarrow and scipy authorized, in one configuration: {"config", "started", "error",
    "outcomes": {route: "got: ..." | "refused: ..." | "crashed: ..."}, "arrived"}."""
    from raw_memory_routes import IMPORTS, all_routes

    from executors import SubprocessExecutor
    from executors.base import ExecutorError

    class Configured(SubprocessExecutor):
        leave_out = CONFIGS[name]

    traps = Traps(home)
    out: dict = {"config": name, "uid": os.getuid(), "outcomes": {}}
    try:
        try:
            with Configured(authorized_imports=IMPORTS) as ex:
                ex.start()
                out.update(started=True, error=None)
                for route, code in all_routes().items():
                    r = ex.execute(code)
                    out["outcomes"][route] = outcome(r)
        except ExecutorError as exc:
            out.update(started=False, error=str(exc))
        out["arrived"] = traps.arrived()
    finally:
        traps.close()
    return out


def outcome(r) -> str:
    if r.error is None:
        return f"got: {r.output}"
    kind = "crashed" if r.error.type == "WorkerCrashed" else "refused"
    return f"{kind}: {r.error.type}: {r.error.message[:120]}"


def _as_user(uid: int, gid: int, home: str, configs: list[str]) -> None:
    """As root: expose the runtime to the user, become it, run the configurations (exec)."""
    from executors.worker.hardening.runtime import expose_paths

    expose_paths([sys.base_prefix, sys.prefix, str(ROOT)], uid, gid)
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8"}
    os.execve(sys.executable, [sys.executable, __file__, "--run", home, *configs], env)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--as-user"]:
        _as_user(int(argv[1]), int(argv[2]), argv[3], argv[4:])
    if argv[:1] == ["--run"]:
        runs = [run_config(name, argv[1]) for name in argv[2:] if not name.startswith("corpus:")]
        runs += [run_corpus(name[7:], argv[1]) for name in argv[2:] if name.startswith("corpus:")]
        print(json.dumps(runs), flush=True)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
