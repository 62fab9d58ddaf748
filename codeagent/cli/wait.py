"""A long wait shows that it is waiting: on a terminal, a model request still unanswered after a
few seconds prints a line on stderr (and again every WAIT_REPEAT_S), saying what it waits for and
when it gives up. Off a terminal nothing is printed: logs and pipes stay as they were.

`CODEAGENT_WAIT_NOTICE_S` sets the first delay (default 5 s; the tests use a shorter one).
"""

from __future__ import annotations

import functools
import os
import threading
import time
from typing import Any, TextIO

from ..models.openai_model import tries_text

__all__ = ["show_waiting", "WAIT_NOTICE_S", "WAIT_REPEAT_S"]

WAIT_NOTICE_S = 5.0
WAIT_REPEAT_S = 15.0


def _delay() -> float:
    try:
        value = float(os.environ.get("CODEAGENT_WAIT_NOTICE_S", WAIT_NOTICE_S))
    except ValueError:
        return WAIT_NOTICE_S
    return value if value > 0 else WAIT_NOTICE_S


def _limit(model: Any) -> str:
    timeout, retries = getattr(model, "timeout", None), getattr(model, "max_retries", None)
    if not isinstance(timeout, (int, float)) or not isinstance(retries, int):
        return ""
    return f"; gives up after {tries_text(timeout, retries)} (--model-timeout, --model-retries)"


def _notice(model: Any, out: TextIO, started: float, done: threading.Event) -> None:
    where = getattr(model, "base_url", None) or "api.openai.com"
    wait = _delay()
    while not done.wait(wait):
        out.write(f"  … waiting for the model at {where} ({time.monotonic() - started:.0f} s so far"
                  f"{_limit(model)})\n")
        out.flush()
        wait = WAIT_REPEAT_S


def show_waiting(model: Any, out: TextIO) -> None:
    """Wrap `model.complete` (and `model.stream`, until its first piece of text) so that a slow
    request is announced on `out` (a terminal only)."""
    isatty = getattr(out, "isatty", None)
    if not (callable(isatty) and isatty()) or not callable(getattr(model, "complete", None)):
        return
    complete, stream = model.complete, getattr(model, "stream", None)

    def watch() -> threading.Event:
        done = threading.Event()
        threading.Thread(target=_notice, args=(model, out, time.monotonic(), done), daemon=True,
                         name="codeagent-wait-notice").start()
        return done

    @functools.wraps(complete)
    def waiting(*args: Any, **kwargs: Any) -> Any:
        done = watch()
        try:
            return complete(*args, **kwargs)
        finally:
            done.set()

    model.complete = waiting
    if callable(stream):
        @functools.wraps(stream)
        def waiting_stream(*args: Any, **kwargs: Any) -> Any:
            done = watch()
            try:
                return _FirstPiece(stream(*args, **kwargs), done)
            except BaseException:
                done.set()
                raise

        model.stream = waiting_stream


class _FirstPiece:
    """A reply stream that ends the waiting notice at its first piece (or its end)."""

    def __init__(self, stream: Any, done: threading.Event) -> None:
        self.stream, self.done = stream, done

    def __iter__(self) -> _FirstPiece:
        return self

    def __next__(self) -> Any:
        try:
            return next(self.stream)
        finally:
            self.done.set()

    def close(self) -> None:
        self.done.set()
        self.stream.close()

    def reply(self, **options: Any) -> Any:
        return self.stream.reply(**options)
