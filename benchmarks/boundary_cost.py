"""What the plain-data boundary costs a data task, measured side by side in one run.

    .venv/bin/python benchmarks/boundary_cost.py [--rows 1000000] [--mb 100] [--reps 5] [--json]

Every value that leaves a step (its output, final answer, variables) or enters a tool is made into
plain data inside the step and rebuilt by the host (executors/worker/codec): a DataFrame crosses
as typed columns, its buffers as blobs of a binary frame (worker/codec/frames.py), never as JSON
text and never pickled; pandas' strings columns as their Arrow buffers. Rows, each beside
`df.copy(deep=True)` (or `a.copy()` for the array), timed in turns with it: the median time and
its ratio to the baseline's median in the same turns, and the best time against the baseline's
best (a shared machine's load moves medians by 3x):

  the frame (`--rows` rows: int64, float64, a short-string column in pandas' str dtype, datetime64)
    codec in process        encode + decode as LocalExecutor hands a value over (one copy)
    codec, framed           the same packed into a binary frame, split and unpacked as the host
                            does (inline blobs: a container's pipe)
    Arrow IPC floor         pyarrow: the frame to an Arrow table, an IPC stream, and back to pandas
                            in one process; and the strings column alone (the floor the issue
                            names: a consumer that builds str objects pays it)
    LocalExecutor           get_variables(["df"]) and execute("df")
    SubprocessExecutor      get_variables(["df"]) and execute("df"): the hardened worker, the
                            blobs through its shared-memory arena
  an array of `--mb` MB of float64, both ways: LocalExecutor and SubprocessExecutor set_variables
  and get_variables
  a figure: a step that draws a 1,000-point line plot and returns it as a PNG, beside drawing it and
  saving the PNG in this process
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from executors import Limits, LocalExecutor, SubprocessExecutor  # noqa: E402
from executors.worker.codec import decode_value, encode_value  # noqa: E402
from executors.worker.wire import FrameBuffer, pack_frame, unpack_message  # noqa: E402

MAKE = """
import numpy as np
import pandas as pd
rng = np.random.default_rng(0)
df = pd.DataFrame({"x": rng.random(ROWS), "n": np.arange(ROWS),
                   "city": pd.array(["north", "south", "east", "west"] * (ROWS // 4), dtype="str"),
                   "t": pd.date_range("2020-01-01", periods=ROWS, freq="s")})
"""
PLOT = """
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.plot(range(1000), [i * i for i in range(1000)])
"""


class Paired:
    """Each row timed in turns with the table's baseline (`base`, then the row, `reps` times):
    its median ms and the ratio of that to the baseline's median in the same turns (the load of a
    shared machine then weighs on both), and the same for the best of the turns (what the code
    costs when the machine lets it run)."""

    SETTLE_S = 0.03  # between turns: what a worker does after answering is not the next baseline's

    def __init__(self, base, reps: int) -> None:
        self.base, self.reps, self.rows = base, reps, {}

    def __call__(self, name: str, fn) -> None:
        fn()  # (warm: the first call faults fresh pages in, on every side)
        self.base()
        times, base = [], []
        for _ in range(self.reps):
            gc.collect()
            time.sleep(self.SETTLE_S)
            t0 = time.perf_counter()
            self.base()
            t1 = time.perf_counter()
            fn()
            t2 = time.perf_counter()
            times.append((t2 - t1) * 1000)
            base.append((t1 - t0) * 1000)
        ms, best = statistics.median(times), min(times)
        self.rows[name] = (ms, ms / max(statistics.median(base), 1e-6), best, best / max(min(base), 1e-6))


def framed(value) -> object:
    frame = pack_frame({"op": "variables", "id": 1, "values": encode_value(value, raw=True)})
    buf = FrameBuffer()
    buf.feed(frame if type(frame) is bytes else frame.render(None))
    return decode_value(unpack_message(buf.next_frame())["values"], parsed=True)


def arrow_round_trip(frame):
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    table = pa.Table.from_pandas(frame, preserve_index=False)
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return pa.ipc.open_stream(sink.getvalue()).read_all().to_pandas()


def strings_floor(column):
    """The issue's floor: the strings column alone through an Arrow IPC stream and back to pandas
    (str objects where the pandas builds them; Arrow-backed where it keeps them, as pandas 3 does)."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    table = pa.table({"city": column.array.__arrow_array__()})
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return pa.ipc.open_stream(sink.getvalue()).read_all().to_pandas()


def frame_rows(df, make: str, reps: int) -> dict:
    row = Paired(lambda: df.copy(deep=True), reps)
    row("df.copy(deep=True)", lambda: df.copy(deep=True))
    row("codec in process", lambda: decode_value(encode_value(df, binary=True)))
    row("codec, framed (inline blobs)", lambda: framed(df))
    row("Arrow IPC round trip, whole frame", lambda: arrow_round_trip(df))
    row("Arrow IPC floor: the strings column", lambda: strings_floor(df["city"]))
    row("  as Python str objects (.tolist())", lambda: df["city"].tolist())
    imports = ["numpy.*", "pandas.*", "matplotlib.*"]
    with LocalExecutor(authorized_imports=imports, limits=Limits(timeout_s=120, max_memory_mb=None)) as local:
        assert local.execute(make).error is None
        row("LocalExecutor: get_variables(['df'])", lambda: local.get_variables(["df"]))
        row("LocalExecutor: execute('df')", lambda: local.execute("df"))
    with SubprocessExecutor(authorized_imports=imports, limits=Limits(timeout_s=120, max_memory_mb=4096)) as sub:
        assert sub.execute(make).error is None
        row("SubprocessExecutor: get_variables(['df'])", lambda: sub.get_variables(["df"]))
        row("SubprocessExecutor: execute('df')", lambda: sub.execute("df"))
    return row.rows


def array_rows(mb: int, reps: int) -> dict:
    import numpy as np

    a = np.random.default_rng(1).random(mb * 2**20 // 8)
    row = Paired(lambda: a.copy(), reps)
    row("a.copy()", lambda: a.copy())
    imports = ["numpy.*", "pandas.*", "matplotlib.*"]
    with LocalExecutor(authorized_imports=imports, limits=Limits(timeout_s=120, max_memory_mb=None)) as local:
        row("LocalExecutor: set_variables", lambda: local.set_variables({"a": a}))
        row("LocalExecutor: get_variables", lambda: local.get_variables(["a"]))
    with SubprocessExecutor(authorized_imports=imports, limits=Limits(timeout_s=120, max_memory_mb=4096)) as sub:
        row("SubprocessExecutor: set_variables", lambda: sub.set_variables({"a": a}))
        row("SubprocessExecutor: get_variables", lambda: sub.get_variables(["a"]))
        back = sub.get_variables(["a"])["a"]
        assert back.shape == a.shape and back[-1] == a[-1]
    return row.rows


def figure_rows(reps: int) -> dict:
    ns: dict = {}

    def draw_here():
        exec(PLOT, ns)
        buf = io.BytesIO()
        ns["fig"].savefig(buf, format="png")
        ns["plt"].close(ns["fig"])

    row = Paired(draw_here, reps)
    row("draw + savefig in this process", draw_here)
    imports = ["matplotlib.*", "numpy.*"]
    with LocalExecutor(authorized_imports=imports, limits=Limits(timeout_s=120, max_memory_mb=None)) as local:
        assert local.execute(PLOT).attachments, "no figure came back"
        row("LocalExecutor: the step, its PNG back", lambda: local.execute(PLOT))
    with SubprocessExecutor(authorized_imports=imports, limits=Limits(timeout_s=120, max_memory_mb=2048)) as sub:
        assert sub.execute(PLOT).attachments, "no figure came back"
        row("SubprocessExecutor: the step, its PNG back", lambda: sub.execute(PLOT))
    return row.rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--mb", type=int, default=100)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    make = MAKE.replace("ROWS", str(args.rows))
    ns: dict = {}
    exec(make, ns)
    tables = {f"a {args.rows:,}-row frame (int, float, str, datetime)": frame_rows(ns["df"], make, args.reps),
              f"a {args.mb} MB float64 array, both ways": array_rows(args.mb, args.reps),
              "a figure (1,000-point line plot, PNG)": figure_rows(args.reps)}
    if args.json:
        print(json.dumps({"rows": args.rows, "mb": args.mb, "ms": tables}, indent=2))
        return 0
    for title, rows in tables.items():
        base_name = next(iter(rows))
        print(f"{title}: {args.reps} turns with {base_name}: the median ms and x the baseline's "
              "median; the best ms and x the baseline's best")
        for name, (ms, ratio, best, best_ratio) in rows.items():
            print(f"  {name:<46}{ms:>10.2f}   {ratio:>7.1f}x   {best:>10.2f}   {best_ratio:>7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
