"""Hypothesis strategies that generate programs for fuzzing any executor (re-exported from
`executors.fuzzing`, where they live: differential/strategy.py, attacks/escapes.py, attacks/bombs.py).

Needs `hypothesis` (and `hypothesmith` for `programs(mode="grammar")`): both come with the
project's `dev` extra, or `pip install hypothesis hypothesmith`. They are imported here, not by
`import executors`, so the executors themselves never depend on them.

    from hypothesis import given
    from executors import LocalExecutor
    from executors.strategies import programs

    @given(programs(tools={"add": add}))
    def test_runs(code):
        assert LocalExecutor(tools={"add": add}).execute(code).error is None or True

Three families:

- `programs()` — valid programs of the kind models write for data work ("data" mode), or
  grammar-level programs from hypothesmith filtered by `compile()` ("grammar" mode).
- `escape_attempts(marker_path, canary_env)` — programs that combine known escape primitives
  with generated glue; each aims at an observable effect (see `EscapeAttempt`).
- `resource_bombs()` — time, memory, output, recursion and process bombs (see `Bomb`).

`executors.testing` turns these into properties (`check_executor(factory)`).
"""

from __future__ import annotations

from .fuzzing.attacks.bombs import BOMB_KINDS, Bomb, resource_bombs
from .fuzzing.attacks.escapes import REACH_TOKEN, EscapeAttempt, escape_attempts
from .fuzzing.differential.strategy import programs

__all__ = [
    "Bomb",
    "EscapeAttempt",
    "REACH_TOKEN",
    "BOMB_KINDS",
    "programs",
    "escape_attempts",
    "resource_bombs",
]
