"""Landlock: the worker restricts its own file system view, TCP and IPC scopes, for good.

Best effort by ABI: every access right the running kernel knows is *handled* (denied unless a
rule allows it), rights it does not know are reported as not covered. Landlock only restricts the
calling thread and its future children, so `Ruleset.enforce()` refuses to run in a process that
already has several threads. Usage:

    report = restrict(read=python_paths() + ["/data"], write=["/work/out"], network=False)

or, when the rules must be prepared before privileges are dropped (opening the paths needs the
old credentials, enforcing does not): `ruleset = Ruleset(...)`, drop, `ruleset.enforce()`.
"""

import os
import stat

from . import _kernel
from ._kernel import FrozenRecord, HardeningError

# (name, bit, first ABI that knows it) — include/uapi/linux/landlock.h
FS_RIGHTS = (
    ("EXECUTE", 1 << 0, 1),
    ("WRITE_FILE", 1 << 1, 1),
    ("READ_FILE", 1 << 2, 1),
    ("READ_DIR", 1 << 3, 1),
    ("REMOVE_DIR", 1 << 4, 1),
    ("REMOVE_FILE", 1 << 5, 1),
    ("MAKE_CHAR", 1 << 6, 1),
    ("MAKE_DIR", 1 << 7, 1),
    ("MAKE_REG", 1 << 8, 1),
    ("MAKE_SOCK", 1 << 9, 1),
    ("MAKE_FIFO", 1 << 10, 1),
    ("MAKE_BLOCK", 1 << 11, 1),
    ("MAKE_SYM", 1 << 12, 1),
    ("REFER", 1 << 13, 2),  # rename/link across directories
    ("TRUNCATE", 1 << 14, 3),  # truncate(2), ftruncate(2), O_TRUNC
    ("IOCTL_DEV", 1 << 15, 5),  # ioctl(2) on character/block devices
    ("RESOLVE_UNIX", 1 << 16, 9),  # connect/sendmsg to a pathname UNIX socket (Linux 7.1)
)
NET_RIGHTS = (("BIND_TCP", 1 << 0, 4), ("CONNECT_TCP", 1 << 1, 4))
SCOPES = (("ABSTRACT_UNIX_SOCKET", 1 << 0, 6), ("SIGNAL", 1 << 1, 6))
_FS = {name: bit for name, bit, _ in FS_RIGHTS}

# The only rights a rule on a non-directory may carry (the kernel answers EINVAL otherwise).
FILE_RIGHTS = (
    _FS["EXECUTE"]
    | _FS["WRITE_FILE"]
    | _FS["READ_FILE"]
    | _FS["TRUNCATE"]
    | _FS["IOCTL_DEV"]
    | _FS["RESOLVE_UNIX"]
)
READ_RIGHTS = _FS["READ_FILE"] | _FS["READ_DIR"]
# What a write grant allows: the model's own files and directories, moved and linked within the
# grants (REFER). Never device nodes, sockets, FIFOs, ioctl, or executing what it wrote.
WRITE_RIGHTS = (
    READ_RIGHTS
    | _FS["WRITE_FILE"]
    | _FS["TRUNCATE"]
    | _FS["REMOVE_DIR"]
    | _FS["REMOVE_FILE"]
    | _FS["MAKE_DIR"]
    | _FS["MAKE_REG"]
    | _FS["MAKE_SYM"]
    | _FS["REFER"]
)
EXECUTE_RIGHTS = READ_RIGHTS | _FS["EXECUTE"]

CREATE_RULESET_VERSION = 1 << 0
CREATE_RULESET_ERRATA = 1 << 1
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2
_ENOSYS, _EOPNOTSUPP = 38, 95

_abi_cache: list = []


def landlock_status() -> tuple[int, str]:
    """(ABI version, why it is 0). Cached: the answer cannot change while the process lives."""
    if not _abi_cache:
        reason = _kernel.unsupported_reason()
        abi = 0
        if reason is None:
            try:
                abi = _kernel.syscall("create_ruleset", None, 0, CREATE_RULESET_VERSION)
                reason = ""
            except OSError as exc:
                reason = {
                    _ENOSYS: "the kernel has no Landlock (ENOSYS: older than 5.13 or not built)",
                    _EOPNOTSUPP: "Landlock is built but disabled at boot (EOPNOTSUPP)",
                }.get(exc.errno, f"landlock_create_ruleset failed: {exc}")
        _abi_cache.append((abi, reason))
    return _abi_cache[0]


def abi_version() -> int:
    """The running kernel's Landlock ABI version; 0 when Landlock cannot be used here."""
    return landlock_status()[0]


def errata() -> int:
    """Bitmask of Landlock errata fixed in the running kernel (0 when the kernel cannot say)."""
    if abi_version() == 0:
        return 0
    try:
        return _kernel.syscall("create_ruleset", None, 0, CREATE_RULESET_ERRATA)
    except OSError:
        return 0


def _known(table, abi: int) -> int:
    mask = 0
    for _name, bit, since in table:
        if since <= abi:
            mask |= bit
    return mask


def names(table, mask: int) -> tuple[str, ...]:
    return tuple(name for name, bit, _ in table if mask & bit)


def not_covered(abi: int, *, tcp_handled: bool, scoped: bool) -> tuple[str, ...]:
    """What this Landlock domain does not govern, in words (for the isolation report)."""
    gaps = ["already-open file descriptors", "UDP and other non-TCP sockets"]
    if abi == 0:
        return ("everything: Landlock is not in force",)
    if abi < 3:
        gaps.append("truncate(2) of files outside the grants")
    if not tcp_handled:
        gaps.append("TCP bind/connect")
    if abi < 5:
        gaps.append("ioctl(2) on devices opened inside the grants")
    if not scoped:
        gaps.append("signals to and abstract UNIX sockets of processes outside the domain")
    if abi < 9:
        gaps.append("connect(2) to existing pathname UNIX sockets anywhere")
    return tuple(gaps)


class Rule(FrozenRecord):
    """One path-beneath rule: the path as given, what it is, and the rights it carries."""

    __slots__ = ("path", "kind", "access")


class Skipped(FrozenRecord):
    __slots__ = ("path", "reason")


class LandlockReport(FrozenRecord):
    """What `restrict()` put in force.

    abi: the kernel's Landlock ABI (0: none).  restricted: the domain is in force.
    fs: file system rights are handled; handled_fs names them.  tcp: "denied" (no bind, no
    connect), "ports" (connect only to tcp_ports, no bind), "open" (not handled), or "unsupported"
    (ABI < 4).  scopes: IPC scopes in force.  rules / skipped: the grants applied and the paths
    left out (missing, unreachable).  not_covered: what this domain does not govern.
    """

    __slots__ = (
        "abi",
        "errata",
        "restricted",
        "no_new_privs",
        "fs",
        "handled_fs",
        "tcp",
        "tcp_ports",
        "scopes",
        "rules",
        "skipped",
        "not_covered",
    )


def _checked_ports(network) -> tuple[int, ...] | None:
    """None for True/False, the ports for a list; a clear error for anything else."""
    if isinstance(network, bool):
        return None
    if isinstance(network, (str, bytes)) or not hasattr(network, "__iter__"):
        raise TypeError(f"network must be True, False or a list of TCP ports, not {network!r}")
    ports = []
    for port in network:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise ValueError(f"network ports must be integers in 1..65535, not {port!r}")
        ports.append(port)
    return tuple(sorted(set(ports)))


def path_list(name: str, paths) -> list[str]:
    if isinstance(paths, (str, bytes, os.PathLike)):
        raise TypeError(f"{name} must be a list of paths, not a single path {paths!r}")
    out = []
    for path in paths:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"{name}: paths must be str or os.PathLike, not {path!r}")
        out.append(os.path.abspath(os.fspath(path)))
    return out


def thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


class Ruleset:
    """A Landlock ruleset built from grants; `enforce()` puts it in force on this process.

    Building opens every granted path (O_PATH), so it must run with the credentials that can reach
    them; enforcing needs none (it sets no_new_privs itself).
    """

    def __init__(self, read=(), write=(), network=False, *, scope=True, execute=(),
                 abi=None) -> None:
        """abi: None asks the kernel; 0 leaves Landlock out (as a kernel without it would)."""
        ports = _checked_ports(network)
        grants = (
            (path_list("read", read), READ_RIGHTS),
            (path_list("write", write), WRITE_RIGHTS),
            (path_list("execute", execute), EXECUTE_RIGHTS),
        )
        self.abi = abi_version() if abi is None else abi
        self._fd = None
        self._rules: list[Rule] = []
        self._skipped: list[Skipped] = []
        self.handled_fs = _known(FS_RIGHTS, self.abi)
        tcp_known = _known(NET_RIGHTS, self.abi)
        self.handled_net = 0 if network is True else tcp_known
        self.scoped = _known(SCOPES, self.abi) if scope else 0
        self.ports = ports or ()
        if network is True:
            self.tcp = "open"
        elif not tcp_known:
            self.tcp = "unsupported"
        else:
            self.tcp = "denied" if ports is None else "ports"
        if self.abi:
            self._create()
            self._add_path_rules(grants)
            self._add_port_rules()

    def _create(self) -> None:
        attr = _kernel.u64(self.handled_fs)
        if self.abi >= 4:
            attr += _kernel.u64(self.handled_net)
        if self.abi >= 6:
            attr += _kernel.u64(self.scoped)
        try:
            self._fd = _kernel.syscall("create_ruleset", attr, len(attr), 0)
        except OSError as exc:
            raise HardeningError(exc.errno, f"Landlock refused the ruleset: {exc.strerror}")

    def _add_path_rules(self, grants) -> None:
        by_inode: dict = {}  # (dev, ino) -> [path, fd, is_dir, access]; /lib and /usr/lib merge
        labels: dict = {}  # access mask -> its names: a few masks over ~20 rules
        try:
            for paths, access in grants:
                for path in paths:
                    self._open_rule(path, access, by_inode)
            for path, fd, is_dir, access in by_inode.values():
                access &= self.handled_fs if is_dir else self.handled_fs & FILE_RIGHTS
                rule = _kernel.u64(access) + _kernel.s32(fd)
                try:
                    _kernel.syscall("add_rule", self._fd, RULE_PATH_BENEATH, rule, 0)
                except OSError as exc:
                    self.close()
                    raise HardeningError(exc.errno, f"Landlock refused the rule on {path}: {exc}")
                kind = "dir" if is_dir else "file"
                label = labels.get(access)
                if label is None:
                    label = labels[access] = names(FS_RIGHTS, access)
                self._rules.append(Rule(path=path, kind=kind, access=label))
        finally:
            for _path, fd, _is_dir, _access in by_inode.values():
                os.close(fd)

    def _open_rule(self, path: str, access: int, by_inode: dict) -> None:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except FileNotFoundError:
            self._skipped.append(Skipped(path=path, reason="does not exist"))
            return
        except OSError as exc:
            self._skipped.append(Skipped(path=path, reason=f"cannot be opened: {exc.strerror}"))
            return
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        if key in by_inode:
            os.close(fd)
            by_inode[key][3] |= access
        else:
            by_inode[key] = [path, fd, stat.S_ISDIR(st.st_mode), access]

    def _add_port_rules(self) -> None:
        connect = NET_RIGHTS[1][1]
        if not self.handled_net:
            return
        for port in self.ports:
            try:
                rule = _kernel.u64(connect) + _kernel.u64(port)
                _kernel.syscall("add_rule", self._fd, RULE_NET_PORT, rule, 0)
            except OSError as exc:
                self.close()
                raise HardeningError(exc.errno, f"Landlock refused the TCP port {port}: {exc}")

    def enforce(self) -> LandlockReport:
        """no_new_privs, then landlock_restrict_self: from here on this thread and its future
        children are confined. Irreversible. Raises HardeningError when it cannot be done."""
        threads = thread_count()
        if threads > 1:
            self.close()
            raise HardeningError(
                1,
                f"Landlock would confine only the calling thread, but {threads} threads run: "
                "harden before starting any thread",
            )
        _kernel.prctl(_kernel.PR_SET_NO_NEW_PRIVS, 1)
        no_new_privs = _kernel.prctl(_kernel.PR_GET_NO_NEW_PRIVS) == 1
        restricted = False
        if self._fd is not None:
            try:
                _kernel.syscall("restrict_self", self._fd, 0)
            except OSError as exc:
                raise HardeningError(exc.errno, f"landlock_restrict_self failed: {exc.strerror}")
            finally:
                self.close()
            restricted = True
        return self._report(restricted, no_new_privs)

    def _report(self, restricted: bool, no_new_privs: bool) -> LandlockReport:
        return LandlockReport(
            abi=self.abi,
            errata=errata(),
            restricted=restricted,
            no_new_privs=no_new_privs,
            fs=restricted and bool(self.handled_fs),
            handled_fs=names(FS_RIGHTS, self.handled_fs),
            tcp=self.tcp if restricted or self.tcp == "open" else "unsupported",
            tcp_ports=self.ports if self.tcp == "ports" else (),
            scopes=names(SCOPES, self.scoped) if restricted else (),
            rules=self._rules,
            skipped=self._skipped,
            not_covered=not_covered(
                self.abi if restricted else 0,
                tcp_handled=bool(self.handled_net),
                scoped=bool(self.scoped) and self.abi >= 6,
            ),
        )

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "Ruleset":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def restrict(read=(), write=(), network=False, *, scope=True, execute=()) -> LandlockReport:
    """Confine this process (it must be single-threaded) with Landlock, for good.

    read: paths readable (files and directory trees), never executable.  write: paths readable
    and writable (create, remove, rename within the grants).  network: False = no TCP bind or
    connect; True = TCP not handled; a list of ports = connect only to those ports, no bind.
    scope: ABI >= 6, no signals to / abstract UNIX sockets of processes outside the domain.
    execute: paths whose files may also be executed (none by default: dlopen of extension
    modules needs only read, because Landlock does not check mmap(PROT_EXEC)).
    Paths that do not exist are skipped and reported. Without Landlock (ABI 0) only
    no_new_privs is set, and the report says nothing else is in force.
    """
    return Ruleset(read, write, network, scope=scope, execute=execute).enforce()
