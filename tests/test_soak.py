"""The serving soak, short: `benchmarks/soak.py` with 20 concurrent sessions for 30 s (the long
one, 200 sessions for 10 minutes, is `benchmarks/soak.py` itself, not the default suite).

What a server's user relies on: every step answered with its own session's answer (no lost, no
crossed result) through errors, timeouts and sessions killed mid-step; nothing left running and
no file left once the sessions ended and the server (or the pool) closed. Memory is the long
run's figure (a 30 s run is mostly the server's warm-up: its RSS says nothing yet).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from unavailable import IN_CI

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import soak  # noqa: E402

pytestmark = pytest.mark.timeout(300)


def _assert_served_well(report: dict) -> None:
    assert report["lost"] == 0 and report["crossed"] == 0, (report["problems"], report["examples"])
    assert report["answered"] > 50, report["steps"]
    assert {"data", "state", "error", "timeout", "kill"} <= set(report["steps"]), report["steps"]
    assert report["left_running"] == [] and report["left_files"] == []


def test_mcp_serve_with_a_pool_serves_20_sessions_for_30_s_and_leaves_nothing():
    if importlib.util.find_spec("mcp") is None and not IN_CI:
        pytest.skip("the mcp package is not installed: scripts/bootstrap.sh installs it")
    report = soak.soak_mcp(sessions=20, seconds=30, pool_size=4, seed=48, idle_s=4)
    _assert_served_well(report)
    # every session ended (or, its client gone, was reaped): what runs is the zygote and the
    # pool's ready workers (three processes each: the PID namespace's waiter, init, worker)
    assert report["processes_when_idle"] <= 1 + 3 * 4 + 3, report["processes_when_idle"]


def test_a_shared_pool_serves_20_threads_for_20_s_with_tool_calls_and_kills():
    report = soak.soak_pool(sessions=20, seconds=20, pool_size=4, seed=48)
    _assert_served_well(report)
    assert report["steps"].get("tool", 0) > 0
