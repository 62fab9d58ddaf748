"""`codeagent fuzz --backend ...`: a command-line campaign as shards, run elsewhere, merged here.

The driver plans the shards (shards.py), hands them to a `Distribute` function — anything that
runs `run_shard_task(task)` for each task somewhere and returns what each gave back (codeagent's
batch runner on a process pool or Ray; `run_tasks_inline` here) — and merges the shard reports in
shard order. A task is plain JSON: the command's options (executor, timeout, tools as MODULE:ATTR,
...) and the shard, so a worker rebuilds everything from it and nothing is pickled.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..judging.outcome import FuzzReport, Outcome
from .shards import (
    ShardSpec,
    merge_reports,
    plan_shards,
    report_from_dict,
    report_to_dict,
    run_shard,
)

__all__ = ["Distribute", "shard_tasks", "run_shard_task", "run_tasks_inline", "run_distributed",
           "random_seed"]

# (tasks) -> {task id: the shard report as JSON data, or why the shard did not finish}
Distribute = Callable[[Sequence[dict[str, Any]]], Mapping[str, Any]]

# Rough cost of one example relative to a generated program (measured on the local executor: a
# program ~20 ms, an escape attempt ~0.1 s, a bomb ~0.5 s, mostly waiting for a limit). Shards are
# handed out costliest first, so a long shard does not start last and keep the campaign waiting.
_COST = {"cpython": 1, "escapes": 5, "bombs": 25}

# Options a worker needs to rebuild the campaign's executor and tools; the rest is the driver's.
_WORKER_OPTIONS = ("executor", "policy", "authorized_imports", "tools", "mode", "timeout", "margin",
                   "no_isolate", "escape_families")


def random_seed() -> int:
    """A campaign seed for a run that was given none (printed, so the run can be repeated)."""
    return secrets.randbelow(2**31)


def shard_tasks(shards: Sequence[ShardSpec], options: Any) -> list[dict[str, Any]]:
    """One task per shard: {"id", "options", "shard"}. The id names the shard and hashes the task,
    so a results directory reused with other options never passes off old results as new."""
    worker_options = {k: getattr(options, k, None) for k in _WORKER_OPTIONS}
    tasks = []
    for spec in shards:
        body = {"options": worker_options, "shard": spec.to_dict()}
        digest = hashlib.sha1(json.dumps(body, sort_keys=True).encode()).hexdigest()[:10]
        tasks.append({"id": f"shard-{spec.index:05d}-{spec.prop}-{spec.batch}-{digest}", **body})
    return tasks


def run_shard_task(task: Mapping[str, Any]) -> dict[str, Any]:
    """Run one task of `shard_tasks` in this process; the shard report as JSON data. Raises
    ValueError for a malformed task (and whatever building the executor or tools raises)."""
    from .factories import executor_factory, load_tools

    try:
        spec = ShardSpec.from_dict(task["shard"])
        opts = dict(task["options"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a fuzz shard task: {exc!r}") from None
    factory = executor_factory(opts["executor"], timeout_s=float(opts["timeout"]),
                               authorized_imports=opts.get("authorized_imports"), policy=opts.get("policy"))
    report = run_shard(spec, factory, tools=load_tools(opts.get("tools")), mode=opts.get("mode", "data"),
                       margin_s=float(opts.get("margin", 1.0)),
                       isolate=False if opts.get("no_isolate") else None,
                       escape_families=opts.get("escape_families"))
    return report_to_dict(report)


def run_tasks_inline(tasks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A `Distribute` that runs every task here, one after another (the reference for the others)."""
    return {t["id"]: run_shard_task(t) for t in tasks}


def _lost_shard(spec: ShardSpec, why: str) -> FuzzReport:
    """A shard that did not finish counts as one internal error: never as examples that passed."""
    report = FuzzReport()
    detail = (f"shard {spec.index} ({spec.prop} run {spec.batch}, {spec.examples} examples, hypothesis "
              f"seed {spec.hypothesis_seed}) did not finish: {why}")
    report.add(Outcome(spec.category, f"shard/{spec.prop}", "internal-error", "", detail))
    return report


def _shard_report(spec: ShardSpec, result: Any) -> FuzzReport:
    if isinstance(result, Mapping):
        try:
            return report_from_dict(result)
        except (KeyError, TypeError, ValueError) as exc:
            return _lost_shard(spec, f"its report is malformed ({exc!r:.200})")
    return _lost_shard(spec, str(result) if result is not None else "no result came back")


def run_distributed(options: Any, distribute: Distribute) -> tuple[FuzzReport, dict[int, dict[str, Any]], int]:
    """Plan the campaign `options` describe, run its shards through `distribute`, merge them.
    Returns (report, origins: id(failing outcome) -> where it came from, the campaign seed)."""
    seed = options.seed if options.seed is not None else random_seed()
    shards = plan_shards(options.examples, options.properties, seed, options.shard_size)
    tasks = shard_tasks(shards, dataclasses.replace(options, seed=seed))
    results = distribute(sorted(tasks, key=lambda t: -_COST[t["shard"]["prop"]] * t["shard"]["examples"]))
    reports, origins = [], {}
    for spec, task in zip(shards, tasks, strict=True):
        report = _shard_report(spec, results.get(task["id"]))
        origins.update({id(o): spec.describe() for o in report.failures})
        reports.append(report)
    return merge_reports(reports), origins, seed
