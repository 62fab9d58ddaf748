"""Dropping root for good, and leaving the host's network.

`drop_privileges()` as root: empty the capability bounding set (so not even a setuid binary could
hand capabilities back), clear ambient capabilities, then setgroups([]), setresgid, setresuid,
set no_new_privs, and verify: uid/gid are the target's, setuid(0) fails, and CapEff, CapPrm,
CapInh, CapAmb and CapBnd in /proc/self/status are all zero. When not root it changes nothing and
says so. `enter_network_namespace()` as root: unshare(CLONE_NEWNET) leaves the process with a
loopback interface that is down, so no socket of any family reaches anything (Landlock only
governs TCP).
"""

import os
import sys

from . import _kernel
from ._kernel import FrozenRecord, HardeningError

_CAP_FIELDS = (
    ("CapInh", "inheritable"),
    ("CapPrm", "permitted"),
    ("CapEff", "effective"),
    ("CapBnd", "bounding"),
    ("CapAmb", "ambient"),
)
_EINVAL = 22


class Capabilities(FrozenRecord):
    """The capability sets of this thread, as bitmasks (from /proc/self/status)."""

    __slots__ = ("inheritable", "permitted", "effective", "bounding", "ambient")

    def any(self) -> bool:
        return any(self._values())


def capabilities() -> Capabilities:
    # Binary reads throughout: a text codec other than utf-8 may not be importable any more
    # (open(encoding="ascii") imports encodings.ascii, which a dropped user may not reach).
    found = dict.fromkeys((field for _key, field in _CAP_FIELDS), 0)
    keys = {key.encode(): field for key, field in _CAP_FIELDS}
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                key, _, value = line.partition(b":")
                if key in keys:
                    found[keys[key]] = int(value.strip(), 16)
    except OSError:  # no /proc in the worker's own root: ask the kernel directly
        return Capabilities(**capability_sets(_last_cap()))
    return Capabilities(**found)


class PrivilegeReport(FrozenRecord):
    """was_root: euid was 0 on entry.  dropped: uid/gid changed and verified.  user, uid, gid,
    groups: who the process is now.  capabilities: what it holds now.  regain_refused:
    setuid(0) failed after the drop.  note: what happened, in words."""

    __slots__ = (
        "was_root",
        "dropped",
        "user",
        "uid",
        "gid",
        "groups",
        "capabilities",
        "no_new_privs",
        "regain_refused",
        "note",
    )


def resolve_user(user) -> tuple[str, int, int]:
    """(name, uid, gid) for a user name, a uid, or a (uid, gid) pair; never root."""
    if isinstance(user, tuple) and len(user) == 2 and all(type(x) is int for x in user):
        uid, gid = user
        name = str(uid)
    elif type(user) is int:
        import pwd  # a C module, imported only when a name is needed: read before confinement

        uid = user
        try:
            entry = pwd.getpwuid(uid)
            name, gid = entry.pw_name, entry.pw_gid
        except KeyError:
            name, gid = str(uid), uid
    elif isinstance(user, str):
        import pwd

        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            raise ValueError(f"no such user {user!r} to drop privileges to") from None
        name, uid, gid = entry.pw_name, entry.pw_uid, entry.pw_gid
    else:
        raise TypeError(f"user must be a name, a uid or a (uid, gid) pair, not {user!r}")
    if uid < 0 or gid < 0:
        raise ValueError(f"uid and gid must be >= 0, not {uid}, {gid}")
    if uid == 0 or gid == 0:
        raise ValueError("dropping privileges to uid 0 or gid 0 drops nothing")
    return name, uid, gid


_LAST_CAP: list = []


def _last_cap() -> int:
    """The highest capability number of this kernel, read once (before /proc goes away)."""
    if not _LAST_CAP:
        try:
            with open("/proc/sys/kernel/cap_last_cap", "rb") as f:
                _LAST_CAP.append(int(f.read()))
        except (OSError, ValueError):
            return 63
    return _LAST_CAP[0]


def _empty_bounding_set() -> None:
    for cap in range(_last_cap() + 1):
        try:
            _kernel.prctl(_kernel.PR_CAPBSET_DROP, cap)
        except OSError as exc:
            if exc.errno != _EINVAL:  # EINVAL: a capability this kernel does not have
                raise HardeningError(exc.errno, f"cannot drop capability {cap}: {exc.strerror}")
    try:
        _kernel.prctl(_kernel.PR_CAP_AMBIENT, _kernel.PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError as exc:
        if exc.errno != _EINVAL:  # EINVAL: kernel older than 4.3, no ambient set to clear
            raise


def _regain_refused() -> bool:
    for attempt in (os.setuid, os.seteuid, os.setgid, os.setegid):
        try:
            attempt(0)
        except PermissionError:
            continue
        return False
    return True


def drop_privileges(user="nobody") -> PrivilegeReport:
    """Become `user` (name, uid, or (uid, gid)) for good when running as root; no-op otherwise.

    Raises HardeningError when a step fails or the result does not verify; the process must not
    run untrusted code then.
    """
    if os.geteuid() != 0:
        caps = capabilities()
        return PrivilegeReport(
            was_root=False,
            dropped=False,
            user=None,
            uid=os.getuid(),
            gid=os.getgid(),
            groups=os.getgroups(),
            capabilities=caps,
            no_new_privs=_kernel.prctl(_kernel.PR_GET_NO_NEW_PRIVS) == 1,
            regain_refused=True,
            note="not root: nothing to drop"
            + (" (but capabilities are held)" if caps.any() else ""),
        )
    return drop_to(*resolve_user(user))


def drop_to(name: str, uid: int, gid: int) -> PrivilegeReport:
    """drop_privileges() for an already resolved user (as root; see there)."""
    _empty_bounding_set()
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    _kernel.prctl(_kernel.PR_SET_NO_NEW_PRIVS, 1)
    caps = capabilities()
    regain_refused = _regain_refused()
    ids = (os.getresuid(), os.getresgid(), os.getgroups())
    if ids != ((uid, uid, uid), (gid, gid, gid), []) or caps.any() or not regain_refused:
        raise HardeningError(
            1, f"privilege drop did not verify: ids {ids}, {caps}, regain refused {regain_refused}"
        )
    return PrivilegeReport(
        was_root=True,
        dropped=True,
        user=name,
        uid=uid,
        gid=gid,
        groups=(),
        capabilities=caps,
        no_new_privs=_kernel.prctl(_kernel.PR_GET_NO_NEW_PRIVS) == 1,
        regain_refused=True,
        note=f"root dropped to {name} ({uid}:{gid}); no capabilities, bounding set empty",
    )


class NetworkNamespaceReport(FrozenRecord):
    """entered: the process is in a new, empty network namespace.  interfaces: what it sees
    there (only `lo`, left down).  note: why not, when not."""

    __slots__ = ("entered", "interfaces", "note")


def _interfaces() -> tuple[str, ...]:
    # Both answers follow the caller's network namespace (/sys/class/net would follow sysfs's).
    # if_nameindex (one netlink round trip) costs a forked worker ~0.1 ms less than parsing
    # /proc/self/net/dev, but importing _socket for it would cost more: only when it is loaded.
    loaded = sys.modules.get("_socket")
    if loaded is not None and hasattr(loaded, "if_nameindex"):
        try:
            return tuple(name for _index, name in loaded.if_nameindex())
        except OSError:
            pass
    try:
        with open("/proc/self/net/dev", "rb") as dev:
            lines = dev.read().splitlines()[2:]
    except OSError:
        return ()
    return tuple(os.fsdecode(line.split(b":", 1)[0].strip()) for line in lines)


def enter_network_namespace() -> NetworkNamespaceReport:
    """As root: move this process into a new network namespace with nothing in it.

    `lo` is deliberately left down: with network=False nothing at all should be reachable, not
    even a server the code starts itself. Needs root (CAP_SYS_ADMIN), so call it before
    drop_privileges(). Not root: a no-op, reported.
    """
    if os.geteuid() != 0:
        return NetworkNamespaceReport(
            entered=False, interfaces=(), note="not root: cannot create a network namespace"
        )
    try:
        _kernel.unshare(_kernel.CLONE_NEWNET)
    except OSError as exc:
        raise HardeningError(exc.errno, f"unshare(CLONE_NEWNET) failed: {exc.strerror}")
    return NetworkNamespaceReport(
        entered=True, interfaces=_interfaces(), note="new network namespace; lo left down"
    )


def join_network_namespace(fd: int) -> NetworkNamespaceReport:
    """As root: join the empty network namespace behind `fd` (made by an earlier worker and held
    open by the host): ~0.1 ms instead of ~0.5 ms for a new one, and no namespace to tear down
    per worker. Verified to hold only `lo`; HardeningError otherwise. That `lo` is still down is
    not asked (it would cost an extension-module import): the namespace belongs to the initial
    user namespace, so only a process with CAP_NET_ADMIN there could bring it up, and every
    worker in it drops all capabilities before any model code runs."""
    try:
        _kernel.setns(fd, _kernel.CLONE_NEWNET)
    except OSError as exc:
        raise HardeningError(exc.errno, f"setns(CLONE_NEWNET) failed: {exc.strerror}")
    interfaces = _interfaces()
    if interfaces != ("lo",):
        raise HardeningError(1, f"the shared network namespace is not empty: {interfaces}")
    return NetworkNamespaceReport(
        entered=True, interfaces=interfaces, note="joined the host's shared empty network namespace"
    )


# --------------------------------------- capabilities without /proc, and a user namespace's


def _header():
    # struct __user_cap_header_struct: _LINUX_CAPABILITY_VERSION_3, pid 0 (this thread)
    return _kernel.buffer(8, _kernel.u32(0x20080522) + _kernel.u32(0))


def _capget() -> tuple[int, int, int]:
    data = _kernel.buffer(24)
    _kernel.libc("capget", _header(), data)
    raw = data.raw
    words = [int.from_bytes(raw[i:i + 4], sys.byteorder) for i in range(0, 24, 4)]
    # two structs of {effective, permitted, inheritable}: the low and the high 32 bits
    return (words[0] | words[3] << 32, words[1] | words[4] << 32, words[2] | words[5] << 32)


def capability_sets(last_cap: int) -> dict:
    """{"effective", "permitted", "inheritable", "bounding", "ambient"} as bitmasks, without /proc."""
    effective, permitted, inheritable = _capget()
    bounding = ambient = 0
    for cap in range(last_cap + 1):
        try:
            if _kernel.prctl(_kernel.PR_CAPBSET_READ, cap) == 1:
                bounding |= 1 << cap
            if _kernel.prctl(_kernel.PR_CAP_AMBIENT, _kernel.PR_CAP_AMBIENT_IS_SET, cap) == 1:
                ambient |= 1 << cap
        except OSError:
            continue
    return {"effective": effective, "permitted": permitted, "inheritable": inheritable,
            "bounding": bounding, "ambient": ambient}


def drop_capabilities(last_cap: int) -> dict:
    """In a user namespace: give up every capability this process holds there, for good."""
    _empty_bounding_set()
    try:
        _kernel.libc("capset", _header(), _kernel.buffer(24))
    except OSError as exc:
        raise HardeningError(exc.errno, f"capset: {exc.strerror}")
    sets = capability_sets(last_cap)
    if any(sets.values()):
        raise HardeningError(1, f"capabilities left after the drop: {sets}")
    return sets
