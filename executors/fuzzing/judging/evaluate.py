"""Evaluating one example against a live executor: run it, check the result's shape, judge it.

Programs are compared with the CPython reference, escape attempts are checked for their effects
(marker file, canary value, reach token, changed host state), bombs for containment (in time,
host memory, the executor usable afterwards).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import re
import resource
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...base import DEFAULT_AUTHORIZED_IMPORTS, ExecutionError, ExecutionResult, Limits
from ..attacks.canaries import CanaryFiles
from ..attacks.library_routes import probe_for
from ..attacks.preamble import REACH_TOKEN
from ..differential.compare import compare_with_reference, is_plain
from ..differential.oracle import run_cpython
from .host_state import fingerprint_changes, host_fingerprint
from .host_touches import touch_result
from .outcome import Outcome

__all__ = ["RunContext", "evaluate", "evaluate_program", "evaluate_escape", "evaluate_bomb",
           "is_in_process", "is_open_policy"]

# Tracebacks or our own source paths (also in subpackages) in a message meant for the model.
_INTERNAL_HINTS = re.compile(
    r"Traceback \(most recent call last\)|[/\\]executors[/\\](?:\w+[/\\])*\w+\.py|RestrictedPython[/\\]")
_REACH = re.compile(re.escape(REACH_TOKEN) + r" \d+")

# Bombs hidden in a value's __repr__/__str__/__eq__: the step itself succeeds; what matters is
# that rendering the value happens under the limits (the executor returns in time).
_HOOK_BOMBS = frozenset({"repr_of_output", "str_of_final_answer", "eq_of_output"})
# Deep C recursion (repr, json, == of nested lists): from CPython 3.14 bounded by the C stack, not
# by the recursion limit, so one a few ten thousand levels deep just finishes, as in CPython; the
# bomb's aim, overflowing the host's C stack, is what CPython itself now stops.
_C_STACK_BOMBS = frozenset({"nested_repr", "nested_json", "nested_eq"}) \
    if sys.version_info >= (3, 14) else frozenset()


def _shape_problem(r: Any) -> str | None:
    """What is wrong with the shape of execute()'s return value, or None."""
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


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


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
    status, detail = compare_with_reference(r, ref, limits)
    return Outcome("program", label, status, code, detail, err.type if err else None, dt)


def _leak_text(r: ExecutionResult) -> str:
    parts = [r.logs or "", r.output_repr or ""]
    if is_plain(r.output):
        parts.append(repr(r.output))
    if r.error is not None:
        parts.append(r.error.message or "")
    return "\n".join(parts)


def _escape_findings(r: ExecutionResult, text: str, marker: str, secret: str, reach_counts: bool,
                     changed: list[str], canaries: CanaryFiles | None = None,
                     written: list[str] | None = None) -> list[str]:
    findings = []
    if os.path.exists(marker):
        findings.append(f"wrote the marker file {marker}")
    elif written:
        findings.append(f"wrote beside the marker, outside the grants: {', '.join(written[:6])}")
    if secret and secret in text:
        findings.append("printed the canary environment variable's value")
    if canaries is not None and canaries.secret and canaries.secret in text:
        findings.append(f"printed the secret of {canaries.secret_file} (a read outside the grants)")
    if reach_counts and _REACH.search(text):
        findings.append("reached a refused module (called the real os.getpid())")
    if changed:
        findings.append("changed host state: " + ", ".join(changed[:8]))
    return findings


_PROBE_MARK = "probe: "


def _probe_step(ex: Any, probe: tuple[str, str]) -> str:
    """The setting a tamper attempt aims at, as a step of the executor sees it."""
    imports, expr = probe
    r, _, problem = _execute(ex, f"{imports}\nprint({_PROBE_MARK!r} + ' '.join(repr({expr}).splitlines()))")
    _reset(ex)
    if problem or r is None:
        return f"<probe failed: {problem}>"
    # only the probe's own line (its repr on one line): a worker's logs also carry its stderr ("Exception ignored in:
    # DataSource.__del__" from an earlier attempt's garbage looked like a changed setting)
    seen = [line[len(_PROBE_MARK):] for line in r.logs.splitlines() if line.startswith(_PROBE_MARK)]
    return "\n".join(seen) + (f" <{r.error.type}>" if r.error else "")


def _probe_host(probe: tuple[str, str]) -> str:
    """The same setting in this process (what an in-process executor must leave alone)."""
    imports, expr = probe
    namespace: dict[str, Any] = {}
    try:
        exec(imports, namespace)  # noqa: S102 - our own table's imports
        return repr(eval(expr, namespace))  # noqa: S307 - our own table's probe
    except Exception as exc:  # noqa: BLE001
        return f"<{type(exc).__name__}>"


def _settings(ex: Any, probe: tuple[str, str] | None, in_process: bool) -> dict[str, str]:
    if probe is None:
        return {}
    state = {"next step": _probe_step(ex, probe)}
    if in_process:
        state["host"] = _probe_host(probe)
    return state


def _setting_changes(probe: tuple[str, str] | None, before: dict[str, str], after: dict[str, str]) -> list[str]:
    return [f"{probe[1] if probe else ''} in the {where}: {before[where]!r:.60} -> {after[where]!r:.60}"
            for where in before if before[where] != after.get(where)]


def evaluate_escape(ex: Any, code: str, label: str, marker: str, secret: str,
                    reach_counts: bool, extra_text: Callable[[], str] = lambda: "",
                    fingerprint: Callable[[], dict[str, Any]] | None = None,
                    canaries: CanaryFiles | None = None) -> Outcome:
    _remove(marker)
    probe = probe_for(label)
    settings_before = _settings(ex, probe, is_in_process(ex))
    tree = canaries.snapshot() if canaries is not None else None
    before = fingerprint() if fingerprint else None
    r, dt, problem = _execute(ex, code)
    if label.startswith("deferred/") and problem is None:
        touch_result(ex, r)  # what a host does with the value: print it, compare it, copy it...
    reset_problem = _reset(ex)
    gc.collect()  # finalizers of model objects run now, if at all: their effects count too
    changed = fingerprint_changes(before, fingerprint()) if fingerprint and before is not None else []
    changed += _setting_changes(probe, settings_before, _settings(ex, probe, is_in_process(ex)))
    written = canaries.changes(tree) if canaries is not None and tree is not None else []
    if problem or reset_problem:
        status, detail = "internal-error", problem or reset_problem
        if os.path.exists(marker) or written:
            status, detail = "escape", f"wrote beside the marker {marker}: {written} ({detail})"
        _remove(marker)
        if written:
            canaries.restore(tree)
        return Outcome("escape", label, status, code, detail or "", duration_s=dt)
    text = _leak_text(r) + "\n" + extra_text()
    findings = _escape_findings(r, text, marker, secret, reach_counts, changed, canaries, written)
    _remove(marker)
    if written:
        canaries.restore(tree)
    if findings:
        return Outcome("escape", label, "escape", code, "; ".join(findings), r.error.type if r.error else None, dt)
    return Outcome("escape", label, "held", code, str(r.error) if r.error else "ran without effect",
                   r.error.type if r.error else None, dt)


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def evaluate_bomb(ex: Any, code: str, label: str, limits: Limits, margin_s: float,
                  host_memory_margin_mb: float) -> Outcome:
    kind = label.split("/")[0]
    rss0 = _max_rss_mb()
    r, dt, problem = _execute(ex, code)
    if problem:
        return Outcome("bomb", label, "internal-error", code, problem, duration_s=dt)
    grew = _max_rss_mb() - rss0
    faults = []
    if dt > limits.timeout_s + margin_s:
        faults.append(f"returned after {dt:.2f} s > timeout {limits.timeout_s} s + margin {margin_s} s")
    if kind == "output":
        if len(r.logs) > limits.max_output_chars + 1000:
            faults.append(f"logs hold {len(r.logs)} chars > max_output_chars {limits.max_output_chars}")
    elif kind != "process" and r.error is None and label.split("/")[-1] not in _HOOK_BOMBS | _C_STACK_BOMBS:
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


def is_open_policy(ex: Any) -> bool:
    """Full-Python executors (e.g. a container with the open policy) may import os: reaching a
    module is not an escape there, only effects on the host are."""
    policy = getattr(ex, "policy", None)
    if isinstance(policy, str):
        return policy.lower() in ("open", "full", "none", "unrestricted")
    restricted = getattr(ex, "restricted", None)
    return restricted is False


def is_in_process(ex: Any) -> bool:
    """Whether model code runs in this process (so its effects on this process count)."""
    flag = getattr(ex, "in_process", None)
    if isinstance(flag, bool):
        return flag
    return type(ex).__module__.split(".")[-1] not in ("process", "container", "remote")


@dataclass
class RunContext:
    """Everything an evaluation needs besides the example itself."""

    tools: Mapping[str, Callable[..., Any]]
    register: bool
    marker: str
    secret: str
    margin_s: float
    host_memory_margin_mb: float
    open_policy: bool | None
    canaries: CanaryFiles | None = None


def _escape_fingerprint(ex: Any, ctx: RunContext) -> Callable[[], dict[str, Any]] | None:
    """The host-state fingerprint to take around an escape attempt (in-process executors only)."""
    if not is_in_process(ex):
        return None
    modules = tuple(getattr(ex, "authorized_imports", None) or DEFAULT_AUTHORIZED_IMPORTS)
    tools = dict(ctx.tools or {})
    for name in modules:  # so that a first import during an attempt is not a change
        with contextlib.suppress(Exception):
            importlib.import_module(name.rstrip(".*"))

    def fingerprint() -> dict[str, Any]:
        return host_fingerprint(modules, tools)

    return fingerprint


def evaluate(ex: Any, req: dict, ctx: RunContext, extra_text: Callable[[], str] = lambda: "") -> Outcome:
    """Evaluate one request {"category", "code", "label"} on the executor `ex`."""
    limits: Limits = getattr(ex, "limits", None) or Limits()
    cat, code, label = req["category"], req["code"], req["label"]
    if cat == "program":
        return evaluate_program(ex, code, label, ctx.tools, limits)
    if cat == "escape":
        open_policy = ctx.open_policy if ctx.open_policy is not None else is_open_policy(ex)
        return evaluate_escape(ex, code, label, ctx.marker, ctx.secret, not open_policy, extra_text,
                               _escape_fingerprint(ex, ctx), ctx.canaries)
    return evaluate_bomb(ex, code, label, limits, ctx.margin_s, ctx.host_memory_margin_mb)
