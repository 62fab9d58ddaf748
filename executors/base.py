"""The executor contract shared by every place code can run (in process, subprocess, container).

`execute(code)` never raises for anything the code did: every failure comes back as
`ExecutionResult.error`. It raises `ExecutorError` only when the executor itself is broken.
"""

from __future__ import annotations

import contextvars
import dataclasses
import inspect
import math
import threading
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

# Text is cut one way everywhere (the note's count is true, cuts of cuts included): the worker's.
from .worker.display import cut_middle, full_length

# Their one home is the stdlib-only worker package: the worker raises the very same classes.
from .worker.errors import FinalAnswer, ToolError

__all__ = [
    "Attachment",
    "Limits",
    "ExecutionError",
    "ExecutionResult",
    "ExecutorError",
    "FinalAnswer",
    "ToolError",
    "Executor",
    "ExecutorBase",
    "DEFAULT_AUTHORIZED_IMPORTS",
    "FINAL_ANSWER_NAME",
    "MAX_SOURCE_CHARS",
    "check_code",
    "MAX_TIMEOUT_S",
    "timeout_seconds",
    "StepLoop",
    "acall_tool",
    "run_coroutine",
    "cut_middle",
    "full_length",
]

FINAL_ANSWER_NAME = "final_answer"

# Modules model code may import by default. Each is handed over as a proxy that exposes only
# public, non-module attributes, minus the members listed in restricted/policy.py as dangerous.
DEFAULT_AUTHORIZED_IMPORTS: tuple[str, ...] = (
    "math", "cmath", "statistics", "re", "json", "random", "collections", "collections.abc",
    "datetime", "itertools", "functools", "decimal", "fractions", "string", "textwrap", "heapq",
    "bisect", "dataclasses", "enum", "typing", "operator", "copy", "unicodedata", "time", "csv",
    "io", "numbers", "array", "calendar", "zoneinfo", "difflib", "pprint", "base64", "hashlib",
    "uuid",
)


# The longest timeout any place can wait for: poll() takes 2**31 - 1 ms (24.8 days), and a host
# deadline is the timeout plus a grace period. A longer one is clamped to this, not refused: the
# user asked for "very long", and this is as long as the operating system can wait.
MAX_TIMEOUT_S = 2_000_000.0


def timeout_seconds(value: Any, setting: str = "timeout_s") -> float:
    """The one rule for every timeout a user sets (Limits, the model's, a batch task's, the CLI's):
    a finite number of seconds > 0, clamped to MAX_TIMEOUT_S. `setting` names it in the error."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or not value > 0:
        raise ValueError(f"{setting} must be a finite number of seconds > 0, got {value!r}")
    return min(float(value), MAX_TIMEOUT_S)


# Compiling happens before any clock starts: every executor bounds the code by its size instead.
MAX_SOURCE_CHARS = 100_000


@dataclass(frozen=True)
class Limits:
    """Resource limits for one `execute()` call.

    In process (`LocalExecutor`) time, operations, output and recursion are enforced exactly;
    memory is enforced with size checks and a temporary address-space cap (best effort: hard
    memory caps come from `SubprocessExecutor` and `DockerExecutor`). `None` disables a limit.

    `max_operations` is a budget of loop iterations, deterministic where a time limit depends on
    the machine's load. By default there is none: the time limit bounds the work, so correct
    code that fits in `timeout_s` is never refused, and loops run unmetered at CPython's speed.
    Set one (with or without `timeout_s`) to stop runaway loops at the same point on any machine.
    """

    timeout_s: float = 5.0
    max_operations: int | None = None
    max_output_chars: int = 20_000
    max_memory_mb: int | None = 256
    max_recursion_depth: int = 200
    # Figures and images a step returns (ExecutionResult.attachments): total bytes per step.
    max_attachment_bytes: int = 5_000_000
    # Binary payloads (arrays, frames, Arrow data, bytes, images) in one message across the
    # boundary: values within it cross whole (through shared memory where the place has it);
    # past it the value is refused with an error that names this setting.
    max_payload_bytes: int = 1 << 30

    def __post_init__(self) -> None:
        if self.timeout_s is not None:  # None: no time limit
            object.__setattr__(self, "timeout_s", timeout_seconds(self.timeout_s, "Limits.timeout_s"))
        for name in ("max_operations", "max_memory_mb"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise ValueError(f"Limits.{name} must be a positive int or None, got {value!r}")
        if not isinstance(self.max_output_chars, int) or self.max_output_chars < 100:
            raise ValueError(
                f"Limits.max_output_chars must be an int >= 100, got {self.max_output_chars!r}"
            )
        if not isinstance(self.max_attachment_bytes, int) or self.max_attachment_bytes < 0:
            raise ValueError(f"Limits.max_attachment_bytes must be an int >= 0 (0: none), got "
                             f"{self.max_attachment_bytes!r}")
        if not isinstance(self.max_payload_bytes, int) or not 0 < self.max_payload_bytes < 1 << 40:
            raise ValueError(f"Limits.max_payload_bytes must be a positive int under 1 TiB, got "
                             f"{self.max_payload_bytes!r}")
        if not isinstance(self.max_recursion_depth, int) or self.max_recursion_depth < 10:
            raise ValueError(
                f"Limits.max_recursion_depth must be an int >= 10, got {self.max_recursion_depth!r}"
            )

    def replace(self, **changes: Any) -> Limits:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class ExecutionError:
    """What went wrong in the model's code, written for the model.

    `type` is the exception name (`NameError`, `SyntaxError`, ...) or one of ours:
    `PolicyError` (the code does something the policy forbids), `TimeoutError`,
    `OperationLimitError`, `MemoryError`, `RecursionError`, `ToolError`, `WorkerCrashed`.
    """

    type: str
    message: str
    lineno: int | None = None
    line: str | None = None

    def __str__(self) -> str:
        where = f" (line {self.lineno}: {self.line.strip()})" if self.lineno and self.line else (
            f" (line {self.lineno})" if self.lineno else ""
        )
        return f"{self.type}: {self.message}{where}"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Attachment:
    """A file a step produced for the caller: a figure left open, a PIL image as the last value.

    media_type: e.g. "image/png". data: the bytes. name: a short label ("figure 1").
    width/height: pixels, when known.
    """

    media_type: str
    data: bytes
    name: str = ""
    width: int | None = None
    height: int | None = None

    @property
    def size(self) -> int:
        return len(self.data)

    def describe(self) -> str:
        """One line for a model that cannot see images: `figure 1: 640×480 PNG, 23 kB`."""
        kind = self.media_type.split("/")[-1].upper()
        dims = f"{self.width}×{self.height} " if self.width and self.height else ""
        return f"{self.name or 'attachment'}: {dims}{kind}, {max(1, round(self.size / 1000))} kB"


@dataclass(frozen=True)
class ExecutionResult:
    """The outcome of one `execute()`.

    output: value of the last expression statement (or the final answer), else None.
    output_repr: `repr(output)` computed inside the sandbox under its limits (never run model
        code on the host to render a value); None when output is None.
    logs: everything printed, truncated head+tail to `Limits.max_output_chars`.
    state_lost: the executor had to restart (timeout kill, crash): variables are gone.
    attachments: figures and images the step produced (see `Attachment`), at most
        `Limits.max_attachment_bytes` in all.
    operations: what the step charged to `Limits.max_operations` (the restricted policy's
        operation budget), None where nothing counts them (no budget set, or the open policy).
    """

    output: Any = None
    logs: str = ""
    is_final_answer: bool = False
    error: ExecutionError | None = None
    duration_s: float = 0.0
    output_repr: str | None = None
    state_lost: bool = False
    attachments: tuple[Attachment, ...] = ()
    operations: int | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


_RESULT_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ExecutionResult)}


def make_result(**fields: Any) -> ExecutionResult:
    """`ExecutionResult(**fields)` for the executors' hot path: the frozen dataclass's generated
    `__init__` sets each field through `object.__setattr__` (~3 µs a result); this fills the
    instance's dict at once (same fields, same defaults, nothing to validate)."""
    result = object.__new__(ExecutionResult)
    result.__dict__.update(_RESULT_DEFAULTS, **fields)
    return result


def check_code(code: object) -> ExecutionError | None:
    """The one answer every executor gives for code it cannot take (not a str, too large).

    Returned as the result's error, never raised: `execute()` raises only when the executor is
    broken, and a caller that passes bytes or a huge string gets the same answer everywhere.
    """
    if not isinstance(code, str):
        return ExecutionError("TypeError", f"code must be a str, not {type(code).__name__}")
    if len(code) > MAX_SOURCE_CHARS:
        return ExecutionError(
            "CodeTooLarge", f"the code is {len(code):,} characters long, over the limit of "
            f"{MAX_SOURCE_CHARS:,}; send shorter code and keep data in variables or tools")
    return None


class ExecutorError(RuntimeError):
    """The executor itself is broken (cannot start, engine unreachable, ...): not the code's fault."""


@runtime_checkable
class Executor(Protocol):
    """What every executor offers. Tools are host callables the code can call by name.

    The executors of this package also offer `async aexecute(code)`: the same contract, awaited
    on the caller's event loop (not part of this protocol, so an executor of your own with
    `execute` alone still is one; codeagent runs it on a thread then).
    """

    authorized_imports: tuple[str, ...]
    limits: Limits

    def execute(self, code: str) -> ExecutionResult: ...

    def register_tools(self, tools: Mapping[str, Callable[..., Any]]) -> None: ...

    def set_variables(self, values: Mapping[str, Any]) -> None: ...

    def get_variables(self, names: Iterable[str] | None = None) -> dict[str, Any]:
        """The model's variables (all, or those named): values that cross as JSON as themselves,
        anything else as its repr. Tools, `final_answer` and imported modules are not variables."""
        ...

    def reset(self) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...


def normalize_tools(tools: Mapping[str, Callable[..., Any]] | Iterable[Any] | None) -> dict[str, Callable[..., Any]]:
    """Accept {name: callable} or an iterable of objects with a `.name` (Tool objects) or functions.
    A coroutine function becomes an `AsyncTool`: callable from a step's thread, awaited by aexecute."""
    if tools is None:
        return {}
    if isinstance(tools, Mapping):
        items = list(tools.items())
    else:
        items = []
        for t in tools:
            name = getattr(t, "name", None) or getattr(t, "__name__", None)
            if not isinstance(name, str):
                raise TypeError(f"cannot tell the name of tool {t!r}: pass a dict {{name: callable}}")
            items.append((name, t))
    out: dict[str, Callable[..., Any]] = {}
    for name, fn in items:
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise ValueError(f"tool name {name!r} must be a public Python identifier")
        if name == FINAL_ANSWER_NAME:
            raise ValueError(f"'{FINAL_ANSWER_NAME}' is built in and cannot be registered as a tool")
        if not callable(fn):
            raise TypeError(f"tool {name!r} is not callable: {fn!r}")
        out[name] = AsyncTool(fn) if is_coroutine_function(fn) else fn
    return out


def extra_imports(names: Iterable[str] | None) -> list[str]:
    """The names of `names` beyond the default set (those are stdlib: always importable)."""
    if names is None or isinstance(names, str):
        return []
    return [n for n in names if isinstance(n, str) and n not in DEFAULT_AUTHORIZED_IMPORTS]


STAR_REFUSAL = (
    "authorized_imports=['*'] is not supported by the restricted policy: it authorizes modules by "
    "name, and with '*' every installed package would import as a trusted library (its "
    "import-time code run with files and native code allowed, in process as in the worker). "
    "Name the packages the code needs instead (e.g. ['numpy', 'pandas']: each brings its public "
    "modules), or run full Python in a container: DockerExecutor(policy='open')")


def refuse_star(authorized_imports: Iterable[str] | None, policy: str = "restricted") -> None:
    """authorized_imports=['*'] is refused under the restricted policy, before anything starts
    (see STAR_REFUSAL). The open policy imports anything: '*' says nothing more there."""
    if policy == "restricted" and isinstance(authorized_imports, (list, tuple, set, frozenset)) \
            and "*" in authorized_imports:
        raise ValueError(STAR_REFUSAL)


def normalize_imports(extra: Iterable[str] | None, *, defaults: bool = True) -> tuple[str, ...]:
    """The default safe modules plus the user's additions ("pkg" or "pkg.*"), deduplicated."""
    names = list(DEFAULT_AUTHORIZED_IMPORTS) if defaults else []
    if isinstance(extra, str):
        raise TypeError("authorized_imports must be a list of module names, not a string")
    for name in extra or ():
        if not isinstance(name, str) or not name:
            raise ValueError(f"invalid module name in authorized_imports: {name!r}")
        parts = name.split(".")
        if not all(p.isidentifier() or (p == "*" and i == len(parts) - 1) for i, p in enumerate(parts)):
            raise ValueError(f"invalid module name in authorized_imports: {name!r}")
        if name not in names:
            names.append(name)
    return tuple(names)


class ExecutorBase:
    """Shared plumbing for executors: the context manager, and an `aexecute` that runs `execute` on
    a thread (the executors of this package replace it with one that waits without a thread).
    Subclasses implement the contract."""

    async def aexecute(self, code: str) -> ExecutionResult:
        """`execute(code)` awaited: the same contract, on a thread the event loop does not wait on."""
        import asyncio

        return await asyncio.to_thread(self.execute, code)  # type: ignore[attr-defined]  # (in this context)

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:  # pragma: no cover - overridden
        pass


def check_variable_names(values: Mapping[str, Any], tools: Iterable[str]) -> None:
    """set_variables: every name a public identifier that no tool (or final_answer) holds."""
    if not isinstance(values, Mapping):
        raise TypeError("set_variables needs a mapping of names to values")
    taken = set(tools) | {FINAL_ANSWER_NAME}
    for name in values:
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise ValueError(f"variable name {name!r} must be a public Python identifier")
        if name in taken:
            raise ValueError(f"variable name {name!r} is taken by a tool")


def variable_names_asked(names: Iterable[str] | None) -> list[str] | None:
    """get_variables: None (all), or the names asked for, once each, in order."""
    if names is None:
        return None
    if isinstance(names, str):
        raise TypeError("get_variables takes a list of names (or None for all), not a str")
    wanted = list(names)
    for name in wanted:
        if not isinstance(name, str):
            raise TypeError(f"variable names must be str, got {type(name).__name__}")
    return list(dict.fromkeys(wanted))


# -- async tools ---------------------------------------------------------------------------------
# A tool may be a coroutine function (or offer `acall`, as codeagent's Tool does). An executor's
# `aexecute` awaits it on the caller's loop (`acall_tool`); a step's own thread (in process), or a
# synchronous `execute`, runs it to its end with `run_coroutine`: on the loop of the async step
# that is running (`StepLoop`, found through a context variable), else on a background loop.


def is_coroutine_function(fn: Any) -> bool:
    """`fn` returns a coroutine: an `async def` function, a partial of one, or an object whose
    `__call__` is one."""
    return inspect.iscoroutinefunction(fn) or (
        callable(fn) and not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__))


class StepLoop:
    """The event loop an async step (`aexecute`) is awaited on. Tool coroutines that the step's
    thread calls run there; `cancel()` stops those still running (the step was cancelled)."""

    def __init__(self, loop: Any) -> None:
        self.loop = loop
        self.pending: set[Any] = set()  # concurrent futures of the tool calls under way
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        for future in list(self.pending):
            future.cancel()


STEP_LOOP: contextvars.ContextVar[StepLoop | None] = contextvars.ContextVar("executors_step_loop", default=None)
_background: list[Any] = []  # the background loop, started at the first use
_background_lock = threading.Lock()


def _background_loop() -> Any:
    import asyncio

    with _background_lock:
        if not _background or _background[0].is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="executors-async-tools", daemon=True).start()
            _background[:] = [loop]
        return _background[0]


def run_coroutine(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a tool's coroutine to its end from synchronous code and return its value (or raise its
    error): on the loop of the async step calling it, else on a background loop. Waits in slices,
    so an interrupt sent to this thread (a deadline, a cancelled step) lands; the coroutine is
    cancelled when the wait ends early."""
    import asyncio
    import concurrent.futures

    bound = STEP_LOOP.get()
    loop = bound.loop if bound is not None and not bound.cancelled else None
    if loop is None or loop.is_closed() or _running_loop() is loop:
        loop, bound = _background_loop(), None  # (a loop cannot wait on itself)
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    if bound is not None:
        bound.pending.add(future)
    try:
        while not future.done():
            concurrent.futures.wait((future,), 0.05)
        return future.result()
    except BaseException:
        future.cancel()
        raise
    finally:
        if bound is not None:
            bound.pending.discard(future)


def _running_loop() -> Any:
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class AsyncTool:
    """A coroutine function as a tool: called synchronously (a step's thread), it runs to its end
    with `run_coroutine`; `aexecute` awaits `acall` on its own loop."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.acall = fn
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return run_coroutine(self.acall(*args, **kwargs))

    def __repr__(self) -> str:
        return f"AsyncTool({self.acall!r})"


async def acall_tool(fn: Callable[..., Any], args: Any, kwargs: Mapping[str, Any]) -> Any:
    """Call a host tool from async code: its `acall` (a coroutine function, or a Tool's) awaited on
    this loop; a plain function on a thread, so a slow one does not hold up the loop."""
    acall = getattr(fn, "acall", None)
    if acall is not None and callable(acall):
        return await acall(*args, **kwargs)
    if is_coroutine_function(fn):
        return await fn(*args, **kwargs)
    import asyncio

    return await asyncio.to_thread(fn, *args, **kwargs)  # (in a copy of this context)
