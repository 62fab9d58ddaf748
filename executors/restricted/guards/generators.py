"""Generators the model made never outlive the step: they are closed inside it, under the guard.

A suspended generator runs code when it is closed or collected: its `finally` blocks, the
`__exit__` of the `with` blocks it is in (an ExitStack's callbacks: host callables with the
model's arguments), the `close()` of what it `yield from`s. If that happened when the host drops
it (a reset, an overwritten variable, the executor collected), it would run with no guard. So
every generator function the model defines is wrapped (the instrumenter adds `@_gen` as its
innermost decorator), each generator it makes is remembered (a weak reference), and at the end of
every step the runtime closes those still suspended: once with the step's limits (their cleanup
runs as in CPython), then, after the step's code is inert, again for any that ignored the first
close. Generator expressions are not tracked: they have no handlers, nothing runs when they close.

A generator kept in a variable therefore does not survive into the next step (its next `next()`
raises StopIteration): the price of never running model code outside a step.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from types import GeneratorType
from typing import Any

__all__ = ["GeneratorTracker"]

_ref = weakref.ref


class GeneratorTracker:
    """One per runtime: wraps the model's generator functions and closes what they made."""

    def __init__(self) -> None:
        self.made: list[weakref.ref] = []
        # the wrappers, so the host guard treats them as the model's own functions
        self.functions: weakref.WeakSet = weakref.WeakSet()

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        made = self.made
        append = made.append

        def generator_function(*args: Any, **kwargs: Any) -> Any:
            gen = fn(*args, **kwargs)
            if type(gen) is GeneratorType:
                append(_ref(gen))
            return gen

        for name in ("__name__", "__qualname__", "__doc__", "__module__"):
            try:
                setattr(generator_function, name, getattr(fn, name))
            except (AttributeError, TypeError):
                pass
        generator_function.__dict__ = fn.__dict__  # attributes set on one are set on both
        self.functions.add(generator_function)
        return generator_function

    def close_all(self, passes: int = 1) -> None:
        """Close every generator still suspended (their cleanup runs now, on this thread). An
        interrupt may cut it short: what is left stays listed for the next call. A generator that
        yields again instead of closing (it caught GeneratorExit) is closed again on the next
        pass; after the step its code is inert, so each pass ends it or moves it past one more
        yield of its source: `passes` is bounded by the code's size."""
        made = self.made
        if not made:
            return
        for _ in range(passes):
            pending = []
            for ref in made:
                gen = ref()
                if gen is None or gen.gi_frame is None or gen.gi_running:
                    continue
                try:
                    gen.close()
                except (KeyboardInterrupt, SystemExit):
                    raise
                except BaseException:  # noqa: BLE001 - RuntimeError (it ignored GeneratorExit),
                    pass  # a limit its cleanup hit, the deadline's interrupt: all inside the step
                if gen.gi_frame is not None:
                    pending.append(ref)
            made[:] = pending
            if not pending:
                return
