"""The zygote: a process that imported the worker once and forks ready workers. Stdlib only.

A cold worker spends most of its start on the interpreter's own start and on imports (the
restricted runtime is ~100 modules); forking a process that has done both costs about a
millisecond. The host starts one zygote per interpreter and package path (`process/zygote.py`):

    python -I -c "...from worker.zygote import main..." SPEC     (fd 0: a Unix seqpacket socket)

SPEC: {"parent": the host's pid, "preload": [package paths]}. The zygote dies with the host,
imports the worker and, from the package paths, the restricted runtime's modules (what a worker
imports at `configure`), then serves requests on fd 0, one message each:

  host -> zygote   {"seq": n, "spec": worker SPEC, "cwd": dir, "env": {...}, "fds": [n, ...]}
                   + descriptors (SCM_RIGHTS): stdin, stdout, stderr, then one per "fds" entry
  zygote -> host   {"pid": pid, "seq": n} (or {"error": text, "seq": n}) for request n;
                   {"exit": pid, "status": returncode} when a child ends (negative: a signal)

Each child becomes what `worker.main` would be after its imports: its own session, the three
descriptors at 0/1/2 and the others at the numbers the host chose (namespaces it joins), nothing
else open, the workdir, the environment; then `main()` with the worker SPEC, whose death signal
ties it to the zygote (which is tied to the host). The zygote never configures a runtime or runs
model code, starts no thread (fork is only safe single-threaded), and reaps its children.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import sys

__all__ = ["main"]

_MAX_MESSAGE = 1 << 20
_MAX_FDS = 8


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv if argv is None else argv
    try:
        spec = json.loads(argv[1])
    except (IndexError, ValueError):
        return 2
    if not isinstance(spec, dict):
        return 2
    from .harden import harden

    harden({"parent": spec.get("parent")})
    _preload(spec.get("preload") or [])
    # Every object the children inherit goes to the permanent generation: no collection in a
    # child walks (and so writes to, copying) the pages that hold them. A child's idle memory
    # is then mostly what it made itself (issue 48: <= 2 MiB PSS per idle worker).
    gc.freeze()
    control = socket.socket(fileno=os.dup(0))
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.close(null)
    return _serve(control)


def _preload(paths: list) -> None:
    """What a worker imports before it serves, and at `configure` under the restricted policy."""
    import importlib

    from . import loop
    from . import main as _worker_main  # noqa: F401 - imported for the children

    for path in paths:
        if isinstance(path, str) and path not in sys.path:
            sys.path.insert(0, path)
    try:
        served = importlib.import_module(loop.RESTRICTED_RUNTIME)
        # One runtime built and dropped: what every build computes once per process (the
        # capability guard's roots, the import hooks, the tables' caches) is then the zygote's,
        # shared by its children instead of copied into each (~0.8 MiB of a child's PSS). It
        # starts no thread (fork stays safe); steps and their grants stay per worker.
        served.build(tools={}, authorized_imports=[], limits={}, grants=served.grants(None),
                     workdir="/")
    except Exception:  # noqa: BLE001 - the child reports it at configure, as a worker would
        pass
    # What building the runtime and confining the worker import later (and sysconfig's paths,
    # computed once): each child would import them again.
    for name in ("logging", "traceback", "textwrap", "atexit", "sysconfig", "fcntl",
                 f"{__package__}.hardening", f"{__package__}.hardening.holds"):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a child imports it (or fails) as a worker would
            pass
    try:
        import sysconfig

        sysconfig.get_paths()
    except Exception:  # noqa: BLE001
        pass
    try:  # the runtime's read set, memoized for every child (network or not)
        from .hardening import python_paths

        python_paths(network=False)
        python_paths(network=True)
    except Exception:  # noqa: BLE001 - a child computes it (or fails) as a worker would
        pass


def _serve(control: socket.socket) -> int:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    poller = select.poll()
    poller.register(control.fileno(), select.POLLIN)
    poller.register(wake_r, select.POLLIN)
    while True:
        for fd, _event in poller.poll():
            if fd == wake_r:
                os.read(wake_r, 4096)
                _reap(control)
                continue
            try:
                data, fds, _flags, _addr = socket.recv_fds(control, _MAX_MESSAGE, _MAX_FDS)
            except OSError:
                return 0
            if not data:
                return 0  # the host is gone: so are the children (their death signal)
            _spawn(control, data, fds, (wake_r, wake_w))


def _send(control: socket.socket, message: dict) -> None:
    try:
        control.send(json.dumps(message).encode())
    except OSError:
        pass


def _reap(control: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(control, {"exit": pid, "status": os.waitstatus_to_exitcode(status)})


def _spawn(control: socket.socket, data: bytes, fds: list[int], own: tuple[int, int]) -> None:
    request: dict = {}
    try:
        request = json.loads(data)
        numbers = request["fds"]
        if len(fds) != 3 + len(numbers) or not all(type(n) is int and n > 2 for n in numbers):
            raise ValueError("the descriptors do not match the request")
        pid = os.fork()
    except Exception as exc:  # noqa: BLE001 - a bad request: say so, keep serving
        for fd in fds:
            os.close(fd)
        seq = request.get("seq") if type(request) is dict else None
        _send(control, {"error": f"{type(exc).__name__}: {exc}", "seq": seq})
        return
    if pid == 0:
        try:
            _become_worker(control, request, fds, own)
        finally:
            os._exit(70)
    for fd in fds:
        os.close(fd)
    _send(control, {"pid": pid, "seq": request.get("seq")})


def _become_worker(control: socket.socket, request: dict, fds: list[int],
                   own: tuple[int, int]) -> None:
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    control.close()
    for fd in own:
        os.close(fd)
    os.setsid()
    # The descriptors to their numbers: first all of them above every target, then down.
    targets = [0, 1, 2, *request["fds"]]
    high = max(targets + fds) + 1
    moved = [os.dup2(fd, high + i) for i, fd in enumerate(fds)]
    for fd in fds:
        os.close(fd)
    for fd, target in zip(moved, targets, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    from .harden import close_other_fds

    close_other_fds(targets)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in (request.get("env") or {}).items()})
    spec = dict(request.get("spec") or {})
    spec["parent"] = os.getppid()  # the zygote: it dies with the host, and so do its children
    from .main import main as worker_main

    os._exit(worker_main(["worker", json.dumps(spec)]))
