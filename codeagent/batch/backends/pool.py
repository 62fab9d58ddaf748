"""What the scheduler needs from a backend: worker slots that start, take one task at a time, and
can be killed and replaced; and events (ready, result, died) from waiting on them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Slot", "Event", "Pool"]


class Slot:
    """One worker (a process or a Ray actor) and the task it is running."""

    def __init__(self) -> None:
        self.state = "starting"  # starting -> idle <-> busy; a dead slot is replaced
        self.task_id: str | None = None
        self.deadline: float | None = None
        self.pid: int | None = None


@dataclass
class Event:
    slot: Slot
    kind: str  # "ready" | "result" | "died"
    row: dict[str, Any] | None = None
    reason: str = ""
    counted: bool = True  # a death before the worker started that counts (one per process)


class Pool(Protocol):
    name: str
    slots: list[Any]  # the live Slots
    deadline_grace_s: float  # how long after a task's time limit the driver kills its worker
    sends_time_limit: bool  # the worker cuts a task at its time limit itself (it gets the limit)

    def start_slot(self) -> Slot: ...

    def submit(self, slot: Slot, record: dict[str, Any]) -> None: ...

    def wait(self, timeout: float | None) -> list[Event]: ...

    def replace(self, slot: Slot) -> Slot: ...

    def close(self) -> None: ...
