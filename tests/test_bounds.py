"""The bounds table (executors/worker/bounds): what one value or message from a worker may hold.

Laws: a value within the bounds crosses as itself (tests/test_protocol.py's round trip); a value
over them crosses as a marker that says what was cut, and costs the encoder no more than the
bounds (a number is never formatted to find out); the decoder refuses what an honest encoder
never sends; the frame scan counts exactly what the encoder spends, so nothing an honest worker
sends is refused, and it never builds what it counts.
"""

from __future__ import annotations

import json
import time
import tracemalloc
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from executors.remote.protocol import ProtocolError, decode_value, encode_value
from executors.worker.bounds import BOUNDS, Bounds
from executors.worker.bounds.numbers import decimal_over, int_over
from executors.worker.bounds.scan import FrameBounds, check_body, json_counts
from executors.worker.codec import Crossing, Repr, TooLargeToCross, short_repr
from executors.worker.wire import dumps, loads

MB = 2**20


def _walk_counts(value) -> tuple[int, int]:
    """(values, containers) of parsed JSON as the scan defines them: each container spends
    max(its items, 1), plus one for the root."""
    values, containers = 1, 0
    stack = [value]
    while stack:
        node = stack.pop()
        if type(node) in (list, dict):
            items = list(node.values()) if type(node) is dict else node
            containers += 1
            values += max(len(items), 1)
            stack.extend(items)
    return values, containers


json_text = st.text(alphabet=st.sampled_from(list('ab,[]{}"\\:\n é')), max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats(allow_nan=False, allow_infinity=False)
    | json_text,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(json_text, inner, max_size=5),
    max_leaves=30)


@settings(max_examples=300, derandomize=True)
@given(json_values)
def test_the_scan_counts_what_the_parser_builds(value):
    body = dumps(value).encode()
    exact = json_counts(body, exact=True)
    assert exact == _walk_counts(value)
    fast = json_counts(body, exact=False)
    assert fast[0] >= exact[0] and fast[1] >= exact[1]


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.recursive(
    st.none() | st.integers() | st.text(max_size=6) | st.binary(max_size=6) | st.decimals(allow_nan=False)
    | st.complex_numbers() | st.dates() | st.timedeltas(),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner) | st.frozensets(st.integers(), max_size=3)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3) | st.dictionaries(st.integers(), inner, max_size=3),
    max_leaves=25))
def test_the_encoder_spends_at_least_what_the_scan_counts(value):
    """So a frame of any value within the bounds is never refused by the host."""
    crossing = Crossing(BOUNDS)
    tree = crossing.encode(value)
    spent = (BOUNDS.values - crossing.values, BOUNDS.containers - crossing.containers)
    counted = json_counts(dumps(tree).encode(), exact=True)
    assert spent[0] >= counted[0] and spent[1] >= counted[1], (spent, counted)


SMALL = Bounds(values=50, containers=10, text_bytes=100)


@pytest.mark.parametrize("value, why", [
    (list(range(60)), "Bounds.values"),
    ([[i] for i in range(12)], "Bounds.containers"),
    (["x" * 60, "y" * 60], "Bounds.text_bytes"),
    ([b"z" * 101], "Bounds.text_bytes"),
    (["a" * 30] * 4, "Bounds.text_bytes"),  # (the same string four times is four times the text on the wire)
])
def test_a_value_over_the_table_is_cut_and_says_why(value, why):
    out = decode_value(encode_value(value, bounds=SMALL))
    assert isinstance(out, Repr) and "did not cross the boundary" in out and why in out
    with pytest.raises(TooLargeToCross, match=why.split(".")[1]):
        Crossing(SMALL).encode(value, cut=False)


@pytest.mark.parametrize("number", [
    Decimal("1E+999999999"), Decimal("-1E-999999999"), Decimal("9" * 5000), Decimal("1E+4301"),
    Decimal("0." + "0" * 4300 + "1"), Decimal("NaN" + "1" * 5000), 10**4300, -(2**20000), 7**100_000,
], ids=lambda n: f"{type(n).__name__} of {n.bit_length() if type(n) is int else len(n.as_tuple().digits)} bits/digits")
def test_numbers_over_the_table_cross_named_by_their_size(number):
    t0 = time.perf_counter()
    out = decode_value(json.loads(json.dumps(encode_value([number]))))[0]
    assert time.perf_counter() - t0 < 0.5
    assert isinstance(out, Repr) and "did not cross the boundary" in out and "Bounds." in out
    assert len(out) < 1000


@pytest.mark.parametrize("number", [
    Decimal("1E+4300"), Decimal("1E-4300"), Decimal("9" * 4300), Decimal("-0.000001"), Decimal("NaN"),
    Decimal("-Infinity"), 10**4299, -(2**14284 - 1), 2**64,
], ids=lambda n: f"{type(n).__name__}-{n.bit_length() if type(n) is int else n.adjusted() if n.is_finite() else n}")
def test_numbers_at_the_table_cross_as_themselves(number):
    out = decode_value(json.loads(json.dumps(encode_value(number))))
    assert type(out) is type(number) and (out == number or number != number)
    assert int_over(out, BOUNDS) is None if type(out) is int else decimal_over(out, BOUNDS) is None


def test_the_decimal_that_made_the_host_grow_by_gigabytes_stays_small():
    """Before the bounds, `int()` of this final answer on the host allocated 2.3 GB."""
    tracemalloc.start()
    try:
        out = decode_value(encode_value(Decimal("1e999999999")))
        for touch in (str, repr, format, lambda v: f"{v:>20}", hash, bool):
            touch(out)
        with pytest.raises(ValueError):
            int(out)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MB and isinstance(out, Repr)


@pytest.mark.parametrize("data", [
    {"$t": "int", "v": "0x" + "f" * 3572},
    {"$t": "int", "v": "-0x" + "1" * 10_000},
    {"$t": "decimal", "v": "1E+999999999"},
    {"$t": "decimal", "v": "9" * 4301},
    {"$t": "decimal", "v": "NaN" + "1" * 4400},
    {"$t": "decimal", "v": "no number"},
    {"$t": "complex", "v": ["1" * 400, "0"]},
    {"$t": "datetime", "v": "2024-01-01T00:00:00" + "0" * 100},
    {"$t": "ndarray", "dtype": "<f8", "shape": [10**18, 0], "v": ""},
    {"$t": "ndarray", "dtype": "|S0", "shape": [10**9], "v": ""},
    {"$t": "ndarray", "dtype": "<f8", "shape": [1] * 33, "v": "AAAAAAAAAAA="},
    {"$t": "ndarray", "dtype": "<f8", "shape": [2], "v": "AAAAAAAAAAA="},
], ids=lambda d: f"{d['$t']}-{str(d.get('shape', d['v']))[:12]}")
def test_the_decoder_refuses_what_an_honest_encoder_never_sends(data):
    pytest.importorskip("numpy")
    with pytest.raises(ProtocolError):
        decode_value(data)


def test_int_literals_are_bounded_before_int_reads_them():
    with pytest.raises(FrameBounds, match="int_digits"):
        loads("[" + "1" * 4302 + "]")
    with pytest.raises(FrameBounds, match="int_digits"):
        loads("9" * 4300)  # 4,300 nines need 14,285 bits, one over
    assert loads(str(10**4299)) == 10**4299


def test_the_scan_refuses_a_frame_before_it_is_parsed():
    body = b'{"op":"result","id":1,"output":[' + b"{}," * 3_000_000 + b"{}]}"
    tracemalloc.start()
    try:
        with pytest.raises(FrameBounds, match="Bounds.values"):
            check_body(body, BOUNDS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * len(body)  # (parsed, it would be 3 million dicts: ~200 MB)
    text = b'{"op":"result","id":1,"output":"' + b",[{" * 3_000_000 + b'"}'
    check_body(text, BOUNDS)  # brackets and commas inside a string are text


def test_the_recount_holds_a_few_megabytes_whatever_the_frame():
    body = b'{"op":"result","id":1,"output":[' + b'{"$t":"repr","v":"x","type":"t"},' * 900_000 + b"1]}"
    tracemalloc.start()
    try:
        with pytest.raises(FrameBounds):
            check_body(body, BOUNDS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * len(body)


def test_escaped_quotes_do_not_hide_structure():
    value = ['a\\"', '\\\\', '"', "x"] * 5 + [[], {}, [[1, 2], {"k": "\\"}]]
    body = dumps(value).encode()
    assert json_counts(body, exact=True) == _walk_counts(value)


def test_short_repr_is_bounded_for_any_value_that_crossed():
    huge = [b"x" * 10**7, Repr("y" * 10**7, "t"), 2**14000, Decimal("1E+4000"), {"k": list(range(10**6))}]
    t0 = time.perf_counter()
    text = short_repr(huge, 300)
    assert len(text) <= 300 and time.perf_counter() - t0 < 0.5
