"""Runs and batches for the view's tests and benchmark, made by the real agent in a real executor
with scripted replies: every way a step can go, a data run with a real matplotlib figure, replies
full of XSS payloads, and batch folders written by the batch's own ResultStore."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from codeagent import CodeAgent, RunResult, ScriptedModel, tool
from codeagent.batch.store import ResultStore
from codeagent.batch.worker import model_calls
from executors import Limits, LocalExecutor

# Each sets a window flag if it ever runs; the browser test checks that none did.
XSS = [
    "<script>window.__xss = 'script'</script>",
    "<img src=x onerror=\"window.__xss = 'img'\">",
    "<a href=\"javascript:window.__xss = 'link'\">click me</a>",
    "<svg onload=\"window.__xss = 'svg'\"></svg>",
    "\"><script>window.__xss = 'attr'</script>",
    "</pre></td></tr></table><textarea><iframe srcdoc=\"<script>parent.__xss = 'iframe'</script>\"></iframe>",
    "<style>body { display: none }</style><meta http-equiv=refresh content=\"0;url=javascript:window.__xss=1\">",
]
XSS_TEXT = "\n".join(XSS)


@tool
def lookup(key: str) -> str:
    """Look a key up in the inventory."""
    raise KeyError(f"no such key {key!r}")


def code(body: str, thought: str = "Thought: next.") -> str:
    return f"{thought}\n<code>\n{body}\n</code>"


def scripted_run(replies: Sequence[Any], *, task: str = "Do the task.", max_steps: int | None = None,
                 limits: Limits | None = None, imports: Sequence[str] = (), out: Path | None = None,
                 executor: Any = None) -> RunResult:
    """A real CodeAgent run in a LocalExecutor (or `executor`), the replies scripted."""
    model = ScriptedModel(list(replies))
    own = executor is None
    # a generous deadline by default: a figure drawn on a loaded machine must not become a timeout
    ex = executor or LocalExecutor(tools={"lookup": lookup}, authorized_imports=list(imports),
                                   limits=limits or Limits(timeout_s=60))
    try:
        agent = CodeAgent(model, tools=[lookup], executor=ex, max_steps=max_steps or len(replies), output_dir=out)
        return agent.run(task)
    finally:
        if own:
            ex.close()


def every_step_kind(out: Path | None = None) -> RunResult:
    """One run whose steps go every way a step can that does not depend on time: no code, policy
    refusal, tool error, repeated action, figure too large; no final answer at the end."""
    replies = [
        "I think the answer is 4.",                                   # parse
        code("import os\nprint(os.getcwd())"),                        # refused by the policy
        code("lookup('widgets')"),                                     # tool error
        code("lookup('widgets')"),                                     # repeated action
        code("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nprint('drawn')"),  # figure too large
    ]
    return scripted_run(replies, task="Count the widgets.", limits=Limits(timeout_s=60, max_attachment_bytes=200),
                        imports=["matplotlib.*"], out=out)


def timeout_run() -> RunResult:
    """A step that sleeps far past its deadline (the only timing here: 30 s against 0.3 s)."""
    return scripted_run([code("import time\ntime.sleep(30)")], limits=Limits(timeout_s=0.3), imports=["time"])


DATA_REPLIES = [
    code("import numpy as np\nimport matplotlib.pyplot as plt\nx = np.linspace(0, 6.3, 200)\n"
         "plt.figure(figsize=(5, 2.5))\nplt.plot(x, np.sin(x), label='sin')\nplt.legend()\n"
         "peak = float(x[np.argmax(np.sin(x))])\nprint(f'peak at {peak:.3f}')",
         "Thought: plot the sine and find its peak."),
    code("final_answer(round(peak, 2))", "Thought: the peak is near pi/2."),
]


def data_run(out: Path) -> RunResult:
    """A data run with one real matplotlib figure, saved under `out` (figures beside the JSON)."""
    result = scripted_run(DATA_REPLIES, task="Where does sin(x) peak on [0, 6.3]? Plot it.",
                          imports=["numpy", "matplotlib.*"], out=out)
    result.save(out / f"{result.run_id}.json")
    return result


def xss_run() -> RunResult:
    """Hostile text in every field a page shows: task, thought, code, logs, value, error, answer."""
    replies = [
        f"Thought: {XSS_TEXT}\n<code>\nprint({XSS_TEXT!r})\n{XSS[1]!r}\n</code>",
        code(f"raise ValueError({XSS[0]!r})", f"Thought: {XSS[2]}"),
        code(f"final_answer({XSS_TEXT!r})", XSS[3]),
    ]
    return scripted_run(replies, task=f"Repeat this: {XSS_TEXT}")


def row_of(task_id: str, run: RunResult, expected: Any = None, **extra: Any) -> dict[str, Any]:
    """The results.jsonl line the batch writes for a task."""
    row = {"id": task_id, "status": run.status, "output": json.loads(run.to_json())["output"],
           "output_repr": run.output_repr, "error": run.error, "steps": len(run.steps),
           "model_calls": model_calls(run.steps), "tokens": run.usage.total_tokens,
           "wall_s": round(run.duration_s, 4), "attempts": 1}
    if expected is not None:
        row["expected"] = expected
        row["correct"] = run.status == "success" and row["output"] == expected
    return {**row, **extra}


def write_batch(folder: Path, tasks: Sequence[tuple[str, RunResult, Any]], *, session: dict[str, Any] | None = None) -> Path:
    """A batch folder as run_batch leaves it: results.jsonl, runs/<id>.json, batch.json."""
    def as_written(run: RunResult) -> dict[str, Any]:  # figures where the run saved them, by absolute path
        record = json.loads(run.to_json())
        for step, original in zip(record["steps"], run.steps, strict=True):
            for attachment, saved in zip(step["attachments"], original.attachments, strict=True):
                attachment["file"] = str(saved.path.resolve()) if saved.path else None
        return record

    with ResultStore(folder) as store:
        store.record_many([(row_of(task_id, run, expected), as_written(run)) for task_id, run, expected in tasks])
        store.write_meta(session or {"backend": "local", "workers": 2, "executor": "local",
                                     "options": {"model": "scripted", "mode": "code"}})
    return folder
