"""Fuzzing for any executor: hypothesis strategies, the CPython oracle, properties, campaigns.

Needs `hypothesis` (and `hypothesmith` for grammar-level programs), from the project's `dev`
extra. Names are imported on first use, so the checks that need no hypothesis at import time
(the oracle, `Session`) load without it.

What generates examples (hypothesis strategies):
    program_strategy.py  programs(): data programs (statements in program_expressions.py and
                         program_idioms.py) or hypothesmith grammar programs
    escapes.py           escape_attempts(): primitives (escape_primitives.py) written in a style
                         and a carrier (escape_rendering.py), aimed at an effect (escape_preamble.py)
    library_escapes.py   the "library" family: library carriers x payload routes (the tables in
                         library_routes.py), drawn for the authorized, importable modules only
    attempt.py           EscapeAttempt, what both of them build
    bombs.py             resource_bombs(): time, memory, output, recursion and process bombs
What judges them:
    oracle.py            the CPython reference (also the differential tests' oracle)
    compare.py           a program's result against the reference: equal/refused/divergent/mismatch
    host_state.py        host-process state an in-process executor must not change
    canaries.py          the secret file and the canary tree beside the marker (reads, writes)
    evaluate.py          one example on a live executor → an Outcome
    outcome.py           Outcome and FuzzReport
What runs them:
    runners.py           the executor inline or in a forked child; session.py: Session
    campaign.py          fuzz(): a campaign; checks.py: check_*() for your own test suite
    probes.py            probe_tools(): tools of every usual shape, each hiding a way out
What the command line uses (`codeagent fuzz` is a thin dispatcher over these):
    command.py           CommandOptions, run_command(), replay_failures()
    shards.py            a campaign as shards (one hypothesis run each) and their reports merged;
                         distributed.py: shard tasks as JSON for any worker pool (--backend)
    factories.py         executors and tools named on a command line
    console.py           progress line, summary table, figures; failures.py: saved failing examples

`executors.strategies` and `executors.testing` re-export the public names, as before.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    # strategies
    "programs": ".program_strategy", "escape_attempts": ".escapes", "EscapeAttempt": ".attempt",
    "resource_bombs": ".bombs", "Bomb": ".bombs", "BOMB_KINDS": ".bombs",
    "REACH_TOKEN": ".escape_preamble",
    # checks
    "Reference": ".oracle", "run_cpython": ".oracle", "run_in_namespace": ".oracle",
    "Outcome": ".outcome", "FuzzReport": ".outcome", "FAILING": ".outcome",
    "SAFETY_FAILURES": ".outcome", "REFUSAL_TYPES": ".compare",
    "host_fingerprint": ".host_state", "probe_tools": ".probes",
    "evaluate_program": ".evaluate", "evaluate_escape": ".evaluate", "evaluate_bomb": ".evaluate",
    "Session": ".session", "CANARY_ENV": ".session", "fuzz": ".campaign",
    "check_no_escape": ".checks", "check_bombs_contained": ".checks",
    "check_matches_cpython": ".checks", "check_no_internal_errors": ".checks",
    "check_executor": ".checks",
    # the command line
    "CommandOptions": ".command", "run_command": ".command", "replay_failures": ".command",
    "check_options": ".command",
    # distributed campaigns
    "ShardSpec": ".shards", "plan_shards": ".shards", "run_shard": ".shards", "merge_reports": ".shards",
    "report_to_dict": ".shards", "report_from_dict": ".shards",
    "shard_tasks": ".distributed", "run_shard_task": ".distributed", "run_tasks_inline": ".distributed",
    "executor_factory": ".factories", "load_tools": ".factories", "EXECUTOR_KINDS": ".factories",
    "Progress": ".console", "report_table": ".console", "summary_dict": ".console",
    "save_failure": ".failures", "read_failure": ".failures",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'executors.fuzzing' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
