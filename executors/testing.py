"""Reusable fuzzing properties: check that *your* executor configuration holds (re-exported from
`executors.fuzzing`, where they live: checks.py, campaign.py, session.py, oracle.py, ...).

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

from .fuzzing.campaigns.campaign import fuzz
from .fuzzing.campaigns.checks import (
    check_bombs_contained,
    check_executor,
    check_matches_cpython,
    check_no_escape,
    check_no_internal_errors,
)
from .fuzzing.campaigns.session import CANARY_ENV, Session
from .fuzzing.differential.compare import REFUSAL_TYPES  # noqa: F401 - importable from here, as before
from .fuzzing.differential.oracle import Reference, run_cpython  # noqa: F401
from .fuzzing.judging.evaluate import evaluate_bomb, evaluate_escape, evaluate_program  # noqa: F401
from .fuzzing.judging.host_state import host_fingerprint
from .fuzzing.judging.outcome import FAILING, FuzzReport, Outcome  # noqa: F401
from .fuzzing.judging.probes import add, probe_tools  # noqa: F401

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

