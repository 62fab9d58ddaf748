"""`codeagent batch`: run a JSONL file of tasks, report a finished batch, compare two batches.

    codeagent batch TASKS.jsonl --out DIR --model M --base-url URL [--mode code|single_call|tool_calling|auto]
        [--executor local|subprocess|docker] [--backend local|ray] [--address A] [--workers N] ...
    codeagent batch --report DIR
    codeagent batch --compare DIR_A DIR_B

Exit status: 0 every task succeeded (and every answer checked against `expected` was right), 1 some
did not (or tasks changed, for --compare), 2 usage or setup errors, 130 interrupted (run the same
command again to resume).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from codeagent.cli.options import (
    Parser,
    add_executor_options,
    count,
    number,
    seconds,
    seconds_or_none,
    task_after_tools,
)
from codeagent.cli.options import executor_options as cli_executor_options

from ..mcp.cli import add_client_options, server_specs
from ..tracing.cli import add_trace_option
from .factories import AGENT_MODES
from .scheduler import (
    BACKENDS,
    DEFAULT_TIMEOUT_S,
    RETRY_CHOICES,
    BatchError,
    run_batch,
)
from .summary import BatchSummary, compare, natural_key
from .tasks import TaskError

CLI_FACTORY = "codeagent.batch.factories:cli_agent"


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="codeagent batch", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tasks", nargs="?", metavar="TASKS.jsonl", help="one JSON task a line: id, task, "
                   "optional expected, variables, files")
    p.add_argument("--out", metavar="DIR", help="batch directory (results.jsonl, runs/); an existing one is resumed")
    p.add_argument("--retry", choices=RETRY_CHOICES, action="append", default=[],
                   help="resuming: run again the tasks recorded as failed (failed, max_steps, error, crashed), "
                        "timeout, or all that did not succeed (default: none, a recorded task is skipped)")
    p.add_argument("--report", metavar="DIR", help="print the table of a finished (or interrupted) batch")
    p.add_argument("--compare", nargs=2, metavar=("DIR_A", "DIR_B"), help="which tasks changed between two batches")
    g = p.add_argument_group("agent")
    g.add_argument("--model", help="model name on the server (default: $CODEAGENT_MODEL)")
    g.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    g.add_argument("--mode", choices=AGENT_MODES, default="code", help="agent mode; auto probes the endpoint once per worker")
    g.add_argument("--tools", nargs="+", metavar="MODULE:ATTR", default=[], help="tools: a tool, function, or list/dict of them")
    g.add_argument("--max-steps", type=count(1), default=10, metavar="N", help="steps before giving up (default: 10)")
    g.add_argument("--api-key-env", metavar="VAR", help="environment variable with the API key (default OPENAI_API_KEY)")
    g.add_argument("--no-system-role", action="store_true")
    g.add_argument("--no-stop", action="store_true")
    g.add_argument("--temperature", type=number(0))
    g.add_argument("--max-tokens", type=count(1))
    g.add_argument("--model-timeout", type=seconds, metavar="SECONDS", help="how long one model request may take")
    g.add_argument("--model-retries", type=count(0, 20), metavar="N",
                   help="tries again after a model timeout, a dropped connection, HTTP 429 or 5xx")
    add_client_options(p)
    g.add_argument("--factory", metavar="MODULE:ATTR", help="your own agent factory instead of the options above")
    g.add_argument("--factory-options", metavar="JSON", default="{}", help="keyword arguments for --factory (a JSON object)")
    r = p.add_argument_group("running")
    add_executor_options(r, batch=True)
    r.add_argument("--backend", choices=BACKENDS, default="local")
    r.add_argument("--address", help="Ray cluster: 'auto' (the one on this machine), host:port or ray://host:port; "
                                     "default: a new local instance (or $RAY_ADDRESS)")
    r.add_argument("--cpus-per-worker", type=number(0, above=True), default=1.0,
                   help="Ray CPUs reserved per worker (below 1 packs several model-bound agents per core)")
    r.add_argument("--workers", type=count(1, 1024), default=2)
    r.add_argument("--runs-per-worker", type=count(1, 1024), default=1, metavar="N",
                   help="tasks each local worker runs at once, on one event loop (the agents' async API): "
                        "model-bound tasks need far fewer processes")
    r.add_argument("--task-timeout", type=seconds_or_none, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help=f"wall-clock limit per task, model time included (0: none; default: {DEFAULT_TIMEOUT_S:g})")
    r.add_argument("--retries", type=count(0, 100), default=1,
                   help="extra tries for a task whose worker crashed or whose agent raised")
    r.add_argument("--progress", choices=("auto", "bar", "json", "none"), default="auto",
                   help="on stderr: a bar on a terminal, NDJSON events otherwise")
    add_trace_option(r, "of the batch, one trace per task")
    p.add_argument("--json", action="store_true", help="print the summary (or comparison) as JSON")
    return p


def _agent_options(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    if args.factory:
        try:
            options = json.loads(args.factory_options)
        except ValueError as exc:
            raise BatchError(f"--factory-options must be a JSON object: {exc}")
        if not isinstance(options, dict):
            raise BatchError("--factory-options must be a JSON object")
        return args.factory, options
    model = args.model or os.environ.get("CODEAGENT_MODEL")
    if not model:
        raise BatchError("no model name: pass --model NAME (or set CODEAGENT_MODEL), or --factory MODULE:ATTR")
    options: dict[str, Any] = {"model": model, "base_url": args.base_url or os.environ.get("OPENAI_BASE_URL"),
                               "mode": args.mode, "tools": list(args.tools), "max_steps": args.max_steps,
                               "system_role": not args.no_system_role, "supports_stop": not args.no_stop}
    if args.api_key_env:
        if not os.environ.get(args.api_key_env):
            raise BatchError(f"--api-key-env {args.api_key_env}: that environment variable is not set")
        options["api_key_env"] = args.api_key_env
    for name, option in (("temperature", "temperature"), ("max_tokens", "max_tokens"),
                         ("model_timeout", "timeout"), ("model_retries", "max_retries")):
        if getattr(args, name) is not None:
            options[option] = getattr(args, name)
    try:  # each worker opens its own sessions with these servers (factories.cli_agent)
        mcp = server_specs(args.mcp_stdio, args.mcp_url)
    except ValueError as exc:
        raise BatchError(str(exc))
    if mcp:
        options["mcp"] = mcp
    return CLI_FACTORY, options


def check_setup(args: argparse.Namespace, executor_options: dict[str, Any]) -> None:
    """What every task would meet, checked once before the first: the tools import, and the
    executor starts with these flags (a mistake is exit 2 here, not an `error` row per task)."""
    from codeagent.cli.executor_options import SetupError, make_executor
    from codeagent.tools.tool import ToolSpecError, load_tools

    try:
        load_tools(args.tools or ())
    except ToolSpecError as exc:
        raise BatchError(str(exc))
    notes: list[str] = []
    try:
        executor = make_executor(args.executor, executor_options, notes=notes)
    except SetupError as exc:
        raise BatchError(str(exc))
    executor.close()
    for note in notes:
        print(f"note: {note}", file=sys.stderr)


def cmd_report(out: str, as_json: bool) -> int:
    summary = BatchSummary.from_dir(out)
    summary = BatchSummary(tuple(sorted(summary.rows, key=lambda r: natural_key(r.id))), out=out)
    print(json.dumps(summary.to_dict(), indent=2) if as_json else f"batch {out}\n\n{summary.table()}")
    return _status(summary)


def _status(summary: BatchSummary) -> int:
    return 0 if summary.succeeded == summary.total and summary.correct == summary.checked else 1


def cmd_compare(a: str, b: str, as_json: bool) -> int:
    text, changes = compare(a, b)
    print(json.dumps({"a": a, "b": b, "changes": changes}, indent=2) if as_json else text)
    return 1 if changes else 0


def cmd_run(args: argparse.Namespace) -> int:
    if not args.out:
        raise BatchError("--out DIR is required: the batch's results go there (and it is what a resume reads)")
    factory, options = _agent_options(args)
    executor_options = cli_executor_options(args)
    check_setup(args, executor_options)
    summary = run_batch(
        factory, args.tasks, out=args.out, backend=args.backend, workers=args.workers,
        timeout_s=args.task_timeout or None, retries=args.retries, options=options,
        executor=args.executor, executor_options=executor_options, address=args.address,
        ray_options={"num_cpus": args.cpus_per_worker}, progress=args.progress,
        retry=args.retry, trace=args.trace, runs_per_worker=args.runs_per_worker,
    )
    print(json.dumps(summary.to_dict(), indent=2) if args.json else summary.table())
    return _status(summary)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    task_after_tools(args, "tasks")
    chosen = [bool(args.tasks), bool(args.report), bool(args.compare)]
    if sum(chosen) != 1:
        parser.error("give exactly one of: TASKS.jsonl (run), --report DIR, --compare DIR_A DIR_B")
    try:
        if args.report:
            return cmd_report(args.report, args.json)
        if args.compare:
            return cmd_compare(*args.compare, args.json)
        previous = signal.signal(signal.SIGTERM, _interrupt)  # a terminated batch stops like an interrupted one
        try:
            return cmd_run(args)
        finally:
            signal.signal(signal.SIGTERM, previous)
    except (BatchError, TaskError, OSError, ValueError) as exc:
        print(f"codeagent batch: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\ncodeagent batch: interrupted; what finished is in {args.out}/results.jsonl — "
              "run the same command again to resume", file=sys.stderr)
        return 130
