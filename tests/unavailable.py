"""One rule for tests whose prerequisite is missing: skip with the reason on a developer machine,
fail under CI=true (CI installs everything, so a missing prerequisite there is a broken setup)."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

IN_CI = os.environ.get("CI") == "true"


def unavailable(reason: str) -> NoReturn:
    if IN_CI:
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)
