"""The data-task suite through `codeagent.batch`: every task × place as one batch, on either backend.

    .venv/bin/python benchmarks/data_tasks/batch.py                      # scripted replies, local pool
    .venv/bin/python benchmarks/data_tasks/batch.py --backend ray --workers 2
    .venv/bin/python benchmarks/data_tasks/batch.py --base-url http://localhost:8000/v1 --model qwen2.5-coder
        [--suites tools,files] [--executors local,subprocess,docker] [--modes code,single_call,tool_calling]
        [--out DIR] [--max-steps 8] [--timeout 300]

Each (task, mode, executor) is one batch task with id `<task>@<mode>@<executor>`; the factory below
builds the same agents as run.py (modes.make_agent, the suite's tools, the shipped scripted replies
when no endpoint is given) inside the workers, each worker keeping one warm executor per executor
kind and suite. A data-file task's record grants its files (`"files": [data/]`, codeagent.batch's
field), and the executor grants exactly those. Answers are judged by the suite's own checkers and
shown in run.py's tables. `--out DIR` keeps the batch (and resumes it when run again); by default
it goes to a fresh temporary directory.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]

from files_suite import DATA_DIR  # noqa: E402
from modes import MODES, RECOVERABLE_KINDS, RunRow, make_agent  # noqa: E402
from places import EXECUTORS, Places, docker_problem  # noqa: E402
from run import SUITE_OF, SUITES, places_of, report  # noqa: E402

from codeagent import OpenAIModel, RunResult  # noqa: E402
from codeagent.batch import run_batch  # noqa: E402
from codeagent.batch.tasks import run_file_name  # noqa: E402

FACTORY = "batch:data_agent"  # importable in the workers: this directory is on their path
CHECKS = {t.id: t.check for tasks, _, _ in SUITES.values() for t in tasks}
_PLACES = Places()  # this worker's warm executors; they are closed when the worker exits


def data_agent(task: Any, *, files: list[str] | None = None, base_url: str | None = None, model: str | None = None,
               api_key_env: str = "OPENAI_API_KEY", max_steps: int = 8, max_tokens: int | None = None) -> Any:
    """The agent for one (suite task, mode, executor) record: run.py's, built in the worker."""
    mode, kind, suite_task = task.meta["mode"], task.meta["executor"], task.meta["suite_task"]
    suite = SUITE_OF[suite_task]
    if sorted(files or []) != ([str(DATA_DIR)] if suite == "files" else []):
        raise ValueError(f"task {task.id!r} grants {files}, but its suite's executors grant "
                         f"{[str(DATA_DIR)] if suite == 'files' else []}")
    if base_url:
        llm: Any = OpenAIModel(model or "default", base_url=base_url, api_key=os.environ.get(api_key_env),
                               request_options={"max_tokens": max_tokens} if max_tokens else {})
    else:
        from run import scripted_model

        llm = scripted_model(mode, suite_task)
    executor = None if mode == "tool_calling" else _PLACES.get(kind, suite)
    return make_agent(mode, llm, SUITES[suite][1], max_steps, executor=executor)


def records(modes: list[str], executors: list[str], suites: list[str],
            task_ids: set[str] | None = None) -> list[dict[str, Any]]:
    out = []
    for mode, kind in places_of(modes, executors):
        for suite in suites:
            for t in SUITES[suite][0]:
                if task_ids and t.id not in task_ids:
                    continue
                record = {"id": f"{t.id}@{mode}@{kind}", "task": t.prompt, "expected": t.expected, "mode": mode,
                          "executor": kind, "suite_task": t.id}
                if suite == "files":
                    record["files"] = [str(DATA_DIR)]
                out.append(record)
    return out


def to_run_row(row: Any, out: Path) -> RunRow:
    suite_task, mode, kind = row.id.split("@")
    status = row.status
    if status == "success" and not CHECKS[suite_task](row.output):
        status = "wrong_answer"
    run_file = out / "runs" / run_file_name(row.id)
    steps = RunResult.load(run_file).steps if run_file.exists() else []
    recovered = sum(1 for s in steps if s.error_kind in RECOVERABLE_KINDS
                    or (s.error_kind == "execution" and (s.error or "").startswith("SyntaxError")))
    return RunRow(suite_task, mode, status, row.steps, row.model_calls, row.tokens, recovered, round(row.wall_s, 3),
                  row.answer if row.status == "success" else None, row.error, kind,
                  sum(len(s.attachments) for s in steps))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("local", "ray"), default="local")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--address", help="Ray cluster address (default: a local instance)")
    parser.add_argument("--out", help="batch directory (default: a fresh temporary one)")
    parser.add_argument("--base-url", help="an OpenAI-compatible /v1 URL; without it the scripted replies run")
    parser.add_argument("--model", default=None)
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--suites", default=",".join(SUITES))
    parser.add_argument("--executors", default="local", help=f"comma-separated: {', '.join(EXECUTORS)}")
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: all)")
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=300, help="per run, seconds")
    parser.add_argument("--progress", choices=("auto", "bar", "json", "none"), default="auto")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    executors = [e for e in args.executors.split(",") if e]
    suites = [s for s in args.suites.split(",") if s]
    if any(m not in MODES for m in modes) or any(e not in EXECUTORS for e in executors) \
            or any(s not in SUITES for s in suites):
        parser.error(f"modes: {', '.join(MODES)}; executors: {', '.join(EXECUTORS)}; suites: {', '.join(SUITES)}")
    if "docker" in executors and docker_problem():
        print(f"note: docker left out, no engine answers ({docker_problem()})\n")
        executors.remove("docker")
    out = Path(args.out or tempfile.mkdtemp(prefix="data-tasks-batch-"))
    options = {"base_url": args.base_url, "model": args.model, "api_key_env": args.api_key_env,
               "max_steps": args.max_steps, "max_tokens": args.max_tokens}
    # Ray workers do not inherit this process's sys.path: hand them this directory explicitly.
    path = os.pathsep.join([str(HERE), str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    todo = records(modes, executors, suites, {t for t in args.tasks.split(",") if t} or None)
    result = run_batch(FACTORY, todo, out=out,
                       backend=args.backend, workers=args.workers, address=args.address, timeout_s=args.timeout,
                       options=options, progress=args.progress,
                       ray_init={"runtime_env": {"env_vars": {"PYTHONPATH": path}}})
    rows = [to_run_row(r, out) for r in result.rows]
    where = f"{args.model} at {args.base_url}" if args.base_url else "scripted replies (no endpoint given)"
    print(f"Through codeagent.batch ({args.backend}, {args.workers} workers, {out})")
    print(report(rows, where))
    print(f"\nbatch: {result.ran} runs in {result.wall_s:.1f} s ({result.tasks_per_s:.2f} runs/s)"
          + (f", {result.skipped} already done" if result.skipped else ""))
    failures = [r for r in rows if r.status != "success"]
    for r in failures:
        print(f"  {r.task} [{r.place}]: {r.status}: {r.error or r.output}")
    return 1 if failures and not args.base_url else 0


if __name__ == "__main__":
    raise SystemExit(main())
