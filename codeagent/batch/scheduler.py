"""`run_batch`: many agent runs on a pool of workers, each result saved as it ends, resumable.

The driver (this process) is the only writer of the batch directory. It hands one task at a time
to each idle worker, waits for results, deaths and deadlines together, and records every task
exactly once: a result as the run ended it; `timeout` when the run passed `timeout_s` (its worker
is killed and replaced); `crashed` when its worker died and the retries are used up; `error` when
building or running the agent raised (retried too: it may be an executor that failed to start).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from executors.base import timeout_seconds

from ..tracing.batch import TRACE_KEY, batch_span, worker_config
from ..tracing.export import TracingUnavailable
from ..tracing.export import setup as setup_tracing
from .backends.pool import Event, Pool
from .progress import make_progress
from .store import ResultStore
from .summary import BatchSummary, answers_match
from .tasks import BatchTask, load_tasks
from .worker import EXECUTOR_KINDS, TIMEOUT_KEY, reference_of, resolve, timeout_error

__all__ = ["run_batch", "BatchError", "BACKENDS", "DEFAULT_TIMEOUT_S", "RETRY_CHOICES", "retry_statuses"]

BACKENDS = ("local", "ray")
DEFAULT_TIMEOUT_S = 600.0
RETRIED = ("crashed", "error")  # a timeout is the task's own doing: running it again would hang again
# --retry: which recorded tasks a resumed batch runs again (the others are skipped)
RETRY_CHOICES = ("failed", "timeout", "all")
_RETRY_STATUSES = {"failed": ("failed", "max_steps", "error", "crashed", "interrupted", "cancelled"), "timeout": ("timeout",)}
MAX_START_FAILURES = 3  # workers dying before they ever got ready, in a row: the setup is broken


def retry_statuses(choices: Iterable[str]) -> frozenset[str]:
    """The recorded statuses that --retry CHOICE... runs again ("all": every one but success)."""
    out: set[str] = set()
    for choice in choices:
        if choice not in RETRY_CHOICES:
            raise BatchError(f"retry must be one of {', '.join(RETRY_CHOICES)}, got {choice!r}")
        for name in (("failed", "timeout") if choice == "all" else (choice,)):
            out.update(_RETRY_STATUSES[name])
    return frozenset(out)


class BatchError(RuntimeError):
    """The batch cannot run at all (bad factory, no backend, workers that cannot start)."""


def _factory_spec(make_agent: str | Callable[..., Any]) -> str:
    """Check the factory in the driver (a typo fails here, not once per task) and return the
    "module:attr" reference the workers import."""
    if isinstance(make_agent, str):
        try:
            obj = resolve(make_agent)
        except Exception as exc:
            raise BatchError(f"cannot import the agent factory {make_agent!r}: {exc}")
        if not callable(obj):
            raise BatchError(f"the agent factory {make_agent!r} is not callable")
        return make_agent
    if not callable(make_agent):
        raise BatchError(f"make_agent must be a callable or a 'module:attr' string, got {type(make_agent).__name__}")
    ref = reference_of(make_agent)
    if ref is None:
        raise BatchError("the agent factory must be importable by the workers: pass 'module:attr', or a "
                         "function defined at module level in an importable module (not a lambda, a "
                         "closure, or a function of the script being run as __main__)")
    return ref


def _json_or_none(value: Any) -> Any:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return value


def _clean_row(row: dict[str, Any]) -> dict[str, Any]:
    """The result fields, type-checked: a worker's bytes are not trusted to be well-formed."""
    def number(key: str, kind: type) -> Any:
        value = row.get(key)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else kind(0)

    def text(key: str) -> str | None:
        return row[key] if isinstance(row.get(key), str) else None

    return {"status": row["status"], "output": _json_or_none(row.get("output")), "output_repr": text("output_repr"),
            "error": text("error"), "steps": int(number("steps", int)), "model_calls": int(number("model_calls", int)),
            "tokens": int(number("tokens", int)), "wall_s": float(number("wall_s", float))}


def _finish_row(task: BatchTask, row: dict[str, Any], attempts: int) -> dict[str, Any]:
    row = _clean_row(row)
    row = {"id": task.id, **row, "attempts": attempts}
    if task.has_expected:
        row["expected"] = task.expected
        row["correct"] = row["status"] == "success" and answers_match(task.expected, row.get("output"))
    return row


def _failure_row(status: str, error: str, wall: float) -> dict[str, Any]:
    return {"status": status, "output": None, "output_repr": None, "error": error, "steps": 0,
            "model_calls": 0, "tokens": 0, "wall_s": round(wall, 4)}


class _Batch:
    """The driver's loop over one pool."""

    def __init__(self, pool: Pool, store: ResultStore, tasks: list[BatchTask], progress: Any,
                 timeout_s: float | None, retries: int, todo: set[str],
                 trace: dict[str, str] | None = None) -> None:
        self.pool, self.store, self.progress = pool, store, progress
        self.trace = {TRACE_KEY: trace} if trace else {}  # the batch span's context, for every task
        self.by_id = {t.id: t for t in tasks}
        self.pending = deque(t.id for t in tasks if t.id in todo)
        self.timeout_s, self.retries = timeout_s, retries
        self.attempts: dict[str, int] = {}
        self.started: dict[str, float] = {}
        self.start_failures = 0
        self.finished: list[tuple[dict[str, Any], dict[str, Any] | None]] = []  # to write, in order

    def run(self, slots: int) -> None:
        for _ in range(min(slots, len(self.pending))):
            self.pool.start_slot()
        try:
            while self.pending or any(s.state == "busy" for s in self.pool.slots):
                self._assign()
                for event in self.pool.wait(self._wait_time()):
                    self._handle(event)
                self._enforce_deadlines()
                self._assign()  # workers get their next task before the driver waits on the disk
                self._commit()
        finally:
            self._commit()  # what finished before an interrupt is kept

    def _assign(self) -> None:
        for slot in list(self.pool.slots):
            if slot.state != "idle" or not self.pending:
                continue
            task_id = self.pending.popleft()
            self.attempts[task_id] = self.attempts.get(task_id, 0) + 1
            self.started[task_id] = time.perf_counter()
            slot.state, slot.task_id = "busy", task_id
            record = {**self.by_id[task_id].to_record(), **self.trace}
            slot.deadline = None
            if self.timeout_s is not None:
                slot.deadline = time.perf_counter() + self.timeout_s + getattr(self.pool, "deadline_grace_s", 0.0)
                if getattr(self.pool, "sends_time_limit", False):
                    record[TIMEOUT_KEY] = self.timeout_s  # the worker cuts the task itself
            self.pool.submit(slot, record)

    def _wait_time(self) -> float | None:
        deadlines = [s.deadline for s in self.pool.slots if s.state == "busy" and s.deadline]
        if not deadlines:
            return None
        return max(0.0, min(deadlines) - time.perf_counter())

    def _handle(self, event: Event) -> None:
        slot = event.slot
        if event.kind == "ready":
            slot.state, self.start_failures = "idle", 0
        elif event.kind == "result":
            task_id = slot.task_id
            slot.state, slot.task_id, slot.deadline = "idle", None, None
            assert task_id is not None and event.row is not None
            row, run = event.row, event.row.get("run")
            if not isinstance(row.get("status"), str) or not isinstance(run, (dict, type(None))):
                row, run = _failure_row("crashed", "the worker sent a malformed result", self._elapsed(task_id)), None
            self._settle(task_id, row, run)
        else:
            self._on_death(event)

    def _on_death(self, event: Event) -> None:
        slot, reason = event.slot, event.reason
        task_id, was = slot.task_id, slot.state
        if was == "starting" and getattr(event, "counted", True):
            self.start_failures += 1
            if self.start_failures >= MAX_START_FAILURES:
                raise BatchError(f"{MAX_START_FAILURES} workers in a row died before they started: {reason}")
        self.pool.replace(slot)
        if task_id is not None:
            self._settle(task_id, _failure_row("crashed", reason, self._elapsed(task_id)), None)

    def _enforce_deadlines(self) -> None:
        now = time.perf_counter()
        for slot in list(self.pool.slots):
            if slot.state == "busy" and slot.deadline is not None and now >= slot.deadline:
                task_id = slot.task_id
                assert task_id is not None
                self.pool.replace(slot)
                error = timeout_error(self.timeout_s, "its worker killed and replaced")
                self._settle(task_id, _failure_row("timeout", error, self._elapsed(task_id)), None)

    def _elapsed(self, task_id: str) -> float:
        return time.perf_counter() - self.started.get(task_id, time.perf_counter())

    def _settle(self, task_id: str, row: dict[str, Any], run: dict[str, Any] | None) -> None:
        attempt = self.attempts[task_id]
        if row["status"] in RETRIED and attempt <= self.retries:
            self.progress.retry(task_id, attempt + 1, row.get("error") or row["status"])
            self.pending.appendleft(task_id)
            return
        self.finished.append((_finish_row(self.by_id[task_id], row, attempt), run))

    def _commit(self) -> None:
        finished, self.finished = self.finished, []
        self.store.record_many(finished)
        for row, _ in finished:
            self.progress.task_end(row)


def _make_pool(backend: str, runner_args: tuple[Any, ...], address: str | None,
               ray_options: Mapping[str, Any] | None, ray_init: Mapping[str, Any] | None, runs: int) -> Pool:
    if backend == "local":
        from .backends.local import LocalPool

        return LocalPool(runner_args, runs)
    from .backends.ray_actors import RayPool

    try:
        return RayPool(runner_args, address=address, actor_options=ray_options, init_options=ray_init)
    except RuntimeError as exc:
        raise BatchError(str(exc))


def _check_counts(backend: str, workers: int, retries: int, runs_per_worker: int) -> None:
    if backend not in BACKENDS:
        raise BatchError(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    if workers < 1:
        raise BatchError(f"workers must be >= 1, got {workers}")
    if retries < 0:
        raise BatchError(f"retries must be >= 0, got {retries}")
    if not isinstance(runs_per_worker, int) or runs_per_worker < 1:
        raise BatchError(f"runs_per_worker must be an integer >= 1, got {runs_per_worker!r}")
    if runs_per_worker > 1 and backend != "local":
        raise BatchError("runs_per_worker (--runs-per-worker) is for the local backend: a Ray actor runs "
                         "one task at a time (ask for more workers instead)")


def run_batch(
    make_agent: str | Callable[..., Any],
    tasks: str | os.PathLike[str] | Iterable[Any],
    *,
    out: str | os.PathLike[str],
    backend: str = "local",
    workers: int = 2,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    retries: int = 1,
    options: Mapping[str, Any] | None = None,
    executor: str | None = None,
    executor_options: Mapping[str, Any] | None = None,
    address: str | None = None,
    ray_options: Mapping[str, Any] | None = None,
    ray_init: Mapping[str, Any] | None = None,
    progress: str | Callable[[dict[str, Any]], None] | None = "auto",
    retry: Iterable[str] = (),
    trace: str | None = None,
    runs_per_worker: int = 1,
) -> BatchSummary:
    """Run every task with an agent from `make_agent`, `workers` at a time; see codeagent.batch.

    retry: "failed", "timeout" or "all" (or several): recorded tasks with those outcomes run again
    when the batch resumes (the command line's --retry); the others are skipped.
    trace: "otlp" or "console" to trace the batch (codeagent.tracing.batch): one trace per task.
    runs_per_worker: tasks each local worker process runs at once, on one event loop (the agents'
    `arun`; each its own executor); a task past timeout_s is cut by cancelling its run."""
    _check_counts(backend, workers, retries, runs_per_worker)
    if timeout_s is not None:
        try:
            timeout_s = timeout_seconds(timeout_s, "timeout_s (--task-timeout)")
        except ValueError as exc:
            raise BatchError(f"{exc} (or None for no limit)")
    rerun = retry_statuses([retry] if isinstance(retry, str) else retry)  # the --retry choices
    if executor is not None and executor not in EXECUTOR_KINDS:
        raise BatchError(f"unknown executor {executor!r}: choose one of {', '.join(EXECUTOR_KINDS)}")
    factory = _factory_spec(make_agent)
    todo = load_tasks(tasks)
    if not todo:
        raise BatchError(f"no tasks in {tasks}: one JSON object a line, with 'id' and 'task'"
                         if isinstance(tasks, (str, os.PathLike)) else "no tasks were given")
    try:
        trace_config = worker_config(trace)
        if trace is not None:
            setup_tracing(trace)  # the driver's batch span goes to the same place
    except (ValueError, TracingUnavailable) as exc:
        raise BatchError(f"trace={trace!r}: {exc}")
    runner_args = (factory, dict(options or {}), executor, dict(executor_options or {}), trace_config)
    reporter = make_progress(progress)
    t0 = time.perf_counter()
    with ResultStore(out) as store:
        kept = [t.id for t in todo if t.id in store.done and store.done[t.id].get("status") not in rerun]
        skipped_by = dict(Counter(str(store.done[task_id].get("status")) for task_id in kept))
        skipped = len(kept)
        reporter.start(len(todo), skipped, backend, workers)
        if skipped < len(todo):
            pool = _make_pool(backend, runner_args, address, ray_options, ray_init, runs_per_worker)
            try:
                with batch_span(backend, workers, len(todo) - skipped) as carrier:
                    _Batch(pool, store, todo, reporter, timeout_s, retries, {t.id for t in todo} - set(kept),
                           carrier).run(workers * runs_per_worker)
            finally:
                pool.close()
        wall = time.perf_counter() - t0
        ran = len(todo) - skipped
        store.write_meta({"backend": backend, "workers": workers, "runs_per_worker": runs_per_worker, "factory": factory, "options": _redacted(options or {}), "executor": executor,
                          "timeout_s": timeout_s, "retries": retries, "ran": ran, "wall_s": round(wall, 3)})
    summary = BatchSummary.from_dir(out, [t.id for t in todo], wall_s=wall, ran=ran, skipped=skipped,
                                    skipped_by=skipped_by, backend=backend, workers=workers)
    reporter.end(summary.total, summary.succeeded)
    return summary


def _redacted(options: Mapping[str, Any]) -> dict[str, Any]:
    """Factory options for batch.json, without values whose name says they are secret."""
    secret = ("key", "token", "secret", "password")
    return {k: ("<redacted>" if any(w in k.lower() and not k.lower().endswith("_env") for w in secret) else v)
            for k, v in options.items()}
