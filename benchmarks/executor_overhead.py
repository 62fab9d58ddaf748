"""Executor overhead: CPython exec vs LocalExecutor vs smolagents' LocalPythonExecutor, one run.

    scripts/bench-executor            # sets up benchmarks/.venv-smolagents on first use

Each snippet runs in a fresh namespace per repetition; we report the median of N repetitions and
the ratio to CPython measured side by side in the same process (this machine is noisy: trust the
ratios, not the absolute times). Limits stay ON for LocalExecutor (defaults).

Times are the running thread's CPU time (time.thread_time): on a loaded machine wall-clock
medians swing by ±50% from preemption alone, CPU time does not. The sandbox's watchdog thread
does no work while code runs (it sleeps until a deadline), so nothing is hidden by this.
smolagents' executor runs the code in a thread of its own, so it is timed by the wall clock.
A gc.collect() after each setup keeps one runner's setup garbage (a fresh sandbox namespace is
a few hundred objects) from triggering a collection inside another runner's timing.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import statistics
import sys
import time

SNIPPETS: dict[str, str] = {
    "arith_loop_200k": (
        "s = 0\n"
        "for i in range(200000):\n"
        "    s += i * i % 7\n"
        "s\n"
    ),
    "sort_50k_dicts": (
        "rows = [{'id': i, 'score': (i * 7919) % 10007} for i in range(50000)]\n"
        "rows.sort(key=lambda r: r['score'])\n"
        "rows[0]['id']\n"
    ),
    "fib_20_recursive": (
        "def fib(n):\n"
        "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "fib(20)\n"
    ),
    "join_20k_fstrings": (
        "text = ','.join(f'{i}:{i * 2:04d}' for i in range(20000))\n"
        "len(text)\n"
    ),
    "append_loop_200k": (
        "out = []\n"
        "for i in range(200000):\n"
        "    out.append(i)\n"
        "len(out)\n"
    ),
    "trivial_action": "x = 1 + 1\n",
}

# Short loops entered thousands of times (issue 23): 20,000 entries of a loop of 8 items.
_ROWS = "rows = [list(range(8)) for _ in range(50)]\nt = 0\nfor k in range(400):\n    for row in rows:\n"
SHORT_LOOPS: dict[str, str] = {
    "short_for_enumerate": _ROWS + "        for i, x in enumerate(row):\n            t += i\n",
    "short_for_zip": _ROWS + "        for a, b in zip(row, row):\n            t += a\n",
    "short_listcomp_enumerate": _ROWS + "        t += len([x for i, x in enumerate(row) if i])\n",
    "short_listcomp_list": _ROWS + "        t += len([x for x in row if x])\n",
    "short_sum_genexp": _ROWS + "        t += sum(x for x in row)\n",
    "short_loop_in_function": (
        "def f(row):\n    s = 0\n    for i, x in enumerate(row):\n        s += x\n    return s\n"
        + _ROWS + "        t += f(row)\n"),
}


def _cpython_runner():
    """Fresh namespace per run; compile included (the executors compile too)."""
    state: dict = {}

    def setup() -> None:
        state["ns"] = {"__name__": "__main__"}

    def run(code: str) -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code, "<bench>", "exec"), state["ns"])

    return setup, run


def _local_runner(limits=None):
    from executors import LocalExecutor

    ex = LocalExecutor(limits=limits)

    def setup() -> None:
        ex.reset()

    def run(code: str) -> None:
        r = ex.execute(code)
        if r.error:
            raise RuntimeError(f"LocalExecutor failed: {r.error}")

    return setup, run


def _smolagents_runner():
    try:
        from smolagents.local_python_executor import LocalPythonExecutor
    except ImportError:
        return None
    box: dict = {}

    def setup() -> None:
        ex = LocalPythonExecutor(additional_authorized_imports=[])
        ex.send_tools({})
        box["ex"] = ex

    def run(code: str) -> None:
        box["ex"](code)

    return setup, run


def measure(runners: dict, code: str, reps: int, clock=time.thread_time, collect: bool = True) -> dict[str, float]:
    """Median time per runner; runners interleaved rep by rep so noise hits them alike.
    Setup (fresh namespace) and teardown are outside the timed region."""
    samples: dict[str, list[float]] = {name: [] for name in runners}
    for setup, run in runners.values():  # warm up
        setup()
        run(code)
    for _ in range(reps):
        for name, (setup, run) in runners.items():
            setup()
            if collect:  # no garbage-collector debt from one runner's setup lands in a timing
                gc.collect()
            t0 = clock()
            run(code)
            samples[name].append(clock() - t0)
    return {name: statistics.median(v) for name, v in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args(argv)

    from executors import Limits

    runners = {"cpython": _cpython_runner(), "local": _local_runner()}
    smol = _smolagents_runner()
    rows = []
    for name, code in SNIPPETS.items():
        reps = args.reps * (40 if name == "trivial_action" else 1)
        # (trivial actions: no collect, it would leave the caches cold for a 20 us measurement)
        t = measure(runners, code, reps, collect=not name.startswith("trivial"))
        t_s = None
        if smol is not None and not name.startswith("trivial"):
            t_s = measure({"smolagents": smol}, code, max(3, args.reps // 3), time.perf_counter)["smolagents"]
        elif smol is not None:
            t_s = measure({"smolagents": smol}, code, reps, time.perf_counter)["smolagents"]
        rows.append((name, t["cpython"], t["local"], t_s))
    # Uncached trivial action: a new source each time (what an agent step looks like).
    counter = iter(range(10**9))
    uncached = {
        name: (setup, (lambda run: lambda _c: run(f"x = 1 + {next(counter)}\n"))(run))  # noqa: B023
        for name, (setup, run) in runners.items()
    }
    t = measure(uncached, "", args.reps * 40, collect=False)
    rows.append(("trivial_action_uncached", t["cpython"], t["local"], None))

    # The short loops, with the default limits (no operation budget) and with a budget set.
    budget = {"cpython": runners["cpython"],
              "local": _local_runner(Limits(max_operations=10**9)), }
    loop_rows = []
    for name, code in SHORT_LOOPS.items():
        t = measure(runners, code, args.reps)
        t_b = measure(budget, code, args.reps)
        loop_rows.append((name, t["cpython"], t["local"], t_b["local"] * t["cpython"] / t_b["cpython"]))

    print(f"Python {sys.version.split()[0]}; median of {args.reps} runs (trivial: x40); limits on")
    print(f"{'snippet':<26}{'CPython':>11}{'Local':>11}{'ratio':>8}{'smolagents':>12}{'ratio':>9}")
    worst = 0.0
    for name, t_c, t_l, t_s in rows:
        ratio = t_l / t_c
        if not name.startswith("trivial"):
            worst = max(worst, ratio)
        smol_cols = f"{t_s * 1e3:>10.2f}ms{t_s / t_c:>8.1f}x" if t_s else f"{'-':>12}{'-':>9}"
        print(f"{name:<26}{t_c * 1e3:>9.3f}ms{t_l * 1e3:>9.3f}ms{ratio:>7.2f}x{smol_cols}")
    print(f"worst LocalExecutor/CPython ratio on loop snippets: {worst:.2f}x (target <= 1.3x)")
    trivial = [r for r in rows if r[0] == "trivial_action_uncached"][0][2]
    print(f"trivial action, uncached: {trivial * 1e6:.0f} us (target <= 60 us)")
    print()
    print("short loops (20,000 entries of 8 items)     default limits   with max_operations")
    for name, t_c, t_l, t_b in loop_rows:
        print(f"{name:<26}{t_c * 1e3:>9.3f}ms{t_l * 1e3:>9.3f}ms{t_l / t_c:>7.2f}x"
              f"{t_b * 1e3:>11.3f}ms{t_b / t_c:>7.2f}x")
    print(f"worst short-loop ratio, default limits: {max(r[2] / r[1] for r in loop_rows):.2f}x "
          "(target <= 1.2x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
