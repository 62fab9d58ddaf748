"""What the plain-data boundary costs a data task, measured side by side in one run.

    .venv/bin/python benchmarks/boundary_cost.py [--rows 1000000] [--reps 5] [--json]

Every value that leaves a step (its output, final answer, variables) or enters a tool is made into
plain data inside the step and rebuilt by the host (executors/worker/codec.py): a DataFrame
crosses as typed columns, never as itself and never pickled. Rows:

  codec, in process   encode + decode of the frame as LocalExecutor does it (raw bytes, no JSON),
                      beside `df.copy(deep=True)`, the cheapest copy pandas makes
  codec, on the wire  the same through JSON text, as a worker sends it
  step output         `execute("df")` of a frame made in an earlier step: LocalExecutor and
                      SubprocessExecutor, beside CPython evaluating `df` in a namespace
  tool argument       a tool called with the frame (in process): the call beside a direct call

The frame: `--rows` rows of float64, int64, bool and a short-string column (pandas' str dtype).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from executors import Limits, LocalExecutor, SubprocessExecutor  # noqa: E402
from executors.worker.codec import decode_value, encode_value  # noqa: E402
from executors.worker.wire import dumps, loads  # noqa: E402

MAKE = """
import numpy as np
import pandas as pd
rng = np.random.default_rng(0)
df = pd.DataFrame({"x": rng.random(ROWS), "n": np.arange(ROWS), "flag": rng.random(ROWS) > 0.5,
                   "city": pd.array(["north", "south", "east", "west"] * (ROWS // 4), dtype="str")})
"""


def median_ms(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    make = MAKE.replace("ROWS", str(args.rows))
    ns: dict = {}
    exec(make, ns)
    df = ns["df"]
    reps = args.reps
    rows = {}
    rows["copy(deep=True)"] = median_ms(lambda: df.copy(deep=True), reps)
    rows["codec, in process"] = median_ms(lambda: decode_value(encode_value(df, binary=True)), reps)
    rows["codec, on the wire"] = median_ms(lambda: decode_value(loads(dumps(encode_value(df)))), reps)
    rows["CPython: eval 'df'"] = median_ms(lambda: eval("df", ns), reps)
    limits = Limits(timeout_s=60, max_memory_mb=None)
    imports = ["numpy.*", "pandas.*"]
    seen = []

    def shape(frame):
        seen.append(frame.shape)
        return frame.shape[0]

    with LocalExecutor(tools={"shape": shape}, authorized_imports=imports, limits=limits) as local:
        assert local.execute(make).error is None
        rows["LocalExecutor: execute('df')"] = median_ms(lambda: local.execute("df"), reps)
        rows["LocalExecutor: shape(df), a tool"] = median_ms(lambda: local.execute("shape(df)"), reps)
    rows["direct: shape(df)"] = median_ms(lambda: shape(df), reps)
    with SubprocessExecutor(authorized_imports=imports, limits=Limits(timeout_s=60, max_memory_mb=2048)) as sub:
        assert sub.execute(make).error is None
        rows["SubprocessExecutor: execute('df')"] = median_ms(lambda: sub.execute("df"), reps)
    if args.json:
        print(json.dumps({"rows": args.rows, "ms": rows}, indent=2))
        return 0
    base = rows["copy(deep=True)"]
    print(f"the boundary's cost for a {args.rows:,}-row frame (4 columns), medians of {reps}, ms")
    for name, ms in rows.items():
        print(f"  {name:<38}{ms:>10.2f}   {ms / base:>6.1f}x df.copy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
