"""How the host starts and reaches one worker: what a place implements, and the framed link.

A place (a subprocess, a container) implements two small interfaces:

    class WorkerHandle(ABC):          # one running worker
        channel: Channel              # its byte channel
        def alive(self) -> bool       # still running?
        def kill(self) -> None        # hard-kill the worker and everything it spawned, reap it;
                                      # idempotent, never raises, returns quickly (< ~1 s)
        def exit_description(self) -> str   # after death: "exited with code 3",
                                            # "was killed by signal SIGSEGV", ... ("" if unknown)

    class Channel(ABC):               # raw bytes; framing is done by WorkerLink, not the channel
        def write(self, data: bytes, timeout: float | None) -> None
            '''Write all of data or raise TimeoutError (deadline) / OSError (peer gone).'''
        def read(self, max_bytes: int, timeout: float | None) -> bytes
            '''Return 1..max_bytes bytes as soon as any are available; b"" at EOF (the worker is
            gone); raise TimeoutError when nothing arrives within timeout (None = wait forever).
            timeout=0 is a non-blocking poll.'''
        def close(self) -> None       # idempotent

and starts the worker with `worker_command(python, directory)`: the stdlib-only `worker` package
found in `directory` (WORKER_PARENT on this machine, a read-only mount in a container).

`WorkerLink` holds an executor's live worker and the bytes read from it: frames go out with a
deadline, frames coming back are validated (`executors.remote.protocol`) as hostile.
"""

from __future__ import annotations

import contextlib
import sys
import time
from abc import ABC, abstractmethod
from pathlib import Path

from ..worker.bounds import BOUNDS
from .protocol import FrameBuffer, ProtocolError, Shutdown, parse_worker_message

__all__ = ["Channel", "DeadlinePassed", "WorkerDied", "WorkerHandle", "WorkerLink",
           "WORKER_PARENT", "describe_failure", "prepare_worker_code", "worker_command"]

#: the directory that holds the `worker` package (this package's own directory)
WORKER_PARENT = str(Path(__file__).resolve().parents[1])


def worker_command(python: str, directory: str, *args: str) -> list[str]:
    """argv that starts the worker package found in `directory` with only the standard library.

    `-I` (isolated): no PYTHON* variables, no user site, no script directory on sys.path. The
    package is imported (not run as a script) so cached bytecode is used, and `directory` is off
    sys.path again before the first frame is read: model code cannot import the host's modules.
    """
    boot = (f"import sys,os;sys.path.insert(0,{directory!r});from worker.main import main;"
            "del sys.path[0];os._exit(main())")
    return [python, "-I", "-c", boot, *args]


_bytecode_ready = False


def prepare_worker_code() -> None:
    """Compile the worker package's bytecode once per process where it is missing or stale: the
    worker never writes bytecode itself (PYTHONDONTWRITEBYTECODE, read-only mounts), and
    compiling its modules on every cold start would cost milliseconds."""
    global _bytecode_ready
    if _bytecode_ready or sys.dont_write_bytecode:
        return
    _bytecode_ready = True
    try:
        import compileall

        compileall.compile_dir(str(Path(WORKER_PARENT) / "worker"), maxlevels=1, quiet=2)  # + hardening/
    except Exception:  # a read-only install: the worker compiles in memory, just slower
        pass


class Channel(ABC):
    """A bidirectional byte stream to one worker (see the module docstring).

    For `aexecute` a channel may also offer its file descriptors to an event loop (`fileno`,
    `write_fileno`) with reads and writes that never block (`read_nowait`, `write_nowait`); one
    without them (fileno() is None) is waited on from a thread instead.
    """

    @abstractmethod
    def write(self, data: bytes, timeout: float | None) -> None: ...

    @abstractmethod
    def read(self, max_bytes: int, timeout: float | None) -> bytes: ...

    @abstractmethod
    def close(self) -> None: ...

    def fileno(self) -> int | None:
        """The descriptor that turns readable when bytes (or EOF) arrive; None: none to wait on."""
        return None

    def write_fileno(self) -> int | None:
        """The descriptor that turns writable when the worker takes more input."""
        return self.fileno()

    def read_nowait(self, max_bytes: int) -> bytes | None:
        """1..max_bytes bytes if any are there, b"" at EOF, None when nothing is yet."""
        try:
            return self.read(max_bytes, 0)
        except TimeoutError:
            return None

    def write_nowait(self, data: bytes | memoryview) -> int:
        """Write what fits now; how many bytes (0: none fit). OSError: the peer is gone."""
        raise NotImplementedError


class WorkerHandle(ABC):
    """One running worker (see the module docstring)."""

    channel: Channel

    @abstractmethod
    def alive(self) -> bool: ...

    @abstractmethod
    def kill(self) -> None: ...

    def exit_description(self) -> str:
        return ""


class WorkerDied(Exception):
    """The worker is gone (its channel closed or broke)."""


class DeadlinePassed(Exception):
    """The worker did not take or give a frame before the deadline."""


def remaining(deadline: float | None) -> float | None:
    """Seconds left until a time.monotonic() deadline (None: no deadline)."""
    if deadline is None:
        return None
    return max(0.0, deadline - time.monotonic())


class WorkerLink:
    """An executor's live worker (`handle`, None when there is none) and the bytes read from it.

    Holds no reference to the executor, so a finalizer can kill the worker through it.
    """

    __slots__ = ("handle", "frames", "stall_s")

    def __init__(self, max_frame_bytes: int) -> None:
        self.handle: WorkerHandle | None = None
        self.frames = FrameBuffer(max_frame_bytes)
        self.stall_s = BOUNDS.stall_s  # how long a frame may stay half-written

    def attach(self, handle: WorkerHandle) -> None:
        self.handle = handle
        self.frames = FrameBuffer(self.frames.max_frame_bytes)

    def send(self, data: bytes, deadline: float | None) -> None:
        """Write one frame. DeadlinePassed / WorkerDied."""
        assert self.handle is not None
        try:
            self.handle.channel.write(data, remaining(deadline))
        except TimeoutError:
            raise DeadlinePassed from None
        except OSError as exc:
            raise WorkerDied(str(exc)) from None

    def recv(self, deadline: float | None):
        """Read and validate the next message. DeadlinePassed / WorkerDied / ProtocolError (also
        for a frame left half-written for `stall_s`, Bounds.stall_s: a worker that stalls
        mid-frame is broken even where the step has no time limit)."""
        assert self.handle is not None
        frames = self.frames
        stall = None  # when the frame begun must be whole
        while True:
            body = frames.next_frame()  # FrameTooLarge is a ProtocolError
            if body is not None:
                return parse_worker_message(body)
            stalls = False  # (True: the stall comes before the deadline)
            if frames.pending():
                if stall is None:
                    stall = time.monotonic() + self.stall_s
                stalls = deadline is None or stall < deadline
            try:
                chunk = self.handle.channel.read(1 << 16, remaining(stall if stalls else deadline))
            except TimeoutError:
                if stalls:
                    raise ProtocolError(f"it stalled mid-frame: {frames.pending():,} bytes of a frame, "
                                        f"and no more for {self.stall_s:g} s") from None
                raise DeadlinePassed from None
            except OSError as exc:
                raise WorkerDied(str(exc)) from None
            if not chunk:
                raise WorkerDied("the worker closed its channel")
            frames.feed(chunk)

    def waitable(self) -> bool:
        """Whether an event loop can wait on this worker's channel (else aexecute uses a thread)."""
        return self.handle is not None and self.handle.channel.fileno() is not None

    async def asend(self, data: bytes, deadline: float | None) -> None:
        """`send`, waiting for the pipe on the running event loop. DeadlinePassed / WorkerDied."""
        assert self.handle is not None
        channel = self.handle.channel
        view = memoryview(data)
        while view:
            try:
                view = view[channel.write_nowait(view):]
            except OSError as exc:
                raise WorkerDied(str(exc)) from None
            if view:
                await _ready(channel.write_fileno(), deadline, write=True)

    async def arecv(self, deadline: float | None):
        """`recv`, waiting on the running event loop. DeadlinePassed / WorkerDied / ProtocolError."""
        assert self.handle is not None
        channel, frames = self.handle.channel, self.frames
        while True:
            body = frames.next_frame()
            if body is not None:
                return parse_worker_message(body)
            try:
                chunk = channel.read_nowait(1 << 16)
            except OSError as exc:
                raise WorkerDied(str(exc)) from None
            if chunk is None:
                await _ready(channel.fileno(), deadline)
                continue
            if not chunk:
                raise WorkerDied("the worker closed its channel")
            frames.feed(chunk)

    def is_silent(self) -> bool:
        """Between requests a worker must be silent: no bytes waiting, no EOF."""
        assert self.handle is not None
        if self.frames.pending():
            return False
        try:
            chunk = self.handle.channel.read(1 << 16, 0)
        except TimeoutError:
            return True
        except OSError:
            return False
        self.frames.feed(chunk)
        return False

    def exit_description(self) -> str:
        return self.handle.exit_description() if self.handle is not None else ""

    def kill(self) -> None:
        """Ask the worker to shut down, kill it, close its channel. Never raises."""
        handle, self.handle = self.handle, None
        if handle is not None:
            with contextlib.suppress(Exception):
                handle.channel.write(Shutdown().frame(), 0.05)
            with contextlib.suppress(Exception):
                handle.kill()
            with contextlib.suppress(Exception):
                handle.channel.close()


async def _ready(fd: int | None, deadline: float | None, *, write: bool = False) -> None:
    """Wait on the running loop until `fd` is readable (writable); DeadlinePassed at `deadline`."""
    import asyncio

    assert fd is not None
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    add, remove = (loop.add_writer, loop.remove_writer) if write else (loop.add_reader, loop.remove_reader)
    add(fd, _wake, ready)
    try:
        if deadline is None:
            await ready
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise DeadlinePassed
        try:
            async with asyncio.timeout(left):
                await ready
        except TimeoutError:
            raise DeadlinePassed from None
    finally:
        remove(fd)


def _wake(ready) -> None:
    if not ready.done():
        ready.set_result(None)


def describe_failure(exc: BaseException, why: str) -> str:
    """Why a worker failed a request, in words: timed out, died, or sent a bad frame."""
    if isinstance(exc, DeadlinePassed):
        text = "it did not answer in time"
    elif isinstance(exc, WorkerDied):
        text = "it died"
    else:
        text = f"it sent a bad frame: {str(exc)[:300]}"
    return f"{text} ({why})" if why else text
