"""What the plain-data boundary costs a data task, measured side by side in one run.

    .venv/bin/python benchmarks/boundary_cost.py [--rows 1000000] [--mb 100] [--reps 5] [--json]

Every value that leaves a step (its output, final answer, variables) or enters a tool is made into
plain data inside the step and rebuilt by the host (executors/worker/codec): a DataFrame crosses
as typed columns, its buffers as blobs of a binary frame (worker/codec/frames.py), never as JSON
text and never pickled; pandas' strings columns as their Arrow buffers. Rows, each beside
`df.copy(deep=True)` (or `a.copy()` for the array), medians of `--reps`:

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


def median_ms(fn, reps: int) -> float:
    fn()  # (warm: the first call faults fresh pages in, on every side)
    times = []
    for _ in range(reps):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


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
    rows = {"df.copy(deep=True)": median_ms(lambda: df.copy(deep=True), reps),
            "codec in process": median_ms(lambda: decode_value(encode_value(df, binary=True)), reps),
            "codec, framed (inline blobs)": median_ms(lambda: framed(df), reps),
            "Arrow IPC round trip, whole frame": median_ms(lambda: arrow_round_trip(df), reps),
            "Arrow IPC floor: the strings column": median_ms(lambda: strings_floor(df["city"]), reps),
            "  as Python str objects (.tolist())": median_ms(lambda: df["city"].tolist(), reps),
            "strings column: df['city'].copy()": median_ms(lambda: df["city"].copy(), reps)}
    limits = Limits(timeout_s=120, max_memory_mb=None)
    imports = ["numpy.*", "pandas.*", "matplotlib.*"]
    with LocalExecutor(authorized_imports=imports, limits=limits) as local:
        assert local.execute(make).error is None
        rows["LocalExecutor: get_variables(['df'])"] = median_ms(lambda: local.get_variables(["df"]), reps)
        rows["LocalExecutor: execute('df')"] = median_ms(lambda: local.execute("df"), reps)
    with SubprocessExecutor(authorized_imports=imports, limits=Limits(timeout_s=120, max_memory_mb=4096)) as sub:
        assert sub.execute(make).error is None
        rows["SubprocessExecutor: get_variables(['df'])"] = median_ms(lambda: sub.get_variables(["df"]), reps)
        rows["SubprocessExecutor: execute('df')"] = median_ms(lambda: sub.execute("df"), reps)
    return rows


def array_rows(mb: int, reps: int) -> dict:
    import numpy as np

    a = np.random.default_rng(1).random(mb * 2**20 // 8)
    rows = {"a.copy()": median_ms(lambda: a.copy(), reps)}
    imports = ["numpy.*", "pandas.*", "matplotlib.*"]
    with LocalExecutor(authorized_imports=imports, limits=Limits(timeout_s=120, max_memory_mb=None)) as local:
        rows["LocalExecutor: set_variables"] = median_ms(lambda: local.set_variables({"a": a}), reps)
        rows["LocalExecutor: get_variables"] = median_ms(lambda: local.get_variables(["a"]), reps)
    with SubprocessExecutor(authorized_imports=imports, limits=Limits(timeout_s=120, max_memory_mb=4096)) as sub:
        rows["SubprocessExecutor: set_variables"] = median_ms(lambda: sub.set_variables({"a": a}), reps)
        rows["SubprocessExecutor: get_variables"] = median_ms(lambda: sub.get_variables(["a"]), reps)
        back = sub.get_variables(["a"])["a"]
        assert back.shape == a.shape and back[-1] == a[-1]
    return rows


def figure_rows(reps: int) -> dict:
    ns: dict = {}

    def draw_here():
        exec(PLOT, ns)
        buf = io.BytesIO()
        ns["fig"].savefig(buf, format="png")
        ns["plt"].close(ns["fig"])

    rows = {"draw + savefig in this process": median_ms(draw_here, reps)}
    imports = ["matplotlib.*", "numpy.*"]
    limits = Limits(timeout_s=120, max_memory_mb=None)
    with LocalExecutor(authorized_imports=imports, limits=limits) as local:
        assert local.execute(PLOT).attachments, "no figure came back"
        rows["LocalExecutor: the step, its PNG back"] = median_ms(lambda: local.execute(PLOT), reps)
    with SubprocessExecutor(authorized_imports=imports, limits=Limits(timeout_s=120, max_memory_mb=2048)) as sub:
        assert sub.execute(PLOT).attachments, "no figure came back"
        rows["SubprocessExecutor: the step, its PNG back"] = median_ms(lambda: sub.execute(PLOT), reps)
    return rows


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
        base_name, base = next(iter(rows.items()))
        print(f"{title}: medians of {args.reps}, ms, and x {base_name}")
        for name, ms in rows.items():
            print(f"  {name:<46}{ms:>10.2f}   {ms / base:>7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
