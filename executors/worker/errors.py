"""The exceptions model code meets wherever it runs: `FinalAnswer` and `ToolError`. Stdlib only.

Their one home is here, on the lowest floor, because the worker must raise them while running
from a bare directory (a container mount) with nothing but the standard library, where importing
`executors.base` (dataclasses, typing, the package) is not possible or costs start-up time.
`executors.base` re-exports both, so `executors.FinalAnswer is executors.worker.errors.FinalAnswer`:
one class for the in-process runtime, the worker and every `except` in user code.
"""

from __future__ import annotations

__all__ = ["FinalAnswer", "ToolError"]


class FinalAnswer(BaseException):
    """Raised by `final_answer(value)` to end the run.

    A BaseException so that `except Exception:` in model code cannot swallow it; executors also
    remember the call, so not even a bare `except:` can turn a final answer into a normal step.
    """

    def __init__(self, value=None) -> None:
        super().__init__(value)
        self.value = value


class ToolError(Exception):
    """A tool called by model code failed; model code may catch it like any exception."""
