"""Same numbers in every executor (issue 44): the worker computes what the host's CPython computes,
bit for bit — the same BLAS kernels (the host's OPENBLAS_CORETYPE), the same thread counts (the
libraries' defaults, or the host's settings), the same floating-point environment.

Before: the worker started with OPENBLAS_NUM_THREADS=1 (and friends) and without the host's
native-runtime settings, so scipy's `shgo` walked elsewhere and printed other digits there.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from executors import Limits, LocalExecutor, SubprocessExecutor

pytest.importorskip("scipy")
LIMITS = Limits(timeout_s=120, max_output_chars=200_000)
IMPORTS = ["numpy", "scipy", "sklearn", "polars", "pyarrow"]

NUMERIC = {  # every value printed with repr: all 17 digits
    "shgo": """
import numpy as np
from scipy.optimize import shgo, rosen
def eggholder(x):
    return (-(x[1] + 47.0) * np.sin(np.sqrt(abs(x[0] / 2.0 + (x[1] + 47.0))))
            - x[0] * np.sin(np.sqrt(abs(x[0] - (x[1] + 47.0)))))
r = shgo(eggholder, [(-512, 512), (-512, 512)], n=64, sampling_method='sobol')
print(repr(r.x.tolist()), repr(float(r.fun)), r.nfev)
def f(x):
    return 24.55 * x[0] + 26.75 * x[1] + 39 * x[2] + 40.50 * x[3]
cons = ({'type': 'ineq', 'fun': lambda x: 2.3 * x[0] + 5.6 * x[1] + 11.1 * x[2] + 1.3 * x[3] - 5},
        {'type': 'ineq', 'fun': lambda x: 12 * x[0] + 11.9 * x[1] + 41.8 * x[2] + 52.1 * x[3] - 21
         - 1.645 * np.sqrt(0.28 * x[0]**2 + 0.19 * x[1]**2 + 20.5 * x[2]**2 + 0.62 * x[3]**2)},
        {'type': 'eq', 'fun': lambda x: x[0] + x[1] + x[2] + x[3] - 1})
r = shgo(f, [(0, 1.0)] * 4, n=150, constraints=cons)
print(repr(r.x.tolist()), repr(float(r.fun)), r.nfev)
""",
    "blas": """
import numpy as np
rng = np.random.default_rng(7)
a, b = rng.standard_normal((300, 300)), rng.standard_normal((300, 40))
print(repr(float((a @ b).sum())), repr(float(np.linalg.det(a[:60, :60]))))
w = np.linalg.eigvalsh(a + a.T)
print(repr(w[:3].tolist()), repr(float(np.linalg.norm(np.linalg.solve(a, b)))))
u, s, vt = np.linalg.svd(a[:100, :50])
print(repr(s[:4].tolist()))
""",
    "optimize": """
import numpy as np
from scipy import optimize, integrate, linalg
r = optimize.minimize(optimize.rosen, [1.3, 0.7, 0.8, 1.9, 1.2], method='BFGS')
print(repr(r.x.tolist()), r.nit)
print(repr(integrate.quad(lambda x: np.exp(-x * x), 0, np.inf)[0]))
print(repr(linalg.expm(np.array([[0.0, 1.0], [-2.0, -3.0]])).ravel().tolist()))
""",
    "sklearn": """
import numpy as np
from sklearn.decomposition import PCA
from sklearn.linear_model import Ridge
rng = np.random.default_rng(3)
X = rng.standard_normal((400, 12))
y = X @ rng.standard_normal(12) + rng.standard_normal(400) * 0.1
print(repr(Ridge(alpha=0.5).fit(X, y).coef_[:4].tolist()))
print(repr(PCA(n_components=3).fit(X).explained_variance_.tolist()))
""",
    "frames": """
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
values = np.random.default_rng(1).standard_normal(200_000)
print(repr(pl.Series(values).sum()), repr(pl.DataFrame({'v': values}).select(pl.col('v').std()).item()))
print(repr(pc.sum(pa.array(values)).as_py()), repr(pc.stddev(pa.array(values)).as_py()))
""",
}


def cpython(code: str) -> str:
    """A fresh CPython with the host's environment: what a user of these libraries gets."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=True)
    return done.stdout


@pytest.fixture(scope="module")
def reference() -> dict[str, str]:
    return {name: cpython(code) for name, code in NUMERIC.items()}


@pytest.fixture(scope="module", params=["local", "worker"])
def executor(request: pytest.FixtureRequest) -> Iterator[object]:
    cls = LocalExecutor if request.param == "local" else SubprocessExecutor
    with cls(authorized_imports=IMPORTS, limits=LIMITS) as ex:
        yield ex


@pytest.mark.parametrize("name", list(NUMERIC))
def test_numbers_are_cpythons_bit_for_bit(executor: object, reference: dict[str, str],
                                          name: str) -> None:
    r = executor.execute(NUMERIC[name])
    assert r.error is None, r.error
    assert r.logs == reference[name]


def test_the_hosts_blas_kernel_choice_reaches_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host that pins OpenBLAS's kernels (OPENBLAS_CORETYPE) gets the same digits from its
    worker: an older kernel (no FMA) rounds differently from the machine's own."""
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Prescott")
    want = cpython(NUMERIC["shgo"])
    with SubprocessExecutor(authorized_imports=IMPORTS, limits=LIMITS) as ex:
        r = ex.execute(NUMERIC["shgo"])
    assert r.error is None, r.error
    assert r.logs == want


def test_only_native_runtime_settings_reach_the_worker() -> None:
    from executors.remote.environment import native_settings

    host = {"OPENBLAS_CORETYPE": "Haswell", "OMP_NUM_THREADS": "3", "NPY_DISABLE_CPU_FEATURES": "AVX512F",
            "AWS_SECRET_ACCESS_KEY": "x", "OPENAI_API_KEY": "y", "PATH": "/bin", "MKL_CBWR": "AUTO",
            "OPENBLAS_VERBOSE": "z" * 1000}
    assert native_settings(host) == {"OPENBLAS_CORETYPE": "Haswell", "OMP_NUM_THREADS": "3",
                                     "NPY_DISABLE_CPU_FEATURES": "AVX512F", "MKL_CBWR": "AUTO"}


def test_the_workers_native_allocators_leave_the_memory_cap_to_the_data() -> None:
    """Issue 44: pyarrow's default allocator reserved address space by the GiB, which the
    worker's memory cap (RLIMIT_DATA) counts: after pandas' first string index the model's
    256 MB budget was gone and OpenBLAS killed the worker (exit 1) mapping its buffer. The
    worker runs pyarrow on the system allocator, which reserves nothing ahead."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("pandas")
    with SubprocessExecutor(authorized_imports=["pyarrow", "pandas", "numpy"],
                            limits=Limits(timeout_s=120)) as ex:
        r = ex.execute("import pyarrow as pa\nimport pandas as pd\nimport numpy as np\n"
                       "i = pd.Index(['y.L1'])\na = np.ones((512, 512))\nb = a @ a\n"
                       "x = bytearray(160 * 2**20)\npa.default_memory_pool().backend_name")
        assert r.error is None, r.error
        assert r.output == "system"
