"""seccomp-bpf: the worker puts in force the system-call filter the host built for it.

The host builds the program with libseccomp (`executors/remote/syscalls.py`: the allowlist, each
call with its reason) and sends its BPF instructions at configure; the worker only loads them.
Why not build it here: this package is stdlib-only and must run where libseccomp is absent (a
container image, a bare interpreter), and building costs ~1 ms that every cold worker would pay;
loading is one prctl(2). Why not hand-assembled BPF: the syscall numbers differ per
architecture, and libseccomp knows them, the x32 ABI trap and the architecture check.

load(program) after no_new_privs and before any model code: the filter applies to this thread
and every thread and process it starts afterwards (the worker is single-threaded here), and can
never be removed. Verified with PR_GET_SECCOMP (2: filter mode).
"""

from . import _kernel
from ._kernel import FrozenRecord, HardeningError

__all__ = ["SeccompReport", "load"]

_INSTRUCTION = 8  # struct sock_filter: u16 code, u8 jt, u8 jf, u32 k
_MAX_INSTRUCTIONS = 4096  # BPF_MAXINSNS


class SeccompReport(FrozenRecord):
    """state: "on", "off" (not asked for) or "unavailable".  instructions: the program's size.
    allowed: how many system calls it allows (as the host counted).  why: when not on."""

    __slots__ = ("state", "instructions", "allowed", "why")


def load(program: bytes, allowed: int = 0) -> SeccompReport:
    """Put the BPF `program` in force for good; HardeningError when the kernel refuses."""
    if type(program) is not bytes or not program or len(program) % _INSTRUCTION:
        raise HardeningError(22, "the seccomp program must be whole BPF instructions")
    count = len(program) // _INSTRUCTION
    if count > _MAX_INSTRUCTIONS:
        raise HardeningError(22, f"the seccomp program has {count} instructions (max 4096)")
    filters = _kernel.buffer(len(program), program)
    # struct sock_fprog: unsigned short len; (padding to the pointer's alignment) a pointer
    import sys

    pointer = _kernel.address(filters).to_bytes(8 if sys.maxsize > 2**32 else 4, sys.byteorder)
    header = count.to_bytes(2, sys.byteorder) + bytes(len(pointer) - 2)
    fprog = _kernel.buffer(len(header) + len(pointer), header + pointer)
    try:
        _kernel.prctl(_kernel.PR_SET_SECCOMP, _kernel.SECCOMP_MODE_FILTER, _kernel.address(fprog))
    except OSError as exc:
        raise HardeningError(exc.errno, f"the kernel refused the seccomp filter: {exc.strerror}")
    if _kernel.prctl(_kernel.PR_GET_SECCOMP) != _kernel.SECCOMP_MODE_FILTER:
        raise HardeningError(1, "seccomp filter mode is not in force after loading it")
    return SeccompReport(state="on", instructions=count, allowed=allowed, why="")


def not_loaded(state: str, why: str) -> SeccompReport:
    return SeccompReport(state=state, instructions=0, allowed=0, why=why)
