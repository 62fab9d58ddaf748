"""Work a host tool leaves for after its result has gone back to the step: the worker's executors
(subprocess, Docker) send the tool's reply first and then run it, while the worker goes on; a
durable run writes the call's line to its record there (codeagent/runs/journal.py). In process
the tool runs in the step's own thread with nothing to overlap: the work is refused and done at
once. Exported by `executors.base`."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["after_tool_reply", "replying"]

# None: no executor offers it here (in process, or outside a tool call)
_AFTER_REPLY: contextvars.ContextVar[replying | None] = contextvars.ContextVar("executors_after_reply", default=None)


def after_tool_reply(work: Callable[[], None]) -> bool:
    """Run `work` once the running tool call's reply has been sent (before the executor reads
    the step's next message, so before the next tool call). False: not offered here (or the
    reply is gone already: a tool that outlived its deadline), do it now."""
    pending = _AFTER_REPLY.get()
    return pending is not None and pending.add(work)


class replying:
    """For executors: `with replying() as after:` around answering one tool call, then
    `after.run()` once the reply is sent (in a `finally`: a reply that could not be sent still
    leaves its work done)."""

    __slots__ = ("work", "lock", "_token")

    def __enter__(self) -> replying:
        self.work: list[Callable[[], None]] | None = []
        self.lock = threading.Lock()  # (a tool on a thread of its own may add work late)
        self._token = _AFTER_REPLY.set(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _AFTER_REPLY.reset(self._token)

    def add(self, work: Callable[[], None]) -> bool:
        with self.lock:
            if self.work is None:
                return False
            self.work.append(work)
            return True

    def run(self) -> None:
        with self.lock:
            work, self.work = self.work or [], None
        for fn in work:
            fn()
