"""Stream a run as NDJSON events, save its RunResult, and replay it offline.

    .venv/bin/python examples/stream_and_replay.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from codeagent import CodeAgent, RunResult, ScriptedModel, tool
from codeagent.events import RunEnd


@tool
def fibonacci(n: int) -> list[int]:
    """The first n Fibonacci numbers."""
    out = [0, 1]
    while len(out) < n:
        out.append(out[-1] + out[-2])
    return out[:n]


REPLIES = [
    "Thought: look at the numbers first.\n<code>\nfib = fibonacci(20)\nprint(fib[-3:])\n</code>",
    "Thought: now sum the even ones.\n<code>\nfinal_answer(sum(n for n in fib if n % 2 == 0))\n</code>",
]


def main() -> None:
    with CodeAgent(ScriptedModel(REPLIES), tools=[fibonacci]) as agent:
        for event in agent.stream("Sum the even numbers among the first 20 Fibonacci numbers."):
            print(event.to_json())  # one NDJSON line per event
            if isinstance(event, RunEnd):
                result = event.result

    with tempfile.TemporaryDirectory() as folder:  # removed afterwards: a demo leaves nothing behind
        path = Path(folder) / "run.json"
        result.save(path)
        replay = ScriptedModel.from_run(RunResult.load(path))
    with CodeAgent(replay, tools=[fibonacci]) as agent:
        again = agent.run(result.task)
    print(f"saved and reloaded {path.name}; replayed answer {again.output} == original {result.output}: "
          f"{again.output == result.output}")


if __name__ == "__main__":
    main()
