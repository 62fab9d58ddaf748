"""Shared fixtures for the executor test suites.

- `local_executor`: a fresh `LocalExecutor` with the host tools below.
- `any_executor` / `any_executor_factory`: the same tests over every place code can run
  ("local", "subprocess" when executors.process exists, "docker" when executors.docker exists
  and an engine answers; with CI=true a missing engine FAILS the docker params instead of skipping).
- `canary` / `marker`: a secret planted in os.environ and a file path that attack code aims at;
  `assert_refused(result, marker)` checks that an attempt failed and leaked nothing.

The host tools are deliberately juicy: a module-level secret sits in their `__globals__`, a closure
cell holds it, a partial's `.func` and a wrapper's `__wrapped__` lead to raw host functions, and a
Tool-like object carries it as an attribute. An executor that lets model code see any of these
leaks the canary, which the security tests detect.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import secrets
import signal
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from unavailable import IN_CI, docker_skip_reason, is_docker_skip, unavailable

from executors import ExecutionResult, Limits
from executors.fuzzing.campaigns.determinism import seed_only_generation

# pytest-xdist's workers ignore SIGINT, and every process a test starts would inherit that: the
# tests of Ctrl-C (the CLI, the in-process runtime, batch) need Python's default handler back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The suite draws the same examples every run: a test that passes or fails by what it happened
# to draw is broken. Fresh draws are the long fuzz command's job (scripts/fuzz-long), or run the
# suite with HYPOTHESIS_PROFILE=explore. Campaigns with a seed keep following their seed.
settings.register_profile("suite", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))
# Hypothesis also draws constants from the literals of every local module loaded in the process,
# which differ with what earlier tests imported: pinned empty for the session (as campaigns do).
_SEED_ONLY = seed_only_generation()


def pytest_configure(config: pytest.Config) -> None:
    _SEED_ONLY.__enter__()


def pytest_unconfigure(config: pytest.Config) -> None:
    _SEED_ONLY.__exit__(None, None, None)


CANARY_ENV = "CODEAGENT_CANARY"
# Planted once per test session; subprocess/container executors must not hand it to model code.
CANARY = os.environ.setdefault(CANARY_ENV, "canary-" + secrets.token_hex(12))

# A host global that ends up in every tool's __globals__: leaking those leaks the canary.
HOST_SECRET = CANARY


# ----------------------------------------------------------------------------- host tools
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _make_lookup(secret: str) -> Callable[[str], str]:
    def lookup(key: str) -> str:
        """Look a key up (the closure cell holds a secret the model must never see)."""
        return "value-of-" + key if secret else key

    return lookup


def _scale(factor: int, x: int) -> int:
    # Writes nothing; reachable only through `scale.func`, with os in its __globals__.
    return factor * x


def _logged(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


@_logged
def shout(text: str) -> str:
    """Upper-case a text (decorated: `__wrapped__` leads to the raw function)."""
    return text.upper()


class SearchTool:
    """A Tool-like object: callable, with a name and a secret attribute."""

    name = "search"
    description = "Search the web."

    def __init__(self, api_key: str) -> None:
        self.api_key = api_key
        self.calls: list[str] = []

    def __call__(self, query: str) -> list[str]:
        self.calls.append(query)
        return [f"result for {query}"]


def make_host_tools() -> dict[str, Callable[..., Any]]:
    """Fresh tools for one executor (name -> callable)."""
    return {
        "add": add,
        "lookup": _make_lookup(CANARY),
        "scale": functools.partial(_scale, 2),
        "shout": shout,
        "search": SearchTool(api_key=CANARY),
    }


@typing.overload
def host_overloaded(x: int) -> int: ...
@typing.overload
def host_overloaded(x: str) -> str: ...
def host_overloaded(x):
    """Registered in typing's process-wide overload registry (tampering tests watch it)."""
    return x


# ----------------------------------------------------------------------------- assertions
def leaked(result: ExecutionResult, secret: str = CANARY) -> bool:
    """Does anything model code sent back contain the secret?"""
    parts = [result.logs or "", result.output_repr or ""]
    try:
        parts.append(str(result.output))
    except Exception:  # model-defined __str__ may refuse to run on the host: that's fine
        pass
    if result.error is not None:
        parts += [result.error.message or "", result.error.line or "", result.error.type or ""]
    return any(secret in p for p in parts)


def assert_refused(result: ExecutionResult, marker: Path | None = None, secret: str = CANARY) -> None:
    """The attempt came back as an error, wrote no marker file and leaked no secret."""
    assert result.error is not None, (
        f"attempt was NOT refused: output={result.output_repr!r} logs={result.logs[:500]!r}"
    )
    assert result.error.type, "an ExecutionError must name its type"
    assert result.error.message, "an ExecutionError must carry a message"
    if marker is not None:
        assert not marker.exists(), f"ESCAPE: model code wrote {marker} (error was {result.error})"
    assert not leaked(result, secret), f"ESCAPE: the canary secret leaked: {result}"


def assert_ok(result: ExecutionResult) -> None:
    assert result.error is None, f"unexpected error: {result.error} (logs={result.logs[:500]!r})"


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture
def canary() -> str:
    return CANARY


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """A path attack code tries to create; it must never exist afterwards."""
    return tmp_path / "ESCAPED-marker.txt"


@pytest.fixture
def host_tools() -> dict[str, Callable[..., Any]]:
    return make_host_tools()


@pytest.fixture
def local_executor(host_tools: dict[str, Callable[..., Any]]) -> Iterator[Any]:
    from executors.local import LocalExecutor

    ex = LocalExecutor(tools=host_tools, limits=Limits(timeout_s=5))
    try:
        yield ex
    finally:
        ex.close()


@pytest.fixture
def local_executor_factory(host_tools: dict[str, Callable[..., Any]]) -> Iterator[Callable[..., Any]]:
    """Build LocalExecutors with custom options; all are closed at teardown."""
    from executors.local import LocalExecutor

    made: list[Any] = []

    def make(**kwargs: Any) -> Any:
        kwargs.setdefault("tools", host_tools)
        ex = LocalExecutor(**kwargs)
        made.append(ex)
        return ex

    yield make
    for ex in made:
        ex.close()


# ----------------------------------------------------------------------------- any executor
EXECUTOR_KINDS = ("local", "subprocess", "docker")


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


@functools.lru_cache(maxsize=1)
def docker_engine_problem() -> str | None:
    """None when a Docker engine answers a ping, else why not."""
    try:
        import docker  # noqa: F401
    except ImportError as e:
        return f"the docker SDK is not installed ({e})"
    from executors.docker import engine_problem

    return engine_problem()


def executor_class(kind: str) -> type:
    """The class for `kind`, or skip (fail for docker under CI) when it cannot run here."""
    if kind == "local":
        from executors.local import LocalExecutor

        return LocalExecutor
    if kind == "subprocess":
        from executors.process import SubprocessExecutor

        return SubprocessExecutor
    if kind == "docker":
        problem = docker_engine_problem()
        if problem is not None:
            unavailable(f"the docker tests need a Docker engine: {problem}")
        from executors.docker import DockerExecutor

        return DockerExecutor
    raise ValueError(f"unknown executor kind {kind!r}")


@pytest.fixture(params=EXECUTOR_KINDS)
def executor_kind(request: pytest.FixtureRequest) -> str:
    kind = request.param
    if kind == "docker":
        request.applymarker(pytest.mark.docker)
    return kind


@pytest.fixture
def any_executor_factory(
    executor_kind: str, host_tools: dict[str, Callable[..., Any]]
) -> Iterator[Callable[..., Any]]:
    """make(**kwargs) -> an executor of the parametrized kind (tools default to host_tools)."""
    cls = executor_class(executor_kind)
    made: list[Any] = []

    def make(**kwargs: Any) -> Any:
        kwargs.setdefault("tools", host_tools)
        ex = cls(**kwargs)
        made.append(ex)
        return ex

    yield make
    for ex in made:
        try:
            ex.close()
        except Exception:  # a broken executor must not hide the test's own failure
            pass


@pytest.fixture
def any_executor(any_executor_factory: Callable[..., Any]) -> Any:
    """An executor of each available kind, with the host tools and Limits(timeout_s=10)."""
    return any_executor_factory(limits=Limits(timeout_s=10))


# ----------------------------------------------------------------------------- docker skips
UNAVAILABLE_PY = str(Path(__file__).with_name("unavailable.py"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A plain run reports every Docker skip as one line (the reason and the command that runs
    them), not one per test location with the whole exception: see unavailable.docker_skip_reason."""
    outcome = yield
    report = outcome.get_result()
    if IN_CI or not report.skipped or not isinstance(report.longrepr, tuple) or len(report.longrepr) != 3:
        return
    if is_docker_skip(str(report.longrepr[2])):
        report.longrepr = (UNAVAILABLE_PY, None, "Skipped: " + docker_skip_reason(docker_engine_problem()))
