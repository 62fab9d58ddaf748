"""Async end to end: `arun` / `astream` (the same loop as run / stream), async tools awaited on the
run's loop, `aexecute` for every executor, many runs at once in one loop, and cancellation that
stops the step and leaves nothing behind."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import executors_under_test
import pytest
from openai_stub import OpenAIStub
from unavailable import IN_CI

from codeagent import CodeAgent, OpenAIModel, ScriptedModel, tool
from codeagent.agent.tool_calling import ToolCallingAgent
from codeagent.events import RunEnd, TextDelta
from codeagent.runs.record import cancelled_result
from codeagent.tools.tool import ToolTimeoutError
from executors import Limits, LocalExecutor, SubprocessExecutor

make_executor = executors_under_test.make_executor
ROOT = Path(__file__).resolve().parents[1]


def code(body: str) -> str:
    return f"Thought: go.\n<code>\n{body}\n</code>"


def loops_seen() -> tuple[list, object]:
    seen: list = []

    @tool
    async def fetch(key: str) -> int:
        """Fetch a number for a key (async)."""
        seen.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        return len(key) * 10

    return seen, fetch


@pytest.mark.parametrize("kind", ["local", "subprocess"])
def test_arun_with_an_async_tool_returns_the_answer_and_awaits_it_on_the_runs_loop(kind: str):
    seen, fetch = loops_seen()

    async def main():
        executor = LocalExecutor(tools=[fetch]) if kind == "local" else SubprocessExecutor(tools=[fetch])
        with executor, CodeAgent(ScriptedModel([code("x = fetch('abcd')\nprint(x)"), code("final_answer(x + 2)")]),
                                 tools=[fetch], executor=executor) as agent:
            result = await agent.arun("fetch it")
        return result, asyncio.get_running_loop()

    result, loop = asyncio.run(main())
    assert result.status == "success" and result.output == 42
    assert seen == [loop]  # awaited on the run's own loop, from the sandbox's plain call


def test_a_sync_run_calls_an_async_tool_too():
    seen, fetch = loops_seen()
    with CodeAgent(ScriptedModel([code("final_answer(fetch('ab'))")]), tools=[fetch],
                   executor=LocalExecutor(tools=[fetch])) as agent:
        assert agent.run("t").output == 20
    assert len(seen) == 1  # (on a background loop: a sync run has none of its own)


def _comparable(events: list) -> list:
    out = []
    for e in events:
        d = e.model_dump(exclude={"run_id", "elapsed_s", "duration_s", "usage", "result"})
        out.append(d)
    return out


def test_astream_yields_the_same_events_as_stream():
    replies = [code("x = 6\nprint(x)"), "no code here", code("x = x * 7"), code("final_answer(x)")]

    def agent() -> CodeAgent:
        return CodeAgent(ScriptedModel(replies, chunk_chars=5), executor=LocalExecutor())

    with agent() as a:
        sync_events = list(a.stream("t"))

    async def collect():
        with agent() as a:
            return [e async for e in a.astream("t")]

    async_events = asyncio.run(collect())
    assert _comparable(async_events) == _comparable(sync_events)
    assert sum(isinstance(e, TextDelta) for e in sync_events) > 4 and isinstance(sync_events[-1], RunEnd)
    assert sync_events[-1].result.output == 42


def test_arun_records_the_same_run_as_run():
    replies = [code("x = 6\nprint(x)"), code("final_answer(x * 7)")]
    with CodeAgent(ScriptedModel(replies), executor=LocalExecutor()) as a:
        sync = a.run("t")
    with CodeAgent(ScriptedModel(replies), executor=LocalExecutor()) as a:
        result = asyncio.run(a.arun("t"))
    skip = {"run_id", "duration_s", "model_duration_s", "execution_duration_s"}
    assert [s.model_dump(exclude=skip) for s in result.steps] == [s.model_dump(exclude=skip) for s in sync.steps]
    assert result.output == sync.output == 42


def test_many_runs_share_one_loop():
    """Each run's step waits in its async tool until every run's step is there: they run at once
    (serialized, the barrier would never fill and the step would time out)."""
    n = 6

    async def main():
        barrier = asyncio.Barrier(n)

        @tool
        async def meet() -> int:
            """Wait for the others."""
            async with asyncio.timeout(60):
                await barrier.wait()
            return 1

        agents = [CodeAgent(ScriptedModel([code("final_answer(meet())")]), tools=[meet],
                            executor=LocalExecutor(tools=[meet], limits=Limits(timeout_s=90))) for _ in range(n)]
        try:
            return await asyncio.gather(*(a.arun(f"run {i}") for i, a in enumerate(agents)))
        finally:
            for a in agents:
                a.close()
                a.executor.close()

    results = asyncio.run(main())
    assert [r.output for r in results] == [1] * n


def test_tool_calling_agent_arun_awaits_async_tools_concurrently():
    started: list[str] = []

    @tool
    async def slow_add(a: int, b: int) -> int:
        """Add, slowly."""
        started.append(f"{a}+{b}")
        await asyncio.sleep(0)
        return a + b

    replies = [{"tool_calls": [{"name": "slow_add", "arguments": {"a": 1, "b": 2}},
                               {"name": "slow_add", "arguments": {"a": 40, "b": 2}}]},
               {"tool_calls": [{"name": "final_answer", "arguments": {"answer": 45}}]}]
    with OpenAIStub(replies) as stub:
        agent = ToolCallingAgent(OpenAIModel("m", base_url=stub.base_url, api_key="k"), tools=[slow_add])
        result = asyncio.run(agent.arun("t"))
    assert result.output == 45 and sorted(started) == ["1+2", "40+2"]
    assert "slow_add(a=40, b=2) -> 42" in result.steps[0].observation


def test_an_async_tool_past_its_timeout_is_a_tool_timeout():
    @tool(timeout_s=0.05)
    async def hang() -> None:
        """Never return."""
        await asyncio.Event().wait()

    with pytest.raises(ToolTimeoutError, match="did not return within its 0.05 s timeout"):
        asyncio.run(hang.acall())
    with pytest.raises(ToolTimeoutError):
        hang()


# -- aexecute: the same contract, awaited --------------------------------------------------------

CORPUS = ["x = add(2, 3)\nprint(x)\nx * 2", "y = [i * i for i in range(5)]\nsum(y)", "1 / 0",
          "import os\nos.system('true')", "final_answer({'x': x})", "print(undefined_name)"]


def test_aexecute_gives_what_execute_gives(make_executor):
    def add(a: int, b: int) -> int:
        return a + b

    sync_ex, async_ex = make_executor(tools={"add": add}), make_executor(tools={"add": add})
    expected = [sync_ex.execute(c) for c in CORPUS]

    async def run_all():
        return [await async_ex.aexecute(c) for c in CORPUS]

    got = asyncio.run(run_all())
    for e, g in zip(expected, got, strict=True):
        assert (g.output, g.logs, g.is_final_answer, g.error and g.error.type) == \
            (e.output, e.logs, e.is_final_answer, e.error and e.error.type)


def test_aexecute_answers_an_async_tool_on_the_callers_loop(make_executor):
    seen, fetch = loops_seen()
    ex = make_executor(tools={"fetch": fetch})

    async def main():
        return await ex.aexecute("fetch('abc') + 1"), asyncio.get_running_loop()

    result, loop = asyncio.run(main())
    assert result.output == 31 and seen == [loop]


def test_aexecute_holds_the_time_limit(make_executor):
    ex = make_executor(limits=Limits(timeout_s=1))
    result = asyncio.run(ex.aexecute("while True:\n    pass"))
    assert result.error is not None and result.error.type == "TimeoutError"
    assert asyncio.run(ex.aexecute("1 + 1")).output == 2


def test_a_pool_hands_executors_to_async_runs_in_turn():
    async def main(pool):
        async def use(i: int) -> int:
            async with pool.aacquire() as ex:
                result = await ex.aexecute(f"z = {i}\nz * 2")
                return result.output

        return await asyncio.gather(*(use(i) for i in range(6)))

    with SubprocessExecutor.pool(2) as pool:
        assert asyncio.run(main(pool)) == [0, 2, 4, 6, 8, 10]


# -- cancellation --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["local", "subprocess", pytest.param("docker", marks=pytest.mark.docker)])
def test_cancelling_a_run_stops_its_step_and_leaves_nothing_behind(kind: str, tmp_path: Path):
    if kind == "docker":
        from unavailable import docker_skip_reason, unavailable

        from executors.docker.executor import engine_problem

        if not (IN_CI or os.environ.get("CODEAGENT_DOCKER") == "1") or engine_problem():
            unavailable(docker_skip_reason(engine_problem()))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "async_cancel_probe.py"), kind], cwd=ROOT,
                          env={**os.environ, "TMPDIR": str(tmp)}, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    for name in ("loop", "sleep", "tool"):
        step = report[name]
        assert step["status"] == "cancelled" and not step["worker_alive"], (name, step)
        assert step["stopped_s"] < 10, (name, step)  # the step stopped: nothing waited for its limit
    if kind == "subprocess":
        assert report["streaming"] == {"status": "cancelled", "server_saw_close": True}
    if kind == "docker":
        assert report["containers_left"] == []
    assert report["threads"] == [] and report["tmp_left"] == []


def test_a_cancelled_run_carries_its_result():
    async def main():
        began = asyncio.Event()

        @tool
        async def started() -> bool:
            """Say so."""
            began.set()
            return True

        with CodeAgent(ScriptedModel([code("x = 1"), code("started()\nwhile True:\n    pass")]), tools=[started],
                       executor=LocalExecutor(tools=[started])) as agent:
            task = asyncio.ensure_future(agent.arun("spin"))
            await asyncio.wait_for(began.wait(), 60)
            task.cancel()
            with pytest.raises(asyncio.CancelledError) as caught:
                await task
            assert task.cancelled() and type(caught.value) is asyncio.CancelledError
            return cancelled_result(caught.value)

    result = asyncio.run(main())
    assert result.status == "cancelled" and "during step 2" in result.error
    assert result.steps[0].error is None and result.steps[1].error == "cancelled"
