"""The executors the contract tests run over: one entry per (place, policy).

To add one (e.g. Docker), append to `EXECUTORS` a name and a `make(**kwargs)` that returns the
executor or calls `unavailable(...)` (skip; fail under CI) when it cannot run here. Test modules use it as

    import executors_under_test
    make_executor = executors_under_test.make_executor  # the fixture
    def test_x(make_executor): ex = make_executor(tools=..., limits=...)
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from unavailable import unavailable


def module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


def restricted_available() -> bool:
    return module_exists("executors.restricted")


def _local(**kwargs: Any) -> Any:
    from executors.local import LocalExecutor

    return LocalExecutor(**kwargs)


def _subprocess(policy: str) -> Callable[..., Any]:
    def make(**kwargs: Any) -> Any:
        from executors.process import SubprocessExecutor

        return SubprocessExecutor(policy=policy, **kwargs)

    return make


def _docker(policy: str) -> Callable[..., Any]:
    def make(**kwargs: Any) -> Any:
        if os.environ.get("CI") != "true" and os.environ.get("CODEAGENT_DOCKER") != "1":
            unavailable("Docker contract runs need CI=true or CODEAGENT_DOCKER=1")
        from executors.docker import DockerExecutor

        return DockerExecutor(policy=policy, **kwargs)

    return make


EXECUTORS: dict[str, Callable[..., Any]] = {
    "local": _local,
    "subprocess-restricted": _subprocess("restricted"),
    "subprocess-open": _subprocess("open"),
    "docker-open": _docker("open"),
}


@pytest.fixture(params=list(EXECUTORS))
def make_executor(request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """make(**kwargs) -> an executor of the parametrized kind; all are closed at teardown."""
    if request.param.startswith("docker"):
        request.applymarker(pytest.mark.docker)
    factory = EXECUTORS[request.param]
    made: list[Any] = []

    def make(**kwargs: Any) -> Any:
        ex = factory(**kwargs)
        made.append(ex)
        return ex

    make.kind = request.param  # type: ignore[attr-defined]
    yield make
    for ex in made:
        try:
            ex.close()
        except Exception:
            pass
