"""Run a snippet in plain CPython the way an executor should: the reference for differential tests.

`run_cpython(code)` executes `code` in a fresh namespace with stdout captured and returns what an
executor returns: the printed text, the value of the last expression statement, and the error
(type, message, line number) if the code raised. Coverage tests compare executors against it.
It is the fuzzing campaigns' oracle (`executors.fuzzing.differential.oracle`), with real builtins and no time
limit, and with several snippets sharing one namespace like successive execute() calls.
"""

from __future__ import annotations

from typing import Any

from executors.fuzzing.differential.oracle import Reference, run_in_namespace, split_last_expression

__all__ = ["Reference", "run_cpython", "split_last_expression", "SNIPPET_FILENAME"]

SNIPPET_FILENAME = "<snippet>"


def run_cpython(code: str | list[str], namespace: dict[str, Any] | None = None) -> Reference:
    """Execute one snippet (or several, sharing state, like successive execute() calls).

    For a list, the result is that of the last snippet; earlier snippets must not fail.
    """
    ns: dict[str, Any] = {"__name__": "__main__"} if namespace is None else namespace
    snippets = [code] if isinstance(code, str) else list(code)
    ref = Reference(True, "")
    for index, snippet in enumerate(snippets):
        ref = run_in_namespace(snippet, ns, filename=SNIPPET_FILENAME)
        if ref.error_type is not None and index < len(snippets) - 1:
            raise AssertionError(f"reference run failed in an earlier snippet: {ref}")
    return ref
