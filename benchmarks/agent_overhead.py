"""Per-step overhead of the CodeAgent loop, excluding the model.

A ScriptedModel replays trivial code actions, so what is left of each step is the loop itself
(building messages, parsing, bookkeeping, events) plus the in-process executor. Measured side by
side in one run: the same actions executed directly by a bare LocalExecutor.

    .venv/bin/python benchmarks/agent_overhead.py [--runs 40] [--steps 10] [--json]

Target (issue 4): <= 1 ms per step with the in-process executor.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from executors.local import LocalExecutor  # noqa: E402

from codeagent import CodeAgent, ScriptedModel, tool  # noqa: E402


@tool
def lookup(key: str) -> int:
    """Return a number for a key."""
    return len(key)


def action(i: int) -> str:
    return f"x{i} = lookup('item{i}') + {i}\nprint(x{i})"


def replies(steps: int) -> list[str]:
    out = [f"Thought: step {i}.\n<code>\n{action(i)}\n</code>" for i in range(steps - 1)]
    out.append("Thought: done.\n<code>\nfinal_answer(x0)\n</code>")
    return out


def measure(runs: int, steps: int) -> dict[str, float]:
    loop_ms: list[float] = []       # step minus model minus executor
    no_model_ms: list[float] = []   # step minus model (what the target is about)
    exec_in_loop_ms: list[float] = []
    with LocalExecutor(tools={"lookup": lookup}) as executor:
        agent = CodeAgent(ScriptedModel([]), tools=[lookup], executor=executor, max_steps=steps)
        for _ in range(runs):
            agent.model = ScriptedModel(replies(steps))
            result = agent.run("benchmark")
            assert result.status == "success", result.error
            for s in result.steps:
                no_model_ms.append((s.duration_s - s.model_duration_s) * 1000)
                loop_ms.append((s.duration_s - s.model_duration_s - s.execution_duration_s) * 1000)
                exec_in_loop_ms.append(s.execution_duration_s * 1000)

    bare_ms: list[float] = []
    with LocalExecutor(tools={"lookup": lookup}) as executor:
        for _ in range(runs):
            executor.reset()
            for i in range(steps - 1):
                t = time.perf_counter()
                executor.execute(action(i))
                bare_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            executor.execute("final_answer(x0)")
            bare_ms.append((time.perf_counter() - t) * 1000)

    def med(xs: list[float]) -> float:
        return statistics.median(xs)

    return {
        "steps_measured": len(no_model_ms),
        "step_excluding_model_ms": med(no_model_ms),
        "loop_only_ms": med(loop_ms),
        "executor_in_loop_ms": med(exec_in_loop_ms),
        "bare_executor_ms": med(bare_ms),
        "step_excluding_model_p90_ms": statistics.quantiles(no_model_ms, n=10)[-1],
        "ratio_step_vs_bare_executor": med(no_model_ms) / med(bare_ms),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    measure(3, args.steps)  # warm up imports and caches
    figures = measure(args.runs, args.steps)
    if args.json:
        print(json.dumps(figures))
        return 0
    print(f"CodeAgent per-step overhead, ScriptedModel, LocalExecutor — {figures['steps_measured']} steps "
          f"({args.runs} runs x {args.steps} steps), medians")
    print(f"  step excluding the model      {figures['step_excluding_model_ms']:.3f} ms"
          f"   (p90 {figures['step_excluding_model_p90_ms']:.3f} ms; target <= 1 ms)")
    print(f"    of which the loop itself    {figures['loop_only_ms']:.3f} ms")
    print(f"    of which the executor       {figures['executor_in_loop_ms']:.3f} ms")
    print(f"  bare LocalExecutor.execute    {figures['bare_executor_ms']:.3f} ms   (same actions, no agent)")
    print(f"  ratio step / bare execute     {figures['ratio_step_vs_bare_executor']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
