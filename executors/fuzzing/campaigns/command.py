"""A campaign as the command line runs it (`codeagent fuzz`): options in, report out, exit code.

    options = CommandOptions(executor="local", examples=300, seed=1)
    factory = executor_factory(options.executor, timeout_s=options.timeout)
    sys.exit(run_command(options, factory, tools=None))

With `backend` set, the campaign runs as shards through `distribute` (distributed.py; codeagent
provides one over a process pool or Ray) and gives the report the in-process run gives for the
same seed, examples and shard size.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..judging.outcome import SAFETY_FAILURES, FuzzReport, Outcome
from .campaign import PROPERTIES, check_families, fuzz
from .console import Progress, report_table, summary_dict
from .distributed import Distribute, run_distributed
from .failures import read_failure, save_failure
from .session import Session
from .shards import DEFAULT_SHARD_SIZE, plan_shards, shard_of

__all__ = ["CommandOptions", "run_command", "replay_failures", "check_options"]


@dataclass(frozen=True)
class CommandOptions:
    """The options of `codeagent fuzz` (same names and defaults as its flags)."""

    executor: str = "local"
    policy: str | None = None
    examples: int = 1000
    seconds: float | None = None
    authorized_imports: list[str] | None = None
    tools: list[str] | None = None  # MODULE:ATTR specs, for the rerun line
    mode: str = "data"
    properties: list[str] = field(default_factory=lambda: list(PROPERTIES))
    escape_families: list[str] | None = None  # None: every family of escape attempts
    timeout: float = 2.0
    margin: float = 1.0
    save_dir: str = "fuzz-failures"
    seed: int | None = None
    strict: bool = False
    no_isolate: bool = False
    json: str | None = None
    replay: list[str] | None = None
    # where the shards run: None = all in this process (fuzz()), "local" = a process pool, "ray"
    backend: str | None = None
    workers: int = 2
    address: str | None = None  # Ray cluster address (default: a new local instance)
    shard_size: int = DEFAULT_SHARD_SIZE  # examples per hypothesis run (= per shard)
    shard_dir: str | None = None  # keep shard results here (resumable); default: a temporary dir

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> CommandOptions:
        """From parsed flags (e.g. `vars(argparse_namespace)`); unknown keys are ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


def replay_failures(options: CommandOptions, factory: Callable[[], Any], tools: Any) -> int:
    """Rerun saved examples (options.replay); 1 when any still fails, else 0."""
    failed = 0
    for name in options.replay or []:
        code, meta = read_failure(name)
        category = meta.get("category", "program")
        with Session(factory, tools=tools, margin_s=options.margin, isolate=not options.no_isolate and None,
                     marker=meta.get("marker")) as session:
            outcome = session.run(category, code, meta.get("label", category))
        bad = outcome.status in SAFETY_FAILURES or (options.strict and outcome.status == "mismatch")
        failed += bad
        print(f"{name}: {outcome.status} ({outcome.duration_s:.2f} s) {outcome.detail[:400]}")
    return 1 if failed else 0


def _print_details(report: FuzzReport) -> None:
    slow = report.top_slowest(5)
    if slow:
        print("slowest examples:")
        for o in slow:
            first = o.code.strip().splitlines()[-1][:70] if o.code.strip() else ""
            print(f"  {o.duration_s:6.2f} s  {o.category:7} {o.status:12} {o.label:40.40}  {first}")
    if report.error_types:
        shown = ", ".join(f"{c}:{t} {n}" for (c, t), n in report.error_types.most_common(12))
        print(f"refusals by error type: {shown}")


def _save_failures(report: FuzzReport, options: CommandOptions, origins: dict[int, dict[str, Any]]) -> None:
    failing = [o for o in report.failures if o.status in SAFETY_FAILURES or o.status in ("mismatch", "divergent")]
    failing = [o for o in failing if o.code]  # a lost shard has no example to save
    if not failing:
        return
    print(f"failing examples saved in {options.save_dir}/:")
    seen = set()
    for o in failing:
        path = save_failure(o, options.save_dir, options, origin=origins.get(id(o)))
        if path not in seen:
            seen.add(path)
            if len(seen) <= 20:
                print(f"  {o.status:14} {path}  {o.detail.splitlines()[0][:100] if o.detail else ''}")
    if len(seen) > 20:
        print(f"  … and {len(seen) - 20} more")


class _Origins:
    """Follows an in-process campaign's outcomes to tell which shard of the plan generated each
    failing one (the shard a distributed run of the same campaign would have run it in)."""

    def __init__(self, options: CommandOptions, progress: Callable[[Outcome], None]) -> None:
        self.progress = progress
        self.plan = [] if options.seed is None else plan_shards(
            options.examples, options.properties, options.seed, options.shard_size)
        self.seen: dict[str, int] = {}
        self.by_outcome: dict[int, dict[str, Any]] = {}

    def __call__(self, o: Outcome) -> None:
        position = self.seen.get(o.category, 0)
        self.seen[o.category] = position + 1
        if self.plan and (o.failed or o.status == "divergent"):
            spec = shard_of(self.plan, o.category, position)
            if spec is not None:
                self.by_outcome[id(o)] = spec.describe()
        self.progress(o)


def _run_here(options: CommandOptions, factory: Callable[[], Any], tools: Any) -> tuple[FuzzReport, dict[int, Any]]:
    progress = Progress(options.executor, options.examples)
    origins = _Origins(options, progress)
    report = fuzz(factory, examples=options.examples, seconds=options.seconds,
                  properties=options.properties, mode=options.mode, tools=tools,
                  authorized_imports=None, margin_s=options.margin,
                  isolate=False if options.no_isolate else None, seed=options.seed, on_outcome=origins,
                  batch_size=options.shard_size, escape_families=options.escape_families)
    progress.show(end="\n")
    return report, origins.by_outcome


def check_options(options: CommandOptions, distribute: Distribute | None = None) -> None:
    """ValueError naming the first option that cannot work (what run_command checks first)."""
    if options.shard_size < 1:
        raise ValueError(f"--shard-size must be >= 1, got {options.shard_size}")
    try:
        check_families(options.escape_families)
    except ValueError as exc:
        raise ValueError(f"--escape-families: {exc}") from None
    if options.backend is None or options.replay is not None:
        return
    if distribute is None:
        raise ValueError(f"backend {options.backend!r}: no way to distribute shards was given")
    if options.seconds is not None:
        raise ValueError("--seconds cannot be used with --backend: a distributed campaign is defined "
                         "by its examples (a time budget would make its report depend on the machines)")
    if options.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {options.workers}")


def run_command(options: CommandOptions, factory: Callable[[], Any], tools: Any,
                distribute: Distribute | None = None) -> int:
    """Run the campaign (or the replay) `options` describe; print the report; the exit code:
    1 on any escape, internal error, hang or uncontained bomb (with `strict`, also on mismatches
    and divergent errors), else 0. With `options.backend`, the shards run through `distribute`
    (ValueError when the options do not allow a distributed run)."""
    if options.replay is not None:
        return replay_failures(options, factory, tools)
    check_options(options, distribute)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    where, extra = "", {}
    if options.backend is None:
        report, origins = _run_here(options, factory, tools)
    else:
        t0 = time.perf_counter()
        report, origins, seed = run_distributed(options, distribute)
        report.duration_s = time.perf_counter() - t0
        shards = len(plan_shards(options.examples, options.properties, seed, options.shard_size))
        where = f", backend {options.backend} × {options.workers}, seed {seed}, {shards} shards"
        extra = {"backend": options.backend, "workers": options.workers, "seed": seed, "shards": shards,
                 "shard_size": options.shard_size}
    print(f"codeagent fuzz — {report.executor} ({options.executor}), mode {options.mode}, "
          f"timeout {options.timeout} s{where}, started {started}, {report.duration_s:.1f} s")
    print(report_table(report))
    _print_details(report)
    for lost in (o for o in report.failures if o.status == "internal-error" and not o.code):
        print(lost.detail)  # a shard that did not finish: no example to save, say why
    _save_failures(report, options, origins)
    if options.json:
        summary = {**summary_dict(report, options), **extra}
        Path(options.json).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    bad = sum(report.total(None, s) for s in SAFETY_FAILURES)
    if options.strict:
        bad += report.total(None, "mismatch") + report.total(None, "divergent")
    return 1 if bad else 0
