"""`codeagent resume RECORD` and `codeagent approve RECORD [--reject WHY]`: a run saved with
`codeagent run --out DIR` goes on from its record, by replay (docs/runs.md), with the agent the
record's own command line made (its model, tools, executor options)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from executors.base import ExecutorError

from ..runs.record_file import load_record
from ..runs.replay import ReplayDiverged, resumable
from ..runs.result import RunResult
from .flags.options import Parser

__all__ = ["main"]

_ENDED = ("success", "max_steps")


def _parser(command: str) -> argparse.ArgumentParser:
    if command == "resume":
        parser = Parser(prog="codeagent resume", description=(
            "Go on with a run cut off (a killed process, Ctrl-C, a failed model request), from its record "
            "(RECORD: DIR/<run_id>.json of `codeagent run --out DIR`): its steps are replayed with their "
            "tool calls answered from the record, then it goes on live."))
        parser.add_argument("--continue-on-divergence", action="store_true",
                            help="go on when a replayed step differs from its record (default: stop and show it)")
    else:
        parser = Parser(prog="codeagent approve", description=(
            "Approve the tool call a paused run waits on (or reject it with --reject WHY, which the model "
            "reads), then go on with the run."))
        parser.add_argument("--reject", metavar="WHY", help="refuse the call; WHY is what the model is told")
    parser.add_argument("record", metavar="RECORD", help="the run's record: DIR/<run_id>.json")
    parser.add_argument("--json", action="store_true", help="print NDJSON events instead of the human view")
    return parser


def main(command: str, argv: list[str], cmd_run: Any, build_parser: Any, usage_error: type[Exception]) -> int:
    """`cmd_run`, `build_parser`, `usage_error`: the `run` command's (cli/main.py, which calls this)."""
    args = _parser(command).parse_args(argv)
    path = Path(args.record)
    try:
        record = load_record(path)
        resumable(record)
    except (OSError, ValueError) as exc:
        print(f"codeagent {command}: cannot resume {path}: {exc}", file=sys.stderr)
        return 2
    if record.invocation is None:
        print(f"codeagent {command}: {path} was made through the API, not `codeagent run`: resume it with "
              "agent.resume(path) and the agent that made it", file=sys.stderr)
        return 2
    if record.status in _ENDED:
        print(f"run {record.run_id} already ended ({record.status}): nothing to resume", file=sys.stderr)
        return 0 if record.status == "success" else 1
    paused = record.status == "paused" and record.pending is not None
    if command == "resume" and paused:
        print(f"run {record.run_id} is paused: {record.error}; use `codeagent approve {path}` "
              "(or --reject WHY)", file=sys.stderr)
        return 3
    if command == "approve" and not paused:
        print(f"codeagent approve: run {record.run_id} is not paused (its status is {record.status!r}): "
              f"use `codeagent resume {path}`", file=sys.stderr)
        return 2
    try:
        return _go(command, args, path, record, cmd_run, build_parser)
    except usage_error as exc:
        print(f"codeagent {command}: {exc}", file=sys.stderr)
        return 2


def _go(command: str, args: argparse.Namespace, path: Path, record: RunResult, cmd_run: Any, build_parser: Any) -> int:
    assert record.invocation is not None
    run_args = build_parser().parse_args(["run", *record.invocation])
    run_args.argv, run_args.json = record.invocation, args.json
    options: dict[str, Any] = {"stream": True}
    if command == "approve":
        options.update(approve=args.reject is None, message=args.reject)
    else:
        options["on_divergence"] = "continue" if args.continue_on_divergence else "stop"
    try:
        return cmd_run(run_args, resume=lambda agent: agent.resume(path, **options))
    except ReplayDiverged as exc:
        print(f"codeagent {command}: {exc}", file=sys.stderr)
        return 1
    except ExecutorError as exc:
        print(f"codeagent {command}: the executor failed: {exc}", file=sys.stderr)
        return 2
