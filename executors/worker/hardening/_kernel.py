"""Our side of the kernel: libc through `_ctypes`, the error type, the frozen record.

One module rather than three because every module is paid for in the worker's cold start.

The few libc entry points the hardening needs, called through `_ctypes` directly.

Why `_ctypes` and not `ctypes`: `import ctypes` costs ~2-5 ms of a cold start on the machines
measured (it builds dozens of classes and imports `struct`, `types`, `ctypes._endian`); the C
module alone costs ~0.5 ms, and the worker's whole hardening budget is +2 ms. `ctypes/__init__.py`
is itself written on these same `_ctypes` names (CFuncPtr, _SimpleCData, dlopen, dlsym,
get_errno), which have been stable since Python 2.6.

Every argument is passed as an explicitly sized C value (ctypes would pass a bare Python int as a
32-bit `int`, leaving the upper half of a 64-bit variadic argument undefined). Structures are
passed as `bytes` laid out by hand (native byte order), which the kernel only reads.

Reports: a frozen record base with `to_dict()`, without importing `dataclasses`.

The worker's cold start is budgeted in milliseconds and `dataclasses` pulls in `inspect`, `ast`
and `re` (~10 ms cold); these reports are built once per worker, so a few lines of our own are
the cheaper way to get immutable, comparable, JSON-ready values.
"""

import os
import sys

try:
    import _ctypes
except ImportError:  # an interpreter built without ctypes: everything here reports "missing"
    _ctypes = None

# Syscall numbers of the Landlock calls. They were added after the syscall tables were unified
# (Linux 5.13), so they are the same on x86_64 (arch/x86/entry/syscalls/syscall_64.tbl), i386
# (syscall_32.tbl) and every asm-generic architecture such as aarch64 (include/uapi/asm-generic/
# unistd.h): 444, 445, 446. Alpha (+110) and x32 (a flag bit) differ; architectures we have not
# checked are treated as "Landlock missing" rather than guessed.
LANDLOCK_SYSCALLS = {"create_ruleset": 444, "add_rule": 445, "restrict_self": 446}
VERIFIED_MACHINES = frozenset({"x86_64", "aarch64", "arm64", "i386", "i686"})
# Calls glibc has no wrapper for. mount_setattr (Linux 5.12) came after the unification too;
# pivot_root did not: x86_64 arch/x86/entry/syscalls/syscall_64.tbl, asm-generic/unistd.h, i386.
_OTHER_SYSCALLS = {"mount_setattr": 442}
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41, "i386": 217, "i686": 217}


def unsupported_reason() -> str | None:
    """Why the raw Landlock syscalls must not be attempted here, or None when they may be."""
    if not sys.platform.startswith("linux"):
        return f"not Linux ({sys.platform})"
    if _ctypes is None:
        return "this Python has no _ctypes module"
    machine = os.uname().machine
    if machine not in VERIFIED_MACHINES:
        return f"syscall numbers not verified for architecture {machine!r}"
    if machine == "x86_64" and sys.maxsize < 2**32:
        return "x32 ABI (syscall numbers carry the x32 bit)"
    return None


if _ctypes is not None:
    # C `long` is pointer-sized on every Linux ABI, so it also carries `int` parameters (passed
    # in registers on x86_64/aarch64, and the same 4 bytes on i386).
    class _CLong(_ctypes._SimpleCData):
        _type_ = "l"

    class _LongFunction(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
        _restype_ = _CLong

    class _IntFunction(_ctypes.CFuncPtr):  # no _restype_: ctypes reads a C int
        _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO

    _ZERO = _CLong(0)

    class _CChar(_ctypes._SimpleCData):
        _type_ = "c"


_functions: dict = {}


def _libc_function(name: str, returns_long: bool):
    fn = _functions.get(name)
    if fn is None:
        if _ctypes is None:
            raise OSError(38, f"{name}: this Python has no _ctypes module")  # ENOSYS
        handle = _ctypes.dlopen(None, 0)  # the running program: libc is already mapped
        kind = _LongFunction if returns_long else _IntFunction
        fn = _functions[name] = kind(_ctypes.dlsym(handle, name))
    return fn


def _arg(value):
    if value is None or isinstance(value, (bytes, _ctypes.Array)):
        return value  # NULL, or a pointer to the bytes' (or the buffer's) memory
    if isinstance(value, str):
        return os.fsencode(value)
    return _CLong(value)


def _check(name: str, result: int) -> int:
    if result == -1:
        errno = _ctypes.get_errno()
        raise OSError(errno, f"{name}: {os.strerror(errno)}")
    return result


def syscall(name: str, *args) -> int:
    """A syscall without a libc wrapper, by name (the Landlock ones, mount_setattr,
    pivot_root); raises OSError(errno) on failure."""
    fn = _libc_function("syscall", returns_long=True)
    number = LANDLOCK_SYSCALLS.get(name) or _OTHER_SYSCALLS.get(name)
    if name == "pivot_root":
        number = _PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(38, f"{name}: syscall number not known here")  # ENOSYS
    return _check(name, fn(_CLong(number), *(_arg(a) for a in args)))


def libc(name: str, *args) -> int:
    """A libc function returning int (capget, capset, umount2, ...); OSError(errno) on -1."""
    return _check(name, _libc_function(name, returns_long=False)(*(_arg(a) for a in args)))


def buffer(size: int, initial: bytes = b""):
    """A writable C buffer of `size` bytes, zeroed or starting with `initial` (pass it as a
    pointer; `.raw` reads it)."""
    buf = (_CChar * size)()
    if initial:
        buf.raw = initial
    return buf


def address(buf) -> int:
    return _ctypes.addressof(buf)


def prctl(option: int, arg2: int = 0, arg3: int = 0) -> int:
    fn = _libc_function("prctl", returns_long=False)
    # the unused arguments share one C long 0 (C only reads it): a bounding-set drop is ~45 calls
    return _check("prctl", fn(_CLong(option), _CLong(arg2), _CLong(arg3), _ZERO, _ZERO))


def unshare(flags: int) -> None:
    _check("unshare", _libc_function("unshare", returns_long=False)(_CLong(flags)))


def setns(fd: int, nstype: int) -> None:
    _check("setns", _libc_function("setns", returns_long=False)(_CLong(fd), _CLong(nstype)))


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None):
    fn = _libc_function("mount", returns_long=False)
    encoded = [None if s is None else os.fsencode(s) for s in (source, target, fstype, data)]
    _check(f"mount {target}", fn(encoded[0], encoded[1], encoded[2], _CLong(flags), encoded[3]))


def u64(value: int) -> bytes:
    return value.to_bytes(8, sys.byteorder)


def u32(value: int) -> bytes:
    return value.to_bytes(4, sys.byteorder)


def s32(value: int) -> bytes:
    return value.to_bytes(4, sys.byteorder, signed=True)


# prctl(2) options (include/uapi/linux/prctl.h)
PR_SET_PDEATHSIG = 1
PR_SET_SECCOMP = 22
PR_GET_SECCOMP = 21
PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_IS_SET = 1
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2

# unshare(2) flags (include/uapi/linux/sched.h)
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

# mount(2) flags (include/uapi/linux/mount.h)
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
# mount_setattr(2) (include/uapi/linux/mount.h)
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
MOUNT_ATTR_NODEV = 0x4


# ----------------------------------------------------------------------------- error, records


class HardeningError(OSError):
    """The kernel refused a hardening step that was expected to work: the process is NOT in the
    state the caller asked for and must not go on to run untrusted code."""


class FrozenRecord:
    """Fields are the class's `__slots__`; assignment after construction raises AttributeError."""

    __slots__ = ()

    def __init__(self, **fields) -> None:
        missing = [name for name in self.__slots__ if name not in fields]
        unknown = [name for name in fields if name not in self.__slots__]
        if missing or unknown:
            raise TypeError(
                f"{type(self).__name__}: missing fields {missing}, unknown fields {unknown}"
            )
        for name, value in fields.items():
            object.__setattr__(self, name, _freeze(value))

    def __setattr__(self, name, value) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen; cannot set {name!r}")

    def __delattr__(self, name) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen; cannot delete {name!r}")

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._values()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({inner})"

    def to_dict(self) -> dict:
        """JSON-ready: nested records become dicts, tuples become lists."""
        return {name: _plain(getattr(self, name)) for name in self.__slots__}


def _freeze(value):
    if isinstance(value, list):
        return tuple(_freeze(item) for item in value)
    return value


def _plain(value):
    if isinstance(value, FrozenRecord):
        return value.to_dict()
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value
