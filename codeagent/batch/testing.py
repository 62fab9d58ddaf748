"""A scripted agent factory and task set for testing and benchmarking batches without a model.

    run_batch("codeagent.batch.testing:scripted_agent", scripted_tasks(20), out="out")

Each task carries its model replies in the record (`"script": [...]`), so the same record gives
the same run on any worker, any backend, any node. Other record fields make a run misbehave on
purpose: `"hang": true` (the model never answers), `"factory_error": "..."` (building the agent
raises). The tools cover the rest: `boom` raises, `nap` sleeps, `write_pid` tells a test which
process to kill, `granted_files` shows the task's `files` reached the factory.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from typing import Any

from codeagent import CodeAgent, ScriptedModel, tool

from .tasks import BatchTask

__all__ = ["scripted_agent", "scripted_tasks", "TOOLS", "HangingModel", "SlowModel"]


class HangingModel:
    """A model that never answers (a server that accepted the request and went silent)."""

    model_id = "hanging"
    scripted = True

    def complete(self, messages: Any, stop: Any = None) -> Any:
        while True:
            time.sleep(3600)

    async def acomplete(self, messages: Any, stop: Any = None) -> Any:
        await asyncio.Event().wait()  # (silent on the loop, as a server that never answers)


class SlowModel(ScriptedModel):
    """A ScriptedModel whose every reply takes `delay_s` (a model server's latency, without one)."""

    def __init__(self, replies: Any, delay_s: float, **options: Any) -> None:
        super().__init__(replies, **options)
        self.delay_s = delay_s

    def complete(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(self.delay_s)
        return super().complete(*args, **kwargs)

    async def acomplete(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(self.delay_s)
        return super().complete(*args, **kwargs)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def boom(message: str) -> str:
    """Always raises RuntimeError(message): a tool that fails."""
    raise RuntimeError(message)


@tool
def nap(seconds: float) -> float:
    """Sleep for `seconds` (at most 30) and return them."""
    time.sleep(min(float(seconds), 30.0))
    return seconds


@tool
def write_pid(path: str) -> int:
    """Write this worker's process id to `path` (a test kills that process) and return it."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(str(os.getpid()))
    return os.getpid()


TOOLS = [add, boom, nap, write_pid]


def scripted_agent(task: BatchTask, executor: Any = None, files: Sequence[str] | None = None,
                   max_steps: int = 4, model_delay_s: float = 0.0) -> CodeAgent:
    """A CodeAgent whose model replays `task.meta["script"]` (see the module docstring), each
    reply after `model_delay_s` seconds."""
    meta = task.meta
    if meta.get("factory_error"):
        raise RuntimeError(str(meta["factory_error"]))
    script = meta.get("script", [])
    model: Any = (HangingModel() if meta.get("hang") else SlowModel(script, model_delay_s, model_id="scripted-batch")
                  if model_delay_s else ScriptedModel(script, model_id="scripted-batch"))
    granted = list(files or ())

    @tool
    def granted_files() -> list:
        """The files this task was granted."""
        return granted

    return CodeAgent(model, tools=[*TOOLS, granted_files], executor=executor, max_steps=int(meta.get("max_steps", max_steps)))


def _code(body: str) -> str:
    return f"Thought: compute it.\n<code>\n{body}\n</code>"


def scripted_tasks(n: int = 20) -> list[dict[str, Any]]:
    """`n` task records of five shapes (one step; two steps; variables; a failing step then a fix;
    never answering, so max_steps), each with the answer it should produce where there is one."""
    records = []
    for i in range(n):
        shape = i % 5
        record: dict[str, Any] = {"id": f"t{i:03d}", "task": f"scripted task {i} (shape {shape})"}
        if shape == 0:
            record.update(script=[_code(f"final_answer(add({i}, {i * i}))")], expected=i + i * i)
        elif shape == 1:
            record.update(script=[_code(f"x = {i} * 3\nprint(x)"), _code("final_answer(f'value={x}')")],
                          expected=f"value={i * 3}")
        elif shape == 2:
            record.update(variables={"xs": list(range(i))}, script=[_code("final_answer(sum(xs))")],
                          expected=sum(range(i)))
        elif shape == 3:
            record.update(script=[_code("y = 1 / 0"), _code(f"y = {i} // 2\nfinal_answer([y, 'ok'])")],
                          expected=[i // 2, "ok"])
        else:
            record.update(script=[_code(f"print({i} + {k})") for k in range(4)], max_steps=2)
        records.append(record)
    return records
