"""Per-step overhead of the CodeAgent loop, excluding the model.

A ScriptedModel replays code actions, so what is left of each step is the loop itself (building
messages, parsing, bookkeeping, events) plus the executor. Measured side by side in one run, for
the in-process LocalExecutor and the default SubprocessExecutor: the same actions executed
directly by a bare executor of the same kind. Two workloads:

  tiny  2-line actions with one tool call (the loop's own cost dominates)
  demo  the `codeagent demo` action: 15 lines, 33 tool calls through validated Tool wrappers

Then whole demo runs, a new agent each time (so the default's worker starts every run): with an
instant model, and with a model that takes 200 ms to answer (the worker starts meanwhile).

    .venv/bin/python benchmarks/agent_overhead.py [--runs 40] [--steps 10] [--json]

Target (issue 4): <= 1 ms per step, excluding the model, with the in-process executor.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codeagent import CodeAgent, ScriptedModel, tool
from codeagent.cli import demo  # noqa: E402
from executors.local import LocalExecutor  # noqa: E402
from executors.process import SubprocessExecutor  # noqa: E402

EXECUTORS = {"local": LocalExecutor, "subprocess": SubprocessExecutor}


@tool
def lookup(key: str) -> int:
    """Return a number for a key."""
    return len(key)


DEMO_CODE = demo.SCRIPTED_REPLY.split("<code>\n", 1)[1].split("</code>", 1)[0]


# Every action is unique per run, like real model output: no side gets a compile-cache hit.
def tiny_action(i: int, run: int) -> str:
    return f"x{i} = lookup('item{i}') + {run}\nprint(x{i})"


def demo_action(i: int, run: int) -> str:
    return DEMO_CODE.replace("final_answer(", "answer = (") + f"\nstep = {i} + {run}"


WORKLOADS: dict[str, tuple[Callable[[int, int], str], list]] = {
    "tiny": (tiny_action, [lookup]),
    "demo": (demo_action, demo.demo_tools()),
}


def final(run: int) -> str:
    return f"final_answer({run})"


def replies(make: Callable[[int, int], str], steps: int, run: int) -> list[str]:
    out = [f"Thought: step {i}.\n<code>\n{make(i, run)}\n</code>" for i in range(steps - 1)]
    out.append(f"Thought: done.\n<code>\n{final(run)}\n</code>")
    return out


def measure(workload: str, runs: int, steps: int, kind: str = "local") -> dict[str, float]:
    make, tools = WORKLOADS[workload]
    Executor = EXECUTORS[kind]
    loop_ms: list[float] = []       # step minus model minus executor
    no_model_ms: list[float] = []   # step minus model: what the target is about
    exec_in_loop_ms: list[float] = []
    with Executor(tools=tools) as executor:
        agent = CodeAgent(ScriptedModel([]), tools=tools, executor=executor, max_steps=steps)
        for run in range(runs):
            agent.model = ScriptedModel(replies(make, steps, run))
            result = agent.run("benchmark")
            assert result.status == "success", result.error
            assert all(s.error is None for s in result.steps), [s.error for s in result.steps]
            for s in result.steps:
                no_model_ms.append((s.duration_s - s.model_duration_s) * 1000)
                loop_ms.append((s.duration_s - s.model_duration_s - s.execution_duration_s) * 1000)
                exec_in_loop_ms.append(s.execution_duration_s * 1000)

    bare_ms: list[float] = []
    with Executor(tools=tools) as executor:
        for run in range(runs):
            executor.reset()
            for code in [make(i, run) for i in range(steps - 1)] + [final(run)]:
                t = time.perf_counter()
                executor.execute(code)
                bare_ms.append((time.perf_counter() - t) * 1000)

    med = statistics.median
    return {
        "steps_measured": len(no_model_ms),
        "step_excluding_model_ms": med(no_model_ms),
        "step_excluding_model_p90_ms": statistics.quantiles(no_model_ms, n=10)[-1],
        "loop_only_ms": med(loop_ms),
        "loop_only_p90_ms": statistics.quantiles(loop_ms, n=10)[-1],
        "executor_in_loop_ms": med(exec_in_loop_ms),
        "bare_executor_ms": med(bare_ms),
        "ratio_step_vs_bare_executor": med(no_model_ms) / med(bare_ms),
    }


class SlowModel(ScriptedModel):
    """A scripted model that takes `delay_s` to answer, like a fast server."""

    def __init__(self, replies: list[str], delay_s: float) -> None:
        super().__init__(replies)
        self.delay_s = delay_s

    def complete(self, *args, **kwargs):
        time.sleep(self.delay_s)
        return super().complete(*args, **kwargs)


def demo_runs(runs: int, delay_s: float) -> dict[str, float]:
    """Wall time of a whole demo run with a new agent: the default executor vs LocalExecutor."""
    out: dict[str, list[float]] = {"default (subprocess)": [], "local": []}
    for _ in range(runs):
        for name in out:
            model = SlowModel([demo.SCRIPTED_REPLY], delay_s)
            t = time.perf_counter()
            executor = LocalExecutor(tools=demo.demo_tools()) if name == "local" else None
            with CodeAgent(model, tools=demo.demo_tools(), executor=executor) as agent:
                assert agent.run(demo.TASK).success
            if executor is not None:
                executor.close()
            out[name].append((time.perf_counter() - t) * 1000)
    return {name: statistics.median(times) for name, times in out.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    for workload in WORKLOADS:
        for kind in EXECUTORS:
            measure(workload, 2, args.steps, kind)  # warm up imports and first-use costs
    figures = {f"{w} {k}": measure(w, args.runs, args.steps, k) for w in WORKLOADS for k in EXECUTORS}
    runs = max(3, args.runs // 4)
    whole = {"instant model": demo_runs(runs, 0.0), "200 ms model": demo_runs(runs, 0.2)}
    if args.json:
        print(json.dumps({"steps": figures, "demo_runs_ms": whole}))
        return 0
    print(f"CodeAgent per-step cost excluding the model — ScriptedModel, {args.runs} runs x "
          f"{args.steps} steps per workload and executor, medians (ms)")
    print(f"{'workload':<17}{'step':>8}{'p90':>8}{'loop':>8}{'p90':>8}{'executor':>10}{'bare exec':>11}"
          f"{'step/bare':>11}")
    for name, f in figures.items():
        print(f"{name:<17}{f['step_excluding_model_ms']:>8.3f}{f['step_excluding_model_p90_ms']:>8.3f}"
              f"{f['loop_only_ms']:>8.3f}{f['loop_only_p90_ms']:>8.3f}{f['executor_in_loop_ms']:>10.3f}"
              f"{f['bare_executor_ms']:>11.3f}{f['ratio_step_vs_bare_executor']:>10.2f}x")
    print("step = everything but the model; loop = step minus executor; bare exec = the same actions run "
          "by an executor of the same kind directly. Target: loop <= 1 ms per step.")
    print(f"whole demo run with a new agent, medians of {runs} (ms), interleaved:")
    for label, times in whole.items():
        default, local = times["default (subprocess)"], times["local"]
        print(f"  {label:<15} default (subprocess) {default:8.1f}   LocalExecutor {local:8.1f}   "
              f"ratio {default / local:5.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
