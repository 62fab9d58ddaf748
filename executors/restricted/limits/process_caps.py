"""Process-wide caps held while a run is active: the address space and the recursion limit.

Both are settings of the whole process (not of a thread), so concurrent runs in several threads
share one setting: the most generous of the active requests. They are restored when the last
run leaves.
"""

from __future__ import annotations

import mmap
import operator
import os
import resource
import sys
import threading
from collections.abc import Iterable


class ProcessCaps:
    """The caps of every active run in this process (one instance: PROCESS_CAPS)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.saved_as: tuple[int, int] | None = None
        self.saved_recursion = sys.getrecursionlimit()
        self.page = os.sysconf("SC_PAGE_SIZE")
        self._statm: int | None = None  # -1: it cannot be opened here (no /proc, or confined)
        self._reserve: mmap.mmap | None = None  # see _RESERVE_NOTE

    def _vm_bytes(self) -> int:
        # A kept-open /proc file re-read with pread: a few microseconds instead of an open().
        # One that cannot be opened is not tried again every step (a confined worker: Landlock
        # closes /proc; the worker's own process cap holds its memory there).
        if self._statm is None:
            try:
                self._statm = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                self._statm = -1
        if self._statm < 0:
            raise OSError("/proc/self/statm cannot be read in this process")
        return int(os.pread(self._statm, 128, 0).split()[0]) * self.page

    def enter(self, memory_mb: int | None, depth: int) -> None:
        # (every step: written for few calls; the syscalls are a statm pread and two rlimits)
        with self.lock:
            # The recursion limit is per interpreter, not per thread: while other host threads
            # run, model recursion is bounded at 1000 frames rather than max_recursion_depth.
            # Other host threads: never below Python's default (1000), which still keeps C
            # recursion (repr of a deep structure) far from the C stack's end.
            if depth < 1000 and _other_host_threads():
                depth = 1000
            if self.active == 0:
                self.saved_recursion = sys.getrecursionlimit()
                self.saved_as = None
                sys.setrecursionlimit(depth)
            elif depth > sys.getrecursionlimit():
                sys.setrecursionlimit(depth)
            self.active += 1
            if memory_mb and self._statm != -1:
                try:
                    if self._reserve is None:
                        self._reserve = mmap.mmap(-1, _RESERVE_BYTES, mmap.MAP_PRIVATE, mmap.PROT_READ)
                    want = self._vm_bytes() + memory_mb * 1048576
                    soft, hard = _getrlimit(_RLIMIT_AS)
                    if self.saved_as is None:  # (the first run: the host's own cap)
                        self.saved_as = (soft, hard)
                    if hard != _INFINITY and want > hard:
                        want = hard
                    if self.active == 1 or soft == _INFINITY or want > soft:
                        _setrlimit(_RLIMIT_AS, (want, hard))
                except (OSError, ValueError):
                    pass  # no /proc or no rlimits here: size checks still apply

    def _lift(self, limits: tuple[int, int]) -> None:
        try:
            resource.setrlimit(resource.RLIMIT_AS, limits)
        except MemoryError:  # (the step used up the address space: the reserve is ours to free)
            reserve, self._reserve = self._reserve, None
            if reserve is None:
                raise
            reserve.close()
            resource.setrlimit(resource.RLIMIT_AS, limits)

    def lift_memory(self) -> None:
        """Lift the address-space cap until the last active run leaves: for library code that
        is not safe when an allocation fails (Agg, drawing a figure, corrupts the heap on a
        bad_alloc, which crashes the host later). Its caller bounds that memory itself."""
        with self.lock:
            if self.active and self.saved_as is not None:
                try:
                    self._lift(self.saved_as)
                except (OSError, ValueError):
                    pass

    def lift_for_library(self) -> tuple[int, int] | None:
        """A trusted import is about to run (restricted/trusted_imports.py): lift the address-space
        cap (a library's import is not the model's allocation, and native code loading under a
        cap can fail in ways it never recovers from: OpenBLAS spins) and give the import the
        host's recursion headroom. Returns what `restore_after_library` needs."""
        with self.lock:
            if not self.active:
                return None
            soft = None
            if self.saved_as is not None:
                try:
                    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
                    resource.setrlimit(resource.RLIMIT_AS, self.saved_as)
                except (OSError, ValueError):
                    soft = None
            recursion = sys.getrecursionlimit()
            sys.setrecursionlimit(max(recursion, frame_depth() + self.saved_recursion))
            return (-1 if soft is None else soft, recursion)

    def restore_after_library(self, saved: tuple[int, int] | None, grown: int) -> None:
        """Put the caps back after a trusted import; the memory it took (`grown` bytes of address
        space) is not charged to the model: the cap moves up by as much."""
        if saved is None:
            return
        soft, recursion = saved
        with self.lock:
            sys.setrecursionlimit(recursion)
            if soft >= 0 and self.active and soft != resource.RLIM_INFINITY:
                try:
                    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
                    want = soft + max(0, grown)
                    if hard != resource.RLIM_INFINITY:
                        want = min(want, hard)
                    resource.setrlimit(resource.RLIMIT_AS, (want, hard))
                except (OSError, ValueError):
                    pass

    def address_space(self) -> int:
        """This process's address space now, in bytes (0 where /proc is missing)."""
        try:
            return self._vm_bytes()
        except (OSError, ValueError):
            return 0

    def leave(self) -> None:
        with self.lock:
            self.active -= 1
            if self.active == 0:
                if self.saved_as is not None:
                    try:
                        self._lift(self.saved_as)
                    except (OSError, ValueError):
                        pass
                    self.saved_as = None
                sys.setrecursionlimit(self.saved_recursion)


# _RESERVE_NOTE: lifting the cap is a setrlimit, which raises an audit event, which allocates
# (its arguments' tuple, the hooks' frames). A step that filled the address space to the last page
# left none for that: the lift failed with MemoryError and execute() raised with the cap, the
# guard and the alarm still on (seen on 3.14 half the time, the model's code filling memory with
# 100-byte objects to the end). So a run holds a few MiB of address space in reserve, mapped and
# never touched (no memory used), counted in what the cap is computed from, and unmapped only
# when a lift meets MemoryError; the next run maps it again.
_RESERVE_BYTES = 4 << 20
PROCESS_CAPS = ProcessCaps()
_getrlimit, _setrlimit = resource.getrlimit, resource.setrlimit
_RLIMIT_AS, _INFINITY = resource.RLIMIT_AS, resource.RLIM_INFINITY


# The threads of the process (threading's own registries: running, and started but not yet
# running). Read as one C-level snapshot a step: the answer below is recomputed only when the
# set of threads changed since the last step.
_ACTIVE = getattr(threading, "_active", None)
_LIMBO = getattr(threading, "_limbo", None)
# (the threads last judged, the thread that asked, the answer): one tuple, stored at once
_seen: list = [((), 0, False)]


def _other_host_threads() -> bool:
    """A non-daemon thread besides this one is running host work (daemon threads are taken
    to be background helpers, like our watchdog). A thread that is just ending counts too: the
    limit is then more generous, never less (no is_alive() per thread: this runs every step)."""
    if _ACTIVE is None or _LIMBO is None:  # (a threading without them: look at every thread)
        return _judge(threading.enumerate())
    ident = threading.get_ident()
    threads = (*_ACTIVE.values(), *_LIMBO)  # (C-level: no thread starts or ends meanwhile)
    seen, asked, answer = _seen[0]
    if asked == ident and len(seen) == len(threads) and all(map(operator.is_, seen, threads)):
        return answer
    answer = _judge(threads)
    _seen[0] = (threads, ident, answer)
    return answer


def _judge(threads: Iterable[threading.Thread]) -> bool:
    current = threading.current_thread()
    return any(thread is not current and not thread.daemon for thread in threads)


def frame_depth() -> int:
    """How many frames are on this thread's stack (the recursion limit counts from the bottom)."""
    frame, depth = sys._getframe(), 0
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth
