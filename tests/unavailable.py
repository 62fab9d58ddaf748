"""One rule for tests whose prerequisite is missing: skip with the reason on a developer machine,
fail under CI=true (CI installs everything, so a missing prerequisite there is a broken setup).

Docker tests skip for one reason (no engine here, or Docker runs not enabled), however each test
words it: a plain run reports them as one line that says how to run them (`docker_skip_reason`,
applied by the conftest hook)."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

IN_CI = os.environ.get("CI") == "true"
DOCKER_ENABLE_COMMAND = "CODEAGENT_DOCKER=1 scripts/test"


def unavailable(reason: str) -> NoReturn:
    if IN_CI:
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


def is_docker_skip(reason: str) -> bool:
    """Is this skip reason one of the ways tests say that Docker cannot run here?"""
    return "docker" in reason.lower()


def docker_skip_reason(engine_problem: str | None) -> str:
    """The one line every Docker skip of a plain run is reported as: why, and the command."""
    if engine_problem is None:
        why = "Docker runs are not enabled"
    elif "SDK" in engine_problem:
        why = "the docker SDK is not installed"
    else:
        why = f"no Docker engine answers at {os.environ.get('DOCKER_HOST') or 'the default socket'}"
    return f"Docker tests: {why}; `{DOCKER_ENABLE_COMMAND}` starts the project's own engine and runs them"
