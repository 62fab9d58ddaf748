"""CodeAgent: the loop that asks a model for Python, runs it, and feeds back what happened.

One step is four moves (code_run.py): ask the model, extract the action from its reply and vet it
(the agent's action format: a code block, or one literal call for weak models), execute it in the
executor, observe what it printed and returned (the next message, or the answer). Steps repeat
until the code calls `final_answer(...)` or `max_steps` is reached. Everything the user sees is in
`RunResult` (from `run` / `arun`) or in the typed events of `stream` / `astream`; model and executor
failures end the run with a status, not with an exception.

The loop is written once (code_run.py, `codeagent.aio`): `arun` / `astream` await the async model,
executor and tools on the caller's event loop; `run` / `stream` drive the same loop with the
blocking ones (no event loop, no thread). Cancelling the task that awaits `arun` (or iterates `astream`) stops the
step (the executor interrupts or kills it), closes the model stream, and records the run as
"cancelled" (the CancelledError carries it: `codeagent.runs.record.cancelled_result(error)`).

Figures a step produced (`ExecutionResult.attachments`) are recorded in the step, saved in the
agent's `output_dir` when it has one, and shown to the model: as images when it can see them
(`model.vision`), else as one line each ("[figure 1: 640×480 PNG, 23 kB, saved as …]").
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import Any, Literal, overload

from executors.base import Executor, Limits

from .. import aio
from ..events import Event, RunEnd
from ..models.constrain.request import model_spelling, spelling_kind
from ..models.openai_model import Model
from ..runs.record import (
    ActionRefused,
    RunResult,
    RunStatus,
    StepRecord,
    cancellable,
    interruptible,
)
from ..tools.grants import access_rule, files_section
from ..tools.tool import Tool, tools_by_name
from .checks import check_access, check_agent_arguments, check_int, default_executor_imports
from .code_run import AdaptationNotes, CodeRun, sees_images
from .formats import DEFAULT_CODE_TAGS, ActionFormat, CodeBlock, normalize_code
from .observation import observation_text
from .prompts import PROMPTS_DIR, load_prompt

__all__ = [
    "CodeAgent", "RunResult", "StepRecord", "RunStatus", "DEFAULT_CODE_TAGS", "ActionRefused",
    "LAST_STEP_NOTE", "PROMPTS_DIR", "normalize_code", "observation_text", "AdaptationNotes", "sees_images",
]

LAST_STEP_NOTE = (
    "This is your last step. Call final_answer(...) now with your best answer, in one code block."
)


class CodeAgent:
    """An agent that acts by writing Python.

    model: any `Model` (`OpenAIModel`, `ScriptedModel`, or your own `complete(messages, stop)`).
    tools: `Tool` objects, typed functions, or {name: callable}; handed to the executor.
    executor: any `executors.Executor`; default a warm `SubprocessExecutor` (the restricted policy
        in a child process, confined by the kernel where the OS allows: its `isolation` says how),
        which the agent owns, starts while the model thinks, and closes. `LocalExecutor()` is the
        explicit choice for speed (same policy, in this process). `authorized_imports` / `limits`
        configure that default; a module named in `authorized_imports` must be installed (checked
        here, not at the first import).
        `additional_authorized_imports` is smolagents' name for `authorized_imports`.
    max_steps: steps before the run ends with status "max_steps".
    max_context_tokens: budget for the messages sent to the model (estimated at ~4 chars/token);
        the oldest steps are dropped first, the system prompt and the task always stay.
    max_observation_chars: observations are cut head+tail to this many characters.
    action_format: how the model writes its action (`codeagent.agent.formats`): `CodeBlock()` (default)
        or `SingleCall(bundleable=...)` for very weak models; it brings its own prompt template.
    access: the files and network the default executor grants (`executors.Access`); with
        executor=..., give it to that executor instead. Either way the agent reads the executor's
        grants and lists what the code can see in the system prompt.
    output_dir: where figures the code produces are saved as the run goes
        (`<run_id>.figure-1.png`, ...), so the model and the events can name the file; None: they
        stay in the RunResult (whose `save(path)` writes them beside the JSON).
    stream_outputs: ask the model for streamed replies, whose text comes out as `TextDelta` events
        and whose reading stops as soon as the code block has closed (the connection is closed:
        tokens past it are not generated). None (default): when the caller streams events
        (`stream`, `astream`), not for `run` / `arun`; True: always; False: never.

    Constrained decoding: when the model constrains its output (`OpenAIModel(constrain=...)`), each
    run asks it which spelling it uses (an "auto" model probes its endpoint at first use) and the
    action format sends the matching constraint with every request; what the model adapted to (the
    probe's verdict, a fallback) comes out of `stream` as `Notice` events.
    """

    last_step_note = LAST_STEP_NOTE  # what the model is told on its last step

    def __init__(
        self,
        model: Model,
        tools: Iterable[Any] | Mapping[str, Any] = (),
        executor: Executor | None = None,
        max_steps: int = 10,
        *,
        authorized_imports: Iterable[str] | None = None,
        limits: Limits | None = None,
        max_context_tokens: int | None = 16_000,
        max_observation_chars: int = 6_000,
        code_tags: tuple[str, str] = DEFAULT_CODE_TAGS,
        instructions: str | None = None,
        system_prompt_template: str | None = None,
        empty_reply_retries: int = 3,
        action_format: ActionFormat | None = None,
        additional_authorized_imports: Iterable[str] | None = None,
        access: Any = None,
        output_dir: str | os.PathLike[str] | None = None,
        stream_outputs: bool | None = None,
    ) -> None:
        check_agent_arguments(model, tools, executor)
        check_access(access, executor)
        check_int("max_steps", max_steps, 1)
        check_int("max_observation_chars", max_observation_chars, 200)
        check_int("empty_reply_retries", empty_reply_retries, 0)
        if max_context_tokens is not None:
            check_int("max_context_tokens", max_context_tokens, 1, none="None for no budget")
        authorized_imports = default_executor_imports(
            authorized_imports, additional_authorized_imports, executor, limits)
        self.model = model
        self.tools: dict[str, Tool] = tools_by_name(tools)
        self.max_steps = max_steps
        self.max_context_tokens = max_context_tokens
        self.max_observation_chars = max_observation_chars
        self.code_tags = code_tags
        self.instructions = instructions
        self.empty_reply_retries = empty_reply_retries
        self.stop_sequences = [code_tags[1], "\nObservation:"]
        self.action_format = (action_format or CodeBlock()).bind(self.tools, code_tags)
        self._template_override = system_prompt_template
        self._authorized_imports = list(authorized_imports) if authorized_imports is not None else None
        self._limits = limits
        self._access = access
        self.output_dir = output_dir
        if stream_outputs not in (None, True, False):
            raise ValueError(f"stream_outputs must be True, False or None (when the caller streams), "
                             f"got {stream_outputs!r}")
        self.stream_outputs = stream_outputs
        self._executor = executor
        self._owns_executor = executor is None
        self._tools_given_to: Executor | None = None  # executors keep tools across reset()
        self._notes = AdaptationNotes(model)

    # -- executor ----------------------------------------------------------------------------

    @property
    def executor(self) -> Executor:
        if self._executor is None:
            from executors.process import SubprocessExecutor

            self._executor = executor = SubprocessExecutor(
                tools=dict(self.tools), authorized_imports=self._authorized_imports, limits=self._limits,
                access=self._access,
            )
            executor.prewarm()  # the worker starts while the model writes its first reply
            self._tools_given_to = executor
        return self._executor

    def close(self) -> None:
        if self._owns_executor and self._executor is not None:
            self._executor.close()
            self._executor = None

    def __enter__(self) -> CodeAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- prompt ------------------------------------------------------------------------------

    def constraint_kind(self) -> str | None:
        """"grammar", "schema" or None: what the model can constrain its replies with (a model with
        constrain="auto" runs its probe on the first call)."""
        return spelling_kind(model_spelling(self.model))

    def system_prompt(self) -> str:
        """The system prompt of the next run (of the last run's constraint kind, once it ran)."""
        imports = tuple(getattr(self.executor, "authorized_imports", ()) or ())
        if "*" in imports:
            imports_text = "any installed module"
        else:
            imports_text = ", ".join(imports) if imports else "none"
        text = self._template_override or load_prompt(self.action_format.template_file)
        fields = {
            "open": self.code_tags[0],
            "close": self.code_tags[1],
            "tools": self.action_format.render_tools(),
            "authorized_imports": imports_text,
            "access": access_rule(self.executor),
            "files": files_section(self.executor),
            "instructions": f"\n{self.instructions.strip()}\n" if self.instructions else "",
            **self.action_format.prompt_fields(),
        }
        for name, value in fields.items():
            text = text.replace("{{" + name + "}}", value)
        return text

    # -- running -----------------------------------------------------------------------------

    @overload
    def run(self, task: str, *, variables: Mapping[str, Any] | None = ..., reset: bool = ...,
            stream: Literal[False] = ...) -> RunResult: ...

    @overload
    def run(self, task: str, *, variables: Mapping[str, Any] | None = ..., reset: bool = ...,
            stream: Literal[True]) -> Iterator[Event]: ...

    def run(self, task: str, *, variables: Mapping[str, Any] | None = None, reset: bool = True,
            stream: bool = False) -> RunResult | Iterator[Event]:
        """Run the task to its end and return what happened: a `RunResult`.

        It never raises for a model, endpoint or code failure: the result's `status` and `error`
        say what happened, and `result.raise_for_status()` turns a failed run into an exception.
        stream=True: return `self.stream(task, ...)` instead, the run's events as they happen.
        """
        if stream:
            return self.stream(task, variables=variables, reset=reset)
        return _result(self._events(task, variables, reset, streaming=self.stream_outputs is True))

    def stream(
        self, task: str, *, variables: Mapping[str, Any] | None = None, reset: bool = True
    ) -> Iterator[Event]:
        """Run the task, yielding typed events as they happen; the last one is `RunEnd`. The model's
        reply comes in as `TextDelta` events (see `stream_outputs`)."""
        return self._events(task, variables, reset, streaming=self.stream_outputs is not False)

    async def arun(self, task: str, *, variables: Mapping[str, Any] | None = None,
                   reset: bool = True) -> RunResult:
        """`run`, awaited on the running event loop: the model's async client, the executor's
        `aexecute`, async tools awaited on this loop. Cancelling the task that awaits it stops the
        run (its step stopped, its model stream closed): the CancelledError carries the run so far
        as `.result`, status "cancelled" (`codeagent.runs.record.cancelled_result(error)`)."""
        end: RunEnd | None = None
        async for event in self._aevents(task, variables, reset, streaming=self.stream_outputs is True):
            if isinstance(event, RunEnd):
                end = event
        assert end is not None and isinstance(end.result, RunResult)
        return end.result

    def astream(self, task: str, *, variables: Mapping[str, Any] | None = None,
                reset: bool = True) -> AsyncIterator[Event]:
        """`stream`, as an async iterator: `async for event in agent.astream(task)`."""
        return self._aevents(task, variables, reset, streaming=self.stream_outputs is not False)

    def _events(self, task: str, variables: Mapping[str, Any] | None, reset: bool,
                streaming: bool) -> Iterator[Event]:
        run = CodeRun(self, task, variables, reset, streaming)
        return run.rec.traced(interruptible(aio.events(run.events()), run.rec))

    def _aevents(self, task: str, variables: Mapping[str, Any] | None, reset: bool,
                 streaming: bool) -> AsyncIterator[Event]:
        run = CodeRun(self, task, variables, reset, streaming)
        return run.rec.atraced(cancellable(aio.aevents(run.events()), run.rec))


def _result(events: Iterator[Event]) -> RunResult:
    """The RunResult a run's events end with."""
    end: RunEnd | None = None
    for event in events:
        if isinstance(event, RunEnd):
            end = event
    assert end is not None and isinstance(end.result, RunResult)
    return end.result
