"""The sandbox's `re`, held to the step's time limit on any thread.

A catastrophic pattern (`(a|aa)+$` on 60 a's and a b) keeps CPython's regex engine busy for
hours without returning to Python and without releasing the GIL: no watchdog, no async
exception, no other thread runs meanwhile. CPython's engine checks for signals every few thousand
steps, but Python runs signal handlers only in the main thread: so a step on the main thread is
cut by the CPU alarm (limits/watchdog.py), and a step anywhere else froze its host until the
engine was done. Measured (LocalExecutor, 1 s limit, `(a+)+$` on 28 a's and a b): 1.1 s on the
main thread, 46 s on another one.

So, on a thread other than the main one, the sandbox's patterns run on the `regex` package's
engine, which takes a `timeout=` and releases the GIL (`concurrent=True`): the host's other
threads run meanwhile. Its timeout counts the thread's CPU time, which a loaded machine stretches
(a 1 s timeout took 12 s of wall clock at load 20 on 2 cores), so a search gets a first slice of
50 ms on the step's thread (ordinary searches end within it), and one still running then goes on
on a helper thread that the step waits for by the wall clock until its deadline; a search still
running then ends at its own CPU timeout (the remaining time), unwatched. A replacement function
of the model's (`sub` with a callable) runs only on the step's thread, under the CPU timeout.
On the main thread CPython's own engine runs as before. Why not the other choices: refusing
"dangerous" patterns cannot be complete (`\\s+$` with `search` is quadratic, and nested
quantifiers are common in ordinary code), and a process of its own per call costs what a step
does. Fidelity: `regex` in its version-0 mode is written to match `re`; a differential property
test (tests/test_bounded_re.py) holds the two to the same results on ordinary patterns, and a
pattern `regex` cannot compile runs on CPython's engine.

Patterns and matches are handed over as `Pattern` and `Match` (the sandbox's `re.Pattern` and
`re.Match`), on every thread alike, so `isinstance` and the results do not depend on the thread.
"""

from __future__ import annotations

import re as _re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from ..capabilities import GUARD
from ..guards.errors import LimitExceeded
from .trusted_imports import library_import

__all__ = ["Match", "Pattern", "patch_re"]

_FLAGS = ("IGNORECASE", "LOCALE", "MULTILINE", "DOTALL", "UNICODE", "VERBOSE", "ASCII")
_engine: Any = None  # the `regex` module once loaded; False when it is not installed
FIRST_SLICE_S = 0.05  # a search longer than this goes on on a helper thread, waited for by the wall clock


def _bounded_engine() -> Any:
    """`regex`, loaded once (native code: as a library), or None where it is not installed."""
    global _engine
    if _engine is None:
        try:
            with library_import():
                import regex
            _engine = regex
        except ImportError:
            _engine = False
    return _engine or None


def _call(twin: Any, method: str, args: tuple, kwargs: dict, timeout: float | None) -> Any:
    """One search on `regex`'s engine, the GIL released, within `timeout` s of CPU."""
    if method == "findall_matches":
        return list(twin.finditer(*args, timeout=timeout, concurrent=True))
    return getattr(twin, method)(*args, **kwargs, timeout=timeout, concurrent=True)


def _off_main_thread() -> bool:
    return threading.current_thread() is not threading.main_thread()


class Match:
    """A match, read as `re.Match` reads (from CPython's engine or `regex`'s)."""

    __slots__ = ("_m", "_pattern")

    def __init__(self, m: Any, pattern: Pattern) -> None:
        self._m, self._pattern = m, pattern

    re = property(lambda self: self._pattern)
    string = property(lambda self: self._m.string)
    pos = property(lambda self: self._m.pos)
    endpos = property(lambda self: self._m.endpos)
    lastindex = property(lambda self: self._m.lastindex)
    lastgroup = property(lambda self: self._m.lastgroup)
    regs = property(lambda self: self._m.regs)

    def group(self, *groups: Any) -> Any:
        return self._m.group(*groups)

    def __getitem__(self, group: Any) -> Any:
        return self._m[group]

    def groups(self, default: Any = None) -> Any:
        return self._m.groups(default)

    def groupdict(self, default: Any = None) -> Any:
        return self._m.groupdict(default)

    def start(self, group: Any = 0) -> int:
        return self._m.start(group)

    def end(self, group: Any = 0) -> int:
        return self._m.end(group)

    def span(self, group: Any = 0) -> tuple[int, int]:
        return self._m.span(group)

    def expand(self, template: Any) -> Any:
        return self._m.expand(template)

    def __repr__(self) -> str:
        return f"<re.Match object; span={self._m.span()!r}, match={self._m.group()!r}>"

    def __copy__(self) -> Match:
        return self

    def __deepcopy__(self, memo: Any) -> Match:
        return self


class Pattern:
    """A compiled pattern, read as `re.Pattern` reads; its searches hold the step's time limit."""

    __slots__ = ("_p", "_twin", "_state")

    def __init__(self, compiled: Any, state: Any) -> None:
        self._p, self._twin, self._state = compiled, None, state

    pattern = property(lambda self: self._p.pattern)
    flags = property(lambda self: self._p.flags)
    groups = property(lambda self: self._p.groups)
    groupindex = property(lambda self: self._p.groupindex)

    # A library's `isinstance(p, re.Pattern)` (pandas' is_re, str.replace(regex=...), re's own
    # _compile) takes it for the compiled pattern it stands for, and then calls its methods:
    # the step's time limit holds there too. type() and the codec still see this class.
    __class__ = property(lambda self: _re.Pattern)  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._p)

    def __eq__(self, other: Any) -> bool:
        return type(other) is Pattern and self._p == other._p

    def __hash__(self) -> int:
        return hash(self._p)

    def __copy__(self) -> Pattern:
        return self

    def __deepcopy__(self, memo: Any) -> Pattern:
        return self

    def match(self, string: Any, pos: int = 0, endpos: int = sys.maxsize) -> Match | None:
        return self._run("match", string, pos, endpos)

    def fullmatch(self, string: Any, pos: int = 0, endpos: int = sys.maxsize) -> Match | None:
        return self._run("fullmatch", string, pos, endpos)

    def search(self, string: Any, pos: int = 0, endpos: int = sys.maxsize) -> Match | None:
        return self._run("search", string, pos, endpos)

    def findall(self, string: Any, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return self._run("findall", string, pos, endpos)

    def finditer(self, string: Any, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[Match]:
        return (Match(m, self) for m in self._run("findall_matches", string, pos, endpos))

    def split(self, string: Any, maxsplit: int = 0) -> list[Any]:
        return self._run("split", string, maxsplit=maxsplit)

    def sub(self, repl: Any, string: Any, count: int = 0) -> Any:
        return self._run("sub", self._repl(repl), string, count=count)

    def subn(self, repl: Any, string: Any, count: int = 0) -> tuple[Any, int]:
        return self._run("subn", self._repl(repl), string, count=count)

    def _repl(self, repl: Any) -> Any:
        if callable(repl):  # the model's function sees a Match, whichever engine found it
            return lambda m: repl(Match(m, self))
        return repl

    def _run(self, method: str, *args: Any, **kwargs: Any) -> Any:
        twin = self._bounded_twin() if _off_main_thread() else None
        if twin is None:  # the main thread (the CPU alarm holds the limit), or no bounded engine
            if method == "findall_matches":
                return list(self._p.finditer(*args))
            return self._wrap(method, getattr(self._p, method)(*args, **kwargs))
        remaining = self._state.deadline - time.monotonic()
        if remaining <= 0:
            self._expire()
        model_code = method in ("sub", "subn") and callable(args[0])  # runs on the step's thread only
        first = None if remaining == float("inf") else remaining if model_code else min(remaining, FIRST_SLICE_S)
        try:  # ordinary searches end within the first slice, on this thread
            return self._wrap(method, _call(twin, method, args, kwargs, first))
        except TimeoutError:
            if first == remaining:
                self._expire()
        return self._wrap(method, self._on_helper(twin, method, args, kwargs))

    def _on_helper(self, twin: Any, method: str, args: tuple, kwargs: dict) -> Any:
        """A long search on a helper thread, waited for until the deadline by the wall clock:
        `regex` counts CPU time, which a loaded machine stretches (a 1 s limit took 12 s of wall
        clock at load 20); a search still running then is left to end at its own CPU timeout."""
        box: dict[str, Any] = {}
        remaining = max(self._state.deadline - time.monotonic(), 0.0)

        def work() -> None:
            try:
                box["value"] = _call(twin, method, args, kwargs, remaining)
            except BaseException as exc:  # noqa: BLE001 - handed to the step's thread
                box["error"] = exc

        with GUARD.suspended():  # host code starts it: a step may not start threads
            helper = threading.Thread(target=work, name="codeagent-regex", daemon=True)
            helper.start()
        helper.join(max(self._state.deadline - time.monotonic(), 0.0))
        if helper.is_alive() or isinstance(box.get("error"), TimeoutError):
            self._expire()
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _expire(self) -> NoReturn:
        self._state.expire("timeout")
        raise LimitExceeded("timeout")

    def _wrap(self, method: str, result: Any) -> Any:
        if method in ("match", "fullmatch", "search") and result is not None:
            return Match(result, self)
        return result

    def _bounded_twin(self) -> Any:
        if self._twin is None:
            engine = _bounded_engine()
            self._twin = False
            if engine is not None:
                flags = sum(int(getattr(engine, n)) for n in _FLAGS if self._p.flags & int(getattr(_re, n)))
                try:
                    self._twin = engine.compile(self._p.pattern, flags | engine.VERSION0)
                except Exception:  # noqa: BLE001 - a pattern only CPython's engine reads: it runs there
                    self._twin = False
        return self._twin or None


def patch_re(members: dict[str, Any], ctx: Any) -> None:
    """The sandbox's `re`: compile and every module-level search give `Pattern`s and `Match`es
    bounded by the step's time limit (see the module docstring)."""
    state = ctx.state

    def compile(pattern: Any, flags: Any = 0) -> Pattern:  # noqa: A001 - re's own name
        if isinstance(pattern, Pattern):
            if flags:
                raise ValueError("cannot process flags argument with a compiled pattern")
            return pattern
        return Pattern(_re.compile(pattern, flags), state)

    def forward(method: str) -> Callable[..., Any]:
        def call(pattern: Any, string: Any, flags: Any = 0) -> Any:
            return getattr(compile(pattern, flags), method)(string)
        call.__name__ = method
        return call

    members["compile"] = compile
    for method in ("match", "fullmatch", "search", "findall", "finditer"):
        members[method] = forward(method)

    def split(pattern: Any, string: Any, maxsplit: int = 0, flags: Any = 0) -> Any:
        return compile(pattern, flags).split(string, maxsplit)

    def sub(pattern: Any, repl: Any, string: Any, count: int = 0, flags: Any = 0) -> Any:
        return compile(pattern, flags).sub(repl, string, count)

    def subn(pattern: Any, repl: Any, string: Any, count: int = 0, flags: Any = 0) -> Any:
        return compile(pattern, flags).subn(repl, string, count)

    members["split"], members["sub"], members["subn"] = split, sub, subn
    members["Pattern"], members["Match"] = Pattern, Match
