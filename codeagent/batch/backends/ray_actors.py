"""The `ray` backend: one Ray actor per worker, each with its own TaskRunner (and warm executor).

Actors rather than plain tasks because a worker keeps state that pays to keep: the imported agent
factory and, with `executor=`, a started executor (a subprocess worker, a container) reused by
every task the actor runs. A hung task is cut by killing its actor (`ray.kill`: Ray cannot
force-cancel an actor method), then a new actor takes the slot; a task whose actor died is
retried like a local worker's. Only strings cross: the factory as "module:attr", the task record
and the result as JSON text; the actor class is exported by reference to this module, so every
node needs codeagent installed (the same version), as with any Ray library.

Where Ray comes from: `address=None` starts a local instance (or joins $RAY_ADDRESS when set),
"auto" joins the cluster running on this machine (`ray start --head`), "ray://host:10001" or
"host:6379" a remote one. A Ray already initialized by the caller is used as it is and left
running; one started here is shut down when the batch ends, and a local one keeps its session
folder (logs, sockets) in a temp folder of this process's own, removed then (Ray's default,
/tmp/ray/session_*, stays behind forever).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from typing import Any

from ..worker import TaskRunner
from .pool import Event, Slot

__all__ = ["RayPool", "ray_available", "ray_session_root", "DEFAULT_ACTOR_OPTIONS"]

DEFAULT_ACTOR_OPTIONS = {"num_cpus": 1, "max_restarts": 0, "max_task_retries": 0}


def ray_session_root() -> str:
    """A folder for a local Ray instance's sessions (`ray.init(_temp_dir=...)`), named after this
    process so that one left by a killed process is swept by the next. Short: Ray's unix sockets
    live under it, and a socket path holds at most 107 bytes."""
    from executors.access import owned_tempdir

    return owned_tempdir("ray-")


def ray_available() -> str | None:
    """None when Ray can be imported, else why not (with the extra to install)."""
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        return f"Ray is not installed ({exc}): pip install 'codeagent[ray]'"
    return None


class BatchWorker:
    """The actor's body (made a Ray actor class in RayPool, so this module imports without Ray)."""

    def __init__(self, runner_args: tuple[Any, ...]) -> None:
        self.runner = TaskRunner(*runner_args)

    def ready(self) -> int:
        return os.getpid()

    def run(self, record_json: str) -> str:
        return json.dumps(self.runner.run(json.loads(record_json)))


class ActorSlot(Slot):
    def __init__(self, actor: Any) -> None:
        super().__init__()
        self.actor = actor
        self.ref: Any = actor.ready.remote()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


class RayPool:
    name = "ray"
    deadline_grace_s = 0.0  # (one task an actor: the driver cuts it at its limit)
    sends_time_limit = False

    def __init__(self, runner_args: tuple[Any, ...], *, address: str | None = None,
                 actor_options: Mapping[str, Any] | None = None, init_options: Mapping[str, Any] | None = None) -> None:
        problem = ray_available()
        if problem:
            raise RuntimeError(problem)
        import ray

        self.ray = ray
        self.owns_ray = not ray.is_initialized()
        self.session_root: str | None = None
        if self.owns_ray:
            target = address or os.environ.get("RAY_ADDRESS") or "local"
            options = {"include_dashboard": False, "log_to_driver": False, **dict(init_options or {})}
            if target != "local":
                options.pop("include_dashboard", None)  # only a new local instance takes it
            elif "_temp_dir" not in options:
                self.session_root = options["_temp_dir"] = ray_session_root()
            ray.init(address=target, **options)
        self.actor_class = ray.remote(BatchWorker).options(**{**DEFAULT_ACTOR_OPTIONS, **dict(actor_options or {})})
        self.runner_args = runner_args
        self.slots: list[ActorSlot] = []

    def start_slot(self) -> ActorSlot:
        slot = ActorSlot(self.actor_class.remote(self.runner_args))
        self.slots.append(slot)
        return slot

    def submit(self, slot: Slot, record: dict[str, Any]) -> None:
        assert isinstance(slot, ActorSlot)
        slot.ref = slot.actor.run.remote(json.dumps(record))

    def wait(self, timeout: float | None) -> list[Event]:
        by_ref = {s.ref: s for s in self.slots if s.state in ("starting", "busy")}
        if not by_ref:
            return []
        refs = list(by_ref)
        ready, _ = self.ray.wait(refs, num_returns=1, timeout=timeout)
        if ready:
            ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        return [self._read(by_ref[ref], ref) for ref in ready]

    def _read(self, slot: ActorSlot, ref: Any) -> Event:
        try:
            value = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:  # the actor died (killed, crashed, lost its node)
            return Event(slot, "died", reason=f"the Ray worker died ({_first_line(exc)})")
        if slot.state == "starting":
            slot.pid = value if isinstance(value, int) else None
            return Event(slot, "ready")
        try:
            row = json.loads(value)
        except (TypeError, ValueError):
            row = None
        if not isinstance(row, dict):
            return Event(slot, "died", reason="the Ray worker sent a malformed result")
        return Event(slot, "result", row=row)

    def _kill(self, slot: ActorSlot) -> None:
        try:
            self.ray.kill(slot.actor, no_restart=True)
        except Exception:  # already gone
            pass

    def replace(self, slot: Slot) -> ActorSlot:
        assert isinstance(slot, ActorSlot)
        self.slots.remove(slot)
        self._kill(slot)
        return self.start_slot()

    def close(self) -> None:
        for slot in self.slots:
            self._kill(slot)
        self.slots.clear()
        if self.owns_ray and self.ray.is_initialized():
            self.ray.shutdown()
        if self.session_root is not None:
            shutil.rmtree(self.session_root, ignore_errors=True)
            self.session_root = None
