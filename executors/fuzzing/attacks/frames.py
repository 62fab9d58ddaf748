"""What a lying worker sends the host: hostile frames as a hypothesis strategy.

A worker that is owned writes whatever bytes it likes on its channel. `lies()` draws one
answer to one host request: a list of pieces (`Raw` bytes, a `Frame` whose header may lie about
its length, a `Blob` frame built from a pattern to megabytes, `Flood` of frames) and how the
worker goes on afterwards (`end`: it closes the channel, or it goes silent). Messages carry
values meant to make the host grow or spin: numbers over the bounds table (an int literal of
thousands of digits, a Decimal with an exponent in the billions), wide and deep containers,
long strings, typed payloads whose shape or dtype lies, pictures that claim 60,000 × 60,000,
and ids and ops that are wrong. `judging/lying_worker.py` plays a lie against the host.

Every piece renders itself with the id of the request it answers (`render(rid)`): a lie can be
"right" where the host checks ids, and wrong everywhere else.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

from .._hypothesis import st

__all__ = ["Blob", "Flood", "Frame", "Lie", "Raw", "hostile_values", "lies", "BLOB_PATTERNS"]

RID = "<rid>"  # in a message: the id of the request being answered


def _with_rid(value: Any, rid: int) -> Any:
    if value == RID:
        return rid
    if type(value) is dict:
        return {k: _with_rid(v, rid) for k, v in value.items()}
    if type(value) is list:
        return [_with_rid(v, rid) for v in value]
    return value


def _framed(body: bytes, header: str, max_frame: int) -> bytes:
    """`body` behind a 4-byte length: honest, or lying (`short`/`long`: a byte off, `huge`: over
    any limit, `zero`)."""
    n = {"honest": len(body), "short": max(len(body) - 1, 0), "long": len(body) + 1,
         "huge": 0xFFFFFFFF, "over": max_frame + 1, "zero": 0}[header]
    return struct.pack(">I", n) + body


@dataclass(frozen=True)
class Raw:
    """Bytes as they are: garbage, or half a header."""

    data: bytes

    def render(self, rid: int, max_frame: int) -> bytes:
        return self.data


@dataclass(frozen=True)
class Frame:
    """One message (JSON), behind a header that may lie; `cut` keeps only that many bytes of
    the whole frame (a worker that dies or stalls mid-frame)."""

    message: Any
    header: str = "honest"
    cut: int | None = None

    def render(self, rid: int, max_frame: int) -> bytes:
        body = json.dumps(_with_rid(self.message, rid), separators=(",", ":")).encode()
        data = _framed(body, self.header, max_frame)
        return data if self.cut is None else data[: self.cut]


# Patterns a blob body is built from (in C, by repetition: megabytes cost nothing to draw):
# (prefix, repeated unit, separator-free tail, suffix); the output field of a result holds it.
BLOB_PATTERNS = {
    "empty dicts": (b"[", b"{},", b"{}", b"]"),
    "empty lists": (b"[", b"[],", b"[]", b"]"),
    "small ints": (b"[", b"7,", b"7", b"]"),
    "big ints": (b"[", b"1234567890123,", b"1", b"]"),
    "floats": (b"[", b"1.5,", b"1.5", b"]"),
    "short strings": (b"[", b'"ab",', b'""', b"]"),
    "commas in a string": (b'"', b",[{", b"", b'"'),
    "one long string": (b'"', b"a", b"", b'"'),
    "int literal": (b"", b"9", b"9", b""),
    "nesting": (b"", b"[", b"", b""),  # closed below: as many ] as [
    "tuples": (b"[", b'{"$t":"tuple","v":[1]},', b"1", b"]"),
    "reprs": (b"[", b'{"$t":"repr","v":"x","type":"t"},', b"1", b"]"),
    "hex ints": (b'{"$t":"int","v":"0x', b"f", b"", b'"}'),
    "decimal digits": (b'{"$t":"decimal","v":"', b"9", b"", b'"}'),
    "bytes": (b'{"$t":"bytes","v":"', b"AAAA", b"", b'"}'),
}


@dataclass(frozen=True)
class Blob:
    """A `result` (or `variables`) frame whose value is `count` units of a pattern."""

    pattern: str
    count: int
    op: str = "result"
    header: str = "honest"

    def render(self, rid: int, max_frame: int) -> bytes:
        prefix, unit, tail, suffix = BLOB_PATTERNS[self.pattern]
        value = prefix + unit * self.count + tail + suffix
        if self.pattern == "nesting":
            value += b"]" * self.count
        field_name = b"values" if self.op == "variables" else b"output"
        if self.op == "variables":
            value = b'{"x":' + value + b"}"
        body = b'{"op":"%s","id":%d,"%s":%s}' % (self.op.encode(), rid, field_name, value)
        return _framed(body, self.header, max_frame)


@dataclass(frozen=True)
class Flood:
    """The same message `count` times (pongs between requests, tool calls for ever)."""

    message: Any
    count: int

    def render(self, rid: int, max_frame: int) -> bytes:
        return Frame(self.message).render(rid, max_frame) * self.count


@dataclass(frozen=True)
class Lie:
    """A lying worker's answer to one host request (`scenario`: "execute" or "variables"), and
    what it does after it (`end`: "eof" closes the channel, "silence" writes nothing more)."""

    pieces: tuple = ()
    end: str = "eof"
    scenario: str = "execute"
    notes: dict = field(default_factory=dict, compare=False)

    def render(self, rid: int, max_frame: int) -> bytes:
        return b"".join(p.render(rid, max_frame) for p in self.pieces)


def _png(width: int, height: int, *, chunks: bool = True) -> bytes:
    """A tiny PNG whose header claims width × height (CRCs right, so only the size lies)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    rest = chunk(b"IDAT", zlib.compress(b"\x00\x00\x00\x00")) + chunk(b"IEND", b"") if chunks else b""
    return b"\x89PNG\r\n\x1a\n" + ihdr + rest


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


_TAGS = ["tuple", "set", "frozenset", "dict", "repr", "bytes", "float", "int", "decimal", "datetime",
         "date", "time", "complex", "timedelta", "ndarray", "series", "dataframe", "index",
         "range_index", "multi_index", "timestamp", "nat", "na", "pickle", ""]


def hostile_values() -> st.SearchStrategy:
    """JSON trees that claim to be values: bombs over the bounds, tagged payloads that lie."""
    digits = st.integers(1, 12_000)
    numbers = st.one_of(
        digits.map(lambda n: {"$t": "int", "v": "0x" + "f" * n}),
        digits.map(lambda n: {"$t": "int", "v": "-0x1" + "0" * n}),
        st.integers(-(10**12), 10**12).map(lambda e: {"$t": "decimal", "v": f"1E{e:+d}"}),
        digits.map(lambda n: {"$t": "decimal", "v": "9" * n}),
        digits.map(lambda n: {"$t": "decimal", "v": "0." + "0" * n + "1"}),
        digits.map(lambda n: {"$t": "decimal", "v": "NaN" + "1" * n}),
        st.sampled_from(["nan", "inf", "-inf", "1.0", "1e999", "x"]).map(lambda v: {"$t": "float", "v": v}),
        st.tuples(st.text(max_size=40), st.text(max_size=40)).map(lambda p: {"$t": "complex", "v": list(p)}),
        digits.map(lambda n: {"$t": "complex", "v": ["1" * n, "2"]}),
        st.integers(-(2**70), 2**70).map(lambda n: {"$t": "timedelta", "v": [n, 0, 0]}),
        st.text(max_size=80).map(lambda v: {"$t": "datetime", "v": "2024-01-01T00:00:00" + v}),
    )
    arrays = st.builds(
        lambda dtype, shape, n: {"$t": "ndarray", "dtype": dtype, "shape": shape, "v": _b64(b"\x01" * n)},
        st.sampled_from(["<f8", "|S0", "<U0", "|O", "<V8", "|b1", "<M8[ns]", "<f8x", "O", 7]),
        st.lists(st.sampled_from([0, 1, 2, 3, 8, 10**6, 10**18, -1, 2**64]), max_size=40),
        st.integers(0, 4096))
    frames = st.builds(
        lambda rows, tag: {"$t": tag, "index": {"$t": "range_index", "start": 0, "stop": rows, "step": 1},
                           "columns": {"$t": "range_index", "start": 0, "stop": 0, "step": 1},
                           "data": [], "name": None},
        st.sampled_from([0, 1, 10**18, -5]), st.sampled_from(["dataframe", "series"]))
    tagged = st.builds(lambda tag, v: {"$t": tag, "v": v}, st.sampled_from(_TAGS),
                       st.one_of(st.none(), st.integers(), st.text(max_size=20), st.lists(st.integers(), max_size=4)))
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**64), 2**64), st.floats(allow_nan=False,
                        allow_infinity=False), st.text(max_size=30))
    leaves = st.one_of(scalars, numbers, arrays, frames, tagged)
    return st.recursive(leaves, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4),
        st.lists(inner, max_size=3).map(lambda v: {"$t": "tuple", "v": v}),
        st.lists(st.tuples(inner, inner).map(list), max_size=3).map(lambda v: {"$t": "dict", "v": v})),
        max_leaves=8)


def _attachments() -> st.SearchStrategy:
    png = st.one_of(
        st.tuples(st.integers(1, 70_000), st.integers(1, 70_000)).map(lambda wh: _png(*wh)),
        st.just(_png(2, 2, chunks=False)), st.binary(max_size=40))
    one = st.builds(lambda data, media: {"media_type": media, "name": "f", "width": 1, "height": 1,
                                         "data": {"$t": "bytes", "v": _b64(data)}},
                    png, st.sampled_from(["image/png", "image/svg+xml"]))
    return st.lists(one, max_size=3) | st.integers(21, 120).map(lambda n: [
        {"media_type": "image/png", "name": "f", "data": {"$t": "bytes", "v": _b64(_png(1, 1))}}] * n)


def _messages() -> st.SearchStrategy:
    ids = st.one_of(st.just(RID), st.integers(-5, 10**6), st.just(10**4000), st.text(max_size=3), st.none())
    value = hostile_values()
    result = st.fixed_dictionaries({"op": st.just("result"), "id": ids}, optional={
        "output": value, "output_repr": st.text(max_size=40), "logs": st.text(max_size=40),
        "is_final_answer": st.booleans(), "attachments": _attachments(),
        "error": st.fixed_dictionaries({"type": st.text(max_size=10), "message": st.text(max_size=10)},
                                       optional={"lineno": st.integers(-(2**80), 2**80)}),
        "operations": st.integers(-1, 2**70), "restart": st.booleans()})
    tool_call = st.fixed_dictionaries({"op": st.just("tool_call"), "id": ids, "call": st.integers(-3, 2**70),
                                       "name": st.sampled_from(["probe", "missing", "x" * 300]),
                                       "args": st.lists(value, max_size=3),
                                       "kwargs": st.dictionaries(st.text(max_size=5), value, max_size=2)})
    variables = st.fixed_dictionaries({"op": st.just("variables"), "id": ids, "values": value})
    other = st.fixed_dictionaries({"op": st.sampled_from(["ok", "pong", "error", "execute", "nope", ""]),
                                   "id": ids}, optional={"pid": st.integers(), "type": st.text(max_size=5),
                                                         "message": st.text(max_size=5)})
    return st.one_of(result, tool_call, variables, other, value)


def lies(*, max_blob: int = 4_000_000) -> st.SearchStrategy:
    """One lying answer (`Lie`). `max_blob`: the most pattern units a blob frame repeats (the
    frames then reach tens of megabytes: the host's frame limit and the bounds table meet)."""
    headers = st.sampled_from(["honest"] * 6 + ["short", "long", "huge", "over", "zero"])
    frame = st.builds(Frame, _messages(), headers, st.none() | st.integers(0, 64))
    blob = st.builds(Blob, st.sampled_from(sorted(BLOB_PATTERNS)),
                     st.integers(0, max_blob) | st.sampled_from([max_blob, 1_000_001, 2_000_001, 4301])
                     .filter(lambda n: n <= max_blob), st.sampled_from(["result", "variables"]),
                     st.sampled_from(["honest"] * 5 + ["short", "over"]))
    flood = st.builds(Flood, st.sampled_from([
        {"op": "pong", "id": RID, "pid": 1},
        {"op": "tool_call", "id": RID, "call": 1, "name": "probe", "args": [1], "kwargs": {}},
        {"op": "tool_call", "id": RID, "call": 1, "name": "probe", "args": [{"$t": "decimal", "v": "1E+999999999"}],
         "kwargs": {}}]), st.integers(1, 2000))
    raw = st.binary(max_size=64).map(Raw)
    pieces = st.lists(st.one_of(frame, frame, blob, flood, raw), min_size=1, max_size=4).map(tuple)
    return st.builds(Lie, pieces, st.sampled_from(["eof", "silence"]), st.sampled_from(["execute", "execute", "variables"]))
