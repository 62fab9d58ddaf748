"""scipy, scikit-learn, statsmodels, seaborn, polars, pyarrow, sympy and networkx programs print
exactly what CPython prints, in every executor (issue 22).

The reference runs each program of tests/pydata_programs.py in a fresh CPython process
(tests/forked_reference.py). Each executor kind runs a library's programs one after the other
(reset between them) in one executor that authorizes that library's set only (pydata_programs.IMPORTS),
as a user who adds one library would: LocalExecutor, SubprocessExecutor (restricted policy, kernel
layer on) and DockerExecutor(packages=...) with the restricted policy inside the container too (so
the trusted imports are what runs there as well). Tests are ordered so that each (kind, library)
executor is made once and closed before the next one starts: at most one worker or container at a
time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from data_image import pydata_docker
from forked_reference import cpython_prints
from pydata_programs import IMPORTS, LIBRARIES

from executors import Limits

LIMITS = Limits(timeout_s=60)  # a cold import of statsmodels or seaborn on a loaded 2-core machine


def _local(imports: list[str]) -> Any:
    from executors import LocalExecutor

    return LocalExecutor(authorized_imports=imports, limits=LIMITS)


def _subprocess(imports: list[str]) -> Any:
    from executors import SubprocessExecutor

    return SubprocessExecutor(authorized_imports=imports, limits=LIMITS)


def _docker(imports: list[str]) -> Any:
    return pydata_docker(authorized_imports=imports, limits=LIMITS, policy="restricted")


MAKERS: dict[str, Callable[[list[str]], Any]] = {
    "local": _local, "subprocess-restricted": _subprocess, "docker-restricted": _docker}
CASES = [pytest.param(kind, library, name, id=f"{kind}-{name}",
                      marks=[pytest.mark.docker] if kind.startswith("docker") else [])
         for kind in MAKERS for library, programs in LIBRARIES.items() for name in programs]


@pytest.fixture(scope="module")
def reference() -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for programs in LIBRARIES.values():  # one reference process per library
        results.update(cpython_prints(programs))
    return results


class _One:
    """The executor of the current (kind, library); the previous one is closed first."""

    def __init__(self) -> None:
        self.key: tuple[str, str] | None = None
        self.executor: Any = None

    def get(self, kind: str, library: str) -> Any:
        if self.key != (kind, library):
            self.close()
            self.executor = MAKERS[kind](IMPORTS[library])
            self.key = (kind, library)
        return self.executor

    def close(self) -> None:
        if self.executor is not None:
            executor, self.executor, self.key = self.executor, None, None
            executor.close()


@pytest.fixture(scope="module")
def executors() -> Iterator[_One]:
    one = _One()
    try:
        yield one
    finally:
        one.close()


def test_there_are_enough_programs_of_each_library():
    assert set(LIBRARIES) == set(IMPORTS)
    for library, programs in LIBRARIES.items():
        assert len(programs) >= 12, library


@pytest.mark.parametrize("kind, library, name", CASES)
def test_program_prints_what_cpython_prints(executors: _One, reference: dict, kind: str, library: str, name: str):
    ex = executors.get(kind, library)
    ex.reset()
    result = ex.execute(LIBRARIES[library][name])
    assert result.error is None, f"{name}: {result.error}\n{result.logs[-2000:]}"
    assert reference[name]["out"] and result.logs == reference[name]["out"], name
    assert result.attachments == (), "every program closes its figures"


# -- figures and parallelism (items 4 and 5 of issue 22), one executor of each kind -------------
MIXED = ["seaborn.*", "statsmodels.*", "matplotlib.*", "numpy.*", "pandas.*", "sklearn.*", "joblib.*"]


@pytest.fixture(scope="module", params=list(MAKERS))
def mixed(request: pytest.FixtureRequest, executors: _One) -> Iterator[Any]:
    if request.param.startswith("docker"):
        request.applymarker(pytest.mark.docker)
    executors.close()  # (the corpus's last executor: one at a time)
    ex = MAKERS[request.param](MIXED)
    try:
        yield ex
    finally:
        ex.close()


def _children() -> set[str]:
    """This process's child processes (every thread's), from /proc."""
    import glob

    found: set[str] = set()
    for path in glob.glob("/proc/self/task/*/children"):
        with open(path) as f:
            found.update(f.read().split())
    return found


def test_seaborn_and_statsmodels_figures_come_back_as_attachments(mixed: Any):
    result = mixed.execute(
        "import numpy as np\nimport pandas as pd\nimport seaborn as sns\nimport statsmodels.api as sm\n"
        "rng = np.random.default_rng(0)\ndf = pd.DataFrame({'x': np.arange(20.0), 'g': ['a', 'b'] * 10})\n"
        "df['y'] = 2 * df['x'] + rng.normal(0, 1, 20)\n"
        "sns.scatterplot(data=df, x='x', y='y', hue='g')\n"
        "fit = sm.OLS(df['y'], sm.add_constant(df['x'])).fit()\n"
        "sm.qqplot(fit.resid, line='s')\n"
        "print(round(float(fit.params['x']), 1))")
    assert result.error is None, result.error
    assert result.logs == "2.0\n"
    assert len(result.attachments) == 2, result.attachments
    assert all(a.media_type == "image/png" and a.data.startswith(b"\x89PNG") for a in result.attachments)


def test_n_jobs_and_joblib_run_sequentially_and_a_process_pool_is_refused(mixed: Any):
    before = _children()
    result = mixed.execute(
        "import joblib\nfrom sklearn.ensemble import RandomForestClassifier\n"
        "from sklearn.model_selection import cross_val_score\n"
        "X = [[i % 7, i % 3] for i in range(60)]\ny = [i % 2 for i in range(60)]\n"
        "forest = RandomForestClassifier(n_estimators=8, random_state=0, n_jobs=-1).fit(X, y)\n"
        "scores = cross_val_score(forest, X, y, cv=3, n_jobs=-1)\n"
        "print(len(forest.estimators_), len(scores))\n"
        "print(joblib.Parallel(n_jobs=-1, backend='loky')(joblib.delayed(abs)(-i) for i in range(3)))\n"
        "print(joblib.cpu_count())")
    assert result.error is None, result.error
    assert result.logs == "8 3\n[0, 1, 2]\n1\n", "sequential, a step counts one CPU"
    refused = mixed.execute("import joblib.externals.loky as loky\n"
                            "loky.get_reusable_executor(max_workers=2).submit(abs, -1).result()")
    assert refused.error is not None and refused.error.type == "ImportError", refused
    assert "start worker processes" in refused.error.message
    assert _children() == before, "no process from a step (LocalExecutor: the host's children)"
