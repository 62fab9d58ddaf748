"""What the host's bounds cost a normal step, this tree beside another, interleaved in one run.

    .venv/bin/python benchmarks/host_bounds_cost.py --base /path/to/tree/before [--rounds 3]

The bounds table (executors/worker/bounds) adds work on both sides of the boundary: the encoder
counts what it spends, the host scans every frame before it parses it and checks the numbers it
decodes. Each figure is measured by a child process in each tree (`--measure`), the trees taking
turns for `--rounds` rounds; the medians of the rounds are printed side by side with their ratio:

  decode: result      the host's handling of one trivial step's `result` frame: validate, decode,
                      make the ExecutionResult (parse_worker_message + step_result), in µs
  decode: dict value  the same with a 200-item dict of short strings and floats as the output
  codec: frame        encode + decode of a 200,000-row DataFrame (boundary_cost.py's, 4 columns)
                      on the wire (through JSON text) and in process (raw bytes), in ms
  warm round trip     SubprocessExecutor.execute() of a trivial action (subprocess_overhead.py's
                      warm figure), restricted and open policy, in ms
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

MEASURE = r'''
import json, statistics, sys, time
sys.path.insert(0, TREE)
sys.path.insert(0, TREE + "/benchmarks")
from executors.base import Limits
from executors.remote.answers import step_result
from executors.remote.protocol import parse_worker_message, pack_frame
from executors.worker.codec import decode_value, encode_value
from executors.worker.wire import dumps, loads

def per_call(fn, reps):
    for _ in range(min(reps, 200)):
        fn()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        times.append((time.perf_counter() - t0) / reps)
    return statistics.median(times)

limits = Limits()
out = {}
trivial = pack_frame({"op": "result", "id": 7, "duration_s": 0.0001, "attachments": [], "output": 2})[4:]
out["decode: result (us)"] = 1e6 * per_call(lambda: step_result(parse_worker_message(trivial), limits, 0.0), 20000)
value = {f"key{i}": (f"value {i}" if i % 2 else i * 0.5) for i in range(200)}
rich = pack_frame({"op": "result", "id": 7, "duration_s": 0.0001, "attachments": [], "output": encode_value(value),
                   "logs": "x" * 2000, "output_repr": repr(value)[:2000]})[4:]
out["decode: dict value (us)"] = 1e6 * per_call(lambda: step_result(parse_worker_message(rich), limits, 0.0), 3000)
import numpy as np, pandas as pd
rows = 200_000
rng = np.random.default_rng(0)
df = pd.DataFrame({"x": rng.random(rows), "n": np.arange(rows), "flag": rng.random(rows) > 0.5,
                   "city": pd.array(["north", "south", "east", "west"] * (rows // 4), dtype="str")})
out["codec: frame, wire (ms)"] = 1e3 * per_call(lambda: decode_value(loads(dumps(encode_value(df)))), 3)
out["codec: frame, in process (ms)"] = 1e3 * per_call(lambda: decode_value(encode_value(df, binary=True)), 3)
from subprocess_overhead import warm_figures
for policy in ("restricted", "open"):
    out[f"warm round trip, {policy} (ms)"] = warm_figures(policy, REPS)["warm"]["median_ms"]
print(json.dumps(out))
'''


def measure(tree: Path, reps: int) -> dict[str, float]:
    code = MEASURE.replace("TREE", repr(str(tree))).replace("REPS", str(reps))
    done = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise SystemExit(f"measuring {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", type=Path, required=True, help="the tree to compare with (e.g. a `git archive` of main)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=1000, help="warm round trips per figure")
    p.add_argument("--json", action="store_true")
    opts = p.parse_args(argv)
    trees = {"base": opts.base.resolve(), "this": HERE}
    runs: dict[str, list[dict[str, float]]] = {"base": [], "this": []}
    t0 = time.monotonic()
    for _ in range(opts.rounds):
        for name, tree in trees.items():
            runs[name].append(measure(tree, opts.reps))
    medians = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}
    if opts.json:
        print(json.dumps({"medians": medians, "runs": runs}, indent=1))
        return 0
    print(f"{opts.rounds} interleaved rounds in {time.monotonic() - t0:.0f} s; medians of the rounds "
          f"(base: {trees['base']})")
    print(f"{'':36}{'base':>10}{'this':>10}{'ratio':>8}")
    for key, before in medians["base"].items():
        after = medians["this"][key]
        print(f"{key:<36}{before:>10.2f}{after:>10.2f}{after / before:>7.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
