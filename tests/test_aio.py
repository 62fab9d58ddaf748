"""The two drivers of one loop (`codeagent.aio`): whatever a loop yields, the sync driver and the
async one give it the same values and errors and pass on the same events; a driver that stops
early lets the loop clean up through its Ops; a real suspension under the sync driver is an error."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent import aio


class Value(aio.Op):
    """An Op that returns `value`, or raises it when it is an exception."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def run(self) -> Any:
        if isinstance(self.value, Exception):
            raise self.value
        return self.value

    async def arun(self) -> Any:
        await asyncio.sleep(0)  # a real suspension: the async driver waits on the loop
        return self.run()


def core(script: list[tuple[str, Any]], log: list[Any]):
    """A loop that yields events and Ops as scripted, logging what comes back (values, errors)."""
    for kind, value in script:
        if kind == "event":
            yield ("event", value)
            continue
        try:
            got = yield Value(ValueError(value) if kind == "error" else value)
            log.append(("value", got))
        except ValueError as exc:
            log.append(("error", str(exc)))
            yield ("event", f"recovered {exc}")
    return "done"


SCRIPTS = st.lists(st.tuples(st.sampled_from(["event", "op", "error"]), st.integers(0, 99)), max_size=30)


@settings(max_examples=150, deadline=None)
@given(SCRIPTS)
def test_both_drivers_give_a_loop_the_same_values_and_pass_the_same_events(script):
    sync_log: list[Any] = []
    sync_events = list(aio.events(core(script, sync_log)))

    async def collect() -> list[Any]:
        return [e async for e in aio.aevents(core(script, async_log))]

    async_log: list[Any] = []
    async_events = asyncio.run(collect())
    assert sync_events == async_events and sync_log == async_log
    assert len(sync_events) == sum(kind != "op" for kind, _ in script)


def cleaning(log: list[str]):
    try:
        yield "first"
        yield "second"
    except aio.RunStopped:
        log.append("stopped")
        log.append((yield Value("closed")))  # the cleanup waits through an Op of its own
        raise


def test_a_consumer_that_stops_early_lets_the_loop_clean_up_sync():
    log: list[str] = []
    events = aio.events(cleaning(log))
    assert next(events) == "first"
    events.close()
    assert log == ["stopped", "closed"]


def test_a_consumer_that_stops_early_lets_the_loop_clean_up_async():
    log: list[str] = []

    async def main() -> None:
        events = aio.aevents(cleaning(log))
        assert await events.__anext__() == "first"
        await events.aclose()

    asyncio.run(main())
    assert log == ["stopped", "closed"]


def test_an_exception_a_loop_does_not_handle_reaches_the_consumer():
    def failing():
        yield "event"
        yield Value(KeyError("lost"))

    with pytest.raises(KeyError, match="lost"):
        list(aio.events(failing()))


def test_a_real_suspension_under_the_sync_api_is_a_clear_error():
    async def suspends() -> int:
        await asyncio.sleep(0)
        return 1

    with pytest.raises(RuntimeError, match="use the async API"):
        aio.result(suspends())
