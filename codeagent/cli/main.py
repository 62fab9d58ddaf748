"""The `codeagent` command: `run` a task with a model, `exec` a file in an executor, `demo`, `fuzz`,
`mcp-serve` (the sandbox as an MCP server; its flags and serving live in `codeagent.mcp.cli`);
`batch`, `view` and `docker` have their own parsers (codeagent.batch.cli, codeagent.cli.view,
codeagent.cli.docker); the model flags live in `model_options`.

Exit status: 0 success, 1 the run or the code failed, 2 usage or setup errors.
What it prints lives in `cli_render`; the file and network flags (`--read`, ...) in `cli_access`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import re
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from executors.base import ExecutorError, Limits

from .. import __version__
from ..agent.auto import MODES
from ..events import NOT_JSON, plain_json
from ..mcp.cli import add_client_options, add_serve_options
from ..runs.record import ErrorKind
from ..tools.tool import TOOLS_HELP
from ..tracing.cli import TracingUnavailable, add_trace_option, trace_session
from .flags.access import access_from_args  # noqa: F401 - the command line's grants, as before
from .flags.executor_options import EXECUTORS as _PLACES
from .flags.executor_options import SetupError
from .flags.executor_options import make_executor as build_executor
from .flags.model_options import ModelSetupError, add_model_options, make_model
from .flags.options import (
    Parser,
    add_executor_options,
    count,
    executor_options,
    task_after_tools,
)
from .hints import flag_hint
from .render import HumanPrinter, drive, save_run, show_answer, show_saved

__all__ = ["main", "build_parser", "make_executor", "make_model", "load_tools", "UsageError",
           "HumanPrinter", "drive", "show_answer"]

EXECUTORS = tuple(_PLACES)


class UsageError(Exception):
    """A setup problem the user fixes with a flag or an environment variable (exit status 2)."""


def out_dir(text: str) -> str:
    """--out DIR: a directory, made now if need be (so a path that cannot be made fails before
    anything runs, and a finished run is never lost to it)."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot create {text}: {exc.strerror or exc}")
    if not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text} is not a writable directory")
    return text


# -- building blocks ---------------------------------------------------------------------------


def make_executor(name: str, *, tools: Any = None, authorized_imports: Sequence[str] | None = None,
                  limits: Limits | None = None, access: Any = None, packages: Sequence[str] = ()) -> Any:
    """Create the executor named on the command line; the non-local ones are imported lazily.
    access: an `executors.Access` (the --read/--write/--workdir/--network flags), or None."""
    options: dict[str, Any] = {"authorized_imports": authorized_imports, "packages": list(packages),
                               "access": access}
    if limits is not None and limits.timeout_s is not None:
        options["timeout_s"] = limits.timeout_s
    return _built(name, options, tools)


def _built(name: str, options: dict[str, Any], tools: Any = None) -> Any:
    notes: list[str] = []
    try:
        executor = build_executor(name, options, tools=tools, notes=notes)
    except SetupError as exc:
        raise UsageError(str(exc))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return executor


def executor_from_args(args: argparse.Namespace, **options: Any) -> Any:
    """The executor the flags ask for: --executor, --import, --packages, --timeout and the grants."""
    chosen = executor_options(args)
    timeout = chosen.get("timeout_s")
    executor = make_executor(args.executor, authorized_imports=chosen.get("authorized_imports"),
                             limits=None if timeout is None else Limits(timeout_s=timeout),
                             access=chosen.get("access"), packages=chosen.get("packages", ()), **options)
    show_isolation(args, executor)
    return executor


def show_isolation(args: argparse.Namespace, executor: Any) -> None:
    """--verbose: what holds the code, per concern (the executor's `isolation`), on stderr."""
    if getattr(args, "verbose", False):
        print(f"isolation: {executor.isolation}", file=sys.stderr)


def load_tools(specs: Iterable[str]) -> list[Any]:
    """`module:attr` → the tools it names (`codeagent.tools.tool.load_tools`); a bad one is a UsageError."""
    from ..tools.tool import ToolSpecError
    from ..tools.tool import load_tools as load

    try:
        return load(specs)
    except ToolSpecError as exc:
        raise UsageError(str(exc))


# -- commands --------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace, resume: Any = None) -> int:
    """`codeagent run`; resume(agent): the events of a resumed run instead (`codeagent resume`)."""
    tools = load_tools(args.tools or ())
    model = make_model(args)
    executor = _run_executor(args)
    try:
        toolset = _mcp_toolset(args)  # --mcp-stdio / --mcp-url: their tools join --tools
    except UsageError:
        executor.close()
        raise
    tools += toolset.tools if toolset is not None else []
    with trace_session(args.trace), executor or contextlib.nullcontext(), toolset or contextlib.nullcontext():
        try:
            agent = _agent(args, model, tools, executor)
        except (TypeError, ValueError) as exc:  # e.g. two --tools with the same name
            raise UsageError(str(exc))
        agent.invocation = getattr(args, "argv", None)  # what `codeagent resume` rebuilds it from
        with agent:
            result = drive(agent, args.task, as_json=args.json, out=sys.stdout,
                           events=resume(agent) if resume is not None else None)
    _report_adaptations(model)
    saved = _save(result, args)
    show_saved(saved, sys.stderr if args.json else sys.stdout)  # NDJSON on stdout stays NDJSON
    if result.status == "interrupted":
        return 130
    if result.status == "paused":
        print(f"paused: {result.error}; approve it with `codeagent approve RECORD` (or --reject WHY), "
              "the run's saved record (run with --out DIR to have one)", file=sys.stderr)
        return 3
    return 0 if result.success else 1


def _run_executor(args: argparse.Namespace) -> Any:
    """The executor for `run`; none for --mode tool_calling, which runs no code."""
    if args.mode != "tool_calling":
        return executor_from_args(args)
    given = [flag for flag, value in (("--import", args.imports), ("--packages", args.packages),
                                      ("--timeout", args.timeout), ("--read", args.read), ("--write", args.write),
                                      ("--workdir", args.workdir), ("--network", args.network)) if value]
    if given:
        print(f"note: {', '.join(given)} ignored: --mode tool_calling runs no code", file=sys.stderr)
    return None


def _agent(args: argparse.Namespace, model: Any, tools: list[Any], executor: Any) -> Any:
    """The agent of --mode (auto_agent's rule: an explicit mode always wins)."""
    from ..agent.auto import auto_agent

    options: dict[str, Any] = {"max_steps": args.max_steps, "max_context_tokens": args.context_tokens,
                               "output_dir": args.out}
    if executor is not None:
        options["executor"] = executor
    if args.mode == "single_call":  # the user's tools: bundling several calls is not assumed safe
        options["bundleable"] = ()
    agent = auto_agent(model, tools, mode=args.mode, **options)
    if hasattr(agent, "record_dir"):  # a code agent's run is saved as it goes (durable, resumable)
        agent.record_dir = args.out
    if args.mode == "auto":
        print(f"note: --mode auto chose {agent.auto_choice.mode}: {agent.auto_choice.reason}", file=sys.stderr)
    return agent


def _save(result: Any, args: argparse.Namespace) -> list[Path]:
    """--out and --save; a place that cannot be written is said, and the run goes to the current
    directory instead (a finished run is never lost)."""
    saved: list[Path] = []
    for flag, place in (("--out", args.out), ("--save", args.save)):
        if not place:
            continue
        try:
            paths = save_run(result, place) if flag == "--out" else [result.save(place), *result.saved_files()]
        except OSError as exc:
            fallback = Path(f"{result.run_id}.json").absolute()
            print(f"codeagent run: cannot save to {flag} {place}: {exc.strerror or exc}; saving the run as "
                  f"{fallback} instead", file=sys.stderr)
            try:
                paths = [result.save(fallback)]
            except OSError as again:
                print(f"codeagent run: cannot save {fallback} either: {again.strerror or again}", file=sys.stderr)
                paths = []
        saved += [p for p in paths if p not in saved]
    return saved
def _mcp_toolset(args: argparse.Namespace) -> Any:
    from ..mcp.cli import open_toolset, server_specs

    try:
        return open_toolset(server_specs(args.mcp_stdio, args.mcp_url))
    except (ValueError, ImportError, RuntimeError) as exc:  # MCPStartError is a RuntimeError
        raise UsageError(str(exc))


def cmd_mcp_serve(args: argparse.Namespace) -> int:
    from ..mcp.cli import run_serve

    try:
        return run_serve(args, lambda: executor_from_args(args))
    except (ValueError, ImportError) as exc:  # --host without --token, no mcp package
        raise UsageError(str(exc))


def _report_adaptations(model: Any) -> None:
    for note in getattr(model, "adaptations", ()):
        flag = "--no-stop" if "`stop`" in note else "--no-system-role" if "system role" in note else None
        print(f"note: {note}" + (f" (pass {flag} to skip the failed first request)" if flag else ""), file=sys.stderr)


def read_source(name: str) -> str:
    """The code of FILE ('-': stdin) as text; not UTF-8 is a usage error that says where."""
    where = "stdin" if name == "-" else name
    try:
        if name == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(name, "rb") as f:
                data = f.read()
    except OSError as exc:
        raise UsageError(f"cannot read {where}: {exc.strerror or exc}")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UsageError(f"{where} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}): "
                         "save it as UTF-8")


def save_attachments(attachments: Sequence[Any], out_dir: str | None) -> list[dict[str, Any]]:
    """`exec --out DIR`: each attachment as DIR/exec.figure-<n>.<suffix>; their metadata, with the file."""
    from ..tools.attachments import AttachmentRecord

    records = []
    first = 1
    if out_dir:  # never overwrite the figures of an earlier exec: number on from them
        taken = [int(m.group(1)) for p in Path(out_dir).glob("exec.figure-*")
                 if (m := re.fullmatch(r"exec\.figure-(\d+)\.\w+", p.name))]
        first = max(taken, default=0) + 1
    for i, attachment in enumerate(attachments, first):
        record = AttachmentRecord.of(attachment, step=1, index=i)
        if out_dir:
            target = Path(out_dir) / record.file_name("exec")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(attachment.data)
            record.file = str(target.absolute())
        records.append(record)
    return [r.metadata() | {"description": r.describe()} for r in records]


def cmd_exec(args: argparse.Namespace) -> int:
    code = read_source(args.file)
    executor = executor_from_args(args)
    with executor:
        result = executor.execute(code)
    figures = save_attachments(result.attachments, args.out)
    if args.json:
        safe = plain_json(result.output)
        print(json.dumps({
            "output": None if safe is NOT_JSON else safe,
            "output_repr": result.output_repr, "logs": result.logs, "is_final_answer": result.is_final_answer,
            "error": result.error.to_dict() if result.error else None, "duration_s": result.duration_s,
            "state_lost": result.state_lost, "attachments": figures,
        }))
    else:
        if result.logs:
            sys.stdout.write(result.logs if result.logs.endswith("\n") else result.logs + "\n")
        if result.is_final_answer:
            print(f"final answer: {show_answer(result.output, result.output_repr)}")
        elif result.output_repr is not None:
            print(f"out: {result.output_repr}")
        for figure in figures:
            where = f"saved as {figure['file']}" if figure["file"] else "not saved: pass --out DIR to keep it"
            print(f"{figure['description']} ({where})")
        if result.error:
            print(f"error: {result.error}{flag_hint(result.error, args.imports)}", file=sys.stderr)
        print(f"({args.executor} executor, {result.duration_s * 1000:.1f} ms)", file=sys.stderr)
    return 1 if result.error else 0


def cmd_demo(args: argparse.Namespace) -> int:
    from ..agent.code_agent import CodeAgent
    from ..models.scripted import ScriptedModel
    from . import demo

    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL")
    if base_url:
        args.base_url = base_url
        model = make_model(args, default_model="gpt-4o-mini")
        note = None
    else:
        model = ScriptedModel([demo.SCRIPTED_REPLY], model_id="scripted-demo")
        note = ("note: SCRIPTED run — no model was called; the reply is bundled with codeagent. "
                "Pass --base-url URL --model NAME (or set OPENAI_BASE_URL) to use a real model.")
    executor = make_executor(args.executor)
    show_isolation(args, executor)
    demo.CALLS.clear()
    t0 = time.perf_counter()
    with executor, CodeAgent(model, tools=demo.demo_tools(), executor=executor, max_steps=args.max_steps) as agent:
        result = drive(agent, demo.TASK, as_json=args.json, out=sys.stdout, scripted_note=note)
    wall = time.perf_counter() - t0
    _report_adaptations(model)
    expected = demo.expected_answer()
    correct = plain_json(result.output) == expected
    if not args.json:
        executed = [s for s in result.steps if s.code is not None and s.error_kind != ErrorKind.REPEATED_ACTION]
        exec_ms = sum(s.execution_duration_s for s in result.steps) * 1000
        calls = ", ".join(f"{name} ×{n}" for name, n in sorted(demo.CALLS.items())) or "none"
        print(f"  {len(executed)} code action(s) · {sum(demo.CALLS.values())} tool calls ({calls}) · "
              f"executor {exec_ms:.1f} ms · wall {wall:.2f} s")
        if result.success:  # a failed run has no answer to compare: its error is above
            print(f"  answer {'matches' if correct else 'DOES NOT match'} the expected {json.dumps(expected)}")
        if getattr(model, "scripted", False):
            print("  (scripted model reply — see the note above)")
    return 0 if result.success and correct else 1


def cmd_fuzz(args: argparse.Namespace, extra: list[str]) -> int:
    try:
        fuzz = importlib.import_module("codeagent.cli.fuzz")
    except ImportError as exc:
        print(f"codeagent fuzz: the fuzzing module is not available ({exc})", file=sys.stderr)
        return 2
    parser = Parser(prog="codeagent fuzz", description="Fuzz the executors.")
    fuzz.add_fuzz_arguments(parser)
    return int(fuzz.run_fuzz(parser.parse_args(extra)) or 0)


# -- parser ----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="codeagent", description="Agents that act by writing Python, and executors that run it safely.")
    parser.add_argument("--version", action="version", version=f"codeagent {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="solve a task with a model",
                         description="Solve TASK with an agent: the model acts (by default by writing Python, "
                                     "run in a sandboxed worker process) until it gives its final answer. "
                                     "Exit status 0 with an answer, 1 without, 2 for a setup error, 130 on Ctrl-C.")
    run.add_argument("task", metavar="TASK", nargs="?", help="what to do, in words (quote it)")
    add_model_options(run, constrain=True)
    run.add_argument("--mode", choices=(*MODES, "auto"), default="code",
                     help="how the model acts: code (Python action blocks: CodeAgent), single_call (one tool "
                          "call a turn, for weak models: SingleCallAgent), tool_calling (the endpoint's native "
                          "tool calls, no code: ToolCallingAgent), auto (probes the endpoint once: auto_agent) "
                          "(default: code)")
    run.add_argument("--tools", nargs="+", metavar="MODULE:ATTR", default=[], help=TOOLS_HELP)
    add_executor_options(run)
    add_client_options(run)
    run.add_argument("--max-steps", type=count(1), default=10, metavar="N", help="steps before giving up (default: 10)")
    run.add_argument("--context-tokens", type=count(1), default=16_000, metavar="N",
                     help="budget of the history sent to the model, in estimated tokens (default: 16000)")
    run.add_argument("--json", action="store_true", help="print NDJSON events instead of the human view")
    run.add_argument("--save", metavar="PATH", help="save the RunResult as JSON (its figures beside it)")
    run.add_argument("--out", metavar="DIR", type=out_dir, help="save the run as DIR/<run_id>.json and the figures its code "
                                                  "makes as DIR/<run_id>.figure-<n>.png, as they come")
    add_trace_option(run)

    ex = sub.add_parser("exec", help="run a Python file in an executor",
                        description="Run FILE ('-' for stdin) in an executor and print what it printed, "
                                    "its last value and its error. Exit status 1 when the code failed.")
    ex.add_argument("file", metavar="FILE", help="a UTF-8 Python file, or '-' to read the code from stdin")
    add_executor_options(ex)
    ex.add_argument("--json", action="store_true",
                    help="print the result as one JSON object (output, logs, error, ...)")
    ex.add_argument("--out", metavar="DIR", type=out_dir, help="save the figures the code makes as DIR/exec.figure-<n>.png")

    demo = sub.add_parser("demo", help="a multi-tool data task solved in one code action",
                          description="Sales/inventory analysis over three tools. Uses a real model when "
                                      "--base-url or OPENAI_BASE_URL is set, else a bundled scripted reply.")
    add_model_options(demo)
    add_executor_options(demo, imports=False)
    demo.add_argument("--max-steps", type=count(1), default=6, metavar="N", help="steps before giving up (default: 6)")
    demo.add_argument("--json", action="store_true", help="print NDJSON events instead of the human view")

    serve = sub.add_parser("mcp-serve", help="serve the sandbox to MCP clients (run_python, reset, list_variables)",
                           description="Serve run_python(code), reset() and list_variables() over MCP, one "
                                       "executor per client session.")
    add_executor_options(serve)  # (its default is the worker: a client's model is as untrusted as ours)
    add_serve_options(serve)

    sub.add_parser("fuzz", help="fuzz the executors (options: codeagent fuzz --help)", add_help=False)
    sub.add_parser("batch", help="run many tasks at once, locally or on Ray (options: codeagent batch --help)",
                   add_help=False)
    for name, what in (("resume", "go on with a run cut off (killed, paused), by replay of its record"),
                       ("approve", "approve (or --reject) the call a paused run waits on, and go on")):
        sub.add_parser(name, help=f"{what} (options: codeagent {name} --help)", add_help=False)
    sub.add_parser("view", help="a run or a batch as a page, written or served live (options: codeagent view --help)",
                   add_help=False)
    sub.add_parser("docker", help="set up DockerExecutor: an engine and the worker image, built offline "
                                  "(codeagent docker --help)", add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    for stream in (sys.stdout, sys.stderr):  # box-drawing characters must not crash a latin-1 terminal
        if hasattr(stream, "reconfigure") and (stream.encoding or "").lower().replace("-", "") != "utf8":
            stream.reconfigure(errors="replace")
    parser = build_parser()
    if argv and argv[0] == "fuzz":
        return cmd_fuzz(argparse.Namespace(), argv[1:])
    if argv and argv[0] == "batch":  # its own parser: codeagent.batch.cli
        from ..batch.cli import main as batch_main

        return batch_main(argv[1:])
    if argv and argv[0] == "docker":  # its own parser: codeagent.cli.docker
        from .docker import main as docker_main

        return docker_main(argv[1:])
    if argv and argv[0] in ("resume", "approve"):  # its own parser: codeagent.cli.resume
        from .resume import main as resume_main

        return resume_main(argv[0], argv[1:], cmd_run, build_parser, UsageError)
    if argv and argv[0] == "view":  # its own parser: codeagent.cli.view
        from .view import main as view_main

        return view_main(argv[1:])
    args = parser.parse_args(argv)
    if args.command == "run":
        args.argv = argv[1:]
        task_after_tools(args, "task")
        if not (args.task or "").strip():
            print("codeagent run: TASK is required and cannot be empty: say what to do, in quotes "
                  "(options: codeagent run --help)", file=sys.stderr)
            return 2
    try:
        if args.command == "run":
            return cmd_run(args)
        if args.command == "exec":
            return cmd_exec(args)
        if args.command == "demo":
            return cmd_demo(args)
        if args.command == "mcp-serve":
            return cmd_mcp_serve(args)
    except (UsageError, ModelSetupError, TracingUnavailable) as exc:
        print(f"codeagent {args.command}: {exc}", file=sys.stderr)
        return 2
    except ExecutorError as exc:
        print(f"codeagent {args.command}: the {args.executor} executor failed: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    parser.error(f"unknown command {args.command!r}")
    return 2
