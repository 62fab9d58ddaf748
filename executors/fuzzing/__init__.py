"""Fuzzing for any executor: hypothesis strategies, the CPython oracle, properties, campaigns.

Needs `hypothesis` (and `hypothesmith` for grammar-level programs), from the project's `dev`
extra. Names are imported on first use, so the checks that need no hypothesis at import time
(the oracle, `Session`) load without it.

The rooms, lowest first (each imports only from those before it; tests/test_layout.py):
    differential/ what ordinary code looks like: programs() (strategy.py: data programs whose
                  statements come from expressions.py, idioms.py and data_idioms.py, or
                  hypothesmith grammar programs); the CPython reference (oracle.py) and a
                  result compared with it (compare.py: equal/refused/divergent/mismatch)
    attacks/      what hostile code looks like: escape_attempts() (escapes.py: primitives.py
                  written in a style and a carrier of rendering.py, aimed at an effect of
                  preamble.py), the "library" family (library_escapes.py over the tables of
                  library_routes.py), deferred.py (model-made objects for the host),
                  resource_bombs() (bombs.py), EscapeAttempt (attempt.py), the canary
                  files outside every grant (canaries.py), and lies() (frames.py: what an
                  owned worker writes on its channel)
    judging/      one example on a live executor → an Outcome (evaluate.py, outcome.py);
                  host-process and package state that must not change (host_state.py,
                  registries.py), what a host does with a step's values (host_touches.py),
                  probe_tools() (probes.py: tools of every usual shape, each hiding a way out),
                  judge_lie() (lying_worker.py: a lie against the real host side)
    campaigns/    where examples run: runners.py (inline or a forked child), session.py,
                  fuzz() (campaign.py), check_*() for your own suite (checks.py); what the
                  command line uses (`codeagent fuzz` is a thin dispatcher): command.py,
                  shards.py + distributed.py (a campaign as shards for any worker pool),
                  factories.py, console.py, failures.py, determinism.py

`executors.strategies` and `executors.testing` re-export the public names, as before.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    # strategies
    "programs": ".differential.strategy", "escape_attempts": ".attacks.escapes", "EscapeAttempt": ".attacks.attempt",
    "resource_bombs": ".attacks.bombs", "Bomb": ".attacks.bombs", "BOMB_KINDS": ".attacks.bombs",
    "REACH_TOKEN": ".attacks.preamble",
    # checks
    "Reference": ".differential.oracle", "run_cpython": ".differential.oracle", "run_in_namespace": ".differential.oracle",
    "Outcome": ".judging.outcome", "FuzzReport": ".judging.outcome", "FAILING": ".judging.outcome",
    "SAFETY_FAILURES": ".judging.outcome", "REFUSAL_TYPES": ".differential.compare",
    "host_fingerprint": ".judging.host_state", "probe_tools": ".judging.probes",
    "evaluate_program": ".judging.evaluate", "evaluate_escape": ".judging.evaluate", "evaluate_bomb": ".judging.evaluate",
    "Session": ".campaigns.session", "CANARY_ENV": ".campaigns.session", "fuzz": ".campaigns.campaign",
    "check_no_escape": ".campaigns.checks", "check_bombs_contained": ".campaigns.checks",
    "check_matches_cpython": ".campaigns.checks", "check_no_internal_errors": ".campaigns.checks",
    "check_executor": ".campaigns.checks",
    # the command line
    "CommandOptions": ".campaigns.command", "run_command": ".campaigns.command", "replay_failures": ".campaigns.command",
    "check_options": ".campaigns.command",
    # distributed campaigns
    "ShardSpec": ".campaigns.shards", "plan_shards": ".campaigns.shards", "run_shard": ".campaigns.shards", "merge_reports": ".campaigns.shards",
    "report_to_dict": ".campaigns.shards", "report_from_dict": ".campaigns.shards",
    "shard_tasks": ".campaigns.distributed", "run_shard_task": ".campaigns.distributed", "run_tasks_inline": ".campaigns.distributed",
    "executor_factory": ".campaigns.factories", "load_tools": ".campaigns.factories", "EXECUTOR_KINDS": ".campaigns.factories",
    "Progress": ".campaigns.console", "report_table": ".campaigns.console", "summary_dict": ".campaigns.console",
    "save_failure": ".campaigns.failures", "read_failure": ".campaigns.failures",
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
