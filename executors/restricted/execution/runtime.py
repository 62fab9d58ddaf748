"""The in-process restricted runtime: check → instrument → compile → exec with guarded builtins.

Used by LocalExecutor, and by the worker process under the restricted policy. Stdlib and our own
modules only.
"""

from __future__ import annotations

import decimal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from types import CodeType
from typing import Any

from ...base import (
    FINAL_ANSWER_NAME,
    MAX_SOURCE_CHARS,
    Attachment,
    ExecutionError,
    ExecutionResult,
    Limits,
    check_code,
    check_variable_names,
    make_result,
    normalize_imports,
    normalize_tools,
    variable_names_asked,
)
from ...worker.codec import TAG, Crossing, NotPlain, Repr, decode_value, encode_value, opaque_repr
from ...worker.codec import safe_repr as codec_repr
from ...worker.figures import collect, max_pixels
from ...worker.warm import warm_up
from ..capabilities import GUARD, Grants
from ..compiler.names import LIVE, RESULT
from ..guards.errors import PolicyError
from ..guards.evaluators import check_library_source
from ..host.tool_calls import tool_proxy
from ..host.tracing import resume as resume_tracing
from ..host.tracing import suspend as suspend_tracing
from ..host.workdir import WORKDIRS
from ..libraries import trusted_imports
from ..libraries.hooks import install_hooks, install_new_hooks
from ..libraries.packages import LibraryPackages
from ..libraries.pyplot_state import PyplotState
from ..libraries.rules import warn_dangerous
from ..libraries.sandbox_modules import ModuleProxy
from ..libraries.state import StepSettings
from ..limits import step_streams
from ..limits.budget import UNMETERED, RunState
from ..limits.interrupts import HostInterrupts
from ..limits.output import OutputBuffer
from ..limits.process_caps import PROCESS_CAPS, frame_depth
from ..limits.watchdog import CPU_ALARM, WATCHDOG, Interrupt
from .compile_step import SOURCES, compile_step
from .namespace import NamespaceParts, build_namespace, retire_namespace
from .report import describe_error, describe_value, limit_stop_error, locate, safe_repr

__all__ = ["RestrictedRuntime", "PolicyError", "safe_repr"]

_BUSY = "this executor is already running code in another thread; use one executor per thread"


class RestrictedRuntime:
    """Runs model code in this process under the restricted policy. Not thread-safe per
    instance: one `execute()` at a time (use one runtime per thread)."""

    def __init__(
        self,
        tools: Mapping[str, Callable[..., Any]] | Iterable[Any] | None = None,
        authorized_imports: Iterable[str] | None = None,
        limits: Limits | None = None,
        *,
        grants: Grants | None = None,
        workdir: str | None = None,
        warm: bool = True,
    ) -> None:
        """grants: what libraries may touch on the model's behalf (files, network), enforced by
        the capability guard (an audit hook) while a step runs; None: nothing but the Python
        installation. workdir: the directory a step runs in (relative paths resolve there).
        warm: import the authorized packages now (`warm_up`); a worker does it once confined."""
        self.limits = limits or Limits()
        if not isinstance(self.limits, Limits):
            raise TypeError(f"limits must be an executors.Limits, not {type(self.limits).__name__}")
        self.authorized_imports = normalize_imports(authorized_imports)
        base = grants or Grants()
        tops = {name.split(".")[0] for name in self.authorized_imports}
        # (an authorized package's modules, and those of the packages it requires, import as the
        # library: trusted_imports.py)
        self.grants = Grants(base.read, base.write, base.network,
                             base.check_source or check_library_source,
                             LibraryPackages(self.authorized_imports, GUARD.suspended))
        self.workdir = workdir
        self._settings = StepSettings(tops)
        # Figures can only come from a step that may import matplotlib (a host tool's own figure
        # is the host's business).
        self._figures = "matplotlib" in tops
        self._figures_before: set | None = None
        self._pyplot = PyplotState()  # the step's own pyplot figures
        warn_dangerous(self.authorized_imports)
        GUARD.install()
        trusted_imports.install()
        if warm:
            self.warm_up()
        self._tools: dict[str, Callable[..., Any]] = {}
        self._reserved = frozenset({FINAL_ANSWER_NAME})  # what the code may not rebind
        self._outcome: list[Any] = [None, None, None, [], [], None]
        # The last step's output as the codec's tree (made inside the step): what a worker sends.
        self.last_output_wire: Any = None
        self._buffer = OutputBuffer(self.limits.max_output_chars)
        self._lock = threading.Lock()
        self._new_namespace()
        self.register_tools(tools)

    def warm_up(self) -> list[str]:
        """Import the authorized packages now, as the host: their set-up (caches, config, native
        runtimes, helper threads) happens here rather than in the first step. Returns the ones
        that failed to import (the model's import then says why)."""
        failed = warm_up(self.authorized_imports)
        install_hooks()
        return failed

    # -- namespace ----------------------------------------------------------------------------
    def _new_namespace(self) -> None:
        ns: dict[str, Any] = {}
        # The run state (and its watchdog entry) outlives reset(): only the namespace is new.
        state = getattr(self, "state", None) or RunState(ns)
        state.ns = ns
        self.state = state
        parts = getattr(self, "_parts", None)
        if parts is None:
            parts = self._parts = NamespaceParts(state, lambda: self._buffer, self.authorized_imports)
        self.host_guard = build_namespace(ns, state, parts)
        self.ns = ns
        for name, fn in self._tools.items():
            ns[name] = tool_proxy(name, fn, self.state)

    # -- public API ----------------------------------------------------------------------------
    def register_tools(self, tools: Mapping[str, Callable[..., Any]] | Iterable[Any] | None) -> None:
        new = normalize_tools(tools)
        self._tools.update(new)
        for name, fn in new.items():
            self.ns[name] = tool_proxy(name, fn, self.state)
        self._reserved = frozenset(self._tools) | {FINAL_ANSWER_NAME}

    def set_variables(self, values: Mapping[str, Any], fresh: bool = False) -> None:
        """The host's values as copies (the codec's; `fresh`: the worker decoded them, copies already)."""
        check_variable_names(values, self._tools)
        self.ns.update(values if fresh else decode_value(encode_value(dict(values), binary=True)))

    def get_variables(self, names: Iterable[str] | None = None, wire: bool = False) -> dict[str, Any]:
        """The model's variables (all, or those named): plain data as a copy (`wire`: the codec's trees, for a
        frame), anything else as its repr, under the limits. Tools, final_answer, modules, '_' names: KeyError."""
        wanted = variable_names_asked(names)
        if not self._lock.acquire(blocking=False):
            raise RuntimeError(f"cannot read variables now: {_BUSY}")
        try:
            variables = self._variables()
            if wanted is not None:
                unknown = [name for name in wanted if name not in variables]
                if unknown:
                    raise KeyError(f"no such variables: {', '.join(map(repr, unknown))}")
                variables = {name: variables[name] for name in wanted}
            values: dict[str, Any] = {}
            to_render: dict[str, Any] = {}
            crossing = Crossing(binary=not wire, raw=wire)  # one budget for them all (the bounds table)
            for name, value in variables.items():
                try:  # builtin data: no code of the value runs
                    values[name] = crossing.encode(value, strict=True) if wire else decode_value(crossing.encode(value, strict=True))
                except NotPlain:
                    to_render[name] = value
            if to_render:
                values.update(self._render_variables(to_render, crossing, wire))
            return values
        finally:
            self._lock.release()

    def _variables(self) -> dict[str, Any]:
        tools = self._tools
        return {
            name: value for name, value in self.ns.items()
            if type(name) is str and not name.startswith("_") and name not in tools
            and name != FINAL_ANSWER_NAME and type(value) is not ModuleProxy
        }

    def _render_variables(self, values: dict[str, Any], crossing: Crossing, wire: bool) -> dict[str, Any]:
        """Encoding a model's object may run its code (repr, a library reading a frame): under
        the limits and the guard, like a step; the host decodes plain data afterwards."""
        limit = self.limits.max_output_chars
        encoded: dict[str, Any] = {}

        def describe(value: Any) -> str:
            return codec_repr(value, limit)

        def render(exc: BaseException | None) -> None:
            for name, value in values.items():
                encoded[name] = crossing.encode(value, describe=describe)

        self._under_limits(None, render)
        self.state.reason = "finished"
        # a value an interrupt cut short (between two encodings) is named by its type only
        return {name: (encoded[name] if wire else decode_value(encoded[name])) if name in encoded
                else {TAG: "repr", "v": opaque_repr(values[name]), "type": ""} if wire
                else Repr(opaque_repr(values[name]), type(values[name]).__name__) for name in values}

    def reset(self) -> None:
        """Forget every variable. Functions and objects from before become inert."""
        retire_namespace(self.ns)
        self._new_namespace()

    def interrupt(self) -> bool:
        """Stop the step running now (from another thread: its caller was cancelled); False when
        none is. The step ends as at its deadline, and what it did so far is its result."""
        return WATCHDOG.stop_now(self.state)

    def close(self) -> None:
        self.ns[LIVE] = False
        self.state.reason = "finished"

    @property
    def reserved_names(self) -> frozenset[str]:
        return self._reserved

    # -- execute -------------------------------------------------------------------------------
    def execute(self, code: str) -> ExecutionResult:
        started = time.perf_counter()
        if type(code) is not str or len(code) > MAX_SOURCE_CHARS:  # (no call on the hot path)
            refused = check_code(code)
            if refused is not None:
                return ExecutionResult(error=refused)
        if not self._lock.acquire(blocking=False):
            return ExecutionResult(error=ExecutionError("ExecutorBusy", _BUSY))
        try:
            # (the compile cache's key: what changes the compiled code, see compile_step.py)
            compiled, error, _filename = compile_step(
                code, self._reserved, self.limits.max_operations is not None)
            if error is not None:
                return ExecutionResult(error=error, duration_s=time.perf_counter() - started)
            install_new_hooks()
            state = self.state
            self._buffer = buffer = OutputBuffer(self.limits.max_output_chars)
            # output, output_repr, error, pictures, notes, the output as the codec's tree
            outcome = self._outcome = [None, None, None, [], [], None]
            # every step starts with a pyplot of its own, empty (pyplot_state.py)
            self._figures_before = set() if self._figures else None
            with HostInterrupts(state) as interrupts:  # Ctrl-C ends the step and reaches the host
                exc = self._under_limits(compiled, self._render_output)
            interrupts.raise_if_interrupted()
            value, output_repr, error, pictures, notes, wire = outcome
            self.last_output_wire = wire
            # The host gets plain data decoded from the tree the step made, never the value.
            output = None if value is None else decode_value(wire) if wire is not None else \
                Repr(f"<{output_repr or opaque_repr(value)} did not cross the boundary: the step's limits "
                     "(Limits.timeout_s, max_memory_mb) stopped it while it was copied>", type(value).__name__)
            value = outcome[0] = None
            if exc is not None and error is None and not state.final_called:
                # rendering was cut short before the error was described (its message ran model
                # code past the limits): the type alone
                error = ExecutionError(type(exc).__name__, "the error's message could not be "
                                       "rendered within the step's limits")
            state.reason = "finished"
            for note in notes:
                buffer.write(f"{note}\n")
            return make_result(
                output=output,
                logs=buffer.getvalue(),
                is_final_answer=state.final_called,
                error=error,
                duration_s=time.perf_counter() - started,
                output_repr=output_repr,
                attachments=tuple([Attachment(p.media_type, p.data, p.name, p.width, p.height)
                                   for p in pictures]) if pictures else (),
                # counted only under a budget (without one, loops run unmetered: nothing counts)
                operations=state.ops if self.limits.max_operations is not None else None,
            )
        finally:
            self._lock.release()

    def _render_output(self, exc: BaseException | None) -> None:
        """The step's value as text, its error, then its figures (PNG): under the step's
        limits, with the capability guard on (rendering runs model callbacks)."""
        outcome = self._outcome
        try:
            value = outcome[0]
            if value is not None:
                limit = self.limits.max_output_chars
                outcome[1] = describe_value(value, limit)
                outcome[5] = encode_value(value, binary=True,
                                          describe=lambda v: codec_repr(v, limit))
            if exc is not None and not self.state.final_called and outcome[2] is None:
                outcome[2] = describe_error(exc, self.limits, self.state.reason,
                                            locate(exc, SOURCES))
            if self._figures_before is not None or value is not None:
                # Drawing is bounded by the figure's pixels, not by the address-space cap (see
                # lift_memory); pictures are appended as they are made: an interrupt keeps those.
                limits = self.limits
                _lift_memory_cap()
                collect(self._figures_before, value, max_bytes=limits.max_attachment_bytes,
                        deadline=self.state.deadline, into=outcome[3], notes=outcome[4],
                        pixels=max_pixels(limits.max_memory_mb))
        except BaseException:  # noqa: BLE001 - an interrupt landed while rendering
            pass

    def _start(self) -> None:
        """A fresh step for the run state: budget, deadline, no final answer yet."""
        limits = self.limits
        state = self.state
        state.ops = 0
        state.max_ops = limits.max_operations or UNMETERED
        state.reason = None
        state.final_called = False
        state.final_value = None
        state.thread_id = threading.get_ident()
        state.ended = False
        state.fired = False
        state.in_tool = False
        state.settling = False
        state.generation += 1
        # No timeout (None): no deadline, the other limits still hold.
        timeout = limits.timeout_s
        state.deadline = float("inf") if timeout is None else time.monotonic() + timeout
        # Assigned, never deleted: a deletion leaves a dummy slot that slows every later lookup
        # in the namespace (module-level code looks every name up in this dict).
        state.ns[RESULT] = None

    def _under_limits(
        self, compiled: CodeType | None, render: Callable[[BaseException | None], None],
    ) -> BaseException | None:
        """A step: run `compiled` under every limit; then, interrupts paused, put its output
        (the final answer or the last expression's value) in `self._outcome[0]`; then `render(exc)`
        (model code: __repr__) under the limits again, from this frame (the code's headroom)."""
        self._start()
        state = self.state
        ns = state.ns
        exc: BaseException | None = None
        depth = frame_depth() + self.limits.max_recursion_depth + 12
        WATCHDOG.ensure_running()  # (the host's thread: outside the guard and the memory cap)
        suspend_tracing(state)  # (a host debugger never sees the model's frames)
        host_context = decimal.getcontext()  # the step's decimal context is a copy (localcontext's)
        decimal.setcontext(host_context.copy())
        try:
            alarm = rendered = settled = released = False
            self._enter_process_state(depth)
            WORKDIRS.enter(self.workdir)
            self._pyplot.enter()
            guard = GUARD.enter(self.grants, sys._getframe(), state)
            try:
                ns[LIVE] = True
                try:
                    WATCHDOG.watch(state)  # interrupts flow from here on (even past the deadline)
                    alarm = CPU_ALARM.arm(state)
                    if compiled is not None:
                        exec(compiled, ns)
                except BaseException as raised:  # noqa: BLE001 - everything is reported
                    exc = raised
                # From here on an interrupt may still land anywhere: one pending, one being sent
                # as we stop the watchdog (plain stores of `settling` stop new ones: the watchdog
                # and the CPU alarm check it), even on a loop's back edge outside its `try`: the
                # outer loop catches that one, and by then none is left (see _SETTLE_NOTE).
                state.settling = True
                while not settled:
                    try:
                        while not settled:
                            try:
                                WATCHDOG.pause(state, True)
                                if alarm or CPU_ALARM.run is state:  # (armed, then interrupted)
                                    CPU_ALARM.disarm()
                                    alarm = False
                                if not rendered:
                                    rendered = True
                                    self._capture_output(exc)
                                    if self._nothing_to_render(exc, render):
                                        settled = True
                                        continue
                                    # Render under the limits: model __repr__/__str__ run here.
                                    WATCHDOG.pause(state, False)
                                    render(exc)
                                    # generators left suspended are closed in the step, their
                                    # cleanup under the limits (see guards/generators.py)
                                    state.generators.close_all()
                                    state.settling = True
                                    continue  # pause again before leaving
                                settled = True
                            except Interrupt:
                                state.settling = True
                                continue
                            except MemoryError:
                                state.settling = True
                                # The code left no memory under the cap for us: lift the cap and
                                # go on; if even that is not enough, report the bare error.
                                if released:
                                    settled = True
                                else:
                                    released = True
                                    _lift_caps(guard)
                    except Interrupt:
                        state.settling = True
                        continue
            finally:
                self._leave_step(guard, released)
        finally:
            step_streams.leave()
            decimal.setcontext(host_context)
            resume_tracing(state)
        return exc

    def _enter_process_state(self, depth: int) -> None:
        """The process-wide state a step changes: caps, streams and warnings, library settings."""
        PROCESS_CAPS.enter(self.limits.max_memory_mb, depth)
        step_streams.enter(self._buffer, SOURCES)  # (before the settings: they keep its hooks)
        self._settings.save()

    def _nothing_to_render(self, exc: BaseException | None, render: Callable) -> bool:
        """No value, error, figure or generator: the render pauses can be skipped."""
        return (exc is None and render == self._render_output and self._outcome[0] is None
                and self._figures_before is None and not self.state.generators.made)

    def _capture_output(self, exc: BaseException | None) -> None:
        """The step's output (its final answer, or its last expression's value) into the outcome;
        the namespace live again for rendering, unless a limit stopped the step."""
        state = self.state
        ns = state.ns
        if state.final_called:
            self._outcome[0] = state.final_value
        elif exc is None:
            self._outcome[0] = ns[RESULT]
            ns[RESULT] = None
        if exc is not None and not state.final_called:
            # named now, with interrupts paused: rendering may be cut short by the same deadline
            self._outcome[2] = limit_stop_error(exc, self.limits, state.reason,
                                                locate(exc, SOURCES))
        if state.reason in (None, "final"):
            state.reason = None
            ns[LIVE] = True

    def _leave_step(self, guard: Any, released: bool) -> None:
        """Undo what the step entered, in order (no interrupt is pending any more)."""
        self.state.ns[LIVE] = False
        # Lift the caps first: the host's own cleanup below must not meet the memory the code
        # used up (a MemoryError here escaped execute()).
        if not released:
            _lift_caps(guard)
        try:
            # the generators a cut-short step left suspended: closed while the guard still holds
            # (the model's code is inert now: only what their `with` blocks hold runs)
            self.state.generators.close_all(passes=100_000)
        finally:
            try:
                self._pyplot.leave()  # the step's figures close under the guard (their callbacks)
            finally:
                GUARD.leave(guard)
        WORKDIRS.leave()
        _unwatch(self.state)
        self.host_guard.restore()
        self._settings.restore()


def _lift_memory_cap() -> None:
    # setrlimit is ours, not the model's: the capability guard lets it through.
    step = GUARD.current()
    if step is not None:
        step.suspended += 1
    try:
        PROCESS_CAPS.lift_memory()
    finally:
        if step is not None:
            step.suspended -= 1


# _SETTLE_NOTE: the watchdog's interrupt is an asynchronous exception, raised at the next
# eval-breaker check of the run's thread — a call's return or a loop's back edge, and the back
# edge of `except Interrupt: continue` lies outside the `try`. Once `settling` is stored, at most
# two can still arrive (one pending, one being sent): the first lands in the inner `try` (or on
# the inner back edge, caught by the outer one), a second on the inner back edge is caught by the
# outer `try`, and the outer handler's back edge meets none. Found as "execute() raised
# Interrupt" in a loaded CI run of test_deadline_interrupt_never_leaks_out_of_execute.


def _lift_caps(step: Any) -> None:
    """Restore the process's address-space cap and recursion limit. Host code, so the step's
    capability guard stands aside: it refuses `resource.setrlimit`, and the cap's own error
    handling would swallow the refusal and leave the host capped."""
    step.suspended += 1
    try:
        PROCESS_CAPS.leave()
    finally:
        step.suspended -= 1


def _unwatch(state: RunState) -> None:
    # An interrupt may land while we leave; retry until the watchdog has let go of this run.
    while True:
        try:
            WATCHDOG.unwatch(state)
            return
        except Interrupt:
            continue
