"""The one place the strategies import hypothesis, with an error that says how to get it.

Hypothesis is a development dependency: `import executors` never needs it, only the strategies
and campaigns of this package do.
"""

from __future__ import annotations

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the user's environment
    raise ImportError(
        "executors.fuzzing (and executors.strategies) needs hypothesis: pip install hypothesis "
        "hypothesmith (or the project's 'dev' extra)"
    ) from exc

__all__ = ["st"]
