"""codeagent.batch throughput on this machine: tasks per second by backend, workers and executor,
and what Ray costs to start, measured side by side in one run.

    .venv/bin/python benchmarks/batch_throughput.py [--tasks 200] [--slow-tasks 80] [--reps 2] [--no-ray] [--json]

Every configuration runs the same scripted tasks (codeagent.batch.testing: five shapes, 1-2 model
replies each, a CodeAgent with tools, no model server), so the batch machinery is what is measured.

  machinery    replies come at once: backend local|ray × 1|2 workers × executor in-process (a warm
               LocalExecutor per worker) | subprocess (a warm SubprocessExecutor per worker).
               What the driver, the workers and the executors cost per task.
  model-bound  every reply takes 50 ms, as from a fast model server; in-process executor;
               1, 2, 4, 8 workers (Ray actors reserve 0.25 CPU each). What concurrency buys when
               the model, not this machine, is the wait.

  start        batch start to its first finished task (worker processes or actors starting, imports)
  steady       tasks/s between the first and the last finished task (what a long batch runs at)
  overall      tasks/s over the whole batch, start included
  vs base      steady rate relative to the section's first row with the same executor

Ray's fixed cost is measured apart: `ray.init()` of a fresh local instance, a first remote task,
`ray.shutdown()`. Repetitions are interleaved (config by config, rep by rep); medians are shown.
This machine has 2 cores shared with other work: read the ratios, not the absolute rates.
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
MODEL_DELAY_S = 0.05
Config = tuple[str, str, int, str]  # section, backend, workers, executor label


def one_batch(config: Config, tasks: list[dict[str, Any]]) -> dict[str, float]:
    section, backend, workers, label = config
    slow = section == "model-bound"
    stamps: list[float] = []
    out = Path(tempfile.mkdtemp(prefix="batch-bench-"))
    try:
        t0 = time.perf_counter()
        summary = run_batch(
            FACTORY, tasks, out=out, backend=backend, workers=workers, executor=EXECUTORS[label],
            options={"model_delay_s": MODEL_DELAY_S} if slow else None,
            ray_options={"num_cpus": 0.25} if slow else None,
            progress=lambda e: stamps.append(time.perf_counter()) if e["event"] == "task_end" else None)
        wall = time.perf_counter() - t0
    finally:
        shutil.rmtree(out, ignore_errors=True)
    bad = summary.total - sum(summary.by_status().get(s, 0) for s in ("success", "max_steps"))
    if bad:
        raise SystemExit(f"{config}: {bad} tasks did not run cleanly: {summary.by_status()}")
    steady = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 and stamps[-1] > stamps[0] else 0.0
    return {"start_s": stamps[0] - t0, "steady": steady, "overall": len(tasks) / wall}


def ray_fixed_cost() -> dict[str, float]:
    import ray

    t0 = time.perf_counter()
    ray.init(address="local", include_dashboard=False, log_to_driver=False)
    t1 = time.perf_counter()
    ray.get(ray.remote(lambda: None).remote())
    t2 = time.perf_counter()
    ray.shutdown()
    return {"init_s": t1 - t0, "first_task_s": t2 - t1, "shutdown_s": time.perf_counter() - t2}


def configs(backends: list[str]) -> list[Config]:
    machinery = [("machinery", b, w, e) for e in EXECUTORS for b in backends for w in (1, 2)]
    bound = [("model-bound", b, w, "in-process") for b in backends for w in (1, 2, 4, 8)]
    return machinery + bound


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=200, help="tasks per machinery batch")
    parser.add_argument("--slow-tasks", type=int, default=80, help="tasks per model-bound batch")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--no-ray", action="store_true", help="local backend only")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    backends = ["local"] if args.no_ray else ["local", "ray"]
    task_sets = {"machinery": scripted_tasks(args.tasks), "model-bound": scripted_tasks(args.slow_tasks)}

    fixed = None
    if not args.no_ray:
        import ray

        fixed = ray_fixed_cost()
        ray.init(address="local", include_dashboard=False, log_to_driver=False)  # shared by the ray configs
    samples: dict[Config, list[dict[str, float]]] = {c: [] for c in configs(backends)}
    try:
        for _ in range(args.reps):
            for config in samples:
                samples[config].append(one_batch(config, task_sets[config[0]]))
    finally:
        if not args.no_ray:
            ray.shutdown()

    def med(config: Config, key: str) -> float:
        return statistics.median(s[key] for s in samples[config])

    rows = []
    for config in samples:
        section, backend, workers, label = config
        base = med(next(c for c in samples if c[0] == section and c[3] == label), "steady")
        rows.append({"section": section, "backend": backend, "workers": workers, "executor": label,
                     "start_s": round(med(config, "start_s"), 3), "steady_tasks_per_s": round(med(config, "steady"), 1),
                     "overall_tasks_per_s": round(med(config, "overall"), 1),
                     "vs_base": round(med(config, "steady") / base, 2) if base else None})
    if args.json:
        print(json.dumps({"tasks": args.tasks, "slow_tasks": args.slow_tasks, "reps": args.reps,
                          "model_delay_s": MODEL_DELAY_S, "rows": rows, "ray_fixed": fixed}, indent=2))
        return 0
    print(f"codeagent.batch throughput, median of {args.reps} interleaved reps "
          f"({args.tasks} scripted tasks; model-bound: {args.slow_tasks} tasks, {MODEL_DELAY_S * 1000:.0f} ms per reply)")
    section = None
    for r in rows:
        if r["section"] != section:
            section = r["section"]
            print(f"\n{section:<12}{'backend':<8}{'workers':>8}  {'executor':<11}{'start s':>8}{'steady/s':>10}"
                  f"{'overall/s':>11}{'vs base':>9}")
        print(f"{'':<12}{r['backend']:<8}{r['workers']:>8}  {r['executor']:<11}{r['start_s']:>8.2f}"
              f"{r['steady_tasks_per_s']:>10.1f}{r['overall_tasks_per_s']:>11.1f}{r['vs_base']:>8.2f}×")
    if fixed:
        print(f"\nRay fixed cost: ray.init() of a local instance {fixed['init_s']:.2f} s, first remote task "
              f"{fixed['first_task_s']:.2f} s, ray.shutdown() {fixed['shutdown_s']:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
