"""The worker's entry point: harden the process, protect the channel, serve. Stdlib only.

The host starts it with the directory that holds this package first on sys.path (a subprocess
uses the installed package's directory, a container its read-only mount):

    python -I -c "import sys,os;sys.path.insert(0,DIR);from worker.main import main;del sys.path[0];os._exit(main())" [SPEC]

(`executors.remote.link.worker_command` builds that line), or `python -m executors.worker` where the
package is installed. SPEC, a JSON object of process settings, is described in `harden`.
"""

from __future__ import annotations

import _signal as signal
import os
import sys

from .harden import harden, protect_channel
from .loop import ChannelGone, Worker
from .wire import ProtocolError, loads

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Serve the host on fds 0/1; returns the exit status. argv[1], if given, is the SPEC."""
    argv = sys.argv if argv is None else argv
    memory = None
    if len(argv) > 1:
        try:
            spec = loads(argv[1])
        except ValueError:
            spec = None
        if not isinstance(spec, dict):
            os.write(2, b"worker: argv[1] must be a JSON object\n")
            return 2
        harden(spec)
        memory = spec.get("memory")  # applied once the worker is ready (harden.cap_memory)
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # RLIMIT_FSIZE -> OSError, not death
    # Ctrl-C is the host's (the worker is in a session of its own, a terminal's never reaches
    # it): a stray SIGINT must not kill a worker mid-protocol, and the restricted runtime then
    # keeps no per-step SIGINT handler here (two syscalls a step).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    fd_in, fd_out, capture = protect_channel()
    sys.stdin = None  # model code reading input() gets an error, not the channel
    worker = Worker(fd_in, fd_out, capture, memory=memory)

    def _in_child() -> None:  # forks made by model code lose the channel
        for fd in (fd_in, fd_out):
            try:
                os.close(fd)
            except OSError:
                pass

    os.register_at_fork(after_in_child=_in_child)
    try:
        worker.serve()
    except (ChannelGone, BrokenPipeError):
        pass
    except ProtocolError as exc:
        try:
            os.write(2, f"worker: protocol error: {exc}\n".encode())
        except OSError:
            pass
        return 3
    return 0
