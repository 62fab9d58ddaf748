"""What the PyData stack costs in each executor (issue 22), beside plain CPython.

For each library of tests/pydata_programs.py, each number from a fresh process:
  import     plain CPython: `import lib` (cold, first in the process)
  local      LocalExecutor(authorized_imports=that library's set): construction (it imports the
             authorized packages up front), the first step that imports it, the same import in a
             later step (warm; each step builds its module proxies anew)
  worker     SubprocessExecutor: construction until the worker is ready (it imports the
             authorized packages up front, after hardening), then the first step's import
  program    one program of the corpus, warm (libraries imported), best of 5: LocalExecutor (later
             steps of one run) beside CPython's exec of the same source (target <= 1.1x); and
             what an empty step costs in that executor

    .venv/bin/python benchmarks/pydata_imports.py            # prints a table (~2 min)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from pydata_programs import IMPORTS, LIBRARIES  # noqa: E402

MODULE = {"sklearn": "sklearn.linear_model", "statsmodels": "statsmodels.api", "scipy": "scipy.stats"}
PROGRAM = {"scipy": "sp_ttest", "sklearn": "sk_linear_regression", "statsmodels": "sm_ols",
           "seaborn": "sns_barplot", "polars": "pl_groupby_agg", "pyarrow": "pa_compute",
           "sympy": "sy_solve", "networkx": "nx_shortest_path"}

_MEASURE = r"""
import contextlib, io, json, os, sys, time
os.environ.setdefault("MPLBACKEND", "Agg")
kind, library, module, imports, program = json.loads(sys.argv[1])
out = {}
if kind == "plain":
    t = time.perf_counter(); __import__(module); out["import"] = time.perf_counter() - t
    best = []
    for _ in range(5):
        t = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(program, "<program>", "exec"), {"__name__": "__main__"})
        best.append(time.perf_counter() - t)
    out["program"] = min(best)
else:
    from executors import Limits, LocalExecutor, SubprocessExecutor
    cls = LocalExecutor if kind == "local" else SubprocessExecutor
    t = time.perf_counter(); ex = cls(authorized_imports=imports, limits=Limits(timeout_s=120))
    if kind == "worker":
        ex.execute("1")
    out["ready"] = time.perf_counter() - t
    for key in ("first", "warm"):
        t = time.perf_counter(); r = ex.execute(f"import {module}"); out[key] = time.perf_counter() - t
        assert r.error is None, r.error
        ex.reset()
    if kind == "local":
        ex.execute(program)  # (its lazy submodules load once)
        best = []
        for _ in range(5):  # later steps of one run: the namespace is kept
            t = time.perf_counter(); r = ex.execute(program); best.append(time.perf_counter() - t)
            assert r.error is None, r.error
        out["program"] = min(best)
        ex.reset()
        t = time.perf_counter(); ex.execute("1"); out["empty"] = time.perf_counter() - t
    ex.close()
print(json.dumps(out))
"""


def measure(kind: str, library: str) -> dict:
    module = MODULE.get(library, library)
    program = LIBRARIES[library][PROGRAM[library]]
    proc = subprocess.run([sys.executable, "-c", _MEASURE,
                           json.dumps([kind, library, module, IMPORTS[library], program])],
                          capture_output=True, text=True, timeout=600, cwd=str(ROOT),
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"})
    if proc.returncode != 0:
        raise SystemExit(f"{kind} {library}: {proc.stderr[-1500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ms = lambda s: f"{s * 1000:7.0f}"  # noqa: E731
    print(f"{'library':12} {'import':>7} | {'local ready':>11} {'1st':>5} {'warm':>5} | {'worker ready':>12} {'1st':>6} |"
          f" {'program ms: CPython':>19} {'local':>7} {'ratio':>6} {'empty step':>10}")
    for library in LIBRARIES:
        plain, local, worker = (measure(k, library) for k in ("plain", "local", "worker"))
        ratio = local["program"] / plain["program"]
        print(f"{library:12} {ms(plain['import'])} | {ms(local['ready']):>11} {ms(local['first']):>5} "
              f"{ms(local['warm']):>5} | "
              f"{ms(worker['ready']):>12} {ms(worker['first']):>6} | {plain['program'] * 1000:>19.2f} "
              f"{local['program'] * 1000:7.2f} {ratio:6.2f}x {local['empty'] * 1000:>10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
