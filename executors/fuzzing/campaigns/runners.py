"""Runners: where the executor lives during a campaign.

`InlineRunner` keeps it in this process (a hang is noticed, not stopped: a Python thread cannot
be killed); `ForkRunner` keeps it in a forked child, so a hang or a crash of the interpreter is
seen, the child killed and a fresh one started. Both answer `run(request, budget) -> Outcome`.
"""

from __future__ import annotations

import contextlib
import gc
import json
import multiprocessing
import os
import secrets
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from ...base import Limits
from ..judging.evaluate import RunContext, evaluate, is_in_process
from ..judging.outcome import Outcome

__all__ = ["InlineRunner", "ForkRunner", "make_executor", "describe_in_child"]

# Bound once: an attempt that tampers with the json module must not break our own messages.
_json_dumps = json.dumps
_json_loads = json.loads


def make_executor(factory: Callable[[], Any], ctx: RunContext) -> Any:
    ex = factory()
    if ctx.register and ctx.tools:
        ex.register_tools(dict(ctx.tools))
    return ex


def describe_in_child(factory: Callable[[], Any], ctx: RunContext) -> dict:
    """Build the executor once in a forked child and say what it is (name, limits, authorized
    imports, in process or not), so that this process imports none of its libraries: a library
    whose native thread pools started here (polars) deadlocks in the children forked from it."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        gc.freeze()  # (as the runner's child does: see _child_main)
        try:
            ex = make_executor(factory, ctx)
            info = {"ok": True, "name": type(ex).__name__, "in_process": is_in_process(ex),
                    "limits": asdict(getattr(ex, "limits", None) or Limits()),
                    "authorized_imports": list(getattr(ex, "authorized_imports", None) or [])}
            with contextlib.suppress(Exception):
                ex.close()
        except BaseException as exc:  # noqa: BLE001
            info = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        data = _json_dumps(info).encode()
        while data:
            data = data[os.write(write, data):]
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    if not chunks:
        raise RuntimeError("the executor factory killed the process that built it")
    info = _json_loads(b"".join(chunks))
    if not info["ok"]:
        raise RuntimeError(f"the executor factory failed: {info['error']}")
    return info


class InlineRunner:
    """Runs the executor in this process; a watchdog thread notices a hang (and gives up on that
    executor instance: a Python thread cannot be killed). `ex`: one `factory` already built."""

    def __init__(self, factory: Callable[[], Any], ctx: RunContext, ex: Any = None) -> None:
        self.factory, self.ctx = factory, ctx
        self.ex = ex if ex is not None else make_executor(factory, ctx)
        self.limits: Limits = getattr(self.ex, "limits", None) or Limits()
        # Each example ends with a full collection (evaluate.py); what this process held before
        # the campaign is not the examples', so it is frozen (unless the host froze objects of its
        # own) and those collections walk only what was made since: in a host that imported the
        # PyData stack a full collection takes ~0.13 s, more than a small example. Thawed at close.
        self._froze = gc.get_freeze_count() == 0
        if self._froze:
            gc.collect()
            gc.freeze()

    def run(self, req: dict, budget: float) -> Outcome:
        box: list[Outcome] = []

        def work() -> None:
            try:
                box.append(evaluate(self.ex, req, self.ctx))
            except BaseException as exc:  # noqa: BLE001
                box.append(Outcome(req["category"], req["label"], "internal-error", req["code"],
                                   f"the checker failed: {type(exc).__name__}: {exc}"))

        t = threading.Thread(target=work, daemon=True)
        t0 = time.perf_counter()
        t.start()
        t.join(budget)
        if t.is_alive():
            self.ex = make_executor(self.factory, self.ctx)
            status = "uncontained" if req["category"] == "bomb" else "hang"
            return Outcome(req["category"], req["label"], status, req["code"],
                           f"execute() did not return within {budget:.1f} s", duration_s=time.perf_counter() - t0)
        return box[0]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ex.close()
        if self._froze:
            self._froze = False
            gc.unfreeze()


def _child_main(conn: Any, parent_end: Any, factory: Callable[[], Any], ctx: RunContext, log_path: str) -> None:
    parent_end.close()  # so that the parent's death reads as EOF here: an orphan must not linger
    # What the parent made lives on here: frozen, it is not walked by the full collection each
    # example ends with (evaluate.py). Forked from a big process (a test runner that imported the
    # PyData stack: millions of objects) every collection walked them all, and its first one
    # copied every page they sit on: 150 examples took 141 s from a 3M-object parent, 6.4 s alone.
    gc.freeze()
    # Our stdout/stderr go to a file the parent never trusts but scans for leaked secrets:
    # a finalizer that runs model code after execute() could print to the real stdout.
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    # sys.stdout may not be fd 1 (pytest's capture replaces it): point both at the file too.
    sys.stdout = open(log_path, "a", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115
    sys.stderr = sys.stdout
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ex = make_executor(factory, ctx)
        limits = getattr(ex, "limits", None) or Limits()
        conn.send_bytes(_json_dumps({"ok": True, "limits": asdict(limits)}).encode())
    except BaseException as exc:  # noqa: BLE001
        conn.send_bytes(_json_dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}).encode())
        return

    def log_size() -> int:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        try:
            return os.path.getsize(log_path)
        except OSError:
            return 0

    def stray_output_since(start: int) -> Callable[[], str]:
        def read() -> str:
            log_size()  # flushes
            with contextlib.suppress(OSError), open(log_path, "rb") as f:
                f.seek(start)
                return f.read(1_000_000).decode("utf-8", "replace")
            return ""

        return read

    while True:
        try:
            req = _json_loads(conn.recv_bytes())
        except (EOFError, OSError):
            break
        if req.get("op") == "close":
            break
        try:
            out = evaluate(ex, req, ctx, stray_output_since(log_size()))
        except BaseException as exc:  # noqa: BLE001
            out = Outcome(req["category"], req["label"], "internal-error", req["code"],
                          f"the checker failed: {type(exc).__name__}: {exc}")
        conn.send_bytes(_json_dumps(asdict(out)).encode())
    with contextlib.suppress(Exception):
        ex.close()


class ForkRunner:
    """Runs the executor in a forked child process: a hang or a crash of the interpreter is seen,
    the child killed and a fresh one started. Messages are JSON, never pickle."""

    def __init__(self, factory: Callable[[], Any], ctx: RunContext) -> None:
        self.factory, self.ctx = factory, ctx
        self.mp = multiprocessing.get_context("fork")
        from ...access import owned_tempdir  # lazily: fuzzing loads no place
        self.log_dir = owned_tempdir("codeagent-fuzz-log-")
        self.proc = None
        self.conn = None
        self.limits = Limits()
        self._spawn()

    def _spawn(self) -> None:
        parent, child = self.mp.Pipe()
        log_path = os.path.join(self.log_dir, f"child-{secrets.token_hex(4)}.log")
        self.proc = self.mp.Process(target=_child_main, args=(child, parent, self.factory, self.ctx, log_path),
                                    daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        if not parent.poll(120):
            self._kill()
            raise RuntimeError("the executor factory did not build an executor within 120 s")
        hello = _json_loads(parent.recv_bytes())
        if not hello["ok"]:
            self._kill()
            raise RuntimeError(f"the executor factory failed: {hello['error']}")
        self.limits = Limits(**hello["limits"])

    def _kill(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            self.proc.kill()
        if self.proc is not None:
            self.proc.join(5)
        if self.conn is not None:
            self.conn.close()

    def run(self, req: dict, budget: float) -> Outcome:
        t0 = time.perf_counter()
        try:
            self.conn.send_bytes(_json_dumps(req).encode())
            if self.conn.poll(budget):
                return Outcome(**_json_loads(self.conn.recv_bytes()))
            detail = f"execute() did not return within {budget:.1f} s (process killed)"
        except (EOFError, OSError, BrokenPipeError):
            self.proc.join(2)
            detail = f"the process hosting the executor died (exit code {self.proc.exitcode})"
        status = "uncontained" if req["category"] == "bomb" else "hang"
        if "died" in detail and req["category"] != "bomb":
            status = "internal-error"
        if "died" in detail and (self.proc.exitcode or 0) < 0 and req["category"] == "native":
            status = "crashed"  # killed by a signal: a native library broke the host
        self._kill()
        self._spawn()
        return Outcome(req["category"], req["label"], status, req["code"], detail,
                       duration_s=time.perf_counter() - t0)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.send_bytes(_json_dumps({"op": "close"}).encode())
            self.proc.join(10)
        self._kill()
        shutil.rmtree(self.log_dir, ignore_errors=True)


