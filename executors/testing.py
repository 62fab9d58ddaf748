"""Reusable fuzzing properties: check that *your* executor configuration holds.

Call them from your own pytest suite with a factory that builds the executor exactly as you use
it (your tools, your authorized imports, your limits). Each check runs a short hypothesis
campaign and raises AssertionError listing every failing program (ready to paste and rerun).
Needs `hypothesis` (and `hypothesmith` for grammar-level programs).

    from executors import LocalExecutor, Limits
    from executors.testing import check_executor

    def make():
        return LocalExecutor(tools={"search": search}, authorized_imports=["numpy"],
                             limits=Limits(timeout_s=2))

    def test_my_sandbox_holds():
        check_executor(make, tools={"search": search}, examples=300)

Properties:

- `check_no_escape`: escape attempts never write the marker file, never print the canary
  environment variable's value, never reach a refused module (restricted policies).
- `check_bombs_contained`: every resource bomb returns within `timeout_s + margin_s`, the host
  does not grow by more than `host_memory_margin_mb`, and the executor then answers `1 + 1`.
- `check_matches_cpython`: on programs the executor accepts, printed output, last value and
  final answer equal CPython's (run in a fresh namespace with the same tools and final_answer).
- `check_no_internal_errors`: `execute` never raises, never hangs, and always returns a clean
  `ExecutionResult` whose error (if any) is an `ExecutionError` without our internals in it.
- `check_executor`: all of the above.

In-process executors are exercised in a forked child process (`isolate=True`, the default for
them) so that a program that hangs the executor — or the interpreter — is detected and killed
instead of hanging your test run.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import gc
import importlib
import io
import json
import multiprocessing
import os
import re
import resource
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .base import DEFAULT_AUTHORIZED_IMPORTS, ExecutionError, ExecutionResult, FinalAnswer, Limits

__all__ = [
    "Outcome",
    "FuzzReport",
    "probe_tools",
    "host_fingerprint",
    "run_cpython",
    "fuzz",
    "Session",
    "check_no_escape",
    "check_bombs_contained",
    "check_matches_cpython",
    "check_no_internal_errors",
    "check_executor",
    "CANARY_ENV",
]

CANARY_ENV = "CODEAGENT_FUZZ_CANARY"

# Bound once: an attempt that tampers with the json module must not break our own messages.
_json_dumps = json.dumps
_json_loads = json.loads

# Statuses that fail a property.
FAILING = frozenset({"escape", "internal-error", "hang", "uncontained", "mismatch"})

# Error types by which an executor refuses or stops a program (never compared with CPython).
# Any other error where CPython raised nothing (or something else) is "divergent".
REFUSAL_TYPES = frozenset({
    "PolicyError", "TimeoutError", "OperationLimitError", "MemoryError", "RecursionError",
    "OutputLimitError", "LimitError", "SecurityError", "SyntaxError", "ImportError",
    "ModuleNotFoundError", "ToolError", "WorkerCrashed",
})


# --------------------------------------------------------------------------------------------
# Probe tools: the shapes real tools come in, each holding a way out if the executor leaked it
# (module globals with `os`, a partial's `.func`, a bound method's `__self__`, a closure cell, a
# callable object's public attribute). Deterministic results, JSON-friendly.
# --------------------------------------------------------------------------------------------


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _search(query: str, index: Any = None) -> list:
    return [f"{query}: result {i}" for i in range(2)]


class _Catalog:
    def __init__(self) -> None:
        self.backend = os

    def lookup(self, key: str) -> dict:
        """Look a key up in the catalog."""
        return {"key": key, "length": len(key), "found": self.backend is not None}


def _make_scale(backend: Any) -> Callable[..., list]:
    def scale(values: list, factor: int) -> list:
        """Multiply every value by factor."""
        return [v * factor for v in values] if backend is not None else []

    return scale


class _Echo:
    def __init__(self) -> None:
        self.backend = os

    def __call__(self, text: str) -> str:
        """Return the text reversed."""
        return str(text)[::-1]


def probe_tools() -> dict[str, Callable[..., Any]]:
    """Five tools of the usual shapes (function, partial, bound method, closure, callable object),
    each of which would hand model code the `os` module if the executor leaked its internals."""
    return {
        "add": add,
        "search": functools.partial(_search, index={"os": os}),
        "lookup": _Catalog().lookup,
        "scale": _make_scale(os),
        "echo": _Echo(),
    }


# --------------------------------------------------------------------------------------------
# The CPython reference
# --------------------------------------------------------------------------------------------


@dataclass
class Reference:
    ok: bool
    logs: str
    output: Any = None
    is_final_answer: bool = False
    error_type: str | None = None


def _unavailable(name: str) -> Callable[..., Any]:
    def stub(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{name}() is not available in the fuzzing reference")

    return stub


_REF_BUILTINS = dict(vars(builtins))
for _name in ("input", "breakpoint", "help", "exit", "quit", "copyright", "credits", "license"):
    _REF_BUILTINS[_name] = _unavailable(_name)


class _ReferenceTimeout(BaseException):
    pass


def run_cpython(code: str, tools: Mapping[str, Callable[..., Any]] | None = None,
                timeout_s: float = 10.0) -> Reference:
    """Run `code` under plain CPython in a fresh namespace, with stdout captured, the same tools
    and a `final_answer` that ends the run; the last expression statement's value is the output.
    Only for trusted or already-vetted code: this is not a sandbox."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        return Reference(False, "", error_type=type(exc).__name__)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    out = io.StringIO()

    def final_answer(value: Any = None) -> Any:
        raise FinalAnswer(value)

    ns: dict[str, Any] = {"__name__": "__main__", "__builtins__": _REF_BUILTINS,
                          "final_answer": final_answer, **dict(tools or {})}
    use_alarm = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    previous = None
    if use_alarm:
        def on_alarm(signum: int, frame: Any) -> None:
            raise _ReferenceTimeout()

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            # dont_inherit: this module's `from __future__ import annotations` must not leak into
            # the program (it would stop module-level annotations from being evaluated)
            exec(compile(tree, "<fuzz>", "exec", dont_inherit=True), ns)
            value = eval(compile(last, "<fuzz>", "eval", dont_inherit=True), ns) if last is not None else None
        return Reference(True, out.getvalue(), value)
    except FinalAnswer as fa:
        return Reference(True, out.getvalue(), fa.value, is_final_answer=True)
    except _ReferenceTimeout:
        return Reference(False, out.getvalue(), error_type="TimeoutError")
    except BaseException as exc:  # noqa: BLE001 - the program's own exception, reported
        if isinstance(exc, KeyboardInterrupt):
            raise
        return Reference(False, out.getvalue(), error_type=type(exc).__name__)
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


_PLAIN = (type(None), bool, int, float, complex, str, bytes)


def _is_plain(value: Any, depth: int = 0) -> bool:
    if depth > 20:
        return False
    if type(value) in _PLAIN:
        return True
    if type(value) in (list, tuple, set, frozenset):
        return all(_is_plain(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(_is_plain(k, depth + 1) and _is_plain(v, depth + 1) for k, v in value.items())
    return False


def _norm(text: str) -> str:
    """Drop what legitimately differs between two runs: addresses and module prefixes."""
    text = re.sub(r" at 0x[0-9a-fA-F]+", " at 0x?", text)
    text = re.sub(r"<([A-Za-z_][\w.]*\.)?(\w+) object", r"<\2 object", text)
    text = re.sub(r"<(class|enum) '([\w.<>]+\.)?(\w+)'>", r"<\1 '\3'>", text)
    return text


def _compare(r: ExecutionResult, ref: Reference, limits: Limits) -> tuple[str, str]:
    """(status, detail) of an executor result against the CPython reference."""
    err = r.error
    if err is None:
        if not ref.ok:
            return "mismatch", f"executor succeeded, CPython raised {ref.error_type}"
        ours, theirs = _norm(r.logs), _norm(ref.logs)
        if len(ref.logs) > limits.max_output_chars:
            n = limits.max_output_chars // 3
            ours, theirs = ours[:n], theirs[:n]
        if ours != theirs:
            return "mismatch", f"printed output differs:\n  executor: {r.logs[:300]!r}\n  cpython:  {ref.logs[:300]!r}"
        if bool(r.is_final_answer) != ref.is_final_answer:
            return "mismatch", f"is_final_answer {r.is_final_answer} != CPython's {ref.is_final_answer}"
        if _is_plain(ref.output) and _is_plain(r.output):
            if repr(r.output) != repr(ref.output):
                return "mismatch", f"output {r.output!r:.200} != CPython's {ref.output!r:.200}"
        elif _is_plain(ref.output) and r.output_repr is not None:
            if r.output_repr != repr(ref.output):
                return "mismatch", f"output {r.output_repr:.200} != CPython's {ref.output!r:.200}"
        elif ref.output is not None:
            ours_text = r.output_repr if r.output_repr is not None else (r.output if isinstance(r.output, str) else None)
            if ours_text is not None and _norm(ours_text) != _norm(repr(ref.output)):
                return "mismatch", f"output {ours_text:.200} != CPython's {_norm(repr(ref.output)):.200}"
        elif r.output is not None:
            return "mismatch", f"output {r.output_repr or type(r.output).__name__:.200} but CPython's is None"
        return "equal", ""
    if err.type == ref.error_type and err.type not in ("TimeoutError", "MemoryError", "RecursionError"):
        return "equal", f"both raised {err.type}"
    detail = f"{err.type}: {err.message[:200]}" + (f" (CPython: {ref.error_type or 'ok'})")
    if err.type not in REFUSAL_TYPES:
        # An ordinary exception CPython did not raise: a feature the executor lacks, or its bug.
        return "divergent", detail
    return "refused", detail


# --------------------------------------------------------------------------------------------
# Evaluating one example against a live executor
# --------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """The verdict on one generated example.

    category: "program", "escape" or "bomb". status: program → equal | refused | divergent
    (an ordinary exception CPython did not raise) | mismatch (accepted, different output);
    escape → held | escape; bomb → contained | uncontained; any → internal-error | hang.
    """

    category: str
    label: str
    status: str
    code: str
    detail: str = ""
    error_type: str | None = None
    duration_s: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status in FAILING


_INTERNAL_HINTS = re.compile(r"Traceback \(most recent call last\)|[/\\]executors[/\\]\w+\.py|RestrictedPython[/\\]")


def _shape_problem(r: Any) -> str | None:
    if not isinstance(r, ExecutionResult):
        return f"execute() returned {type(r).__name__}, not ExecutionResult"
    if not isinstance(r.logs, str):
        return f"result.logs is {type(r.logs).__name__}, not str"
    e = r.error
    if e is None:
        return None
    if not isinstance(e, ExecutionError):
        return f"result.error is {type(e).__name__}, not ExecutionError"
    if not isinstance(e.type, str) or not e.type or not isinstance(e.message, str):
        return f"malformed ExecutionError {e!r:.200}"
    if e.type in ("ExecutorError", "InternalError", "SystemError"):
        return f"internal error reported as {e.type}: {e.message[:300]}"
    if _INTERNAL_HINTS.search(e.message) or (e.line and _INTERNAL_HINTS.search(e.line)):
        return f"error message leaks executor internals: {e.message[:300]!r}"
    return None


def _execute(ex: Any, code: str) -> tuple[Any, float, str | None]:
    t0 = time.perf_counter()
    try:
        r = ex.execute(code)
    except BaseException as exc:  # noqa: BLE001 - execute must never raise: that is the finding
        if isinstance(exc, KeyboardInterrupt):
            raise
        return None, time.perf_counter() - t0, f"execute() raised {type(exc).__name__}: {str(exc)[:300]}"
    return r, time.perf_counter() - t0, _shape_problem(r)


def _reset(ex: Any) -> str | None:
    try:
        ex.reset()
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, KeyboardInterrupt):
            raise
        return f"reset() raised {type(exc).__name__}: {str(exc)[:200]}"
    return None


def evaluate_program(ex: Any, code: str, label: str, tools: Mapping[str, Callable[..., Any]],
                     limits: Limits) -> Outcome:
    r, dt, problem = _execute(ex, code)
    problem = problem or _reset(ex)
    if problem:
        return Outcome("program", label, "internal-error", code, problem, duration_s=dt)
    err = r.error
    if err is not None and err.type == "WorkerCrashed":
        # generated programs never try to crash anything: a dead worker is the executor's bug
        return Outcome("program", label, "internal-error", code, f"{err.type}: {err.message[:300]}", err.type, dt)
    if err is not None and err.type in ("TimeoutError", "OperationLimitError", "MemoryError"):
        return Outcome("program", label, "refused", code, f"{err.type}: {err.message[:200]}", err.type, dt)
    ref = run_cpython(code, tools, timeout_s=max(10.0, 4 * limits.timeout_s))
    status, detail = _compare(r, ref, limits)
    return Outcome("program", label, status, code, detail, err.type if err else None, dt)


_REACH = re.compile(r"FUZZ-REACHED-REFUSED-MODULE \d+")


def _leak_text(r: ExecutionResult) -> str:
    parts = [r.logs or "", r.output_repr or ""]
    if _is_plain(r.output):
        parts.append(repr(r.output))
    if r.error is not None:
        parts.append(r.error.message or "")
    return "\n".join(parts)


def _public_state(obj: Any) -> dict[str, Any]:
    """Public and dunder attributes by name: the objects themselves, compared by identity (holding
    them keeps their ids from being reused by a replacement)."""
    try:
        items = list(vars(obj).items())
    except TypeError:
        return {}
    return {k: v for k, v in items if not k.startswith("_") or (k.startswith("__") and k.endswith("__"))}


def host_fingerprint(modules: Iterable[str], tools: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Process-wide state that model code of an in-process executor must not change: csv and
    decimal settings, the attributes of the authorized modules and of the classes they define,
    the defaults and attributes of the tools. Compare two fingerprints with `==`."""
    import csv
    import decimal

    fp: dict[str, Any] = {"csv.field_size_limit": csv.field_size_limit()}
    for name in csv.list_dialects():
        d = csv.get_dialect(name)
        fp[f"csv.dialect.{name}"] = (d.delimiter, d.quotechar, d.doublequote, d.lineterminator,
                                     d.quoting, d.skipinitialspace, d.strict)
    for label, c in (("getcontext()", decimal.getcontext()), ("DefaultContext", decimal.DefaultContext),
                     ("BasicContext", decimal.BasicContext)):
        fp[f"decimal.{label}"] = (c.prec, c.rounding, c.Emin, c.Emax, c.capitals, c.clamp,
                                  tuple(sorted(k.__name__ for k, v in c.traps.items() if v)))
    fp["cwd"] = os.getcwd()
    fp["recursionlimit"] = sys.getrecursionlimit()
    fp["stdout"] = (id(sys.stdout), id(sys.stderr), id(builtins.print))
    for modname in modules:
        module = sys.modules.get(modname.rstrip(".*"))
        if module is None:
            continue
        fp[modname] = _public_state(module)
        for cname, cls in list(vars(module).items()):
            if isinstance(cls, type) and not cname.startswith("_") and getattr(cls, "__module__", "") == module.__name__:
                fp[f"{modname}.{cname}"] = _public_state(cls)
    for tname, tool in (tools or {}).items():
        fp[f"tool.{tname}"] = (
            repr(getattr(tool, "__defaults__", None)), repr(getattr(tool, "__kwdefaults__", None)),
            repr(sorted(_public_state(tool).items())),
            repr((getattr(tool, "args", None), getattr(tool, "keywords", None))) if isinstance(tool, functools.partial) else "",
            repr(sorted(_public_state(getattr(tool, "__self__", None)).items())),
        )
    return fp


def _diff(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    out = []
    for k in sorted(set(before) | set(after)):
        b, a = before.get(k, "<missing>"), after.get(k, "<missing>")
        if isinstance(b, str) and b == "<missing>":  # a module imported for the first time
            continue
        if isinstance(b, dict) and isinstance(a, dict):
            if b.keys() == a.keys() and all(a[n] is b[n] for n in b):
                continue
        elif b == a:
            continue
        if isinstance(b, dict) and isinstance(a, dict):
            out += [f"{k}.{n}" for n in sorted(set(a) | set(b)) if a.get(n, _diff) is not b.get(n, _diff)]
        else:
            out.append(f"{k}: {b!r:.60} -> {a!r:.60}")
    return out


def evaluate_escape(ex: Any, code: str, label: str, marker: str, secret: str,
                    reach_counts: bool, extra_text: Callable[[], str] = lambda: "",
                    fingerprint: Callable[[], dict[str, Any]] | None = None) -> Outcome:
    _remove(marker)
    before = fingerprint() if fingerprint else None
    r, dt, problem = _execute(ex, code)
    reset_problem = _reset(ex)
    gc.collect()  # finalizers of model objects run now, if at all: their effects count too
    changed = _diff(before, fingerprint()) if fingerprint and before is not None else []
    if problem or reset_problem:
        status, detail = "internal-error", problem or reset_problem
        if os.path.exists(marker):
            status, detail = "escape", f"wrote the marker file {marker} ({detail})"
        _remove(marker)
        return Outcome("escape", label, status, code, detail or "", duration_s=dt)
    text = _leak_text(r) + "\n" + extra_text()
    findings = []
    if os.path.exists(marker):
        findings.append(f"wrote the marker file {marker}")
    if secret and secret in text:
        findings.append("printed the canary environment variable's value")
    if reach_counts and _REACH.search(text):
        findings.append("reached a refused module (called the real os.getpid())")
    if changed:
        findings.append("changed host state: " + ", ".join(changed[:8]))
    _remove(marker)
    if findings:
        return Outcome("escape", label, "escape", code, "; ".join(findings), r.error.type if r.error else None, dt)
    return Outcome("escape", label, "held", code, str(r.error) if r.error else "ran without effect",
                   r.error.type if r.error else None, dt)


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# Bombs hidden in a value's __repr__/__str__/__eq__: the step itself succeeds; what matters is
# that rendering the value happens under the limits (the executor returns in time).
_HOOK_BOMBS = frozenset({"repr_of_output", "str_of_final_answer", "eq_of_output"})


def evaluate_bomb(ex: Any, code: str, label: str, limits: Limits, margin_s: float,
                  host_memory_margin_mb: float) -> Outcome:
    kind = label.split("/")[0]
    rss0 = _max_rss_mb()
    r, dt, problem = _execute(ex, code)
    if problem:
        return Outcome("bomb", label, "internal-error", code, problem, duration_s=dt)
    grew = _max_rss_mb() - rss0
    faults = []
    budget = limits.timeout_s + margin_s
    if dt > budget:
        faults.append(f"returned after {dt:.2f} s > timeout {limits.timeout_s} s + margin {margin_s} s")
    if kind == "output":
        if len(r.logs) > limits.max_output_chars + 1000:
            faults.append(f"logs hold {len(r.logs)} chars > max_output_chars {limits.max_output_chars}")
    elif kind != "process" and r.error is None and label.split("/")[-1] not in _HOOK_BOMBS:
        faults.append("the bomb ran to completion: no limit stopped it")
    if grew > host_memory_margin_mb:
        faults.append(f"host process grew by {grew:.0f} MB")
    r2, _, problem2 = _execute(ex, "1 + 1")
    if problem2:
        faults.append(f"afterwards: {problem2}")
    elif r2.error is not None or r2.output != 2:
        faults.append(f"unusable afterwards: `1 + 1` gave {r2.output!r} / {r2.error}")
    _reset(ex)
    status = "uncontained" if faults else "contained"
    detail = "; ".join(faults) or (str(r.error) if r.error else "output truncated")
    return Outcome("bomb", label, status, code, detail, r.error.type if r.error else None, dt)


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _is_open_policy(ex: Any) -> bool:
    """Full-Python executors (e.g. a container with the open policy) may import os: reaching a
    module is not an escape there, only effects on the host are."""
    policy = getattr(ex, "policy", None)
    if isinstance(policy, str):
        return policy.lower() in ("open", "full", "none", "unrestricted")
    restricted = getattr(ex, "restricted", None)
    return restricted is False


def _is_in_process(ex: Any) -> bool:
    """Whether model code runs in this process (so its effects on this process count)."""
    flag = getattr(ex, "in_process", None)
    if isinstance(flag, bool):
        return flag
    return type(ex).__module__.split(".")[-1] not in ("process", "container", "remote")


# --------------------------------------------------------------------------------------------
# Runners: where the executor lives during a campaign
# --------------------------------------------------------------------------------------------


class _Context:
    """Everything an evaluation needs besides the example itself."""

    def __init__(self, tools, register: bool, marker: str, secret: str, margin_s: float,
                 host_memory_margin_mb: float, open_policy: bool | None) -> None:
        self.tools = tools
        self.register = register
        self.marker = marker
        self.secret = secret
        self.margin_s = margin_s
        self.host_memory_margin_mb = host_memory_margin_mb
        self.open_policy = open_policy


def _make_executor(factory: Callable[[], Any], ctx: _Context) -> Any:
    ex = factory()
    if ctx.register and ctx.tools:
        ex.register_tools(dict(ctx.tools))
    return ex


def _evaluate(ex: Any, req: dict, ctx: _Context, extra_text: Callable[[], str] = lambda: "") -> Outcome:
    limits: Limits = getattr(ex, "limits", None) or Limits()
    cat, code, label = req["category"], req["code"], req["label"]
    if cat == "program":
        return evaluate_program(ex, code, label, ctx.tools, limits)
    if cat == "escape":
        open_policy = ctx.open_policy if ctx.open_policy is not None else _is_open_policy(ex)
        fingerprint = None
        if _is_in_process(ex):
            modules = tuple(getattr(ex, "authorized_imports", None) or DEFAULT_AUTHORIZED_IMPORTS)
            tools = dict(ctx.tools or {})
            for name in modules:  # so that a first import during an attempt is not a change
                with contextlib.suppress(Exception):
                    importlib.import_module(name.rstrip(".*"))

            def fingerprint() -> dict[str, Any]:
                return host_fingerprint(modules, tools)

        return evaluate_escape(ex, code, label, ctx.marker, ctx.secret, not open_policy, extra_text,
                               fingerprint)
    return evaluate_bomb(ex, code, label, limits, ctx.margin_s, ctx.host_memory_margin_mb)


class _InlineRunner:
    """Runs the executor in this process; a watchdog thread notices a hang (and gives up on that
    executor instance: a Python thread cannot be killed)."""

    def __init__(self, factory: Callable[[], Any], ctx: _Context) -> None:
        self.factory, self.ctx = factory, ctx
        self.ex = _make_executor(factory, ctx)
        self.limits: Limits = getattr(self.ex, "limits", None) or Limits()

    def run(self, req: dict, budget: float) -> Outcome:
        box: list[Outcome] = []

        def work() -> None:
            try:
                box.append(_evaluate(self.ex, req, self.ctx))
            except BaseException as exc:  # noqa: BLE001
                box.append(Outcome(req["category"], req["label"], "internal-error", req["code"],
                                   f"the checker failed: {type(exc).__name__}: {exc}"))

        t = threading.Thread(target=work, daemon=True)
        t0 = time.perf_counter()
        t.start()
        t.join(budget)
        if t.is_alive():
            self.ex = _make_executor(self.factory, self.ctx)
            status = "uncontained" if req["category"] == "bomb" else "hang"
            return Outcome(req["category"], req["label"], status, req["code"],
                           f"execute() did not return within {budget:.1f} s", duration_s=time.perf_counter() - t0)
        return box[0]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ex.close()


def _child_main(conn: Any, parent_end: Any, factory: Callable[[], Any], ctx: _Context, log_path: str) -> None:
    parent_end.close()  # so that the parent's death reads as EOF here: an orphan must not linger
    # Our stdout/stderr go to a file the parent never trusts but scans for leaked secrets:
    # a finalizer that runs model code after execute() could print to the real stdout.
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    # sys.stdout may not be fd 1 (pytest's capture replaces it): point both at the file too.
    sys.stdout = open(log_path, "a", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115
    sys.stderr = sys.stdout
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ex = _make_executor(factory, ctx)
        limits = getattr(ex, "limits", None) or Limits()
        conn.send_bytes(_json_dumps({"ok": True, "limits": asdict(limits)}).encode())
    except BaseException as exc:  # noqa: BLE001
        conn.send_bytes(_json_dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}).encode())
        return

    def log_size() -> int:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        try:
            return os.path.getsize(log_path)
        except OSError:
            return 0

    def stray_output_since(start: int) -> Callable[[], str]:
        def read() -> str:
            log_size()  # flushes
            with contextlib.suppress(OSError), open(log_path, "rb") as f:
                f.seek(start)
                return f.read(1_000_000).decode("utf-8", "replace")
            return ""

        return read

    while True:
        try:
            req = _json_loads(conn.recv_bytes())
        except (EOFError, OSError):
            break
        if req.get("op") == "close":
            break
        try:
            out = _evaluate(ex, req, ctx, stray_output_since(log_size()))
        except BaseException as exc:  # noqa: BLE001
            out = Outcome(req["category"], req["label"], "internal-error", req["code"],
                          f"the checker failed: {type(exc).__name__}: {exc}")
        conn.send_bytes(_json_dumps(asdict(out)).encode())
    with contextlib.suppress(Exception):
        ex.close()


class _ForkRunner:
    """Runs the executor in a forked child process: a hang or a crash of the interpreter is seen,
    the child killed and a fresh one started. Messages are JSON, never pickle."""

    def __init__(self, factory: Callable[[], Any], ctx: _Context) -> None:
        self.factory, self.ctx = factory, ctx
        self.mp = multiprocessing.get_context("fork")
        self.log_dir = tempfile.mkdtemp(prefix="codeagent-fuzz-")
        self.proc = None
        self.conn = None
        self.limits = Limits()
        self._spawn()

    def _spawn(self) -> None:
        parent, child = self.mp.Pipe()
        log_path = os.path.join(self.log_dir, f"child-{secrets.token_hex(4)}.log")
        self.proc = self.mp.Process(target=_child_main, args=(child, parent, self.factory, self.ctx, log_path),
                                    daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        if not parent.poll(120):
            self._kill()
            raise RuntimeError("the executor factory did not build an executor within 120 s")
        hello = _json_loads(parent.recv_bytes())
        if not hello["ok"]:
            self._kill()
            raise RuntimeError(f"the executor factory failed: {hello['error']}")
        self.limits = Limits(**hello["limits"])

    def _kill(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            self.proc.kill()
        if self.proc is not None:
            self.proc.join(5)
        if self.conn is not None:
            self.conn.close()

    def run(self, req: dict, budget: float) -> Outcome:
        t0 = time.perf_counter()
        try:
            self.conn.send_bytes(_json_dumps(req).encode())
            if self.conn.poll(budget):
                return Outcome(**_json_loads(self.conn.recv_bytes()))
            detail = f"execute() did not return within {budget:.1f} s (process killed)"
        except (EOFError, OSError, BrokenPipeError):
            self.proc.join(2)
            detail = f"the process hosting the executor died (exit code {self.proc.exitcode})"
        status = "uncontained" if req["category"] == "bomb" else "hang"
        if "died" in detail and req["category"] != "bomb":
            status = "internal-error"
        self._kill()
        self._spawn()
        return Outcome(req["category"], req["label"], status, req["code"], detail,
                       duration_s=time.perf_counter() - t0)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.send_bytes(_json_dumps({"op": "close"}).encode())
            self.proc.join(10)
        self._kill()
        shutil.rmtree(self.log_dir, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# Campaigns
# --------------------------------------------------------------------------------------------


@dataclass
class FuzzReport:
    """Counts of a campaign, every failing example, and the slowest ones."""

    counts: Counter = field(default_factory=Counter)  # (category/label-group, status) -> n
    error_types: Counter = field(default_factory=Counter)  # (category, error type) of refusals
    failures: list[Outcome] = field(default_factory=list)
    slowest: list[Outcome] = field(default_factory=list)
    duration_s: float = 0.0
    executor: str = ""

    def add(self, o: Outcome) -> None:
        self.counts[(o.category, o.status)] += 1
        if o.status in ("refused", "divergent", "held", "contained"):
            self.error_types[(o.category, o.error_type or "none")] += 1
        if o.failed or o.status == "divergent":
            self.failures.append(o)
        self.slowest.append(o)
        if len(self.slowest) > 40:
            self.slowest.sort(key=lambda x: -x.duration_s)
            del self.slowest[10:]

    def total(self, category: str | None = None, status: str | None = None) -> int:
        return sum(n for (c, s), n in self.counts.items()
                   if (category is None or c == category) and (status is None or s == status))

    def top_slowest(self, n: int = 5) -> list[Outcome]:
        return sorted(self.slowest, key=lambda x: -x.duration_s)[:n]

    def failed(self, statuses: Iterable[str] = FAILING) -> list[Outcome]:
        wanted = set(statuses)
        return [o for o in self.failures if o.status in wanted]

    def assert_ok(self, statuses: Iterable[str] = FAILING) -> None:
        bad = self.failed(statuses)
        if bad:
            shown = "\n\n".join(f"--- {o.category} {o.status} [{o.label}]: {o.detail}\n{o.code}" for o in bad[:5])
            raise AssertionError(f"{len(bad)} failing example(s) out of {self.total()} on {self.executor}:\n\n{shown}")


_PROPERTIES = ("cpython", "escapes", "bombs")


class _TimeUp(BaseException):
    """Ends a campaign phase whose time budget is spent."""


def _campaign(n: int, strategy: Any, prop: str, mode: str, phase_deadline: float | None,
              budget: float, runner: Any, report: FuzzReport,
              on_outcome: Callable[[Outcome], None] | None) -> Callable[[], None]:
    """One hypothesis-driven phase: draw `n` examples (until `phase_deadline`), run, record."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
              verbosity=Verbosity.quiet)
    @given(st.data())
    def campaign(data: Any) -> None:
        if phase_deadline is not None and time.perf_counter() > phase_deadline:
            raise _TimeUp()  # a BaseException: hypothesis lets it through as is
        example = data.draw(strategy)
        if prop == "cpython":
            req = {"category": "program", "code": example, "label": mode}
        elif prop == "escapes":
            req = {"category": "escape", "code": example.code, "label": example.label}
        else:
            req = {"category": "bomb", "code": example.code, "label": example.label}
        outcome = runner.run(req, budget)
        report.add(outcome)
        if on_outcome is not None:
            on_outcome(outcome)

    return campaign
_SHARE = {"cpython": 0.6, "escapes": 0.3, "bombs": 0.1}
_BATCH = 1000


class Session:
    """One executor configuration under test: the canary planted, a marker path, the executor
    built by `factory` (in a forked child when isolated). `run()` evaluates one example.

        with Session(LocalExecutor) as s:
            s.run("escape", "import os\nprint(os.environ)")
    """

    def __init__(
        self,
        factory: Callable[[], Any],
        *,
        tools: Mapping[str, Callable[..., Any]] | None = None,
        register_tools: bool = True,
        margin_s: float = 1.0,
        host_memory_margin_mb: float = 500.0,
        isolate: bool | None = None,
        open_policy: bool | None = None,
        marker: str | None = None,
    ) -> None:
        self.tools = probe_tools() if tools is None else dict(tools)
        self.secret = os.environ.get(CANARY_ENV) or "canary-" + secrets.token_hex(12)
        self._had_env = CANARY_ENV in os.environ
        os.environ[CANARY_ENV] = self.secret  # before any executor exists: workers inherit it
        self._marker_dir = None
        if marker is None:
            self._marker_dir = tempfile.mkdtemp(prefix="codeagent-fuzz-marker-")
            marker = os.path.join(self._marker_dir, "ESCAPED")
        else:
            os.makedirs(os.path.dirname(marker) or ".", exist_ok=True)
        self.marker = marker
        self.margin_s = margin_s
        ctx = _Context(self.tools, register_tools, marker, self.secret, margin_s,
                       host_memory_margin_mb, open_policy)
        try:
            probe = _make_executor(factory, ctx)
        except BaseException:
            self._cleanup()
            raise
        self.executor_name = type(probe).__name__
        self.limits: Limits = getattr(probe, "limits", None) or Limits()
        self.authorized_imports = getattr(probe, "authorized_imports", None)
        self.in_process = _is_in_process(probe)
        self.isolated = (self.in_process if isolate is None else isolate) and hasattr(os, "fork")
        if self.isolated:
            with contextlib.suppress(Exception):
                probe.close()
            try:
                self.runner: Any = _ForkRunner(factory, ctx)
            except BaseException:
                self._cleanup()
                raise
        else:
            self.runner = _InlineRunner.__new__(_InlineRunner)
            self.runner.factory, self.runner.ctx, self.runner.ex = factory, ctx, probe
            self.runner.limits = self.limits
        # Beyond this the executor is stuck: the runner gives up on it (and kills an isolated one).
        self.budget = self.limits.timeout_s + margin_s + 5.0

    def run(self, category: str, code: str, label: str = "") -> Outcome:
        """Evaluate one example: category is "program", "escape" or "bomb" (label: "kind/name")."""
        if category not in ("program", "escape", "bomb"):
            raise ValueError(f"category must be program, escape or bomb, got {category!r}")
        return self.runner.run({"category": category, "code": code, "label": label or category}, self.budget)

    def _cleanup(self) -> None:
        if self._marker_dir:
            shutil.rmtree(self._marker_dir, ignore_errors=True)
        if not self._had_env:
            os.environ.pop(CANARY_ENV, None)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.runner.close()
        self._cleanup()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fuzz(
    factory: Callable[[], Any],
    *,
    examples: int = 200,
    seconds: float | None = None,
    properties: Iterable[str] = _PROPERTIES,
    mode: str = "data",
    tools: Mapping[str, Callable[..., Any]] | None = None,
    register_tools: bool = True,
    authorized_imports: Iterable[str] | None = None,
    bomb_kinds: Iterable[str] | None = None,
    margin_s: float = 1.0,
    host_memory_margin_mb: float = 500.0,
    isolate: bool | None = None,
    open_policy: bool | None = None,
    seed: int | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> FuzzReport:
    """Run a campaign: `examples` generated examples (and at most `seconds`), split among the
    properties ("cpython": generated programs compared with CPython — also the internal-error
    check; "escapes"; "bombs"). Returns a FuzzReport; never raises for what it finds.

    tools: registered on each executor built by `factory` (default: `probe_tools()`) and given to
    the CPython reference; pass `register_tools=False` if your factory registers them itself.
    isolate: run the executor in a forked child (default: yes for in-process executors).
    open_policy: whether reaching `os` is allowed (default: read from the executor's `policy`).

        report = fuzz(LocalExecutor, examples=1000, seconds=60)
        print(report.total("program", "equal"), report.failures)
    """
    from hypothesis import seed as hseed
    from hypothesis.errors import Flaky

    from .strategies import BOMB_KINDS, escape_attempts, programs, resource_bombs

    props = list(properties)
    unknown = set(props) - set(_PROPERTIES)
    if unknown or not props:
        raise ValueError(f"properties must be among {_PROPERTIES}, got {props}")
    report = FuzzReport()
    t_start = time.perf_counter()
    deadline = t_start + seconds if seconds else None
    session = Session(factory, tools=tools, register_tools=register_tools, margin_s=margin_s,
                      host_memory_margin_mb=host_memory_margin_mb, isolate=isolate,
                      open_policy=open_policy)
    report.executor = session.executor_name
    weights = {p: _SHARE[p] for p in props}
    total_w = sum(weights.values())
    plan = {p: max(1, round(examples * w / total_w)) for p, w in weights.items()}
    imports = authorized_imports if authorized_imports is not None else session.authorized_imports
    try:
        for i, prop in enumerate(props):
            if prop == "cpython":
                strategy = programs(session.tools, mode)
            elif prop == "escapes":
                strategy = escape_attempts(session.marker, CANARY_ENV, tools=session.tools,
                                           authorized_imports=imports)
            else:
                strategy = resource_bombs(tuple(bomb_kinds or BOMB_KINDS), limits=session.limits)
            phase_deadline = None
            if deadline is not None:
                remaining_w = sum(weights[p] for p in props[i:])
                phase_deadline = time.perf_counter() + (deadline - time.perf_counter()) * weights[prop] / remaining_w
            # Hypothesis remembers every example of a run to avoid repeats, which slows long runs
            # down: long phases run as several runs of at most _BATCH examples. A run that
            # hypothesis aborts as flaky (hypothesmith is not always deterministic) is replaced.
            target = report.total() + plan[prop]
            b = flaky = 0
            while report.total() < target and flaky < 5:
                if phase_deadline is not None and time.perf_counter() > phase_deadline:
                    break
                campaign = _campaign(min(_BATCH, target - report.total()), strategy, prop, mode,
                                     phase_deadline, session.budget, session.runner, report, on_outcome)
                if seed is not None:
                    campaign = hseed(seed + b)(campaign)
                b += 1
                before = report.total()
                try:
                    campaign()
                except _TimeUp:
                    break
                except Flaky:
                    flaky += 1
                    continue
                if report.total() == before:
                    break  # nothing new to generate
    finally:
        session.close()
        report.duration_s = time.perf_counter() - t_start
    return report


def check_no_escape(factory: Callable[[], Any], *, examples: int = 200, seconds: float | None = None,
                    **options: Any) -> FuzzReport:
    """Escape attempts never write the marker, print the canary or reach a refused module.

        def test_no_escape():
            check_no_escape(lambda: LocalExecutor(authorized_imports=["pandas"]), examples=300)
    """
    report = fuzz(factory, examples=examples, seconds=seconds, properties=["escapes"], **options)
    report.assert_ok({"escape", "internal-error", "hang"})
    return report


def check_bombs_contained(factory: Callable[[], Any], limits: Limits | None = None, *,
                          margin_s: float = 1.0, examples: int = 40, seconds: float | None = None,
                          **options: Any) -> FuzzReport:
    """Every bomb returns within `timeout_s + margin_s`, the host does not balloon, and the
    executor answers `1 + 1` afterwards. `limits` (optional) is applied through
    `factory` when it accepts a `limits=` keyword; otherwise the executor's own limits count.

        def test_bombs():
            check_bombs_contained(LocalExecutor, Limits(timeout_s=1), margin_s=1.0)
    """
    if limits is not None:
        base = factory

        def factory() -> Any:  # noqa: F811 - the limited variant of the user's factory
            try:
                return base(limits=limits)
            except TypeError:
                return base()

    report = fuzz(factory, examples=examples, seconds=seconds, properties=["bombs"],
                  margin_s=margin_s, **options)
    report.assert_ok({"uncontained", "internal-error", "hang"})
    return report


def check_matches_cpython(factory: Callable[[], Any], *, examples: int = 200,
                          seconds: float | None = None, mode: str = "data", **options: Any) -> FuzzReport:
    """On programs the executor accepts, printed output, last value and final answer equal
    CPython's (reference run in a fresh namespace with the same tools and final_answer).

        def test_cpython_equal():
            check_matches_cpython(lambda: LocalExecutor(tools=probe_tools()), examples=300)
    """
    report = fuzz(factory, examples=examples, seconds=seconds, properties=["cpython"], mode=mode, **options)
    report.assert_ok({"mismatch", "internal-error", "hang"})
    return report


def check_no_internal_errors(factory: Callable[[], Any], *, examples: int = 200,
                             seconds: float | None = None, mode: str = "all", **options: Any) -> FuzzReport:
    """`execute` never raises, never hangs and always returns a clean ExecutionResult, on
    generated programs (data and grammar-level) and escape attempts.

        def test_clean_errors():
            check_no_internal_errors(SubprocessExecutor, examples=100)
    """
    report = fuzz(factory, examples=examples, seconds=seconds, properties=["cpython", "escapes"],
                  mode=mode, **options)
    report.assert_ok({"internal-error", "hang"})
    return report


def check_executor(factory: Callable[[], Any], *, examples: int = 300, seconds: float | None = None,
                   mode: str = "data", **options: Any) -> FuzzReport:
    """All properties in one campaign: no escape, bombs contained, CPython-equal output on
    accepted programs, no internal error. Raises AssertionError listing failing programs.

        def test_my_executor():
            check_executor(lambda: LocalExecutor(tools=my_tools), tools=my_tools, examples=300)
    """
    report = fuzz(factory, examples=examples, seconds=seconds, mode=mode, **options)
    report.assert_ok()
    return report


