"""Raw memory and registries through authorized native libraries (issue 42).

The corpus (tests/raw_memory_escapes.py, run by tests/raw_memory_harness.py: a forked host per
case): every case is code the policy accepts, and in plain CPython it reads the host's secret,
writes the host's memory (math.pi among it), kills the host with a signal, or leaves a library
registry or hook that changes the host after the step. In LocalExecutor and SubprocessExecutor
none does any of that. Neighbours: ordinary code through the same entry points keeps working,
with CPython's results.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import raw_memory_harness as harness
from native_crash_regressions import HANG_PRELUDE, HANGS, REGRESSIONS
from raw_memory_escapes import CASES, Case

from executors import LocalExecutor
from executors.base import DEFAULT_AUTHORIZED_IMPORTS
from executors.restricted.compiler.checker import inspect_tree
from executors.restricted.compiler.policy import GUARDED_LOADS
from executors.restricted.libraries.raw_memory import MEMBER_CHECKS, ROUTES
from executors.restricted.libraries.raw_memory.routes import DECISIONS
from executors.restricted.libraries.sandbox_modules import Authorization

pytestmark = pytest.mark.timeout(900)
IDS = [c.id for c in CASES]
ALL = CASES + REGRESSIONS  # (the crash fuzzer's findings run in the same batches)
LIBRARIES = {"numpy", "pandas", "pyarrow", "scipy", "polars", "sympy"}
_verdicts: dict[str, dict[str, harness.Verdict]] = {}


def _run(mode: str) -> dict[str, harness.Verdict]:
    if mode not in _verdicts:
        _verdicts[mode] = {c.id: v for c, v in zip(ALL, harness.run_cases(mode, ALL), strict=True)}
    return _verdicts[mode]


# ----------------------------------------------------------------------------- the corpus itself
def test_the_corpus_is_broad() -> None:
    assert len(CASES) >= 60 and len(set(IDS)) == len(IDS)
    per_library = Counter(c.library for c in CASES)
    assert set(per_library) == LIBRARIES, per_library
    assert Counter(c.expect for c in CASES).keys() == {"read", "wrote", "crashed", "tampered"}
    assert sum(c.route == "registry" for c in CASES) >= 12
    # every route the in-process runtime closes has at least one case
    routes = {c.route for c in CASES}
    closed = {r.klass for r in ROUTES if r.decision in ("refuse", "check", "shield", "refuse / copy")}
    # (index wrapping hangs rather than escapes: test_index_wrapping_ends_at_once_... holds it)
    assert closed - {"native function pointers", "index wrapping"} <= routes, closed - routes
    assert routes - {"registry"} <= {r.klass for r in ROUTES}


def _placeholders_filled(code: str) -> str:
    return re.sub(r"\{[A-Z_]+\}", "4096", code)


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
def test_every_case_is_code_the_policy_accepts(case: Case) -> None:
    tree = ast.parse(_placeholders_filled(case.code))
    assert [v.message for v in inspect_tree(tree)] == []
    authorization = Authorization(list(case.imports) + list(DEFAULT_AUTHORIZED_IMPORTS))
    imported = [a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names] + \
        [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert [m for m in imported if not authorization.allows(m)] == []


def test_the_table_is_documented_and_its_checks_are_wired() -> None:
    docs = (Path(__file__).resolve().parents[1] / "docs" / "library-capabilities.md").read_text()
    for route in ROUTES:
        assert route.decision in DECISIONS
        assert f"| {route.klass} |" in docs, route.klass
    assert set(MEMBER_CHECKS) <= GUARDED_LOADS


# ----------------------------------------------------------------------------- the verdicts
@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
def test_every_case_gets_out_of_plain_cpython(case: Case) -> None:
    verdict = _run("plain")[case.id]
    assert verdict.escaped and verdict.how == case.expect, verdict


@pytest.mark.parametrize("mode", ["local", "subprocess"])
def test_no_case_escapes_or_crashes_the_host(mode: str) -> None:
    escaped = [v for v in _run(mode).values() if v.escaped]  # (the fuzzer's regressions too)
    assert escaped == [], "\n".join(f"{v.id}: {v.how} ({v.detail}; {v.error[:200]})" for v in escaped)


_HANG_CHILD = """
import json, sys
from executors import Limits, LocalExecutor
programs = json.loads(sys.stdin.read())
with LocalExecutor(authorized_imports=["numpy"], limits=Limits(timeout_s=20)) as ex:
    out = {}
    for name, code in programs.items():
        r = ex.execute(code)
        out[name] = r.output if r.error is None else f"{r.error.type}: {r.error.message}"
print(json.dumps(out))
"""


def test_index_wrapping_ends_at_once_with_numpys_positions() -> None:
    """The hangs the crash fuzzer found (tests/native_crash_regressions.py): in a step, take/put/
    choose with the wrap mode in any spelling give numpy's positions for indices up to 2**63
    and end at once. Run in a child: were one to loop in C, no deadline would stop it."""
    import json

    import numpy as np

    programs = {name: f"{HANG_PRELUDE}r = {program}\nr.tolist()" for name, (program, _) in HANGS.items()}
    child = subprocess.run([sys.executable, "-c", _HANG_CHILD], input=json.dumps(programs),
                           capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert child.returncode == 0, child.stderr[-2000:]
    got = json.loads(child.stdout.strip().splitlines()[-1])
    for name, (_, expected) in HANGS.items():
        scope = {"np": np, "EDGES": [2**62, -2**62, 2**63 - 1, -2**63, 7, -1]}
        assert got[name] == eval(expected, scope).tolist(), name  # noqa: S307 - the test's own text


def test_refusals_say_what_to_do_instead() -> None:
    """The refusals the model reads name the route and the way on (a few representative ones)."""
    verdicts = _run("local")
    for case_id, words in {"numpy-as_strided-read": "sliding_window_view",
                           "numpy-resize-refcheck": "np.resize",
                           "scipy-csr-indices": "coo_array",
                           "pandas-baseindexer-sum": "0 <= start <= end",
                           "pyarrow-sparse-coo": "scipy.sparse"}.items():
        assert "PolicyError" in verdicts[case_id].error and words in verdicts[case_id].error


# ----------------------------------------------------------------------------- neighbours
NEIGHBOURS = [
    ("sparse input to sklearn", "numpy.* scipy.* sklearn.*", """
import numpy as np, scipy.sparse as sps
from sklearn.preprocessing import StandardScaler
from sklearn.linear_model import LogisticRegression
A = sps.random(40, 6, density=0.3, format="csr", random_state=0)
y = np.arange(40) % 2
print(StandardScaler(with_mean=False).fit(A).scale_.round(6).tolist())
print(LogisticRegression().fit(A, y).predict(A[:5]).tolist())
"""),
    ("index wrapping in every spelling", "numpy.*", """
import numpy as np
a = np.arange(5) * 10
print(np.take(a, [7, -1], mode="wrap").tolist(), a.take([7], mode=1).tolist(), np.take(a, [9], mode=0).tolist())
print(np.choose([4, 1], [[1, 2], [3, 4], [5, 6]], mode="wrap").tolist(), np.array([3, 0]).choose([[1, 2], [3, 4]], mode="wrap").tolist())
"""),
    ("strided views inside the array", "numpy.*", """
import numpy as np
a = np.arange(10.0)
w = np.lib.stride_tricks.as_strided(a, shape=(8, 3), strides=(8, 8))
s = np.lib.stride_tricks.sliding_window_view(a, 3)
b = np.lib.stride_tricks.as_strided(a[::-1], shape=(5,), strides=(-16,))
r = np.lib.stride_tricks.as_strided(np.zeros(3), shape=(4, 3), strides=(0, 8))
print(w.sum(), s.sum(), b.tolist(), r.shape, np.array([1, "a"], dtype=object)[::-1].tolist())
"""),
    ("resize with its reference check", "numpy.*", """
import numpy as np
a = np.arange(4)
a.resize((2, 3))
print(a.tolist(), np.resize(np.arange(3), 5).tolist())
"""),
    ("sparse arithmetic, graphs and solvers", "scipy.* numpy.*", """
import numpy as np, scipy.sparse as sps, scipy.sparse.csgraph as cg, scipy.sparse.linalg as spla
A = sps.csr_array((np.array([1.0, 2.0, 3.0]), np.array([0, 2, 1]), np.array([0, 2, 3])), shape=(2, 3))
B = sps.random_array((30, 30), density=0.2, rng=1, format="csc") + sps.eye_array(30) * 5
x = spla.spsolve(B, np.ones(30))
print(A.toarray().tolist(), (A @ np.ones(3)).tolist(), A.T.tocsr().nnz, cg.connected_components(A @ A.T)[0],
      round(float(abs(B @ x - 1).max()), 8), sps.coo_array(A).sum(), sps.bsr_array(np.eye(4), blocksize=(2, 2)).trace())
"""),
    ("rolling with an indexer of its own", "pandas.* numpy.*", """
import numpy as np, pandas as pd
from pandas.api.indexers import BaseIndexer, FixedForwardWindowIndexer
class Last2(BaseIndexer):
    def get_window_bounds(self, num_values=0, min_periods=None, center=None, closed=None, step=None):
        end = np.arange(1, num_values + 1, dtype=np.int64)
        return np.maximum(end - 2, 0), end
s = pd.Series([1.0, 2.0, 3.0, 4.0])
print(s.rolling(Last2()).sum().tolist(), s.rolling(FixedForwardWindowIndexer(window_size=2)).max().tolist())
"""),
    ("pyarrow arrays from parts", "pyarrow.* numpy.*", """
import numpy as np, pyarrow as pa
a = pa.ListArray.from_arrays(pa.array([0, 2, 3], pa.int32()), pa.array([1, 2, 3]))
d = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0]), pa.array(["x", "y"]))
b = pa.Array.from_buffers(pa.int64(), 2, [None, pa.py_buffer(np.array([5, 6]))])
t = pa.Tensor.from_numpy(np.arange(4).reshape(2, 2))
print(a.to_pylist(), d.to_pylist(), b.to_pylist(), t.to_numpy().sum(), pa.RecordBatch.from_arrays([b], ["v"]).num_rows)
"""),
    ("model objects keep their own attributes", "numpy.* scipy.* types", """
import numpy as np, scipy.optimize, types
class Lazy:
    def __getattr__(self, name):
        return name.upper()
class Plain:
    pass
p = Plain()
p.__dict__["x"] = 1
vars(p)["y"] = 2
def f():
    pass
f.__dict__["tag"] = "t"
ns = types.SimpleNamespace(**{"a": 1})
r = scipy.optimize.minimize(lambda v: (v[0] - 3) ** 2, [0.0])
print(Lazy().shape, p.x + p.y, f.tag, dict(f.__dict__), ns.a, round(float(r.x[0]), 3), r.success,
      np.array([Plain(), Plain()]).shape)
"""),
    ("sympy printing in a step", "sympy.*", """
import sympy
x = sympy.symbols("x")
sympy.init_printing(use_unicode=False)
print(sympy.pretty(x**2 + 1), sympy.sstr(sympy.expand((x + 1)**2)))
"""),
]


@pytest.mark.parametrize("name,imports,code", NEIGHBOURS, ids=[n[0] for n in NEIGHBOURS])
def test_ordinary_code_through_the_same_entry_points_works(name: str, imports: str, code: str) -> None:
    """The same output as CPython's (run in a child: sympy's printing set-up is process-wide)."""
    cpython = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=120, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert cpython.returncode == 0, cpython.stderr
    with LocalExecutor(authorized_imports=imports.split()) as ex:
        r = ex.execute(code)
    assert r.error is None, r.error
    assert r.logs == cpython.stdout
