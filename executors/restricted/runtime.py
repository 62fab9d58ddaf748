"""The in-process restricted runtime: check → instrument → compile → exec with guarded builtins.

Used by LocalExecutor, and by the worker process under the restricted policy. Stdlib and our own
modules only (no third-party imports at run time besides RestrictedPython's constants).
"""

from __future__ import annotations

import ast
import builtins
import decimal
import itertools
import os
import resource
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..base import (
    FINAL_ANSWER_NAME,
    ExecutionError,
    ExecutionResult,
    FinalAnswer,
    Limits,
    ToolError,
    normalize_imports,
    normalize_tools,
)
from .guards import (
    ImportPolicyError,
    LimitExceeded,
    OutputBuffer,
    PolicyError,
    RunState,
    SandboxFinished,
    fmt_attr,
    guarded_lshift,
    guarded_pow,
    make_getattr,
    make_hasattr,
    make_print,
    match_check,
    safe_dir,
)
from .host_guard import HostGuard, SandboxType
from .instrument import RESULT_NAME, instrument
from .policy import inspect_tree
from .sandbox_modules import SandboxImporter
from .watchdog import CPU_ALARM, WATCHDOG, Interrupt

__all__ = ["RestrictedRuntime", "PolicyError", "safe_repr"]

# Plain builtins handed to model code as they are (RestrictedPython's safe set plus the
# iteration, container and class helpers data code needs).
_PLAIN_BUILTINS = (
    "abs", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "classmethod",
    "complex", "dict", "divmod", "enumerate", "filter", "float", "format", "frozenset", "hash",
    "hex", "id", "int", "isinstance", "issubclass", "len", "list", "map", "next",
    "object", "oct", "ord", "property", "repr", "reversed", "round", "set", "slice",
    "staticmethod", "str", "super", "tuple", "zip",
    "None", "True", "False", "NotImplemented", "Ellipsis",
)
_EXCEPTIONS = tuple(
    name for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException) and not name.startswith("_")
)
_MAX_SOURCES = 64
# Compiling happens before the clock starts: bound it by the size of the source instead.
MAX_SOURCE_CHARS = 100_000
_CACHE_SIZE = 256


def safe_repr(value: Any, limit: int = 20_000) -> str:
    try:
        text = repr(value)
        if type(text) is not str:
            raise TypeError
    except BaseException:  # noqa: BLE001 - model-defined __repr__ may raise anything
        text = object.__repr__(value)
    if len(text) > limit:
        half = limit // 2
        text = f"{text[:half]} ... [{len(text) - limit:,} characters omitted] ... {text[-half:]}"
    return text


class _ProcessCaps:
    """Process-wide caps (address space, recursion) held while any run is active.

    Both are process settings, so concurrent runs in several threads share one setting: the most
    generous of the active requests. They are restored when the last run leaves.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.saved_as: tuple[int, int] | None = None
        self.saved_recursion = sys.getrecursionlimit()
        self.page = os.sysconf("SC_PAGE_SIZE")
        self._statm: int | None = None

    def _vm_bytes(self) -> int:
        # A kept-open /proc file re-read with pread: a few microseconds instead of an open().
        if self._statm is None:
            self._statm = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
        return int(os.pread(self._statm, 128, 0).split()[0]) * self.page

    def enter(self, memory_mb: int | None, depth: int) -> None:
        with self.lock:
            # The recursion limit is per interpreter, not per thread: while other host threads
            # run, model recursion is bounded at 1000 frames rather than max_recursion_depth.
            if _other_host_threads():
                # Other host threads: never below Python's default (1000), which still keeps
                # C recursion (repr of a deep structure) far from the C stack's end.
                depth = max(depth, 1000)
            if self.active == 0:
                self.saved_recursion = sys.getrecursionlimit()
                self.saved_as = resource.getrlimit(resource.RLIMIT_AS) if memory_mb else None
                sys.setrecursionlimit(depth)
            elif depth > sys.getrecursionlimit():
                sys.setrecursionlimit(depth)
            if memory_mb:
                try:
                    want = self._vm_bytes() + memory_mb * 1024 * 1024
                    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
                    if self.saved_as is None:
                        self.saved_as = (soft, hard)
                    if hard != resource.RLIM_INFINITY:
                        want = min(want, hard)
                    if self.active == 0 or soft == resource.RLIM_INFINITY or want > soft:
                        resource.setrlimit(resource.RLIMIT_AS, (want, hard))
                except (OSError, ValueError):
                    pass  # no /proc or no rlimits here: size checks still apply
            self.active += 1

    def leave(self) -> None:
        with self.lock:
            self.active -= 1
            if self.active == 0:
                if self.saved_as is not None:
                    try:
                        resource.setrlimit(resource.RLIMIT_AS, self.saved_as)
                    except (OSError, ValueError):
                        pass
                    self.saved_as = None
                sys.setrecursionlimit(self.saved_recursion)


_CAPS = _ProcessCaps()


def _other_host_threads() -> bool:
    """A non-daemon thread besides this one is running host work (daemon threads are taken
    to be background helpers, like our watchdog)."""
    current = threading.current_thread()
    return any(t is not current and not t.daemon and t.is_alive() for t in threading.enumerate())


def _frame_depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth


class RestrictedRuntime:
    """Runs model code in this process under the restricted policy. Not thread-safe per
    instance: one `execute()` at a time (use one runtime per thread)."""

    def __init__(
        self,
        tools: Mapping[str, Callable[..., Any]] | Iterable[Any] | None = None,
        authorized_imports: Iterable[str] | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.limits = limits or Limits()
        if not isinstance(self.limits, Limits):
            raise TypeError(f"limits must be an executors.Limits, not {type(self.limits).__name__}")
        self.authorized_imports = normalize_imports(authorized_imports)
        self._tools: dict[str, Callable[..., Any]] = {}
        self._cache: OrderedDict[str, tuple[Any, ExecutionError | None, str]] = OrderedDict()
        self._sources: OrderedDict[str, list[str]] = OrderedDict()
        self._step = 0
        self._buffer = OutputBuffer(self.limits.max_output_chars)
        self._lock = threading.Lock()
        self._new_namespace()
        self.register_tools(tools)

    # -- namespace ----------------------------------------------------------------------------
    def _new_namespace(self) -> None:
        ns: dict[str, Any] = {}
        # The run state (and its watchdog entry) outlives reset(): only the namespace is new.
        state = getattr(self, "state", None) or RunState(ns)
        state.ns = ns
        self.state = state
        print_fn = make_print(lambda: self._buffer)
        host = HostGuard()
        self.host_guard = host
        importer = SandboxImporter(self.authorized_imports, state, print_fn, host)
        guard = state.guard_iter
        _sum, _min, _max, _sorted, _any, _all = sum, min, max, sorted, any, all

        def g_sum(iterable: Any, /, start: Any = 0) -> Any:
            return _sum(guard(iterable), start)

        def g_min(*args: Any, **kwargs: Any) -> Any:
            return _min(guard(args[0]), **kwargs) if len(args) == 1 else _min(*args, **kwargs)

        def g_max(*args: Any, **kwargs: Any) -> Any:
            return _max(guard(args[0]), **kwargs) if len(args) == 1 else _max(*args, **kwargs)

        def g_sorted(iterable: Any, /, *, key: Any = None, reverse: bool = False) -> list:
            return _sorted(guard(iterable), key=key, reverse=reverse)

        def g_any(iterable: Any, /) -> bool:
            return _any(guard(iterable))

        def g_all(iterable: Any, /) -> bool:
            return _all(guard(iterable))

        for fn, name in ((g_sum, "sum"), (g_min, "min"), (g_max, "max"), (g_sorted, "sorted"),
                         (g_any, "any"), (g_all, "all")):
            fn.__name__ = fn.__qualname__ = name

        getattr_ = make_getattr(host.attr, host.private_attr)
        safe_builtins: dict[str, Any] = {name: getattr(builtins, name) for name in _PLAIN_BUILTINS}
        safe_builtins.update({name: getattr(builtins, name) for name in _EXCEPTIONS})
        safe_builtins.update(
            print=print_fn, getattr=getattr_, hasattr=make_hasattr(getattr_),
            range=state.guard_range, iter=state.guard_iter_call, vars=host.vars,
            setattr=host.setattr, delattr=host.delattr, type=SandboxType,
            __build_class__=host.build_class, dir=safe_dir(ns), pow=guarded_pow, __import__=importer,
            sum=g_sum, min=g_min, max=g_max, sorted=g_sorted, any=g_any, all=g_all,
            PolicyError=PolicyError, ToolError=ToolError,
        )
        ns.update({
            "__builtins__": safe_builtins,
            "__name__": "__main__",
            "_live": False,
            "_dead": state.dead,
            "_for": guard,
            "_forever": itertools.repeat(None),
            "_tick": state.tick,
            "_pow": guarded_pow,
            "_lshift": guarded_lshift,
            "_fmt_attr": fmt_attr,
            "_attr": host.attr,
            "_match_check": match_check,
            "_w": host.writable,
            "_pattr": host.private_attr,
            "_wp": host.private_writable,
            FINAL_ANSWER_NAME: state.final_answer,
        })
        self.ns = ns
        for name, fn in self._tools.items():
            ns[name] = self._tool_proxy(name, fn)

    def _tool_proxy(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        state = self.state
        lock = WATCHDOG.lock

        def tool(*args: Any, **kwargs: Any) -> Any:
            with lock:
                if state.ns["_live"] is not True:
                    state.dead()
                state.in_tool = True
            try:
                result = fn(*args, **kwargs)
            except (FinalAnswer, LimitExceeded, Interrupt):
                raise
            except Exception as exc:  # noqa: BLE001 - any tool failure is reported to the model
                raise ToolError(f"tool '{name}' failed: {type(exc).__name__}: {exc}") from None
            finally:
                state.in_tool = False
            state.check_clock()
            return result

        tool.__name__ = tool.__qualname__ = name
        tool.__doc__ = getattr(fn, "__doc__", None)
        return tool

    # -- public API ----------------------------------------------------------------------------
    def register_tools(self, tools: Mapping[str, Callable[..., Any]] | Iterable[Any] | None) -> None:
        new = normalize_tools(tools)
        self._tools.update(new)
        for name, fn in new.items():
            self.ns[name] = self._tool_proxy(name, fn)
        self._cache.clear()

    def set_variables(self, values: Mapping[str, Any]) -> None:
        for name in values:
            if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
                raise ValueError(f"variable name {name!r} must be a public Python identifier")
            if name in self._tools or name == FINAL_ANSWER_NAME:
                raise ValueError(f"variable name {name!r} is taken by a tool")
        self.ns.update(values)

    def reset(self) -> None:
        """Forget every variable. Functions and objects from before become inert."""
        old = self.ns
        old["_live"] = False
        old["_dead"] = _finished
        old["_for"] = old["_tick"] = _finished
        self._new_namespace()

    def close(self) -> None:
        self.ns["_live"] = False
        self.state.reason = "finished"

    @property
    def reserved_names(self) -> frozenset[str]:
        return frozenset(self._tools) | {FINAL_ANSWER_NAME}

    # -- compile -------------------------------------------------------------------------------
    def _compile(self, code: str) -> tuple[Any, ExecutionError | None, str]:
        key = code
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        self._step += 1
        filename = f"<step-{self._step}>"
        lines = code.splitlines()
        try:
            tree = ast.parse(code, filename=filename, mode="exec")
        except SyntaxError as exc:
            entry = (None, _syntax_error(exc, lines), filename)
        except (ValueError, MemoryError, RecursionError) as exc:
            entry = (None, ExecutionError(type(exc).__name__, f"the code could not be parsed: {exc}"), filename)
        else:
            violations, needed = inspect_tree(tree, self.reserved_names)
            if violations:
                entry = (None, _policy_error(violations, lines), filename)
            else:
                try:
                    compiled = compile(instrument(tree, needed), filename, "exec", dont_inherit=True)
                    entry = (compiled, None, filename)
                except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
                    entry = (None, ExecutionError(type(exc).__name__, str(exc), getattr(exc, "lineno", None)), filename)
        self._sources[filename] = lines
        while len(self._sources) > _MAX_SOURCES:
            self._sources.popitem(last=False)
        self._cache[key] = entry
        while len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return entry

    # -- execute -------------------------------------------------------------------------------
    def execute(self, code: str) -> ExecutionResult:
        started = time.perf_counter()
        if not isinstance(code, str):
            return ExecutionResult(error=ExecutionError("TypeError", f"code must be a string, not {type(code).__name__}"))
        if len(code) > MAX_SOURCE_CHARS:
            return ExecutionResult(error=ExecutionError(
                "CodeTooLarge", f"the code is {len(code):,} characters long, over the limit of "
                f"{MAX_SOURCE_CHARS:,}; send shorter code and keep data in variables or tools"))
        if not self._lock.acquire(blocking=False):
            return ExecutionResult(error=ExecutionError(
                "ExecutorBusy", "this executor is already running code in another thread; "
                "use one executor per thread"))
        try:
            compiled, error, filename = self._compile(code)
            if error is not None:
                return ExecutionResult(error=error, duration_s=time.perf_counter() - started)
            return self._run(compiled, started)
        finally:
            self._lock.release()

    def _run(self, compiled: Any, started: float) -> ExecutionResult:
        limits = self.limits
        state = self.state
        ns = state.ns
        self._buffer = buffer = OutputBuffer(limits.max_output_chars)
        state.ops = 0
        state.max_ops = limits.max_operations or (1 << 62)
        state.reason = None
        state.final_called = False
        state.final_value = None
        state.thread_id = threading.get_ident()
        state.ended = False
        state.fired = False
        state.in_tool = False
        state.generation += 1
        state.deadline = time.monotonic() + limits.timeout_s
        # Assigned, never deleted: a deletion leaves a dummy slot that slows every later lookup
        # in the namespace (module-level code looks every name up in this dict).
        ns[RESULT_NAME] = None
        exc: BaseException | None = None
        output: Any = None
        output_repr: str | None = None
        error: ExecutionError | None = None
        depth = _frame_depth() + limits.max_recursion_depth + 12
        with decimal.localcontext():
            WATCHDOG.watch(state)
            alarm = CPU_ALARM.arm(state)
            _CAPS.enter(limits.max_memory_mb, depth)
            rendered = settled = released = False
            try:
                ns["_live"] = True
                try:
                    exec(compiled, ns)
                except BaseException as raised:  # noqa: BLE001 - everything is reported
                    exc = raised
                # From here on an interrupt may still land anywhere (one sent just before the
                # code ended): every step is retried until the run is settled.
                while not settled:
                    try:
                        WATCHDOG.pause(state, True)
                        if alarm:
                            CPU_ALARM.disarm()
                        if not rendered:
                            rendered = True
                            if state.final_called:
                                output = state.final_value
                            elif exc is None:
                                output = ns[RESULT_NAME]
                                ns[RESULT_NAME] = None
                            if state.reason in (None, "final"):
                                state.reason = None
                                ns["_live"] = True
                            # Render under the limits: model __repr__/__str__ run here.
                            WATCHDOG.pause(state, False)
                            output_repr, error = self._render(output, exc, state.final_called)
                            continue  # pause again before leaving
                        settled = True
                    except Interrupt:
                        continue
                    except MemoryError:
                        # The code left no memory under the cap for us: lift the cap and go on.
                        if released:
                            raise
                        released = True
                        _CAPS.leave()
            finally:
                ns["_live"] = False
                if not released:
                    _CAPS.leave()
                _unwatch(state)
                self.host_guard.restore()
        if exc is not None and error is None and not state.final_called:
            error = ExecutionError(type(exc).__name__, "the code failed")
        state.reason = "finished"
        return ExecutionResult(
            output=output,
            logs=buffer.getvalue(),
            is_final_answer=state.final_called,
            error=error,
            duration_s=time.perf_counter() - started,
            output_repr=output_repr,
        )

    def _render(self, output: Any, exc: BaseException | None, final: bool) -> tuple[str | None, ExecutionError | None]:
        output_repr = error = None
        try:
            if output is not None:
                output_repr = safe_repr(output, self.limits.max_output_chars)
            if exc is not None and not final:
                error = self._error(exc)
        except BaseException:  # noqa: BLE001 - an interrupt landed while rendering
            pass
        return output_repr, error

    # -- errors --------------------------------------------------------------------------------
    def _error(self, exc: BaseException) -> ExecutionError:
        limits = self.limits
        reason = exc.reason if isinstance(exc, LimitExceeded) else self.state.reason
        lineno, line = self._location(exc)
        if reason == "timeout" or isinstance(exc, Interrupt):
            return ExecutionError(
                "TimeoutError",
                f"the code did not finish within {limits.timeout_s:g} s (Limits.timeout_s); "
                "do less work per step or use a faster method",
                lineno, line,
            )
        if reason == "operations":
            return ExecutionError(
                "OperationLimitError",
                f"the code exceeded the budget of {limits.max_operations:,} loop iterations "
                "(Limits.max_operations); avoid endless loops and do less work per step",
                lineno, line,
            )
        if isinstance(exc, LimitExceeded):
            return ExecutionError(
                "TimeoutError", "the code was stopped by the sandbox's limits "
                "(Limits.timeout_s / max_operations); do less work per step", lineno, line)
        if isinstance(exc, SystemError) and "without exception set" in _safe_str(exc):
            # CPython bug: some containers (deque * n) fail an allocation under the memory cap
            # without setting MemoryError.
            exc = MemoryError()
        if isinstance(exc, MemoryError):
            detail = _safe_str(exc)
            return ExecutionError(
                "MemoryError",
                detail or f"the code needed more memory than the sandbox allows "
                f"({limits.max_memory_mb} MB, Limits.max_memory_mb); work on smaller pieces",
                lineno, line,
            )
        if isinstance(exc, RecursionError):
            return ExecutionError(
                "RecursionError",
                f"maximum recursion depth of {limits.max_recursion_depth} exceeded "
                "(Limits.max_recursion_depth); use a loop instead of deep recursion",
                lineno, line,
            )
        name = type(exc).__name__
        message = _safe_str(exc) or f"{name} was raised (with no message)"
        limit = self.limits.max_output_chars
        if len(message) > limit:
            half = limit // 2
            message = f"{message[:half]} ... [{len(message) - limit:,} characters omitted] ... {message[-half:]}"
        if isinstance(exc, ImportPolicyError):
            return ExecutionError("ImportError", message, lineno, line)
        return ExecutionError(name, message, lineno, line)

    def _location(self, exc: BaseException) -> tuple[int | None, str | None]:
        lineno = filename = None
        tb = exc.__traceback__
        while tb is not None:
            name = tb.tb_frame.f_code.co_filename
            if name in self._sources:
                lineno, filename = tb.tb_lineno, name
            tb = tb.tb_next
        if lineno is None or filename is None:
            return None, None
        lines = self._sources[filename]
        line = lines[lineno - 1] if 0 < lineno <= len(lines) else None
        return lineno, line


def _finished(*args: Any) -> None:
    raise SandboxFinished("this object belongs to sandboxed code that was reset; it cannot run")


def _unwatch(state: RunState) -> None:
    # An interrupt may land while we leave; retry until the watchdog has let go of this run.
    while True:
        try:
            WATCHDOG.unwatch(state)
            return
        except Interrupt:
            continue


def _safe_str(exc: BaseException) -> str:
    try:
        text = str(exc)
        return text if type(text) is str else ""
    except BaseException:  # noqa: BLE001
        return ""


def _syntax_error(exc: SyntaxError, lines: list[str]) -> ExecutionError:
    lineno = exc.lineno
    line = lines[lineno - 1] if lineno and 0 < lineno <= len(lines) else exc.text
    message = exc.msg
    if exc.offset and line is not None:
        message = f"{message} (column {exc.offset})"
    return ExecutionError(type(exc).__name__, message, lineno, line.rstrip("\n") if line else None)


def _policy_error(violations: list, lines: list[str]) -> ExecutionError:
    first = violations[0]
    line = lines[first.lineno - 1] if first.lineno and 0 < first.lineno <= len(lines) else None
    message = first.message
    if len(violations) > 1:
        more = "; ".join(
            f"line {v.lineno}: {v.message}" for v in violations[1:4]
        )
        extra = f" (and {len(violations) - 4} more)" if len(violations) > 4 else ""
        message = f"{message}. Also: {more}{extra}"
    return ExecutionError("PolicyError", message, first.lineno, line)
