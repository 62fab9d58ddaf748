"""The properties as checks for your own test suite: each runs a short campaign and raises
AssertionError listing every failing program (ready to paste and rerun)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...base import Limits
from ..judging.outcome import FuzzReport
from .campaign import fuzz

__all__ = ["check_no_escape", "check_bombs_contained", "check_matches_cpython",
           "check_no_internal_errors", "check_executor"]


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
