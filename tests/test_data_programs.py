"""numpy/pandas/matplotlib programs print exactly what CPython prints, in every executor.

The reference runs each program of tests/data_programs.py in a fresh process
(tests/forked_reference.py); each executor runs them one after the other (a fresh namespace
each): LocalExecutor, SubprocessExecutor (restricted policy) and DockerExecutor on the PyData image
(open policy; tests/data_image.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from data_image import DATA_IMPORTS, pydata_docker
from data_programs import PROGRAMS
from forked_reference import cpython_prints

from executors import Limits


@pytest.fixture(scope="module")
def reference() -> dict[str, dict[str, Any]]:
    return cpython_prints(PROGRAMS)


def test_there_are_enough_programs_of_each_library():
    names = list(PROGRAMS)
    assert len(names) >= 40
    for prefix in ("np_", "pd_", "mpl_"):
        assert sum(n.startswith(prefix) for n in names) >= 8, prefix


def _local() -> Any:
    from executors import LocalExecutor

    return LocalExecutor(authorized_imports=DATA_IMPORTS, limits=Limits(timeout_s=30))


def _subprocess() -> Any:
    from executors import SubprocessExecutor

    return SubprocessExecutor(authorized_imports=DATA_IMPORTS, limits=Limits(timeout_s=30))


def _docker() -> Any:
    # The PyData image: its pandas stores strings in pyarrow as the host's does (pyarrow is
    # installed here), so frames print the same dtypes (StringDtype without storage='python').
    return pydata_docker(limits=Limits(timeout_s=30), authorized_imports=DATA_IMPORTS)


MAKERS = {"local": _local, "subprocess-restricted": _subprocess, "docker-open": _docker}


@pytest.fixture(scope="module", params=list(MAKERS))
def data_executor(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param.startswith("docker"):
        request.applymarker(pytest.mark.docker)
    ex = MAKERS[request.param]()
    try:
        yield ex
    finally:
        ex.close()


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_prints_what_cpython_prints(data_executor: Any, reference: dict, name: str):
    data_executor.reset()
    result = data_executor.execute(PROGRAMS[name])
    assert result.error is None, f"{name}: {result.error}\n{result.logs[-2000:]}"
    assert reference[name]["out"] and result.logs == reference[name]["out"], name
    assert result.attachments == (), "every program closes its figures"


# -- the fuzzer learns the same idioms ---------------------------------------------------------
def test_generated_data_programs_use_numpy_and_pandas_only_when_authorized():
    from hypothesis import HealthCheck, given, settings

    from executors.fuzzing import programs
    from executors.fuzzing.differential.strategy import data_libraries

    assert data_libraries(["numpy.*", "pandas"]) == ("numpy", "pandas")
    assert data_libraries(["math"]) == () and data_libraries(None) == ()
    seen: list[str] = []

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(programs(authorized_imports=["numpy.*", "pandas.*"]), programs())
    def collect(with_data: str, without: str) -> None:
        seen.append(with_data)
        assert "import numpy" not in without and "import pandas" not in without

    collect()
    assert any("import numpy as np" in code for code in seen)
    assert any("import pandas as pd" in code for code in seen)


def test_a_short_data_campaign_finds_every_program_equal_to_cpython():
    from executors import LocalExecutor
    from executors.fuzzing import fuzz

    report = fuzz(lambda: LocalExecutor(authorized_imports=["numpy.*", "pandas.*"], limits=Limits(timeout_s=10)),
                  examples=40, properties=["cpython"], seed=3)
    assert report.failures == [] and report.total("program", "equal") == 40
