"""Where an in-process step's time goes: a no-op step's work by function, and a cold step's phases.

    .venv/bin/python benchmarks/step_cost.py [--tree PATH] [--only bytecodes,instructions,cold]

  bytecodes     the bytecodes a cached no-op step (`y = 1`, LocalExecutor, default limits) runs,
                per function (sys.settrace's opcode events): deterministic, so two trees compare
                exactly; CPython's own `exec` of the same code runs 4
  instructions  the machine instructions of one such step in user space (valgrind's callgrind,
                a run of N steps minus a run of none; skipped when valgrind is not installed).
                Syscalls (chdir, setrlimit, setitimer, /proc/self/statm) are not counted: they
                cost ~10-15 us of kernel time a step on this machine (measured alone)
  cold          a cold step's phases over the 164 HumanEval programs (benchmarks/real_programs.py),
                medians of the best of 5 (thread CPU): ast.parse, the one check-and-instrument
                pass, compile() of the tree, against CPython's compile() of the source

`--tree PATH` measures another checkout (e.g. a worktree of the commit before a change) with this
script, so two trees are measured the same way.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

_STEPS = r"""
import sys
sys.path.insert(0, sys.argv[1])
from executors import LocalExecutor
ex = LocalExecutor()
for _ in range(50):
    ex.execute("y = 1")
for _ in range(int(sys.argv[2])):
    ex.execute("y = 1")
ex.close()
"""


def bytecodes(steps: int = 20) -> tuple[float, list[tuple[str, float]]]:
    from executors import LocalExecutor
    from executors.restricted.execution import runtime

    # A step takes a host's trace function off its thread (restricted/host/tracing.py): this counter is
    # the measuring instrument, not a host debugger, so it stays on (where the tree has the step).
    if hasattr(runtime, "suspend_tracing"):
        runtime.suspend_tracing = lambda state: None
    ex = LocalExecutor()
    for _ in range(50):
        ex.execute("y = 1")
    counts: collections.Counter = collections.Counter()

    def tracer(frame, event, arg):  # noqa: ANN001, ANN202 - sys.settrace's signature
        frame.f_trace_opcodes = True
        if event == "opcode":
            code = frame.f_code
            counts[f"{Path(code.co_filename).name}:{code.co_name}"] += 1
        return tracer

    sys.settrace(tracer)
    try:
        for _ in range(steps):
            ex.execute("y = 1")
    finally:
        sys.settrace(None)
        ex.close()
    total = sum(counts.values()) / steps
    return total, [(name, n / steps) for name, n in counts.most_common(16)]


def instructions(tree: str, steps: int = 400) -> float | None:
    if shutil.which("valgrind") is None:
        return None

    def count(n: int) -> int:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
             "-c", _STEPS, tree, str(n)], capture_output=True, text=True, check=True).stderr
        return int(out.split("Collected :")[1].split()[0])

    return (count(steps) - count(0)) / steps


def cold() -> dict[str, float]:
    import ast

    sys.path.insert(0, str(HERE))
    from real_programs import corpus

    from executors.restricted.compiler.checker import PolicyChecker
    from executors.restricted.compiler.instrument import Instrumenter

    def best(fn, arg) -> float:  # noqa: ANN001
        times = []
        for _ in range(5):
            t = time.thread_time_ns()
            fn(arg)
            times.append(time.thread_time_ns() - t)
        return min(times) / 1e3

    def instrument(tree):  # noqa: ANN001, ANN202
        return Instrumenter(PolicyChecker(frozenset({"final_answer"})), metered=False).visit(tree)

    phases: dict[str, list[float]] = collections.defaultdict(list)
    for _, program in corpus():
        phases["CPython compile(source)"].append(
            best(lambda s: compile(s, "<p>", "exec", dont_inherit=True), program))
        phases["ast.parse"].append(best(ast.parse, program))
        phases["check + instrument (one pass)"].append(
            best(lambda s: instrument(ast.parse(s)), program) - phases["ast.parse"][-1])
        tree = instrument(ast.parse(program))
        phases["compile(tree)"].append(
            best(lambda t: compile(t, "<p>", "exec", dont_inherit=True), tree))
    return {name: statistics.median(values) for name, values in phases.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=str(HERE.parent), help="the checkout to measure")
    parser.add_argument("--only", default="bytecodes,instructions,cold")
    args = parser.parse_args(argv)
    tree = os.path.abspath(args.tree)
    sys.path.insert(0, tree)
    wanted = set(args.only.split(","))
    print(f"tree {tree}; Python {sys.version.split()[0]}")
    if "bytecodes" in wanted:
        total, rows = bytecodes()
        print(f"\na cached no-op step: {total:,.0f} bytecodes (CPython's exec of it: 4)")
        for name, n in rows:
            print(f"  {n:6.0f}  {name}")
    if "instructions" in wanted:
        n = instructions(tree)
        print("\ninstructions a step (user space, callgrind): "
              + ("valgrind not installed" if n is None else f"{n:,.0f}"))
    if "cold" in wanted:
        print("\na cold step's phases, median over HumanEval (us, thread CPU, best of 5):")
        for name, us in cold().items():
            print(f"  {us:7.1f}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
