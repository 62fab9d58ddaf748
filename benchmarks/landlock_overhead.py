"""What the worker's self-confinement (executors/worker/hardening) adds to a cold start, side by side.

    .venv/bin/python benchmarks/landlock_overhead.py [--n 30] [--json]

Cold start: a fresh `python -I` child that puts executors/worker/ on sys.path (as the worker does) and
exits, against children that also import the hardening and apply it, interleaved round by round
so the machine's noise hits every variant alike:

  baseline      nothing
  import        import hardening (no confinement)
  landlock      + restrict(python_paths(), network=False)           (Landlock alone)
  drop          + harden(network=True): mount namespace if needed, drop to nobody, Landlock
  full          + harden(network=False): also a new network namespace

Wall-clock medians and the child's CPU time from rusage, with the difference and ratio to the
baseline. On a loaded machine wall time mostly measures the run queue: trust the CPU columns. In-process: the steps of harden(network=False) timed one
by one inside the child, in µs. Goal (issue 13): cold start <= +2 ms for the worker's hardening.
Steps that need root (namespaces, drop) are no-ops without it, and the figures say so.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

WORKER_DIR = str(Path(__file__).resolve().parents[1] / "executors" / "worker")
PRELUDE = "import sys,os;sys.path.insert(0,sys.argv[1]);"
VARIANTS = {
    "baseline": PRELUDE + "os._exit(0)",
    "import": PRELUDE + "import hardening;os._exit(0)",
    "landlock": PRELUDE
    + "import hardening as h;h.restrict(h.python_paths(),[],network=False);os._exit(0)",
    "drop": PRELUDE + "import hardening as h;h.harden(network=True);os._exit(0)",
    "full": PRELUDE + "import hardening as h;h.harden(network=False);os._exit(0)",
}

# The steps of harden(network=False), in its order, each timed inside one child: CPU time of
# the thread (steady under load) and wall time (what a caller waits, including the run queue).
STEPS = (
    PRELUDE
    + """
import time
marks = []
def mark():
    marks.append((time.thread_time(), time.perf_counter()))
mark(); import hardening as h; from hardening import landlock, privileges, runtime
mark(); paths = h.python_paths()
mark(); ruleset = landlock.Ruleset(paths, ["/dev/null"], False)
mark(); privileges.enter_network_namespace()
mark()
if os.geteuid() == 0:
    _n, uid, gid = privileges.resolve_user("nobody"); runtime.expose_paths(paths, uid, gid)
mark(); privileges.drop_privileges("nobody")
mark(); ruleset.enforce()
mark()
names = ["import", "python_paths", "ruleset build", "network namespace", "mount namespace",
         "drop privileges", "enforce (no_new_privs + restrict_self)"]
print(repr({n: ((b[0] - a[0]) * 1e6, (b[1] - a[1]) * 1e6)
            for n, a, b in zip(names, marks, marks[1:])}))
"""
)

RESTRICT_ALONE = (
    PRELUDE
    + """
import time, hardening as h
paths = h.python_paths()
t0 = time.perf_counter(); h.restrict(paths, [], network=False); t1 = time.perf_counter()
print((t1 - t0) * 1e6)
"""
)


def run(code: str) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-I", "-c", code, WORKER_DIR], capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"child failed:\n{proc.stderr}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall * 1e3, cpu * 1e3, proc.stdout


def measure(n: int) -> dict:
    wall: dict[str, list[float]] = {name: [] for name in VARIANTS}
    cpu: dict[str, list[float]] = {name: [] for name in VARIANTS}
    steps: list[dict] = []
    restrict_us: list[float] = []
    for code in VARIANTS.values():  # warm the page cache and bytecode once
        run(code)
    for _ in range(n):
        for name, code in VARIANTS.items():
            w, c, _out = run(code)
            wall[name].append(w)
            cpu[name].append(c)
        steps.append(eval(run(STEPS)[2]))  # our own child's repr() of floats
        restrict_us.append(float(run(RESTRICT_ALONE)[2]))
    base_wall = statistics.median(wall["baseline"])
    base_cpu = statistics.median(cpu["baseline"])
    cold = {}
    for name in VARIANTS:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        cold[name] = {
            "wall_ms": round(w, 2),
            "wall_delta_ms": round(w - base_wall, 2),
            "wall_ratio": round(w / base_wall, 3),
            "cpu_ms": round(c, 2),
            "cpu_delta_ms": round(c - base_cpu, 2),
        }
    step_medians = {
        k: {
            "cpu_us": round(statistics.median(s[k][0] for s in steps), 1),
            "wall_us": round(statistics.median(s[k][1] for s in steps), 1),
        }
        for k in steps[0]
    }
    return {
        "n": n,
        "root": os.geteuid() == 0,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cold_start": cold,
        "harden_steps_us": step_medians,
        "restrict_alone_us": round(statistics.median(restrict_us), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, WORKER_DIR)
    import hardening

    result = measure(args.n)
    result["abi"] = hardening.abi_version()
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"Landlock ABI {result['abi']}, root={result['root']}, n={args.n} (interleaved), "
        f"load average {result['load_average']} on {os.cpu_count()} CPUs"
    )
    print(f"{'cold start':<12}{'wall ms':>9}{'+ms':>8}{'ratio':>8}{'cpu ms':>9}{'+ms':>8}")
    for name, row in result["cold_start"].items():
        print(
            f"{name:<12}{row['wall_ms']:>9.2f}{row['wall_delta_ms']:>+8.2f}{row['wall_ratio']:>8.3f}"
            f"{row['cpu_ms']:>9.2f}{row['cpu_delta_ms']:>+8.2f}"
        )
    print("harden(network=False) step by step, inside the child (median µs):")
    print(f"  {'':<40}{'cpu':>10}{'wall':>10}")
    for name, us in result["harden_steps_us"].items():
        print(f"  {name:<40}{us['cpu_us']:>10.1f}{us['wall_us']:>10.1f}")
    print(f"restrict() alone (python_paths() + no TCP + scopes): {result['restrict_alone_us']} µs")


if __name__ == "__main__":
    main()
