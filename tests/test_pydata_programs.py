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
