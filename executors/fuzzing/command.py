"""A campaign as the command line runs it (`codeagent fuzz`): options in, report out, exit code.

    options = CommandOptions(executor="local", examples=300, seed=1)
    factory = executor_factory(options.executor, timeout_s=options.timeout)
    sys.exit(run_command(options, factory, tools=None))
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .campaign import PROPERTIES, fuzz
from .console import Progress, report_table, summary_dict
from .failures import read_failure, save_failure
from .outcome import SAFETY_FAILURES, FuzzReport
from .session import Session

__all__ = ["CommandOptions", "run_command", "replay_failures"]


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
    timeout: float = 2.0
    margin: float = 1.0
    save_dir: str = "fuzz-failures"
    seed: int | None = None
    strict: bool = False
    no_isolate: bool = False
    json: str | None = None
    replay: list[str] | None = None

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


def _save_failures(report: FuzzReport, options: CommandOptions) -> None:
    failing = [o for o in report.failures if o.status in SAFETY_FAILURES or o.status in ("mismatch", "divergent")]
    if not failing:
        return
    print(f"failing examples saved in {options.save_dir}/:")
    seen = set()
    for o in failing:
        path = save_failure(o, options.save_dir, options)
        if path not in seen:
            seen.add(path)
            if len(seen) <= 20:
                print(f"  {o.status:14} {path}  {o.detail.splitlines()[0][:100] if o.detail else ''}")
    if len(seen) > 20:
        print(f"  … and {len(seen) - 20} more")


def run_command(options: CommandOptions, factory: Callable[[], Any], tools: Any) -> int:
    """Run the campaign (or the replay) `options` describe; print the report; the exit code:
    1 on any escape, internal error, hang or uncontained bomb (with `strict`, also on mismatches
    and divergent errors), else 0."""
    if options.replay is not None:
        return replay_failures(options, factory, tools)
    progress = Progress(options.executor, options.examples)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    report = fuzz(factory, examples=options.examples, seconds=options.seconds,
                  properties=options.properties, mode=options.mode, tools=tools,
                  authorized_imports=None, margin_s=options.margin,
                  isolate=False if options.no_isolate else None, seed=options.seed, on_outcome=progress)
    progress.show(end="\n")
    print(f"codeagent fuzz — {report.executor} ({options.executor}), mode {options.mode}, "
          f"timeout {options.timeout} s, started {started}, {report.duration_s:.1f} s")
    print(report_table(report))
    _print_details(report)
    _save_failures(report, options)
    if options.json:
        Path(options.json).write_text(json.dumps(summary_dict(report, options), indent=2) + "\n", encoding="utf-8")
    bad = sum(report.total(None, s) for s in SAFETY_FAILURES)
    if options.strict:
        bad += report.total(None, "mismatch") + report.total(None, "divergent")
    return 1 if bad else 0
