"""What the PyData stack costs in each executor (issue 22), beside plain CPython.

For each library of tests/pydata_programs.py, each number from a fresh process:
  import     plain CPython: `import lib` (cold, first in the process)
  local      LocalExecutor(authorized_imports=that library's set): construction (it imports the
             authorized packages up front), the first step that imports it, the same import in a
             later step (warm; each step builds its module proxies anew)
  worker     SubprocessExecutor: construction until the worker is ready (it imports the
             authorized packages up front, after hardening), then the first step's import
  programs   two programs per library, warm (libraries imported, lazy submodules loaded, the
             code cache filled): the corpus program named in PROGRAM (small: often under a
             millisecond) and the data-scale one (benchmarks/pydata_scale_programs.py). A CPython
             process and a LocalExecutor process are alive at once and take turns, one run each
             per turn (this machine is noisy: only turns side by side compare); medians of REPS
             turns. CPython runs the compiled program (the strict baseline: our steps are served
             from the code cache); both must print the same. Target: <= 1.1x. The empty step
             (`1`) is what a step costs in that LocalExecutor. Times are the calling thread's
             CPU time (steady under load; a library's own worker threads, polars' and pyarrow's,
             are not in it: the wall ratio is shown beside it) - not the process's: while a
             CPU-time limit is armed (setitimer) Linux reads the process clock from a per-tick
             account, 4 ms coarse.

    .venv/bin/python benchmarks/pydata_imports.py            # prints a table (~1 min on a quiet machine)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from pydata_programs import IMPORTS, LIBRARIES  # noqa: E402
from pydata_scale_programs import SCALE  # noqa: E402

MODULE = {"sklearn": "sklearn.linear_model", "statsmodels": "statsmodels.api", "scipy": "scipy.stats"}
PROGRAM = {"scipy": "sp_ttest", "sklearn": "sk_linear_regression", "statsmodels": "sm_ols",
           "seaborn": "sns_barplot", "polars": "pl_groupby_agg", "pyarrow": "pa_compute",
           "sympy": "sy_solve", "networkx": "nx_shortest_path"}
REPS = 20
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1", "MPLBACKEND": "Agg"}

_IMPORTS = r"""
import json, sys, time
kind, module, imports = json.loads(sys.argv[1])
out = {}
if kind == "plain":
    t = time.perf_counter(); __import__(module); out["import"] = time.perf_counter() - t
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
    ex.close()
print(json.dumps(out))
"""

# One process of a turn-taking pair: reads a command per line, answers with seconds.
_TURNS = r"""
import contextlib, io, json, sys, time
kind, imports, programs = json.loads(sys.argv[1])
if kind == "plain":
    codes = {name: compile(src, "<program>", "exec") for name, src in programs.items()}
    def run(what):
        with contextlib.redirect_stdout(io.StringIO()) as out:
            exec(codes[what], {"__name__": "__main__"})
        return out.getvalue()
else:
    from executors import Limits, LocalExecutor
    ex = LocalExecutor(authorized_imports=imports, limits=Limits(timeout_s=120))
    programs["empty"] = "1"
    def run(what):
        r = ex.execute(programs[what])
        assert r.error is None, r.error
        return r.logs
printed = {}
for _ in range(2):
    for name in programs:
        printed[name] = run(name)  # lazy submodules load, the code cache fills
print(json.dumps(printed), flush=True)
for line in sys.stdin:
    t, c = time.perf_counter(), time.thread_time()
    run(line.strip())
    print(time.perf_counter() - t, time.thread_time() - c, flush=True)
"""


def measure_imports(kind: str, library: str) -> dict:
    module = MODULE.get(library, library)
    proc = subprocess.run([sys.executable, "-c", _IMPORTS, json.dumps([kind, module, IMPORTS[library]])],
                          capture_output=True, text=True, timeout=600, cwd=str(ROOT), env=ENV)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} {library}: {proc.stderr[-1500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _turn_taker(kind: str, library: str) -> subprocess.Popen:
    programs = {"small": LIBRARIES[library][PROGRAM[library]], "scale": SCALE[library]}
    proc = subprocess.Popen([sys.executable, "-c", _TURNS, json.dumps([kind, IMPORTS[library], programs])],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=str(ROOT), env=ENV)
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"{kind} {library}: the measuring process did not start")
    proc.printed = json.loads(line)
    return proc


def _ask(proc: subprocess.Popen, what: str) -> tuple[float, float]:
    proc.stdin.write(what + "\n")
    proc.stdin.flush()
    wall, cpu = proc.stdout.readline().split()
    return float(wall), float(cpu)


def measure_programs(library: str) -> dict:
    """Medians of REPS turns, (wall, CPU) seconds: CPython and LocalExecutor for each program,
    and LocalExecutor's empty step."""
    plain, local = _turn_taker("plain", library), _turn_taker("local", library)
    for what in ("small", "scale"):
        if plain.printed[what] != local.printed[what]:
            raise SystemExit(f"{library} {what}: LocalExecutor printed {local.printed[what]!r}, "
                             f"CPython {plain.printed[what]!r}")
    procs = {"cpython": plain, "local": local}
    turns = (("small", "cpython"), ("small", "local"), ("scale", "cpython"), ("scale", "local"), ("empty", "local"))
    times: dict[tuple[str, str], list[tuple[float, float]]] = {turn: [] for turn in turns}
    try:
        for _ in range(REPS):
            for what, who in turns:
                times[(what, who)].append(_ask(procs[who], what))
    finally:
        for proc in procs.values():
            proc.stdin.close()
            proc.wait(timeout=60)
    return {turn: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for turn, v in times.items()}


def main() -> int:
    ms = lambda s: f"{s * 1000:7.0f}"  # noqa: E731
    print("import/ready/1st/warm: ms, one fresh process each. programs: CPU ms, CPython -> LocalExecutor, "
          f"ratio of thread CPU (of wall), medians of {REPS} turns")
    print(f"{'library':12} {'import':>7} | {'local ready':>11} {'1st':>5} {'warm':>5} | {'worker ready':>12} {'1st':>6} |"
          f" {'corpus program':>30} | {'data-scale program':>30} | {'empty step':>10}")
    for library in LIBRARIES:
        plain, local, worker = (measure_imports(k, library) for k in ("plain", "local", "worker"))
        p = measure_programs(library)
        cells = []
        for what in ("small", "scale"):
            (pw, pc), (lw, lc) = p[(what, "cpython")], p[(what, "local")]
            cells.append(f"{pc * 1000:9.3f} -> {lc * 1000:9.3f} {lc / pc:4.2f}x ({lw / pw:4.2f}x)")
        print(f"{library:12} {ms(plain['import'])} | {ms(local['ready']):>11} {ms(local['first']):>5} "
              f"{ms(local['warm']):>5} | {ms(worker['ready']):>12} {ms(worker['first']):>6} | "
              f"{cells[0]} | {cells[1]} | {p[('empty', 'local')][1] * 1000:>10.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
