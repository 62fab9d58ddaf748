"""What runs inside a batch worker (a pool process or a Ray actor): build the agent for one task,
run it, and turn the outcome into plain JSON. Shared by both backends so they give the same rows.

Only JSON crosses between the driver and a worker: the task record in, the result row and the
RunResult's JSON out. The agent factory reaches the worker as an importable reference
("module:attr"), never as a pickled object.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from codeagent.cli.executor_options import EXECUTORS as EXECUTOR_KINDS

from ..tracing.batch import TRACE_KEY, end_task, start_worker, task_span
from .tasks import BatchTask

__all__ = ["TaskRunner", "resolve", "reference_of", "model_calls", "EXECUTOR_KINDS", "TIMEOUT_KEY",
           "timeout_error"]

TIMEOUT_KEY = "_timeout_s"  # a record's time limit, for a worker that runs tasks at once (and cuts them)


def timeout_error(timeout_s: float, how: str) -> str:
    return (f"the task did not finish within its time limit of {timeout_s:g} s (--task-timeout, "
            f"run_batch(timeout_s=...)): it was cut, {how}")



def resolve(ref: str) -> Any:
    """"package.module:attr.attr" -> the object (ImportError / AttributeError name the reference)."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected an importable reference 'module:attr', got {ref!r}")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AttributeError(f"{ref}: module {module_name!r} has no attribute {attr!r}") from None
    return obj


def reference_of(obj: Any) -> str | None:
    """The "module:qualname" that imports back to `obj`, or None (lambdas, closures, __main__)."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not module or not qualname or module == "__main__" or "<" in qualname:
        return None
    try:
        return f"{module}:{qualname}" if resolve(f"{module}:{qualname}") is obj else None
    except Exception:
        return None


def model_calls(steps: list[Any]) -> int:
    """Model requests a run made: one per step plus its empty-reply retries (a step that ended on
    empty replies made exactly `empty_replies` requests)."""
    total = 0
    for s in steps:
        empty, kind = (s.get("empty_replies", 0), s.get("error_kind")) if isinstance(s, Mapping) else \
            (s.empty_replies, s.error_kind)
        total += empty + (kind != "empty_reply")
    return total


def _error_row(task_id: str, status: str, error: str, wall: float) -> dict[str, Any]:
    return {"id": task_id, "status": status, "output": None, "output_repr": None, "error": error,
            "steps": 0, "model_calls": 0, "tokens": 0, "wall_s": round(wall, 4)}


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    p = params.get(name)
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


class TaskRunner:
    """Runs tasks in this process with one factory and, when configured, warm executors (made on
    first use, handed to the agents, replaced after one fails): one after another (`run`), or
    several at once on one event loop (`arun`: the agent's `arun`, each task an executor of its
    own, cut at its time limit by cancelling it)."""

    def __init__(self, factory: str | Callable[..., Any], options: Mapping[str, Any] | None = None,
                 executor: str | None = None, executor_options: Mapping[str, Any] | None = None,
                 trace: Mapping[str, Any] | None = None) -> None:
        self.factory_ref = factory
        self.options = dict(options or {})
        self.executor_kind = executor
        self.executor_options = dict(executor_options or {})
        self._factory: Callable[..., Any] | None = None
        self._executor: Any = None
        self._spare: list[Any] = []  # warm executors no running task holds (arun)
        start_worker(trace)  # the driver's exporter and OTEL_* settings (codeagent.tracing.batch)

    # -- pieces ----------------------------------------------------------------------------

    def factory(self) -> Callable[..., Any]:
        if self._factory is None:
            ref = self.factory_ref
            self._factory = resolve(ref) if isinstance(ref, str) else ref
            if not callable(self._factory):
                raise TypeError(f"the agent factory {ref!r} is not callable")
        return self._factory

    def executor(self) -> Any:
        if self._executor is None:
            from codeagent.cli.executor_options import make_executor

            self._executor = make_executor(self.executor_kind, self.executor_options)
        return self._executor

    def warm_up(self) -> None:
        """Import the factory now, so the first task's deadline does not pay for it (a failure is
        reported by each task instead)."""
        try:
            self.factory()
        except Exception:
            pass

    def drop_executor(self) -> None:
        ex, self._executor = self._executor, None
        _close(ex)

    def make_agent(self, task: BatchTask, executor: Any = None) -> Any:
        factory = self.factory()
        kwargs = dict(self.options)
        if _accepts(factory, "task"):
            kwargs["task"] = task
        if task.files:
            if not _accepts(factory, "files"):
                raise TypeError(f"task {task.id!r} grants files, but the agent factory takes no `files` argument")
            kwargs["files"] = list(task.files)
        if self.executor_kind is not None and _accepts(factory, "executor"):
            kwargs["executor"] = executor if executor is not None else self.executor()
        return factory(**kwargs)

    # -- one task --------------------------------------------------------------------------

    def run(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """The task's result row, with the RunResult as `run` (JSON); never raises. When tracing,
        the task is a trace of its own (codeagent.tracing.batch)."""
        record = dict(record)
        carrier = record.pop(TRACE_KEY, None)
        with task_span(carrier, str(record.get("id", "?"))) as span:
            row = self._run(record)
            end_task(span, row)
        return row

    def _run(self, record: Mapping[str, Any]) -> dict[str, Any]:
        t0 = time.perf_counter()
        task_id = str(record.get("id", "?"))
        try:
            task = BatchTask.from_record(record)
            agent = self.make_agent(task)
            try:
                result = agent.run(task.task, **_run_kwargs(agent.run, task))
            finally:
                _close(agent)
        except Exception as exc:
            self.drop_executor()  # it may be what broke
            return _failed_row(task_id, exc, t0)
        row = _result_row(task_id, result, t0)
        if _executor_broke(row["run"]):
            self.drop_executor()  # the next task gets a fresh one
        return row

    async def arun(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """`run`, for a worker that runs several tasks at once: awaited on its loop."""
        record = dict(record)
        carrier = record.pop(TRACE_KEY, None)
        timeout = record.pop(TIMEOUT_KEY, None)
        with task_span(carrier, str(record.get("id", "?"))) as span:
            t0 = time.perf_counter()
            try:
                async with asyncio.timeout(timeout):
                    row = await self._arun(record)
            except TimeoutError:
                row = {**_error_row(str(record.get("id", "?")), "timeout", timeout_error(
                    timeout, "its run cancelled (its step stopped)"), time.perf_counter() - t0), "run": None}
            end_task(span, row)
        return row

    async def _arun(self, record: Mapping[str, Any]) -> dict[str, Any]:
        t0 = time.perf_counter()
        task_id = str(record.get("id", "?"))
        executor = None
        try:
            task = BatchTask.from_record(record)
            if self.executor_kind is not None and _accepts(self.factory(), "executor"):
                executor = self._spare.pop() if self._spare else await asyncio.to_thread(self._new_executor)
            agent = self.make_agent(task, executor)
            try:
                kwargs = _run_kwargs(agent.run, task)
                if callable(getattr(agent, "arun", None)):
                    result = await agent.arun(task.task, **kwargs)
                else:  # an agent without an async API: its run on a thread
                    result = await asyncio.to_thread(agent.run, task.task, **kwargs)
            finally:
                _close(agent)
        except Exception as exc:
            _close(executor)  # it may be what broke
            return _failed_row(task_id, exc, t0)
        except BaseException:  # cut at its time limit: its executor may be mid-step
            _close(executor)
            raise
        row = _result_row(task_id, result, t0)
        if executor is not None:
            if _executor_broke(row["run"]):
                _close(executor)
            else:
                self._spare.append(executor)
        return row

    def _new_executor(self) -> Any:
        from codeagent.cli.executor_options import make_executor

        return make_executor(self.executor_kind, self.executor_options)

    def close(self) -> None:
        self.drop_executor()
        for ex in self._spare:
            _close(ex)
        self._spare = []


def _close(thing: Any) -> None:
    """Close an agent or an executor; one that is broken is being thrown away anyway."""
    close = getattr(thing, "close", None)
    if callable(close):
        try:
            close()
        except Exception:
            pass


def _run_kwargs(run: Callable[..., Any], task: BatchTask) -> dict[str, Any]:
    kwargs = {"variables": dict(task.variables)} if task.variables else {}
    if kwargs and not _accepts(run, "variables"):
        raise TypeError(f"task {task.id!r} has variables, but {type(run.__self__).__name__}.run() takes none")
    return kwargs


def _failed_row(task_id: str, exc: Exception, t0: float) -> dict[str, Any]:
    tb = traceback.extract_tb(exc.__traceback__)[-1:]
    where = f" (at {tb[0].filename}:{tb[0].lineno})" if tb else ""
    return {**_error_row(task_id, "error", f"{type(exc).__name__}: {exc}{where}", time.perf_counter() - t0),
            "run": None}


def _result_row(task_id: str, result: Any, t0: float) -> dict[str, Any]:
    run = json.loads(result.to_json(indent=None))
    return {
        "id": task_id, "status": run["status"], "output": run["output"], "output_repr": run["output_repr"],
        "error": run["error"], "steps": len(run["steps"]), "model_calls": model_calls(run["steps"]),
        "tokens": run["usage"]["total_tokens"], "wall_s": round(time.perf_counter() - t0, 4), "run": run,
    }


def _executor_broke(run: Mapping[str, Any]) -> bool:
    return (run["error"] or "").startswith("executor") or any(s.get("error_kind") == "executor" for s in run["steps"])
