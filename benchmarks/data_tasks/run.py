"""Data tasks × executors × agent modes: success, model calls, tokens, wall time.

    .venv/bin/python benchmarks/data_tasks                       # scripted replies (no endpoint)
    .venv/bin/python benchmarks/data_tasks --base-url http://localhost:8000/v1 --model qwen2.5-coder
        [--suites tools,files] [--executors local,subprocess,docker] [--modes code,single_call,tool_calling]
        [--tasks order_city,...] [--max-steps 8] [--api-key-env OPENAI_API_KEY] [--max-tokens 512]
        [--json results.json]

Two suites: `tools` (a shop database behind read-only tools, suite.py) and `files` (pandas/numpy
tasks over the CSV and JSON files in data/, granted to the code with `Access(read=[data/])`,
files_suite.py). Code and single-call actions run in each executor named; the tool-calling agent
runs its tools on host threads, so it has one column whatever the executors. Docker is left out,
with the reason, when no engine answers.

With no endpoint the shipped scripted replies run (scripted.py, files_scripted.py), so the harness
itself is tested in CI; every scripted run must succeed. Against an endpoint each task runs once per
place with the same tools, and the answer is checked against the expected one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]

import files_scripted  # noqa: E402
import scripted  # noqa: E402
from files_suite import FILE_TASKS, FILE_TOOLS  # noqa: E402
from modes import MODES, RunRow, compact, run_one, summary, table  # noqa: E402
from places import EXECUTORS, Places, docker_problem  # noqa: E402
from suite import TASKS, TOOLS  # noqa: E402

from codeagent import OpenAIModel, ScriptedModel  # noqa: E402
from codeagent.models.openai_model import ModelReply, ToolCall  # noqa: E402

SUITES = {"tools": (TASKS, TOOLS, scripted.SCRIPTED), "files": (FILE_TASKS, FILE_TOOLS, files_scripted.SCRIPTED)}
SUITE_OF = {t.id: name for name, (tasks, _, _) in SUITES.items() for t in tasks}


def scripted_model(mode: str, task_id: str) -> ScriptedModel:
    replies = []
    for item in SUITES[SUITE_OF[task_id]][2][mode][task_id]:
        if isinstance(item, dict):
            calls = tuple(ToolCall(id=f"call_{i}", name=c["name"], arguments=c["arguments"])
                          for i, c in enumerate(item["tool_calls"]))
            replies.append(ModelReply(text=item.get("text", ""), tool_calls=calls))
        else:
            replies.append(item)
    return ScriptedModel(replies, model_id=f"scripted-{mode}")


def places_of(modes: list[str], executors: list[str]) -> list[tuple[str, str]]:
    """(mode, executor) pairs to run: every executor for the modes that run actions in one."""
    return [(m, "host") if m == "tool_calling" else (m, e) for m in modes
            for e in (["host"] if m == "tool_calling" else executors)]


def run_suite(modes=MODES, task_ids=None, *, suites=("tools", "files"), executors=("local",), base_url=None,
              model_id=None, api_key=None, max_steps=8, max_tokens=None, places: Places | None = None) -> list[RunRow]:
    rows = []
    own = places is None
    places = places or Places()
    try:
        for mode, kind in places_of(list(modes), list(executors)):
            for suite in suites:
                tasks, tools, _ = SUITES[suite]
                for task in tasks:
                    if task_ids and task.id not in task_ids:
                        continue
                    rows.append(_run(task, suite, tools, mode, kind, places, base_url=base_url, model_id=model_id,
                                     api_key=api_key, max_steps=max_steps, max_tokens=max_tokens))
    finally:
        if own:
            places.close()
    return rows


def _run(task: Any, suite: str, tools: list[Any], mode: str, kind: str, places: Places, *, base_url: str | None,
         model_id: str | None, api_key: str | None, max_steps: int, max_tokens: int | None) -> RunRow:
    if base_url:
        options = {"max_tokens": max_tokens} if max_tokens else {}
        model: Any = OpenAIModel(model_id or "default", base_url=base_url, api_key=api_key, request_options=options)
    else:
        model = scripted_model(mode, task.id)
    executor = None if mode == "tool_calling" else places.get(kind, suite)
    row = run_one(task.id, task.prompt, mode, model, tools, max_steps=max_steps, check=task.check,
                  executor=executor, executor_name=kind)
    if row.error and row.error.startswith("executor"):
        places.drop(kind, suite)  # broken: the next run gets a fresh one
    return row


def comparison(rows: list[RunRow]) -> str:
    """CodeAgent against ToolCallingAgent, per suite: model calls and tokens over the same tasks."""
    lines = []
    for suite in SUITES:
        mine = [r for r in rows if SUITE_OF[r.task] == suite]
        code = [r for r in mine if r.mode == "code"]
        first = code[0].executor if code else None
        code = [r for r in code if r.executor == first]
        tools = [r for r in mine if r.mode == "tool_calling"]
        if not code or not tools:
            continue
        ratio = sum(r.tokens for r in code) / max(1, sum(r.tokens for r in tools))
        lines.append(f"{suite}: CodeAgent ({first}) {sum(r.model_calls for r in code)} model calls, "
                     f"{sum(r.tokens for r in code)} tokens · ToolCallingAgent {sum(r.model_calls for r in tools)} "
                     f"calls, {sum(r.tokens for r in tools)} tokens · tokens ratio code/tool_calling {ratio:.2f}")
    return "\n".join(lines)


def report(rows: list[RunRow], where: str) -> str:
    places = list(dict.fromkeys(r.place for r in rows))
    out = [f"Data-task suite: {len({r.task for r in rows})} tasks × {len(places)} places — {where}",
           "each cell: status, model calls / tokens (ok = the expected answer)", ""]
    for suite in SUITES:
        mine = [r for r in rows if SUITE_OF[r.task] == suite]
        if mine:
            out += [f"[{suite}]", table(mine, cell_text=compact, legend="calls/tokens"), ""]
    out.append(summary(rows))
    versus = comparison(rows)
    return "\n".join(out + (["", versus] if versus else []))


def _list(text: str, known: tuple[str, ...], what: str, parser: argparse.ArgumentParser) -> list[str]:
    items = [x for x in text.split(",") if x]
    unknown = [x for x in items if x not in known]
    if unknown:
        parser.error(f"unknown {what} {unknown}; choose from {', '.join(known)}")
    return items


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", help="an OpenAI-compatible /v1 URL; without it the scripted replies run")
    parser.add_argument("--model", default=None, help="model name the server knows")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY")
    parser.add_argument("--suites", default=",".join(SUITES))
    parser.add_argument("--executors", default=",".join(EXECUTORS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: all)")
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--json", dest="json_path", help="also write every row as JSON here")
    args = parser.parse_args(argv)
    suites = _list(args.suites, tuple(SUITES), "suites", parser)
    executors = _list(args.executors, EXECUTORS, "executors", parser)
    modes = _list(args.modes, MODES, "modes", parser)
    if "docker" in executors and docker_problem():
        print(f"note: docker left out, no engine answers ({docker_problem()})\n")
        executors.remove("docker")
    task_ids = {t for t in args.tasks.split(",") if t} or None
    rows = run_suite(modes, task_ids, suites=suites, executors=executors, base_url=args.base_url,
                     model_id=args.model, api_key=os.environ.get(args.api_key_env), max_steps=args.max_steps,
                     max_tokens=args.max_tokens)
    where = f"{args.model} at {args.base_url}" if args.base_url else "scripted replies (no endpoint given)"
    print(report(rows, where))
    failures = [r for r in rows if r.status != "success"]
    for r in failures:
        print(f"  {r.task} [{r.place}]: {r.status}: {r.error or r.output}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps([r.as_dict() | {"place": r.place} for r in rows], indent=2) + "\n")
    # Scripted replies are known-good: a failure there is a harness bug.
    return 1 if failures and not args.base_url else 0


if __name__ == "__main__":
    raise SystemExit(main())
