"""Multi-tool data tasks × agent modes: success, model calls, tokens, wall time.

    .venv/bin/python benchmarks/data_tasks                       # scripted replies (no endpoint)
    .venv/bin/python benchmarks/data_tasks --base-url http://localhost:8000/v1 --model qwen2.5-coder
        [--modes code,single_call,tool_calling] [--tasks order_city,...] [--max-steps 8]
        [--api-key-env OPENAI_API_KEY] [--max-tokens 512] [--json results.json]

With no endpoint the shipped scripted replies run (benchmarks/data_tasks/scripted.py), so the
harness itself is tested in CI; every scripted run must succeed. Against an endpoint each task
runs once per mode with the same tools, and the answer is checked against the expected one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]

from modes import MODES, RunRow, run_one, summary, table  # noqa: E402
from scripted import SCRIPTED  # noqa: E402
from suite import TASKS, TOOLS  # noqa: E402

from codeagent import OpenAIModel, ScriptedModel  # noqa: E402
from codeagent.models import ModelReply, ToolCall  # noqa: E402


def scripted_model(mode: str, task_id: str) -> ScriptedModel:
    replies = []
    for item in SCRIPTED[mode][task_id]:
        if isinstance(item, dict):
            calls = tuple(ToolCall(id=f"call_{i}", name=c["name"], arguments=c["arguments"])
                          for i, c in enumerate(item["tool_calls"]))
            replies.append(ModelReply(text=item.get("text", ""), tool_calls=calls))
        else:
            replies.append(item)
    return ScriptedModel(replies, model_id=f"scripted-{mode}")


def run_suite(modes=MODES, task_ids=None, *, base_url=None, model_id=None, api_key=None, max_steps=8,
              max_tokens=None) -> list[RunRow]:
    rows = []
    tasks = [t for t in TASKS if not task_ids or t.id in task_ids]
    for mode in modes:
        for task in tasks:
            if base_url:
                options = {"max_tokens": max_tokens} if max_tokens else {}
                model = OpenAIModel(model_id or "default", base_url=base_url, api_key=api_key,
                                    request_options=options)
            else:
                model = scripted_model(mode, task.id)
            rows.append(run_one(task.id, task.prompt, mode, model, TOOLS, max_steps=max_steps, check=task.check))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", help="an OpenAI-compatible /v1 URL; without it the scripted replies run")
    parser.add_argument("--model", default=None, help="model name the server knows")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: all)")
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--json", dest="json_path", help="also write every row as JSON here")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown modes {unknown}; choose from {', '.join(MODES)}")
    task_ids = {t for t in args.tasks.split(",") if t} or None
    rows = run_suite(modes, task_ids, base_url=args.base_url, model_id=args.model,
                     api_key=os.environ.get(args.api_key_env), max_steps=args.max_steps, max_tokens=args.max_tokens)
    where = f"{args.model} at {args.base_url}" if args.base_url else "scripted replies (no endpoint given)"
    print(f"Data-task suite: {len({r.task for r in rows})} tasks × {len(modes)} modes — {where}\n")
    print(table(rows, ("status", "model_calls", "tokens", "wall_s")))
    print()
    print(summary(rows))
    failures = [r for r in rows if r.status != "success"]
    for r in failures:
        print(f"  {r.task} [{r.mode}]: {r.status}: {r.error or r.output}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps([r.as_dict() for r in rows], indent=2) + "\n")
    # Scripted replies are known-good: a failure there is a harness bug.
    return 1 if failures and not args.base_url else 0


if __name__ == "__main__":
    raise SystemExit(main())
