"""A lying worker: the host's decoder against frames made to break, flood, stall or swell it.

The host side is the real one (RemoteExecutor, WorkerLink, the protocol checks, the codec); the
worker is a scripted channel in this process (executors/fuzzing/judging/lying_worker.py) that
answers a step, or get_variables, with a lie (executors/fuzzing/attacks/frames.py). Every lie
must end in a clear answer (an ExecutionError saying the sandbox was restarted, an ExecutorError,
or a result within the bounds table), the liar killed, the host's memory within its bound
(measured with tracemalloc) and the executor usable afterwards. The named lies sit at the bounds;
the fuzz draws the rest. `scripts/fuzz-long wire` runs the same fuzz for longer.
"""

from __future__ import annotations

import json
import struct
import sys

import pytest
from hypothesis import HealthCheck, event, given, settings

from executors import Limits
from executors.fuzzing.attacks.frames import RID, Blob, Flood, Frame, Lie, Raw, lies
from executors.fuzzing.attacks.frames import _b64 as b64
from executors.fuzzing.attacks.frames import _png as png
from executors.fuzzing.judging.lying_worker import LyingWorker, judge_lie, memory_bound
from executors.worker.bounds import BOUNDS

MB = 2**20


def result(output) -> Frame:
    return Frame({"op": "result", "id": RID, "output": output})


# name -> (lie, the outcome the host must reach)
NAMED = {
    "a Decimal with an exponent in the billions": (result({"$t": "decimal", "v": "1E+999999999"}), "WorkerProtocolError"),
    "a Decimal that is no number": (result({"$t": "decimal", "v": "1e"}), "WorkerProtocolError"),
    "a timedelta of 10**30 days": (result({"$t": "timedelta", "v": [10**30, 0, 0]}), "WorkerProtocolError"),
    "a Decimal of 5,000 digits": (result({"$t": "decimal", "v": "9" * 5000}), "WorkerProtocolError"),
    "a Decimal NaN with a 5,000-digit payload": (result({"$t": "decimal", "v": "NaN" + "1" * 5000}), "WorkerProtocolError"),
    "an int of 5,000 hex digits": (result({"$t": "int", "v": "0x" + "f" * 5000}), "WorkerProtocolError"),
    "an int literal of 100,000 digits": (Blob("int literal", 100_000), "WorkerProtocolError"),
    "an int literal of 4,300 digits (the bound)": (result(10**4299), "accepted"),
    "an int literal of 4,300 nines (over the bound: 14,285 bits)": (Blob("int literal", 4299), "WorkerProtocolError"),
    "a complex of long digit strings": (result({"$t": "complex", "v": ["1" * 5000, "0"]}), "WorkerProtocolError"),
    "a date of 10,000 characters": (result({"$t": "date", "v": "2024-01-01" + " " * 10_000}), "WorkerProtocolError"),
    "3 million empty dicts": (Blob("empty dicts", 3_000_000), "WorkerProtocolError"),
    "1 million empty dicts (the bound)": (Blob("empty dicts", 999_000), "accepted"),
    "4 million small ints": (Blob("small ints", 4_000_000), "WorkerProtocolError"),
    "5 million levels of nesting": (Blob("nesting", 5_000_000), "WorkerProtocolError"),
    "commas inside one string": (Blob("commas in a string", 3_000_000), "accepted"),
    "a frame over the limit": (Blob("one long string", 40 * MB), "WorkerProtocolError"),
    "a header claiming 4 GB": (Raw(struct.pack(">I", 0xFFFFFFFF)), "WorkerProtocolError"),
    "an array of 10**18 empty rows": (result({"$t": "ndarray", "dtype": "<f8", "shape": [10**18, 0], "v": ""}), "WorkerProtocolError"),
    "an array of 0-byte strings": (result({"$t": "ndarray", "dtype": "|S0", "shape": [10**12], "v": ""}), "WorkerProtocolError"),
    "an array whose bytes are short": (result({"$t": "ndarray", "dtype": "<f8", "shape": [1000], "v": "AAAA"}), "WorkerProtocolError"),
    "an object array": (result({"$t": "ndarray", "dtype": "|O", "shape": [1], "v": "AAAAAAAAAAA="}), "WorkerProtocolError"),
    "a PNG claiming 60,000 × 60,000": (Frame({"op": "result", "id": RID, "attachments": [
        {"media_type": "image/png", "name": "f", "data": {"$t": "bytes", "v": b64(png(60_000, 60_000))}}]}),
        "WorkerProtocolError"),
    "a PNG cut short": (Frame({"op": "result", "id": RID, "attachments": [
        {"media_type": "image/png", "name": "f", "data": {"$t": "bytes", "v": b64(png(2, 2)[:-12])}}]}),
        "WorkerProtocolError"),
    "a result for another request": (Frame({"op": "result", "id": 999, "output": 1}), "WorkerProtocolError"),
    "pongs nobody asked for": (Flood({"op": "pong", "id": RID, "pid": 1}, 50), "WorkerProtocolError"),
    "2,000 tool calls, then death": (Flood({"op": "tool_call", "id": RID, "call": 1, "name": "probe", "args": [1],
                                            "kwargs": {}}, 2000), "WorkerCrashed"),
    "a tool call with a Decimal bomb": (Frame({"op": "tool_call", "id": RID, "call": 1, "name": "probe", "args": [
        {"$t": "decimal", "v": "1E+999999999"}], "kwargs": {}}), "WorkerProtocolError"),
    "half a frame, then death": (Frame({"op": "result", "id": RID}, cut=9), "WorkerCrashed"),
    "garbage": (Raw(b"\xff" * 64), "WorkerProtocolError"),
}


@pytest.mark.parametrize("lie, outcome", list(NAMED.values()), ids=list(NAMED))
def test_named_lies(lie, outcome):
    verdict = judge_lie(Lie((lie,)))
    assert verdict.problems == [], verdict
    assert verdict.outcome == outcome, verdict


def test_a_worker_that_stalls_mid_frame_is_killed_even_without_a_time_limit():
    ex = LyingWorker(Frame({"op": "result", "id": RID}, cut=9).render(2, BOUNDS.frame_bytes), "execute",
                     "silence", limits=Limits(timeout_s=None))
    with ex:
        r = ex.execute("x")
        assert r.error.type == "WorkerProtocolError" and "stalled mid-frame" in r.error.message
        assert r.state_lost and ex.handles[0].killed
        assert ex.execute("1 + 1").output == 2


def test_a_lie_about_the_variables_is_an_executor_error():
    verdict = judge_lie(Lie((Frame({"op": "variables", "id": RID, "values": {"x": {"$t": "decimal", "v": "1E+999999999"}}}),),
                            scenario="variables"))
    assert verdict.problems == [] and verdict.outcome == "refused"


def test_the_frame_is_measured_before_it_is_parsed_even_under_a_high_recursion_limit():
    """json's C parser recurses per level on CPython 3.11 under the recursion limit: raised high,
    a frame of `[[[[...` would overflow the C stack before the decoder's own depth check."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200_000)
    try:
        verdict = judge_lie(Lie((Blob("nesting", 150_000),)))
    finally:
        sys.setrecursionlimit(limit)
    assert verdict.problems == [] and verdict.outcome == "WorkerProtocolError"


def test_the_memory_bound_is_what_the_bounds_table_allows():
    """The bound the fuzz asserts: a few frames of bytes and the parsed tree at the table's limits,
    far below what the frames could make unbounded (a 32 MB frame of `{},` is 11 million dicts)."""
    assert memory_bound(BOUNDS.frame_bytes) < 500 * MB
    unbounded = (BOUNDS.frame_bytes // 3) * 64  # the dicts alone, without the table
    assert unbounded > 1.4 * memory_bound(BOUNDS.frame_bytes)


@settings(max_examples=120, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(lies(max_blob=120_000))
def test_fuzz_the_host_decoder_with_a_lying_worker(lie):
    verdict = judge_lie(lie, max_frame_bytes=8 * MB)
    event(f"outcome: {verdict.outcome}")
    assert verdict.problems == [], (verdict, lie)


def test_an_honest_frame_at_the_bounds_is_taken():
    """The host refuses nothing an honest encoder sends: a list at the values bound, as the
    worker's codec makes it, frames and decodes."""
    from executors.remote.protocol import pack_frame, parse_worker_message
    from executors.worker.codec import encode_value

    value = [[i] for i in range(BOUNDS.containers - 2)]
    tree = encode_value(value)
    assert type(tree) is list, "within the bounds: not cut"
    message = parse_worker_message(pack_frame({"op": "result", "id": 1, "output": tree})[4:])
    assert len(message.output) == len(value)
    json.dumps(message.output[:3])
