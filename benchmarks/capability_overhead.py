"""What the capability guard (the audit hook under the policy) costs, as ratios measured side by side.

1. Host code while an executor exists but no step runs: an open()/listdir/stat-heavy loop in a
   fresh Python with the hook installed (a LocalExecutor built) vs one without, alternated.
2. numpy/pandas data programs in process: LocalExecutor (policy + hook + settings restore) vs
   plain CPython `exec` of the same code, interleaved rep by rep, thread CPU time.

    .venv/bin/python benchmarks/capability_overhead.py [--rounds 7] [--reps 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HOST_LOOP = textwrap.dedent("""
    import os, sys, tempfile, time
    sys.path.insert(0, {root!r})
    if {hook}:
        from executors import LocalExecutor
        LocalExecutor().close()   # installs the audit hook for good
    d = tempfile.mkdtemp()
    p = os.path.join(d, "f.txt")
    with open(p, "w") as f:
        f.write("x" * 100)
    def work(n=20000):
        for _ in range(n):
            with open(p) as f:
                f.read()
            os.stat(p)
        for _ in range(n // 10):
            os.listdir(d)
    work(2000)
    t = time.thread_time()
    work()
    print(time.thread_time() - t)
""")

DATA_PROGRAMS = {
    "numpy vector stats": """
import numpy as np
rng = np.random.default_rng(0)
a = rng.normal(size=200_000)
r = (float(a.mean()), float(a.std()), float(np.percentile(a, 90)), float((a > 1).sum()))
""",
    "numpy matrix ops": """
import numpy as np
m = np.arange(90_000, dtype=float).reshape(300, 300) / 1000
r = float((m @ m.T).trace() + np.linalg.norm(m))
""",
    "pandas groupby": """
import pandas as pd
import numpy as np
df = pd.DataFrame({"k": np.arange(100_000) % 37, "v": np.arange(100_000) * 0.5})
r = df.groupby("k").v.agg(["sum", "mean", "max"]).sum().tolist()
""",
    "pandas csv round trip": """
import io
import pandas as pd
import numpy as np
df = pd.DataFrame({"a": np.arange(20_000), "b": np.arange(20_000) % 7})
text = df.to_csv(index=False)
back = pd.read_csv(io.StringIO(text))
r = int(back.b.sum())
""",
    "pandas merge + pivot": """
import pandas as pd
import numpy as np
left = pd.DataFrame({"id": np.arange(20_000), "g": np.arange(20_000) % 11})
right = pd.DataFrame({"id": np.arange(0, 20_000, 2), "x": np.arange(10_000) * 1.5})
m = left.merge(right, on="id")
r = m.pivot_table(index="g", values="x", aggfunc="sum").x.sum()
""",
    "pandas apply rows": """
import pandas as pd
df = pd.DataFrame({"a": range(3000), "b": range(3000)})
r = int(df.apply(lambda row: row["a"] * 2 + row["b"], axis=1).sum())
""",
}


def host_overhead(rounds: int) -> tuple[float, float]:
    times = {False: [], True: []}
    for _ in range(rounds):
        for hook in (False, True):
            code = HOST_LOOP.format(root=str(ROOT), hook=hook)
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout
            times[hook].append(float(out.strip().splitlines()[-1]))
    return statistics.median(times[False]), statistics.median(times[True])


def data_overhead(reps: int) -> dict[str, tuple[float, float]]:
    sys.path.insert(0, str(ROOT))
    from executors import Limits, LocalExecutor

    ex = LocalExecutor(authorized_imports=["numpy.*", "pandas.*"],
                       limits=Limits(timeout_s=120, max_operations=None, max_memory_mb=None))
    results = {}
    for name, code in DATA_PROGRAMS.items():
        compiled = compile(code, "<cpython>", "exec")
        ex.execute(code)  # warm: imports, proxies, compile cache
        exec(compiled, {})
        cpy, loc = [], []
        for _ in range(reps):
            t = time.thread_time()
            exec(compiled, {})
            cpy.append(time.thread_time() - t)
            t = time.thread_time()
            r = ex.execute(code)
            loc.append(time.thread_time() - t)
            assert r.error is None, (name, r.error)
        results[name] = (statistics.median(cpy), statistics.median(loc))
    ex.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    plain, hooked = host_overhead(args.rounds)
    print("host code, no step running (open/stat/listdir loop, thread CPU, median of "
          f"{args.rounds} alternated fresh processes):")
    print(f"  without hook {plain * 1e3:8.1f} ms   with hook {hooked * 1e3:8.1f} ms   "
          f"ratio {hooked / plain:.3f}x")
    print("\nnumpy/pandas data programs in process (thread CPU, median of "
          f"{args.reps} interleaved reps):")
    print(f"  {'program':24} {'CPython':>10} {'LocalExecutor':>14} {'ratio':>7}")
    for name, (cpy, loc) in data_overhead(args.reps).items():
        print(f"  {name:24} {cpy * 1e3:8.2f} ms {loc * 1e3:11.2f} ms {loc / cpy:6.2f}x")


if __name__ == "__main__":
    main()
