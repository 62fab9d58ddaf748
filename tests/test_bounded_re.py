"""The in-process time limit holds against regular expressions on any thread, and the sandbox's
`re` gives what CPython's `re` gives (executors/restricted/libraries/bounded_re.py)."""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from executors import Limits, LocalExecutor
from executors.restricted.libraries.bounded_re import Match, Pattern

# Catastrophic for CPython's engine and for `regex`'s: about fib(60) ≈ 10^12 steps before "no match".
CATASTROPHIC = "import re\nre.match(r'(a|aa)+$', 'a' * 60 + 'b')"


def in_thread(fn: Any) -> Any:
    """fn() on a thread that is not the main one; its result, or its exception raised here."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            out["error"] = exc

    t = threading.Thread(target=run)
    t.start()
    t.join(120)
    assert not t.is_alive(), "the step never ended"
    if "error" in out:
        raise out["error"]
    return out["value"]


@pytest.mark.timeout(180)
def test_a_catastrophic_pattern_off_the_main_thread_ends_at_the_limit_and_the_host_runs_meanwhile():
    ticks = []
    stop = threading.Event()

    def host_thread() -> None:  # another thread of the host: it must keep running during the step
        while not stop.wait(0.05):
            ticks.append(time.monotonic())

    ticker = threading.Thread(target=host_thread)
    ticker.start()
    try:
        with LocalExecutor(limits=Limits(timeout_s=1)) as ex:
            t0 = time.monotonic()
            r = in_thread(lambda: ex.execute(CATASTROPHIC))
            took = time.monotonic() - t0
            assert in_thread(lambda: ex.execute("1 + 1")).output == 2  # the executor goes on
    finally:
        stop.set()
        ticker.join()
    assert r.error is not None and r.error.type == "TimeoutError", r.error
    assert took < 20  # the step waits by the wall clock (before: fib(60) steps, hours, the host frozen)
    during = [t for t in ticks if t0 < t < t0 + took]
    assert len(during) >= min(3, int(took / 0.05) // 2)  # the GIL was released: the host was not frozen


def test_on_the_main_thread_the_cpu_alarm_still_ends_it():
    with LocalExecutor(limits=Limits(timeout_s=1)) as ex:
        r = ex.execute(CATASTROPHIC)
    assert r.error is not None and r.error.type == "TimeoutError"


def test_patterns_and_matches_read_as_re_reads_them_on_every_thread():
    code = ("import re\np = re.compile(r'(?P<user>\\w+)@(\\w+)', re.I)\nm = p.search('mail JOE@host now')\n"
            "[repr(p), repr(m), m.groups(), m.groupdict(), m.span(2), m['user'], m.re is p, isinstance(p, re.Pattern),"
            " isinstance(m, re.Match), re.sub(r'(a)', lambda g: g.group(1).upper(), 'banana'),"
            " re.split(r',', 'a,b,c', 1), re.findall(r'\\d+', 'a1b22', re.I), [x.span() for x in re.finditer('a', 'aba')],"
            " re.subn('a', r'<\\g<0>>', 'aa'), re.fullmatch('a+', 'aaa') is not None]")
    with LocalExecutor() as ex:
        main = ex.execute(code)
        other = in_thread(lambda: ex.execute(code))
    assert main.error is None and other.error is None, (main.error, other.error)
    assert main.output == other.output
    assert main.output[:2] == ["re.compile('(?P<user>\\\\w+)@(\\\\w+)', re.IGNORECASE)",
                               "<re.Match object; span=(5, 13), match='JOE@host'>"]
    assert main.output[7:9] == [True, True]


# -- the engines agree on ordinary patterns ---------------------------------------------------------

ATOMS = st.sampled_from(["a", "b", "ab", ".", "[ab]", "[^a]", r"\d", r"\w", r"\s", r"\b", "^", "$", " "])
QUANTIFIERS = st.sampled_from(["", "", "*", "+", "?", "{1,2}", "*?", "+?", "{2}"])


def _pieces(depth: int) -> st.SearchStrategy[str]:
    atom = st.builds(lambda a, q: a + q if a not in ("^", "$", r"\b") else a, ATOMS, QUANTIFIERS)
    if depth == 0:
        return atom
    inner = st.lists(_pieces(depth - 1), min_size=1, max_size=3).map("".join)
    group = st.builds(lambda kind, body, alt, q: f"({kind}{body}{'|' + alt if alt else ''}){q}",
                      st.sampled_from(["", "?:", "?P<g>"]), inner, st.sampled_from(["", "a", "b+"]), QUANTIFIERS)
    return st.one_of(atom, group)


PATTERNS = st.lists(_pieces(2), min_size=1, max_size=4).map("".join)
TEXTS = st.text(alphabet="ab1 _\nB", max_size=30)


class _Forever:
    deadline = float("inf")


def _outcome(fn: Any) -> Any:
    try:
        value = fn()
    except re.error:
        return "re.error"
    if isinstance(value, (Match, re.Match)):
        return ("match", value.span(), value.groups(), value.group())
    return value


@settings(max_examples=300, deadline=None)
@given(PATTERNS, TEXTS, st.sampled_from([0, re.IGNORECASE, re.MULTILINE | re.DOTALL]))
def test_the_bounded_engine_gives_what_cpython_gives(pattern, text, flags):
    try:
        compiled = re.compile(pattern, flags)
    except re.error:
        return
    if "g" in compiled.groupindex and pattern.count("?P<g>") > 1:
        return
    ours = Pattern(compiled, _Forever())

    def both() -> list[tuple[Any, Any]]:
        pairs = []
        for name, theirs, mine in (
            ("search", lambda: compiled.search(text), lambda: ours.search(text)),
            ("match", lambda: compiled.match(text), lambda: ours.match(text)),
            ("fullmatch", lambda: compiled.fullmatch(text), lambda: ours.fullmatch(text)),
            ("findall", lambda: compiled.findall(text), lambda: ours.findall(text)),
            ("finditer", lambda: [m.span() for m in compiled.finditer(text)], lambda: [m.span() for m in ours.finditer(text)]),
            ("sub", lambda: compiled.sub("<\\g<0>>", text), lambda: ours.sub("<\\g<0>>", text)),
            ("split", lambda: compiled.split(text), lambda: ours.split(text)),
        ):
            pairs.append((name, _outcome(theirs), _outcome(mine)))
        return pairs

    for name, cpython, bounded in in_thread(both):  # off the main thread: the `regex` engine
        assert bounded == cpython, (name, pattern, text, flags)
