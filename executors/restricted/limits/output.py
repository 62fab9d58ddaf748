"""The printed output of a step: a head-and-tail buffer and the sandbox's print()."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from ...worker.wire import cut_parts


class OutputBuffer:
    """Keeps the head and the tail of everything printed, within `limit` characters.

    `native`: in a worker, what native code wrote to fds 1/2 itself since the last look (numpy's
    seterr(all='print'), a Fortran solver's progress), taken in before each print so the logs
    keep CPython's order; None in process (the host's fds are not the step's)."""

    native: Callable[[], str] | None = None

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head: list[str] = []
        self.head_size = 0
        self.tail: list[str] = []
        self.tail_size = 0
        self.total = 0

    def write(self, text: str) -> int:
        if self.native is not None and text != "\n":  # (not before print's own end: one look a line)
            earlier = self.native()
            if earlier:
                self._add(earlier)
        return self._add(text)

    def _add(self, text: str) -> int:
        n = len(text)
        self.total += n
        room = self.head_limit - self.head_size
        if room > 0:
            part = text[:room]
            self.head.append(part)
            self.head_size += len(part)
            text = text[room:]
            if not text:
                return n
        if len(text) >= self.tail_limit:
            self.tail = [text[-self.tail_limit:]]
            self.tail_size = self.tail_limit
            return n
        self.tail.append(text)
        self.tail_size += len(text)
        if self.tail_size > 2 * self.tail_limit:
            joined = "".join(self.tail)[-self.tail_limit:]
            self.tail = [joined]
            self.tail_size = len(joined)
        return n

    def flush(self) -> None:
        pass

    def getvalue(self) -> str:
        if not self.total:  # (most steps print nothing)
            return ""
        head = "".join(self.head)
        tail = "".join(self.tail)
        if self.total <= self.limit:
            return head + tail
        tail = tail[-self.tail_limit:]
        return cut_parts(head, tail, self.total - len(head) - len(tail), self.limit)


def make_print(buffer_ref: Callable[[], OutputBuffer]) -> Callable[..., None]:
    _print = builtins.print

    def print(*args: Any, sep: Any = " ", end: Any = "\n", file: Any = None, flush: bool = False) -> None:  # noqa: A001
        _print(*args, sep=sep, end=end, file=buffer_ref() if file is None else file)

    return print

