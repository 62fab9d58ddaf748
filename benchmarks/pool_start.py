"""A session from a started pool, and what an idle worker costs, side by side in one run.

    .venv/bin/python benchmarks/pool_start.py [--sessions 200] [--gap-ms 40] [--idle 20] [--json]

  session start  `SubprocessExecutor.pool(8)` (recycle="fresh": every session a worker no one
                 used, the used one destroyed and replaced in the background), sessions arriving
                 every --gap-ms: acquire() alone, and acquire() to the first result of a step;
                 beside a `SubprocessExecutor()` made and started to its first result (what a
                 session costs without a pool)
  idle memory    --idle ready workers held by a pool: PSS of each worker's whole process tree
                 from /proc/<pid>/smaps_rollup (the waiter, its PID namespace's init, the worker),
                 per process and in all, with Private_Dirty (what no other process shares);
                 beside the same without the kernel layer (harden=False: one process)

Goal (issue 48): session start <= 1 ms median, <= 2 MiB PSS per idle worker.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from executors import SubprocessExecutor  # noqa: E402


def add(a, b):
    return a + b


def smaps(pid: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("Rss", "Pss", "Private_Dirty"):
                out[key] = int(rest.split()[0])
    return out


def tree(pid: int) -> list[int]:
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            pids += tree(int(child))
    return pids


def quantiles(samples: list[float]) -> dict[str, float]:
    samples = sorted(samples)
    return {"median_ms": statistics.median(samples) * 1e3,
            "p90_ms": samples[int(len(samples) * 0.9)] * 1e3, "max_ms": samples[-1] * 1e3}


def session_start(sessions: int, gap_s: float) -> dict[str, dict[str, float]]:
    acquire, first = [], []
    with SubprocessExecutor.pool(8, tools={"add": add}) as pool:
        for i in range(sessions):
            t0 = time.perf_counter()
            with pool.acquire() as ex:
                acquire.append(time.perf_counter() - t0)
                r = ex.execute(f"add({i}, 1)")
                first.append(time.perf_counter() - t0)
                assert r.output == i + 1, r
            time.sleep(gap_s)
    cold = []
    for i in range(max(10, sessions // 10)):
        t0 = time.perf_counter()
        with SubprocessExecutor(tools={"add": add}) as ex:
            ex.execute(f"add({i}, 1)")
            cold.append(time.perf_counter() - t0)
    return {"acquire": quantiles(acquire), "acquire + first step": quantiles(first),
            "new executor + first step": quantiles(cold)}


def idle_memory(n: int, **kwargs) -> dict:
    with SubprocessExecutor.pool(n, **kwargs) as pool:
        time.sleep(1.0)  # settled
        held = []
        for _ in range(n):
            held.append(pool.acquire())
        workers = [cm.__enter__() for cm in held]
        trees = [[smaps(p) for p in tree(ex._link.handle.proc.pid)] for ex in workers]
        for cm in held:
            cm.__exit__(None, None, None)
    per = [sum(p["Pss"] for p in t) for t in trees]
    return {"processes": len(trees[0]), "pss_kib": statistics.mean(per),
            "private_dirty_kib": statistics.mean(sum(p["Private_Dirty"] for p in t) for t in trees),
            "per_process_pss_kib": [round(statistics.mean(t[i]["Pss"] for t in trees))
                                    for i in range(len(trees[0]))],
            "per_process_private_dirty_kib": [round(statistics.mean(t[i]["Private_Dirty"] for t in trees))
                                              for i in range(len(trees[0]))]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=200)
    p.add_argument("--gap-ms", type=float, default=40.0)
    p.add_argument("--idle", type=int, default=20)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    figures = {"session start": session_start(args.sessions, args.gap_ms / 1000),
               "idle worker": idle_memory(args.idle),
               "idle worker, harden=False": idle_memory(args.idle, harden=False)}
    if args.json:
        print(json.dumps(figures, indent=1))
    for name, q in figures["session start"].items():
        print(f"{name:<28} median {q['median_ms']:9.3f} ms   p90 {q['p90_ms']:9.3f}   max {q['max_ms']:9.3f}")
    base = figures["session start"]["new executor + first step"]["median_ms"]
    for name in ("acquire", "acquire + first step"):
        print(f"  {name} / new executor: {figures['session start'][name]['median_ms'] / base:.4f}")
    for name in ("idle worker", "idle worker, harden=False"):
        m = figures[name]
        print(f"{name:<28} PSS {m['pss_kib'] / 1024:.2f} MiB in {m['processes']} process(es) "
              f"{m['per_process_pss_kib']} KiB; private dirty {m['private_dirty_kib'] / 1024:.2f} MiB "
              f"{m['per_process_private_dirty_kib']} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
