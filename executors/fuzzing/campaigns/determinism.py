"""Hypothesis runs whose examples depend on their seed alone, not on what the process imported.

Since 6.131, hypothesis draws about one primitive value in twenty from a pool of constants: its
own, plus the literals of every *local* module loaded in the process (neither stdlib nor
site-packages nor tests), re-read whenever sys.modules grows. Which modules are loaded differs
between a driver and its workers, between `codeagent fuzz` and a script running the same campaign,
even within one run as examples import things; and with an editable install executors/ and
codeagent/ themselves count as local. So the same seed could generate different examples. While a
campaign generates, that local pool is pinned empty (hypothesis's own constants stay): a seed then
means the same examples in any process.

Hypothesis has no public switch for this; `seed_only_generation()` patches the one private
function it uses, and does nothing if a hypothesis version lacks it (the distributed-fuzzing test
then notices the difference).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = ["seed_only_generation"]

_lock = threading.Lock()


@contextlib.contextmanager
def seed_only_generation() -> Iterator[None]:
    """Within the block, hypothesis draws no constants from the modules loaded in this process."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - another hypothesis layout: nothing to pin
        yield
        return
    original = getattr(providers, "_get_local_constants", None)
    constants_cls = getattr(providers, "Constants", None)
    cache = getattr(getattr(providers, "CONSTANTS_CACHE", None), "cache", None)
    if original is None or constants_cls is None or cache is None:
        yield
        return
    empty = constants_cls()
    with _lock:
        providers._get_local_constants = lambda *args, **kwargs: empty
        cache.clear()  # it holds the permitted constants per draw kind, local ones included
    try:
        yield
    finally:
        with _lock:
            providers._get_local_constants = original
            cache.clear()
