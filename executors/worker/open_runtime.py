"""The open policy inside a worker: full Python in one namespace, with a soft deadline. Stdlib only.

The process around it is the boundary (rlimits, a container); this runtime only keeps the
contract: `final_answer` is remembered even if model code swallows its exception, the last
expression is the step's output, prints are captured head and tail, and the step gets
`Limits.timeout_s` of wall-clock time. The deadline is SIGALRM: when it passes, `Deadline` is
raised in the model code; the worker keeps its variables. Code that swallows that exception
(a bare `except:`, or a `__del__`, where Python ignores every exception) is interrupted again
every RE_FIRE_S, and the step is reported as a TimeoutError however it ended: a step that overran
its deadline never comes back as a success. A step that ignores every interrupt is killed by the
host (at timeout_s plus its grace).
"""

from __future__ import annotations

# Start-up time matters: the C modules `_ast` and `_signal` avoid the imports (enum, contextlib,
# re, ...) that `ast` and `signal` would pull in.
import _ast as ast
import _signal as signal
import os
import sys
import time

from .codec import Crossing, NotPlain, decode_value
from .display import display_text
from .errors import FinalAnswer
from .figures import collect, is_pil_image, max_pixels, open_figures, pil_description
from .harden import has_children
from .wire import OutputBuffer, safe_repr, safe_str, truncate_text

__all__ = ["Deadline", "OpenRuntime", "Step", "StepError"]

FINAL_ANSWER_NAME = "final_answer"
RE_FIRE_S = 0.05  # after the deadline, how often code that swallowed the interrupt gets another
_FILENAME = "<code>"
# Sources compiled before, newest last: a model repeats itself and a retry resends the same block
# (the host sends such a source as its ref alone). Code objects are immutable; the namespace is not
# in them.
_COMPILED_SOURCES = 64


class Deadline(BaseException):
    """Raised inside model code when the soft deadline passes (a BaseException: `except
    Exception:` does not catch it)."""


class StepError:
    """What went wrong in a step: the fields of `executors.ExecutionError`."""

    __slots__ = ("type", "message", "lineno", "line")

    def __init__(self, type_: str, message: str, lineno: int | None = None, line: str | None = None) -> None:
        self.type, self.message, self.lineno, self.line = type_, message, lineno, line


class Step:
    """What one step produced: the fields of `executors.ExecutionResult` that cross the wire,
    plus `restart` (the worker asks the host to replace it)."""

    __slots__ = ("output", "output_repr", "logs", "is_final_answer", "error", "restart", "attachments")

    def __init__(self, output=None, output_repr: str | None = None, logs: str = "", is_final_answer: bool = False,
                 error: StepError | None = None, restart: bool = False, attachments=()) -> None:
        self.output, self.output_repr, self.logs = output, output_repr, logs
        self.is_final_answer, self.error, self.restart = is_final_answer, error, restart
        self.attachments = attachments  # figures.Picture


class OpenRuntime:
    """The worker's namespace under the open policy. Same methods as the restricted runtime
    (`execute`, `register_tools`, `set_variables`, `get_variables`, `reset`)."""

    def __init__(self, limits: dict, tools: dict) -> None:
        self.limits = limits
        self.tools = dict(tools)
        self.pid = os.getpid()
        self.final: list = []  # the first final_answer value of this step
        self.in_tool = False  # a host tool call is in flight: the deadline waits for its answer
        self.fired = False  # the deadline passed during this step
        self.pending = False  # ... while a tool call was in flight: raise once it returns
        self.final_answer = self._final_answer  # one bound method: get_variables compares identity
        self._compiled: dict[str, list] = {}  # source -> [body code, last expression node, its code]
        sys.setrecursionlimit(int(limits.get("max_recursion_depth") or 200) + 60)
        signal.signal(signal.SIGALRM, self._on_alarm)
        # No display here: pyplot draws off-screen, show() keeps figures open (headless Agg does
        # nothing), and the figures open at the end of a step come back as PNGs.
        os.environ.setdefault("MPLBACKEND", "Agg")
        self.reset()

    # -- the namespace ------------------------------------------------------------------------
    def reset(self) -> None:
        self.globals = {"__name__": "__main__", "__builtins__": __builtins__, FINAL_ANSWER_NAME: self.final_answer}
        self.globals.update(self.tools)

    def register_tools(self, tools: dict) -> None:
        self.tools.update(tools)
        self.globals.update(tools)

    def set_variables(self, values: dict) -> None:
        self.globals.update(values)

    def get_variables(self, names=None) -> dict:
        """The model's variables: not tools, `final_answer`, modules or names starting with `_`
        (a name the model rebound to its own value is its variable). KeyError for unknown names.
        Plain data (exact JSON types, tuples, sets, bytes) comes back as a copy; anything else
        as its repr, rendered under the step's deadline (a hostile __repr__ gets the default)."""
        module = type(sys)
        variables = {
            name: value for name, value in self.globals.items()
            if not name.startswith("_") and type(value) is not module
            and value is not self.tools.get(name) and value is not self.final_answer
        }
        if names is not None:
            missing = [name for name in names if name not in variables]
            if missing:
                raise KeyError(f"no variable named {', '.join(map(repr, missing))}")
            variables = {name: variables[name] for name in names}
        out = {}
        crossing = Crossing(binary=True)  # one budget for them all (the bounds table)
        for name, value in variables.items():
            try:
                out[name] = decode_value(crossing.encode(value, strict=True), may_import=False)
            except NotPlain:
                # the codec, as every executor: data stays data, the rest its repr (each repr
                # under the step's deadline)
                out[name] = self._encoded_in_time(value, crossing)
        return out

    def _encoded_in_time(self, value, crossing: Crossing):
        """The codec's copy of a value; its reprs run model code: they get the step's deadline
        (one for the value), and past it the default repr."""
        limit = int(self.limits.get("max_output_chars") or 20_000)
        timeout = self.limits.get("timeout_s")
        self.fired = False

        def describe(item) -> str:
            if not self.fired:
                try:
                    text = repr(item)
                    if type(text) is str:
                        return truncate_text(text, limit)
                except BaseException:  # noqa: BLE001 - Deadline or anything a hostile __repr__ raised
                    pass
            return object.__repr__(item)

        try:
            if timeout:
                signal.setitimer(signal.ITIMER_REAL, float(timeout), RE_FIRE_S)
            try:
                encoded = crossing.encode(value, describe=describe)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except BaseException:  # noqa: BLE001 - the deadline landed outside a repr
            encoded = {"$t": "repr", "v": object.__repr__(value), "type": type(value).__name__}
        return decode_value(encoded, may_import=False)

    # -- model-facing ---------------------------------------------------------------------------
    def _final_answer(self, *args, **kwargs):
        if len(args) == 1 and not kwargs:
            value = args[0]
        elif not args and len(kwargs) == 1 and "answer" in kwargs:
            value = kwargs["answer"]
        else:
            raise TypeError("final_answer() takes exactly one value: final_answer(value) or "
                            "final_answer(answer=value)")
        if not self.final:
            self.final.append(value)
        raise FinalAnswer(value)

    def _on_alarm(self, signum, frame):
        self.fired = True
        if self.in_tool:
            self.pending = True
            return
        raise Deadline

    def tool_call_returned(self) -> None:
        """Called by the worker when a host tool call returns: a deadline that passed while it
        was in flight is raised now, in the model code that made the call."""
        self.in_tool = False
        if self.pending:
            self.pending = False
            raise Deadline

    # -- one step -------------------------------------------------------------------------------
    def execute(self, code: str) -> Step:
        limit = int(self.limits.get("max_output_chars") or 20_000)
        capture = OutputBuffer(limit)
        self.final, self.fired, self.pending, self.in_tool = [], False, False, False
        output = error = None
        timeout = self.limits.get("timeout_s")
        deadline = time.monotonic() + float(timeout) if timeout else None
        old_out, old_err = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = capture
        try:
            output = self._run(code)
        except FinalAnswer:
            pass
        except BaseException as exc:
            if not isinstance(exc, Deadline):
                error = _step_error(exc, code)
            if isinstance(exc, SystemExit) and os.getpid() != self.pid:
                os._exit(0)  # a fork of the model code ends here
        finally:
            sys.stdout, sys.stderr = old_out, old_err
        restart = False
        if self.fired:  # however the code ended: an interrupt swallowed is still a timeout
            output, error = None, self._timeout_error()
            threading = sys.modules.get("threading")
            restart = (threading is not None and threading.active_count() > 1) or has_children()
        if error is not None and not restart and has_children():
            restart = True  # e.g. a fork bomb that ended in BlockingIOError: its forks live on
        if self.final:  # an answer given is remembered, whatever happened after it
            output, error = self.final[0], None
        output_repr, pictures = self._render(output, capture, deadline)
        return Step(
            output=output,
            output_repr=output_repr,
            logs=capture.text(),
            is_final_answer=bool(self.final),
            error=error,
            restart=restart,
            attachments=pictures,
        )

    def _render(self, output, capture: OutputBuffer, deadline: float | None) -> tuple:
        """The value as text and the step's figures as PNGs, in what is left of the step's time
        (both run model code: __repr__, tick formatters); figures are closed whatever happens."""
        if output is None and "matplotlib.pyplot" not in sys.modules:
            return None, []  # nothing to render, no figure: no model code to run, no timer to arm
        limit = int(self.limits.get("max_output_chars") or 20_000)
        text, pictures, notes = None, [], []
        old_out, old_err = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = capture
        fired = self.fired
        try:
            if deadline is not None:
                signal.setitimer(signal.ITIMER_REAL, max(0.001, deadline - time.monotonic()), RE_FIRE_S)
            try:
                if output is not None:
                    text = _describe(output, limit)
                collect(set(), output, max_bytes=int(self.limits.get("max_attachment_bytes", 5_000_000)),
                        deadline=deadline, into=pictures, notes=notes,
                        pixels=max_pixels(self.limits.get("max_memory_mb")))
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except BaseException as exc:  # noqa: BLE001 - Deadline (noted), or a broken pyplot
            if not isinstance(exc, Deadline):
                notes.append(f"[figures not returned: {type(exc).__name__}: {safe_str(exc)[:300]}]")
        finally:
            sys.stdout, sys.stderr = old_out, old_err
            self.fired = fired
            _close_figures()
        if output is not None and text is None:
            text = safe_repr(output, limit)
        for note in notes:
            capture.write(f"{note}\n")
        return text, pictures

    def _run(self, code: str):
        """Run the code with the deadline armed; the value of its last expression statement."""
        timeout = self.limits.get("timeout_s")
        try:
            if timeout:
                signal.setitimer(signal.ITIMER_REAL, float(timeout), RE_FIRE_S)
            entry = self._compiled.get(code)
            if entry is None:
                entry = self._compile(code)
            exec(entry[0], self.globals)
            if entry[1] is None:
                return None
            if entry[2] is None:  # (compiled once the body has run, as it always was)
                entry[2] = compile(ast.Expression(entry[1].value), _FILENAME, "eval")
            return eval(entry[2], self.globals)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def _compile(self, code: str) -> list:
        """[the code without its last expression statement, that statement (None: there is
        none), its code (compiled on first use)], kept for the next step that sends this source."""
        tree = compile(code, _FILENAME, "exec", ast.PyCF_ONLY_AST)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        entry = [compile(tree, _FILENAME, "exec"), last, None]
        cache = self._compiled
        cache[code] = entry
        if len(cache) > _COMPILED_SOURCES:
            del cache[next(iter(cache))]  # the oldest compiled
        return entry

    def _timeout_error(self) -> StepError:
        return StepError("TimeoutError", f"execution exceeded the {self.limits.get('timeout_s')} s time limit "
                         "(Limits.timeout_s); make the code faster or do less per step.")


def _describe(value, limit: int) -> str:
    """output_repr: tables and arrays like a notebook shows them, a PIL image by its size (its
    pixels come back as an attachment), anything else its repr."""
    if is_pil_image(value):
        return pil_description(value)
    text = display_text(value, limit)
    return text if text is not None else safe_repr(value, limit)


def _close_figures() -> None:
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None and open_figures():
        try:
            plt.close("all")
        except Exception:  # noqa: BLE001 - a pyplot the model broke: nothing more to do
            pass


def _step_error(exc: BaseException, code: str) -> StepError:
    """The model-facing error for an exception from the code: its message and its line."""
    lineno = None
    if isinstance(exc, SyntaxError) and exc.filename == _FILENAME:
        lineno = exc.lineno
        message = exc.msg
    else:
        message = safe_str(exc) or safe_repr(exc)
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == _FILENAME:
                lineno = tb.tb_lineno
            tb = tb.tb_next
    lines = code.splitlines()
    line = lines[lineno - 1] if lineno and 0 < lineno <= len(lines) else None
    return StepError(type(exc).__name__, truncate_text(message, 2000), lineno, line)
