"""codeagent.batch throughput on this machine: tasks per second by backend, workers and executor,
and what Ray costs to start, measured side by side in one run.

    .venv/bin/python benchmarks/batch_throughput.py [--tasks 200] [--reps 2] [--no-ray] [--json]

Every configuration runs the same scripted tasks (codeagent.batch.testing: five shapes, 1-2 model
replies each, a CodeAgent with tools, no model server): the batch machinery is what is measured,
not a model. Configurations: backend local|ray × 1|2 workers × executor in-process (a warm
LocalExecutor per worker) | subprocess (a warm SubprocessExecutor per worker).

  start      batch start to its first finished task (worker processes or actors starting, imports)
  steady     tasks/s between the first and the last finished task (what a long batch runs at)
  overall    tasks/s over the whole batch, start included
  vs local×1 steady rate relative to the local backend with one worker, same executor

Ray's fixed cost is measured apart: `ray.init()` of a fresh local instance, and `ray.shutdown()`.
Repetitions are interleaved (config by config, rep by rep); the medians are shown. This machine has
2 cores shared with other work, so read the ratios, not the absolute rates.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codeagent.batch import run_batch  # noqa: E402
from codeagent.batch.testing import scripted_tasks  # noqa: E402

FACTORY = "codeagent.batch.testing:scripted_agent"
EXECUTORS = {"in-process": "local", "subprocess": "subprocess"}


def one_batch(backend: str, workers: int, executor: str, tasks: list[dict[str, Any]]) -> dict[str, float]:
    stamps: list[float] = []
    out = Path(tempfile.mkdtemp(prefix="batch-bench-"))
    try:
        t0 = time.perf_counter()
        summary = run_batch(FACTORY, tasks, out=out, backend=backend, workers=workers, executor=executor,
                            progress=lambda e: stamps.append(time.perf_counter()) if e["event"] == "task_end" else None)
        wall = time.perf_counter() - t0
    finally:
        shutil.rmtree(out, ignore_errors=True)
    bad = summary.total - sum(summary.by_status().get(s, 0) for s in ("success", "max_steps"))
    if bad:
        raise SystemExit(f"{backend}×{workers} {executor}: {bad} tasks did not run cleanly: {summary.by_status()}")
    steady = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 and stamps[-1] > stamps[0] else 0.0
    return {"start_s": stamps[0] - t0, "steady": steady, "overall": len(tasks) / wall, "wall_s": wall}


def ray_fixed_cost() -> dict[str, float]:
    import ray

    t0 = time.perf_counter()
    ray.init(address="local", include_dashboard=False, log_to_driver=False)
    t1 = time.perf_counter()

    @ray.remote
    def noop() -> None:
        return None

    ray.get(noop.remote())
    t2 = time.perf_counter()
    ray.shutdown()
    t3 = time.perf_counter()
    return {"init_s": t1 - t0, "first_task_s": t2 - t1, "shutdown_s": t3 - t2}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--no-ray", action="store_true", help="local backend only")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    tasks = scripted_tasks(args.tasks)
    backends = ["local"] if args.no_ray else ["local", "ray"]

    fixed = ray_fixed_cost() if "ray" in backends else None
    if "ray" in backends:
        import ray

        ray.init(address="local", include_dashboard=False, log_to_driver=False)  # shared by the ray configs
    configs = [(b, w, e) for e in EXECUTORS for b in backends for w in (1, 2)]
    samples: dict[tuple[str, int, str], list[dict[str, float]]] = {c: [] for c in configs}
    try:
        for _ in range(args.reps):
            for backend, workers, label in configs:
                samples[(backend, workers, label)].append(one_batch(backend, workers, EXECUTORS[label], tasks))
    finally:
        if "ray" in backends:
            ray.shutdown()

    def med(config: tuple[str, int, str], key: str) -> float:
        return statistics.median(s[key] for s in samples[config])

    rows = []
    for backend, workers, label in configs:
        base = med(("local", 1, label), "steady")
        rows.append({"backend": backend, "workers": workers, "executor": label,
                     "start_s": round(med((backend, workers, label), "start_s"), 3),
                     "steady_tasks_per_s": round(med((backend, workers, label), "steady"), 1),
                     "overall_tasks_per_s": round(med((backend, workers, label), "overall"), 1),
                     "vs_local_1": round(med((backend, workers, label), "steady") / base, 2) if base else None})
    if args.json:
        print(json.dumps({"tasks": args.tasks, "reps": args.reps, "rows": rows, "ray_fixed": fixed}, indent=2))
        return 0
    print(f"codeagent.batch throughput: {args.tasks} scripted tasks, median of {args.reps} interleaved reps\n")
    print(f"{'backend':<8}{'workers':>8}  {'executor':<11}{'start s':>9}{'steady/s':>10}{'overall/s':>11}{'vs local×1':>12}")
    for r in rows:
        print(f"{r['backend']:<8}{r['workers']:>8}  {r['executor']:<11}{r['start_s']:>9.2f}{r['steady_tasks_per_s']:>10.1f}"
              f"{r['overall_tasks_per_s']:>11.1f}{r['vs_local_1']:>11.2f}×")
    if fixed:
        print(f"\nRay fixed cost: ray.init() of a local instance {fixed['init_s']:.2f} s, first remote task "
              f"{fixed['first_task_s']:.2f} s, ray.shutdown() {fixed['shutdown_s']:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
