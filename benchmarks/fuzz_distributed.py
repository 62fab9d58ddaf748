"""Distributed fuzzing on this machine: examples per second in process, on a local process pool and
on Ray (1 and 2 workers), and what Ray costs to start, measured side by side in one run.

    .venv/bin/python benchmarks/fuzz_distributed.py [--programs 2000] [--mixed 600] [--reps 1] [--no-ray] [--json]

Every configuration runs the same campaign with the same seed (`codeagent fuzz` as a function:
executors.fuzzing), against the local executor in a forked child, and must give the same report:

  programs   generated programs compared with CPython (CPU-bound: each is run twice, in the sandbox
             and in CPython), --programs examples in shards of --programs-shard
  mixed      the default mix: 60% programs, 30% escape attempts, 10% resource bombs (a bomb mostly
             waits for a limit: time-bound), --mixed examples in shards of --mixed-shard

  fixed s    the same configuration running a one-example campaign: worker start, imports, a session
  wall s     the whole campaign, start included
  overall/s  examples / wall
  steady/s   examples / (wall - fixed): what a long campaign runs at
  vs here    steady rate relative to the in-process run
  same       the report equals the in-process one (counts, refusal types, failing examples; for
             the mix, counts only: which limit stops a bomb first is a race the load decides)

Ray's fixed cost is measured apart: `ray.init()` of a fresh local instance, a first remote task,
`ray.shutdown()`; the Ray rows then share one instance. Repetitions are interleaved; medians are
shown. This machine has 2 cores shared with other work: read the ratios, not the absolute rates.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from batch_throughput import ray_fixed_cost  # noqa: E402 - the same measurement, one copy

from codeagent.batch.fuzz_shards import run_fuzz_shards  # noqa: E402
from executors.fuzzing import CommandOptions, executor_factory, fuzz  # noqa: E402
from executors.fuzzing.campaigns.distributed import run_distributed  # noqa: E402

SEED = 20260
Config = tuple[str, str | None, int]  # section, backend (None: in process), workers
SECTIONS = {"programs": ["cpython"], "mixed": ["cpython", "escapes", "bombs"]}


def run_campaign(backend: str | None, workers: int, options: CommandOptions) -> tuple[float, Any]:
    t0 = time.perf_counter()
    if backend is None:
        factory = executor_factory(options.executor, timeout_s=options.timeout)
        report = fuzz(factory, examples=options.examples, properties=options.properties, seed=options.seed,
                      margin_s=options.margin, batch_size=options.shard_size)
    else:
        def distribute(tasks: Any) -> Any:
            return run_fuzz_shards(tasks, backend=backend, workers=workers, progress=None)

        report, _, _ = run_distributed(options, distribute)
    return time.perf_counter() - t0, report


def fingerprint(report: Any, section: str) -> Any:
    counts = sorted(report.counts.items())
    if section == "mixed":
        return counts
    return counts, list(report.error_types.items()), [(o.status, o.code) for o in report.failures]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--programs", type=int, default=2000)
    parser.add_argument("--programs-shard", type=int, default=250)
    parser.add_argument("--mixed", type=int, default=600)
    parser.add_argument("--mixed-shard", type=int, default=100)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--no-ray", action="store_true", help="in process and local pool only")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    backends: list[tuple[str | None, int]] = [(None, 1), ("local", 1), ("local", 2)]
    if not args.no_ray:
        backends += [("ray", 1), ("ray", 2)]
    sizes = {"programs": (args.programs, args.programs_shard), "mixed": (args.mixed, args.mixed_shard)}
    configs: list[Config] = [(s, b, w) for s in SECTIONS if sizes[s][0] > 0 for b, w in backends]

    def options(section: str, examples: int) -> CommandOptions:
        return CommandOptions(examples=examples, properties=SECTIONS[section], seed=SEED,
                              shard_size=sizes[section][1])

    fixed_ray = None
    if not args.no_ray:
        import ray

        fixed_ray = ray_fixed_cost()
        ray.init(address="local", include_dashboard=False, log_to_driver=False)  # shared by the ray rows
    samples: dict[Config, list[dict[str, float]]] = {c: [] for c in configs}
    prints: dict[Config, Any] = {}
    try:
        for _ in range(args.reps):
            for config in configs:
                section, backend, workers = config
                fixed, _ = run_campaign(backend, workers, options("programs", 1))
                wall, report = run_campaign(backend, workers, options(section, sizes[section][0]))
                samples[config].append({"fixed_s": fixed, "wall_s": wall, "examples": report.total()})
                prints[config] = fingerprint(report, section)
                print(f"  {section} {backend or 'here'}×{workers}: {wall:.1f} s", file=sys.stderr)
    finally:
        if not args.no_ray:
            ray.shutdown()

    rows = []
    for config in configs:
        section, backend, workers = config
        med = {k: statistics.median(s[k] for s in samples[config]) for k in ("fixed_s", "wall_s", "examples")}
        steady = med["examples"] / max(med["wall_s"] - med["fixed_s"], 1e-9)
        rows.append({"section": section, "backend": backend or "in process", "workers": workers,
                     "examples": int(med["examples"]), "shard_size": sizes[section][1],
                     "fixed_s": round(med["fixed_s"], 2), "wall_s": round(med["wall_s"], 1),
                     "overall_per_s": round(med["examples"] / med["wall_s"], 1), "steady_per_s": round(steady, 1),
                     "same_report": prints[config] == prints[(section, None, 1)]})
    for r in rows:
        base = next(b for b in rows if b["section"] == r["section"] and b["backend"] == "in process")
        r["vs_here"] = round(r["steady_per_s"] / base["steady_per_s"], 2)
    if args.json:
        print(json.dumps({"seed": SEED, "reps": args.reps, "rows": rows, "ray_fixed": fixed_ray}, indent=2))
        return 0
    print(f"fuzz examples per second, median of {args.reps} interleaved rep(s), seed {SEED}, local executor")
    section = None
    for r in rows:
        if r["section"] != section:
            section = r["section"]
            print(f"\n{section} ({r['examples']} examples, shards of {r['shard_size']})")
            print(f"  {'backend':<11}{'workers':>8}{'fixed s':>9}{'wall s':>8}{'overall/s':>11}{'steady/s':>10}"
                  f"{'vs here':>9}  same")
        print(f"  {r['backend']:<11}{r['workers']:>8}{r['fixed_s']:>9.2f}{r['wall_s']:>8.1f}{r['overall_per_s']:>11.1f}"
              f"{r['steady_per_s']:>10.1f}{r['vs_here']:>8.2f}×  {'yes' if r['same_report'] else 'NO'}")
    if fixed_ray:
        print(f"\nRay fixed cost: ray.init() of a local instance {fixed_ray['init_s']:.2f} s, first remote task "
              f"{fixed_ray['first_task_s']:.2f} s, ray.shutdown() {fixed_ray['shutdown_s']:.2f} s")
    return 0 if all(r["same_report"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
