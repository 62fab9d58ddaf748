"""Cancel async runs mid-step and report what is left: `python tests/async_cancel_probe.py KIND`.

Run by tests/test_async_agent.py in a process of its own whose TMPDIR is an empty folder, so
"nothing left" can be checked whole: every kind of executor (local, subprocess, docker) is made
by the agent or handed to it, a run is cancelled while its step runs (an endless loop, a sleep, a
pending async tool) or while the model streams, and then the process reports, as one JSON line:
the statuses the cancelled runs recorded, whether each step's worker process still exists, the
threads still running, the files left in TMPDIR, and how long each stop took.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from openai_stub import OpenAIStub  # noqa: E402

from codeagent import CodeAgent, OpenAIModel, ScriptedModel, tool  # noqa: E402
from codeagent.runs.record import cancelled_result  # noqa: E402

# threads one per process that outlive runs by design (never one per run)
PROCESS_THREADS = {"MainThread", "codeagent-watchdog", "codeagent-zygote", "codeagent-spawner"}
STEPS = {
    "loop": "started()\nwhile True:\n    pass",
    "sleep": "started()\nimport time\ntime.sleep(4)",
    "tool": "started()\nwait_forever()",
}


def make_executor(kind: str, tools: list) -> object | None:
    if kind == "local":
        from executors import LocalExecutor

        return LocalExecutor(tools=tools)
    if kind == "docker":
        from executors import DockerExecutor

        return DockerExecutor(tools=tools)
    return None  # the agent's own: a SubprocessExecutor


async def cancel_mid_step(kind: str, body: str) -> dict:
    began = asyncio.Event()

    @tool
    async def started() -> bool:
        """Say the step has started."""
        began.set()
        return True

    @tool
    async def wait_forever() -> None:
        """Never return."""
        await asyncio.Event().wait()

    tools = [started, wait_forever]
    executor = make_executor(kind, tools)
    model = ScriptedModel([f"<code>\n{body}\n</code>"])
    agent = CodeAgent(model, tools=tools, executor=executor)
    task = asyncio.ensure_future(agent.arun("spin"))
    await asyncio.wait_for(began.wait(), 60)
    handle = getattr(agent.executor, "_link", None)
    pid = getattr(getattr(getattr(handle, "handle", None), "proc", None), "pid", None)
    container = getattr(agent.executor, "container_id", None)
    t0 = time.monotonic()
    task.cancel()
    try:
        await task
        status = "not cancelled"
    except asyncio.CancelledError as exc:
        status = cancelled_result(exc).status
    stopped = time.monotonic() - t0
    agent.close()
    if executor is not None:
        executor.close()
    return {"status": status, "stopped_s": stopped, "worker_alive": pid is not None and _alive(pid),
            "container": container}


async def cancel_while_streaming() -> dict:
    reply = {"text": "Thought: " + "thinking " * 200 + "\n<code>\nfinal_answer(1)\n</code>", "chunk_delay_s": 0.02}
    with OpenAIStub([reply]) as stub:
        agent = CodeAgent(OpenAIModel("m", base_url=stub.base_url, api_key="k"))
        three = asyncio.Event()

        async def consume() -> None:
            seen = 0
            async for event in agent.astream("t"):
                seen += event.type == "text_delta"
                if seen == 3:
                    three.set()

        task = asyncio.ensure_future(consume())
        await asyncio.wait_for(three.wait(), 60)
        task.cancel()
        try:
            await task
            status = "not cancelled"
        except asyncio.CancelledError as exc:
            status = cancelled_result(exc).status
        agent.close()
        deadline = time.monotonic() + 30
        while not stub.cut and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return {"status": status, "server_saw_close": bool(stub.cut)}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


async def main(kind: str) -> dict:
    report = {name: await cancel_mid_step(kind, body) for name, body in STEPS.items()}
    if kind == "subprocess":
        report["streaming"] = await cancel_while_streaming()
    return report


if __name__ == "__main__":
    kind = sys.argv[1]
    report = asyncio.run(main(kind))
    if kind == "docker":
        from executors.docker.image import connect

        client = connect(None)
        ids = {r["container"] for r in report.values() if isinstance(r, dict) and r.get("container")}
        report["containers_left"] = [c.id for c in client.containers.list(all=True) if c.id in ids]
    report["threads"] = sorted({t.name for t in threading.enumerate()} - PROCESS_THREADS)
    report["tmp_left"] = sorted(os.listdir(os.environ["TMPDIR"]))
    print(json.dumps(report))
