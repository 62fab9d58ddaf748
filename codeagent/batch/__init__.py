"""Many agent runs at once: `run_batch` on a local process pool or on Ray.

    from codeagent.batch import run_batch

    summary = run_batch("mypkg.agents:make_agent", "tasks.jsonl", out="runs/eval-1",
                        backend="local", workers=4, timeout_s=300, retries=1)
    print(summary.table())          # per task: status, answer, steps, model calls, tokens, wall time
    summary.success_rate, summary.totals()

Tasks are JSON records (`id`, `task`, optional `expected`, `variables`, `files`; see
codeagent.batch.tasks), from a JSONL file or an iterable. The agent factory is called once per task,
in the worker, with `options` as keyword arguments plus whichever of these it declares as
parameters: `task` (the BatchTask), `executor` (the worker's warm executor, when `executor=` is
"local", "subprocess" or "docker"), `files` (the task's files; a task with files needs a factory
that takes them). It returns any agent with `run(task, variables=...)` returning a RunResult
(CodeAgent, SingleCallAgent, ToolCallingAgent, auto_agent(...)).

The factory is given as "module:attr" (a function defined at module level is turned into that
reference): workers import it, so nothing is pickled by value and the same reference works on
every Ray node. Options, tasks and results cross as JSON only.

`out/` gets `runs/<id>.json` (each run's RunResult, as `RunResult.load` reads it) and
`results.jsonl` (one line per task: `id`, `status`, `output`, `output_repr`, `error`, `steps`,
`model_calls`, `tokens`, `wall_s`, `attempts`, and `expected`/`correct` when the task has an
expected answer), plus `batch.json` (the options of each session). Started again with the same
`out`, a batch skips the tasks already in results.jsonl.

Statuses: a RunResult's (`success`, `max_steps`, `failed`), or `timeout` (cut at `timeout_s`: its
worker is killed and replaced), `crashed` (its worker died, after `retries` more tries), `error`
(building or running the agent raised, after `retries` more tries). None of them stops the batch.
"""

from __future__ import annotations

from .scheduler import BACKENDS, DEFAULT_TIMEOUT_S, BatchError, run_batch
from .store import read_results
from .summary import BatchSummary, TaskRow, answers_match, compare
from .tasks import BatchTask, TaskError, load_tasks

__all__ = [
    "run_batch", "BatchSummary", "TaskRow", "BatchTask", "BatchError", "TaskError", "load_tasks",
    "read_results", "compare", "answers_match", "BACKENDS", "DEFAULT_TIMEOUT_S",
]
