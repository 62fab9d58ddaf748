"""Peers side by side: the same cases through pydantic-monty, smolagents, RestrictedPython and ours.

    scripts/bench-peers [--reps 30] [--sessions 50] [--rows 100000] [--json]

The peers are benchmark-only: `scripts/bench-peers` installs them (pydantic-monty 1.4.0,
smolagents 1.26.0, RestrictedPython) in a venv of their own, `.venv-peers`, next to this package;
the product never depends on them. A peer that is not installed is left out; a case a peer cannot
run (Monty has no pandas) shows "n/a".

Runners, all given the same host tool `add(a, b)`:
  ours: worker   SubprocessExecutor from a started pool (`SubprocessExecutor.pool`), restricted
                 policy, the kernel layer on (seccomp, namespaces, Landlock, the drop)
  ours: local    LocalExecutor (in process, restricted policy, all limits on)
  monty          pydantic_monty.Monty: a pool of `monty` worker processes, one checkout a session
  smolagents     smolagents' LocalPythonExecutor (in process, an AST interpreter)
  RestrictedPython  compile_restricted + exec with its safe builtins and default guards (in
                 process; no limits at all: the floor a policy-only sandbox costs)
  CPython        plain `exec` (no sandbox): the floor every row is a ratio to

Cases (medians of --reps, the peers interleaved rep by rep so noise hits them alike; wall clock,
since two of them run code in another process):
  programs cold  four short real programs, each run once in a session, its source new to it
  programs warm  the same programs run again in the same session
  long loop      a 1,000,000-iteration arithmetic loop
  tool call      one step that calls the host tool once, and the marginal cost of one call
  session start  checkout of a session from a started pool to its first result (`1`), returned
  memory         what one more idle session costs: a worker's PSS (/proc/<pid>/smaps_rollup,
                 the whole process tree) for the process peers; for the in-process ones, the
                 Python heap (tracemalloc) --sessions live sessions hold, per session
  frame back     a --rows-row DataFrame made in a step, brought to the host, beside df.copy()
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from executors import LocalExecutor, SubprocessExecutor  # noqa: E402

PROGRAMS = {
    "primes": (
        "def primes(n):\n"
        "    sieve = [True] * (n + 1)\n"
        "    out = []\n"
        "    for i in range(2, n + 1):\n"
        "        if sieve[i]:\n"
        "            out.append(i)\n"
        "            for j in range(i * i, n + 1, i):\n"
        "                sieve[j] = False\n"
        "    return out\n"
        "result = len(primes(5000))\n"
        "result\n"),
    "word count": (
        "text = 'the quick brown fox jumps over the lazy dog and the dog sleeps ' * 50\n"
        "counts = {}\n"
        "for word in text.split():\n"
        "    counts[word] = counts.get(word, 0) + 1\n"
        "top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]\n"
        "result = ', '.join(f'{w}={n}' for w, n in top)\n"
        "result\n"),
    "fib memo": (
        "memo = {0: 0, 1: 1}\n"
        "def fib(n):\n"
        "    if n not in memo:\n"
        "        memo[n] = fib(n - 1) + fib(n - 2)\n"
        "    return memo[n]\n"
        "result = [fib(k) % 1000 for k in range(200)][-1]\n"
        "result\n"),
    "records": (
        "rows = [{'id': i, 'score': (i * 37) % 101, 'name': 'user' + str(i)} for i in range(500)]\n"
        "best = max(rows, key=lambda r: r['score'])\n"
        "mean = sum(r['score'] for r in rows) / len(rows)\n"
        "result = best['name'] + ' ' + str(round(mean, 2))\n"
        "result\n"),
}
LONG_LOOP = "total = 0\nfor i in range(1000000):\n    total += i * i % 7\nresult = total\nresult\n"
TOOL_ONE = "result = add(1, 2)\nresult\n"
TOOL_HUNDRED = "t = 0\nfor i in range(100):\n    t = add(t, i)\nresult = t\nresult\n"
MAKE_FRAME = """
import numpy as np
import pandas as pd
df = pd.DataFrame({"n": np.arange(ROWS), "x": np.arange(ROWS) * 0.5,
                   "city": ["north", "south", "east", "west"] * (ROWS // 4)})
result = len(df)
"""


def add(a, b):
    return a + b


# -- the runners ------------------------------------------------------------------------------------
class Runner:
    """One peer: a pool of sessions, a session, a step. `run` returns the step's `result`."""

    name = ""
    in_process = True
    frames = True

    def open_pool(self, n: int) -> None:
        pass

    def close_pool(self) -> None:
        pass

    def open_session(self) -> object:
        raise NotImplementedError

    def close_session(self, session: object) -> None:
        pass

    def run(self, session: object, code: str) -> object:
        raise NotImplementedError

    def frame(self, session: object) -> object:
        raise NotImplementedError

    def session_pids(self, session: object) -> list[int]:
        return []

    def frame_session(self, session: object) -> object:
        """The session the frame case runs in (most: the one of the other cases)."""
        return session


class CPython(Runner):
    name = "CPython"

    def open_session(self) -> dict:
        return {"add": add, "__name__": "__main__"}

    def run(self, session, code):
        exec(compile(code, "<step>", "exec"), session)
        return session["result"]

    def frame(self, session):
        return session["df"]


class OursLocal(Runner):
    name = "ours: local"

    def open_session(self):
        ex = LocalExecutor(tools={"add": add}, authorized_imports=["numpy", "pandas"])
        ex.__enter__()
        return ex

    def close_session(self, session):
        session.__exit__(None, None, None)

    def run(self, session, code):
        r = session.execute(code)
        if r.error:
            raise RuntimeError(f"{self.name}: {r.error}")
        return r.output

    def frame(self, session):
        return session.get_variables(["df"])["df"]


class OursWorker(OursLocal):
    name = "ours: worker"
    in_process = False

    def open_pool(self, n):
        # no package authorized: a worker imports its authorized packages when it starts (pandas
        # would add ~50 MiB to every idle worker); the frame case has an executor of its own
        self.pool = SubprocessExecutor.pool(n, tools={"add": add})
        self.pool.start()
        self.data = SubprocessExecutor(tools={"add": add}, authorized_imports=["numpy", "pandas"])

    def close_pool(self):
        self.pool.close()
        self.data.close()

    def frame_session(self, session):
        return self.data

    def open_session(self):
        cm = self.pool.acquire()
        ex = cm.__enter__()
        ex._bench_cm = cm
        return ex

    def close_session(self, session):
        session._bench_cm.__exit__(None, None, None)

    def session_pids(self, session):
        return _tree(session._link.handle.proc.pid)


class Monty(Runner):
    name = "monty"
    in_process = False
    frames = False

    def open_pool(self, n):
        import pydantic_monty

        self.mod = pydantic_monty
        self.pool = pydantic_monty.Monty(min_processes=n, max_processes=n)
        self.pool.__enter__()

    def close_pool(self):
        self.pool.__exit__(None, None, None)

    def open_session(self):
        # each host call is a suspension, 1000 a checkout by default: the long session of this
        # benchmark makes thousands
        session = self.pool.checkout(limits={"max_suspensions": 10_000_000})
        session.__enter__()
        return session

    def close_session(self, session):
        session.__exit__(None, None, None)

    def run(self, session, code):
        return session.feed_run(code, external_lookup={"add": add},
                                print_callback=self.mod.CollectString())

    def session_pids(self, session):
        return _tree(session.worker_pid)


class Smolagents(Runner):
    name = "smolagents"

    def open_session(self):
        from smolagents.local_python_executor import LocalPythonExecutor

        ex = LocalPythonExecutor(["numpy", "pandas"], additional_functions={"add": add})
        ex.send_tools({})
        return ex

    def run(self, session, code):
        return session(code).output

    def frame(self, session):
        return session.state["df"]


class Restricted(Runner):
    name = "RestrictedPython"

    def open_session(self):
        from RestrictedPython import compile_restricted, safe_globals
        from RestrictedPython.Eval import default_guarded_getitem, default_guarded_getiter
        from RestrictedPython.Guards import guarded_iter_unpack_sequence, safer_getattr

        self.compile = compile_restricted
        builtins = dict(safe_globals["__builtins__"])
        builtins.update(__import__=_restricted_import, max=max, min=min, sorted=sorted, sum=sum,
                        dict=dict, _getiter_=default_guarded_getiter,
                        _getitem_=default_guarded_getitem, _getattr_=safer_getattr,
                        _iter_unpack_sequence_=guarded_iter_unpack_sequence,
                        _write_=lambda obj: obj, _inplacevar_=_inplacevar)
        return {"__builtins__": builtins, "__name__": "__main__", "add": add, **{
            k: v for k, v in builtins.items() if k.startswith("_") and k.endswith("_")}}

    def run(self, session, code):
        exec(self.compile(code, "<step>", "exec"), session)
        return session["result"]

    def frame(self, session):
        return session["df"]


def _inplacevar(op, x, y):
    import operator

    return {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul}[op](x, y)


def _restricted_import(name, *args, **kwargs):
    if name.split(".")[0] not in ("numpy", "pandas"):
        raise ImportError(name)
    return __import__(name, *args, **kwargs)


def available_runners() -> list[Runner]:
    out: list[Runner] = [CPython(), OursWorker(), OursLocal()]
    for cls, module in ((Monty, "pydantic_monty"), (Smolagents, "smolagents"),
                        (Restricted, "RestrictedPython")):
        try:
            __import__(module)
        except ImportError:
            print(f"({cls.name} is not installed: left out; scripts/bench-peers installs it)")
            continue
        out.append(cls())
    return out


# -- measuring ------------------------------------------------------------------------------------
def _tree(pid: int | None) -> list[int]:
    if pid is None:
        return []
    pids = [pid]
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                for child in f.read().split():
                    pids += _tree(int(child))
    return pids


def pss_kib(pid: int | str = "self") -> int:
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def interleaved(runners, reps: int, once: Callable[[Runner], float]) -> dict[str, float | None]:
    """Median of `once(runner)` per runner, runners interleaved rep by rep; None if it failed."""
    samples: dict[str, list[float] | None] = {r.name: [] for r in runners}
    for _ in range(reps):
        for r in runners:
            if samples[r.name] is None:
                continue
            try:
                samples[r.name].append(once(r))
            except Exception as exc:  # noqa: BLE001 - a case this peer cannot run
                print(f"  {r.name}: cannot run this case ({type(exc).__name__}: {str(exc)[:120]})")
                samples[r.name] = None
    return {k: (statistics.median(v) if v else None) for k, v in samples.items()}


def case_programs(runners, sessions: dict, reps: int, counter: list[int]) -> dict[str, dict]:
    """Cold: a program's first run in a session (its source new: a unique comment); warm: again."""
    rows = {}
    for title, code in PROGRAMS.items():
        def cold(r, code=code):
            counter[0] += 1
            return timed(lambda: r.run(sessions[r.name], f"# {counter[0]}\n{code}"))

        def warm(r, code=code):
            return timed(lambda: r.run(sessions[r.name], code))

        rows[f"{title}, cold"] = interleaved(runners, reps, cold)
        for r in runners:  # the warm source once before timing it
            with contextlib.suppress(Exception):
                r.run(sessions[r.name], code)
        rows[f"{title}, warm"] = interleaved(runners, reps, warm)
    return rows


def case_steps(runners, sessions: dict, reps: int) -> dict[str, dict]:
    rows = {}
    for title, code, n in (("long loop (1M iterations)", LONG_LOOP, max(3, reps // 6)),
                           ("one tool call (a step)", TOOL_ONE, reps),
                           ("100 tool calls (a step)", TOOL_HUNDRED, max(3, reps // 3))):
        rows[title] = interleaved(runners, n, lambda r, code=code: timed(
            lambda: r.run(sessions[r.name], code)))
    return rows


def case_session_start(runners, reps: int) -> dict[str, float | None]:
    def once(r):
        t0 = time.perf_counter()
        s = r.open_session()
        r.run(s, "result = 1\nresult\n")
        elapsed = time.perf_counter() - t0
        r.close_session(s)
        return elapsed

    return interleaved(runners, reps, once)


def case_memory(runners, n: int) -> dict[str, float | None]:
    """KiB one more idle session costs."""
    out: dict[str, float | None] = {}
    for r in runners:
        try:
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            held = [r.open_session() for _ in range(n)]
            for s in held:
                r.run(s, "result = 1\nresult\n")
            time.sleep(0.3)
            gc.collect()
            if r.in_process:
                out[r.name] = (tracemalloc.get_traced_memory()[0] - before) / 1024 / n
            else:
                out[r.name] = statistics.mean(sum(pss_kib(p) for p in r.session_pids(s)) for s in held)
            for s in held:
                r.close_session(s)
        except Exception as exc:  # noqa: BLE001
            print(f"  {r.name}: memory not measured ({type(exc).__name__}: {str(exc)[:120]})")
            out[r.name] = None
        finally:
            tracemalloc.stop()
    return out


def case_frame(runners, sessions: dict, rows: int, reps: int) -> dict[str, float | None]:
    """The frame back to the host, over df.copy() of the same frame in the host."""
    make = MAKE_FRAME.replace("ROWS", str(rows))
    where = {r.name: r.frame_session(sessions[r.name]) for r in runners}
    able = []
    for r in runners:
        try:
            if r.frames:
                r.run(where[r.name], make)
                able.append(r)
        except Exception as exc:  # noqa: BLE001 - a peer that cannot make the frame
            print(f"  {r.name}: cannot make the frame ({type(exc).__name__}: {str(exc)[:120]})")
    base = sessions["CPython"]["df"]
    copy = statistics.median(timed(lambda: base.copy(deep=True)) for _ in range(reps))
    times = interleaved(able, reps, lambda r: timed(lambda: r.frame(where[r.name])))
    return {r.name: (None if times.get(r.name) is None else times[r.name] / copy) for r in runners}


# -- the table ------------------------------------------------------------------------------------
def _time(seconds: float | None, base: float | None) -> str:
    if seconds is None:
        return "n/a"
    text = (f"{seconds * 1e3:,.0f} ms" if seconds >= 0.1 else f"{seconds * 1e3:.3g} ms" if seconds >= 1e-3
            else f"{seconds * 1e6:.3g} µs")
    if not base:
        return text
    ratio = seconds / base
    return f"{text} ({ratio:,.0f}×)" if ratio >= 100 else f"{text} ({ratio:.3g}×)"


def table(results: dict, names: list[str]) -> str:
    """Markdown: a row per case, a column per runner; times with their ratio to CPython's."""
    lines = ["| case | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for case, cells in results["times"].items():
        base = cells.get("CPython")
        lines.append(f"| {case} | " + " | ".join(_time(cells.get(n), base) for n in names) + " |")
    start = results["session start"]
    lines.append("| session start (pool checkout → first result) | "
                 + " | ".join(_time(start.get(n), None) for n in names) + " |")
    mem = results["memory KiB"]
    lines.append("| memory per idle session | " + " | ".join(
        "n/a" if mem.get(n) is None else f"{mem[n] / 1024:.2f} MiB" for n in names) + " |")
    frame = results["frame / df.copy()"]
    lines.append(f"| {results['rows']:,}-row frame back to the host (× df.copy()) | " + " | ".join(
        "n/a" if frame.get(n) is None else (f"{frame[n]:,.0f}×" if frame[n] >= 100 else f"{frame[n]:.3g}×")
        for n in names) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--sessions", type=int, default=20, help="sessions held for the memory case")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    runners = available_runners()
    names = [r.name for r in runners]
    for r in runners:
        r.open_pool(args.sessions + 2)
    try:
        time.sleep(1.0)  # the pools' workers ready
        sessions = {r.name: r.open_session() for r in runners}
        counter = [0]
        times = case_programs(runners, sessions, args.reps, counter)
        times.update(case_steps(runners, sessions, args.reps))
        frame = case_frame(runners, sessions, args.rows, max(3, args.reps // 6))
        for r in runners:
            r.close_session(sessions[r.name])
        start = case_session_start(runners, args.reps)
        memory = case_memory(runners, args.sessions)
    finally:
        for r in runners:
            r.close_pool()
    results = {"times": times, "session start": start, "memory KiB": memory,
               "frame / df.copy()": frame, "rows": args.rows}
    if args.json:
        print(json.dumps(results, indent=1))
    print(table(results, names))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
