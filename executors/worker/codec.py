"""The value codec: what crosses between the model's code and the host, as plain data. Stdlib only.

THE boundary of every executor, in process too. `encode_value` turns a value into a tree of exact
builtin types (JSON plus tagged objects {"$t": tag, "v": ...} for tuple, set, frozenset, bytes,
complex, datetime, date, time, timedelta, Decimal, big int, non-finite float, dicts with non-str
keys, and the typed data payloads of `data_values`: numpy arrays, pandas frames); anything else
crosses as {"$t": "repr", "v": repr, "type": name}. `decode_value` rebuilds fresh objects from
such a tree. The receiving side never holds an object the sender made.

The encoder checks exact types (`type(v) is list`, never `isinstance`) before it touches a value,
so a subclass's methods, a `__class__` property or an overridden `__iter__` never run in it. The
only model code it can call is `repr(v)` of a value that is not data, and the runtimes encode a
model's values inside the step, under the guard and the limits, where that is allowed.

`binary=True` leaves raw `bytes` in the tree (in process there is no JSON to carry: no base64);
`dumps` (wire.py) writes them as base64 text, and the decoder takes either.
"""

from __future__ import annotations

import binascii
import math
import sys

from .data_values import DATA_TAGS, LibraryMissing, NotData, decode_data, encode_data
from .display import cut_middle

__all__ = ["REPR_CHARS", "TAG", "NotPlain", "ProtocolError", "Repr", "decode_value",
           "encode_value", "opaque_repr", "plain_copy", "safe_repr", "safe_str"]

TAG = "$t"
_BIG_INT_BITS = 12_000  # above ~3600 digits, str(int) may hit Python's int->str digit limit
_MAX_DEPTH = 100
_MAX_NODES = 1_000_000
REPR_CHARS = 10_000  # the longest repr a value crosses as


class ProtocolError(Exception):
    """A frame or message that breaks the protocol (malformed, oversized, unknown, out of order)."""


class Repr(str):
    """A value that could not cross the boundary as itself: its `repr`, marked as such."""

    __slots__ = ("type_name",)

    def __new__(cls, text: str, type_name: str = "") -> Repr:
        self = super().__new__(cls, text)
        self.type_name = type_name
        return self


# Repr classes of this codec: a restricted worker holds two copies of it (the worker's own
# `worker.codec` and the runtime's `executors.worker.codec`), and the runtime's reprs stay reprs.
REPR_TYPES: set[type] = {Repr}


class _TooLarge(Exception):
    pass


class NotPlain(Exception):
    """encode_value(strict=True): the value holds something that is not builtin data."""


def safe_repr(value, limit: int = REPR_CHARS) -> str:
    """`repr(value)` cut to `limit` characters (head and tail); a `__repr__` that raises or
    returns a non-str gives a placeholder instead of an exception. Runs the value's `__repr__`:
    for a model's value, only inside the step."""
    try:
        text = repr(value)
    except BaseException as exc:  # a hostile __repr__ must not take the codec down
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        text = f"<unrepresentable {type(value).__name__} object>"
    if type(text) is not str:
        text = f"<unrepresentable {type(value).__name__} object>"
    return cut_middle(text, limit)


def opaque_repr(value, limit: int = REPR_CHARS) -> str:
    """A placeholder naming the value's type, computed without calling any of its methods (a
    class's `__qualname__` is the type's own slot)."""
    return f"<{type(value).__qualname__} object>"[:limit]


def safe_str(value) -> str:
    """`str(value)`, or "" when a hostile `__str__` raises or returns a non-str."""
    try:
        text = str(value)
    except BaseException:
        return ""
    return text if type(text) is str else ""


def _base64(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def encode_value(value, *, max_nodes: int = _MAX_NODES, binary: bool = False, describe=safe_repr,
                 strict: bool = False):
    """Turn a value into plain data (the tagged extension). Never raises for odd values:
    unsupported objects, cycles and over-deep nesting become repr markers, their text from
    `describe` (safe_repr; opaque_repr where no model code may run). `strict=True` takes only
    builtin data (no payloads, which call the library on the value, no reprs) and raises
    NotPlain for anything else: then no method of the value can run, anywhere."""
    blob = bytes if binary else _base64
    try:
        return _Encoder(max_nodes, blob, None if strict else describe).enc(value, 0)
    except _TooLarge:
        if strict:
            raise NotPlain from None
        return _short_repr_marker(value, describe)
    except RecursionError:
        if strict:
            raise NotPlain from None
        return {TAG: "repr", "v": "<too deeply nested>", "type": type(value).__name__}


def plain_copy(value):
    """A fresh copy of builtin data (exact types); raises NotPlain for anything else. Copying runs
    no code of the value's: it may be called outside a step on a model's value."""
    return decode_value(encode_value(value, binary=True, strict=True))


def _short_repr_marker(value, describe) -> dict:
    """For containers too big or deep to walk: a bounded-effort repr (reprlib elides)."""
    if describe is opaque_repr:
        return {TAG: "repr", "v": opaque_repr(value), "type": type(value).__name__}
    import reprlib

    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother = 4, 200, 200
    try:
        text = short.repr(value)
    except Exception:
        text = opaque_repr(value)
    if type(text) is not str:
        text = opaque_repr(value)
    return {TAG: "repr", "v": text[:REPR_CHARS], "type": type(value).__name__}


def _float(v: float):
    if v != v or v in (math.inf, -math.inf):
        return {TAG: "float", "v": repr(v)}
    return v


class _Encoder:
    __slots__ = ("budget", "blob", "describe", "memo", "path")

    def __init__(self, max_nodes: int, blob, describe) -> None:
        self.budget = max_nodes
        self.blob = blob
        self.describe = describe
        self.path: set[int] = set()
        # In process (raw bytes, no JSON) a container met again is the same encoded node: the
        # tree stays a DAG, and a structure of 2**40 paths through shared lists costs its 40
        # distinct lists. JSON would expand the DAG, so there the node budget bounds the walk.
        self.memo: dict[int, object] | None = {} if blob is bytes else None

    def marker(self, v) -> dict:
        if self.describe is None:
            raise NotPlain
        return {TAG: "repr", "v": self.describe(v), "type": type(v).__name__}

    def enc(self, v, depth: int):
        t = type(v)
        if v is None or t is bool or t is str:
            return v
        if t is int:
            return v if v.bit_length() < _BIG_INT_BITS else {TAG: "int", "v": hex(v)}
        if t is float:
            return _float(v)
        self.budget -= 1
        if self.budget < 0:
            raise _TooLarge
        if t in REPR_TYPES:
            name = v.type_name
            return {TAG: "repr", "v": str.__str__(v), "type": name if type(name) is str else ""}
        if t is bytes or t is bytearray or t is memoryview:
            return {TAG: "bytes", "v": self.blob(bytes(v))}
        if t is complex:
            return {TAG: "complex", "v": [repr(v.real), repr(v.imag)]}
        if t is list or t is tuple or t is set or t is frozenset or t is dict:
            return self.container(v, t, depth)
        base = _builtin_base(t)
        if base is not None:  # a subclass of a builtin: its base's data, read by the base's C code
            return self.enc(_base_data(v, base), depth) if base not in _CONTAINERS else \
                self.container(v, base, depth)
        simple = _stdlib_value(v, t)
        if simple is not None:
            return simple if simple is not _NOT_PLAIN else self.marker(v)
        if self.describe is None:
            raise NotPlain
        try:
            payload = encode_data(v, t, self.blob)
        except NotData:
            return self.marker(v)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException:  # noqa: BLE001 - a library call on a hostile value failed
            return self.marker(v)
        if payload is None:
            return self.marker(v)
        return payload if type(payload) is dict else self.enc(payload, depth)  # (a numpy scalar)

    def container(self, v, t, depth: int):
        # keyed by the value itself (alive in the caller's graph), never by a temporary copy of
        # it: a freed copy's id is reused, and the memo would hand out another value's node
        key = id(v)
        memo = self.memo
        if memo is not None and key in memo:
            return memo[key]
        encoded = self._container(v, t, depth, key)
        if memo is not None:
            memo[key] = encoded
        return encoded

    def _container(self, v, t, depth: int, key: int):
        if self.describe is None and (depth >= _MAX_DEPTH or key in self.path):
            raise NotPlain
        if depth >= _MAX_DEPTH:
            return _short_repr_marker(v, self.describe)
        if key in self.path:
            return self.marker(v)  # (a cycle: the container's repr shows it as [...])
        self.path.add(key)
        try:
            d = depth + 1
            enc = self.enc
            # the base's own data, read by its C code (_base_data): a subclass's overrides
            # (__iter__, keys, items, __getitem__, __hash__ ...) never run
            data = (dict.items(v) if t is dict else v) if type(v) is t else _base_data(v, t)
            if t is dict:
                # (every key an exact str: the C lookup of TAG compares str with str only)
                if all(type(k) is str for k, _ in data) and not dict.__contains__(v, TAG):
                    return {k: enc(x, d) for k, x in data}
                return {TAG: "dict", "v": [[enc(k, d), enc(x, d)] for k, x in data]}
            items = [enc(x, d) for x in data]
            if t is list:
                return items
            if t is tuple:
                return {TAG: "tuple", "v": items}
            return {TAG: "frozenset" if t is frozenset else "set", "v": items}
        finally:
            self.path.discard(key)


_NOT_PLAIN = object()


_CONTAINERS = (list, tuple, set, frozenset, dict)
_BASES = (int, float, str, bytes, bytearray, complex, *_CONTAINERS)


def _builtin_base(t):
    """The builtin type a subclass (an IntEnum, a namedtuple, a Counter, a str subclass, a
    numpy float64) is data of, or None; `collections.deque` counts as a list. `issubclass` with
    a builtin as the second argument is type's own C check: no metaclass of `t` is asked."""
    for base in _BASES:
        if issubclass(t, base):
            return base
    collections = sys.modules.get("collections")
    if collections is not None and t is collections.deque:
        return list
    return None


def _base_data(v, base):
    """The data of `v` as an exact `base`, read by the base type's own C methods: a subclass's
    overrides (__iter__, items, __str__, __index__, ...) are never called."""
    if base is int:
        return int.__index__(v)
    if base is float:
        return float.__float__(v)
    if base is str:
        return str.__str__(v)
    if base is bytes or base is bytearray:
        return bytes(memoryview(v))
    if base is complex:
        return complex(complex.real.__get__(v), complex.imag.__get__(v))
    if base is dict:
        # its (key, value) pairs, walked over the table by the C view (dict.copy would not do:
        # for a subclass that overrides __iter__ it calls the subclass's keys() and __getitem__)
        return list(dict.items(v))
    if base is list:
        return list(list.__iter__(v)) if type(v) is not sys.modules["collections"].deque else list(v)
    # tuple, set, frozenset: their elements as a list (a new set would hash each one again)
    return list(base.__iter__(v))


def _stdlib_value(v, t):
    """Dates, times and Decimals of exact types (modules looked up, never imported): their tag,
    _NOT_PLAIN for one holding a time zone that is not a plain one, or None."""
    mods = sys.modules
    dt = mods.get("datetime")
    if dt is not None:
        if t is dt.datetime or t is dt.time:
            if not _plain_zone(v.tzinfo, dt, mods):
                return _NOT_PLAIN
            return {TAG: "datetime" if t is dt.datetime else "time", "v": v.isoformat()}
        if t is dt.date:
            return {TAG: "date", "v": v.isoformat()}
        if t is dt.timedelta:
            return {TAG: "timedelta", "v": [v.days, v.seconds, v.microseconds]}
    dec = mods.get("decimal")
    if dec is not None and t is dec.Decimal:
        return {TAG: "decimal", "v": str(v)}
    return None


def _plain_zone(tz, dt, mods) -> bool:
    """A time zone whose offset is computed by C code, not by a model's tzinfo subclass."""
    if tz is None or type(tz) is dt.timezone:
        return True
    zoneinfo = mods.get("zoneinfo")
    return zoneinfo is not None and type(tz) is zoneinfo.ZoneInfo


def decode_value(data, _depth: int = 0, *, may_import: bool = True):
    """Inverse of `encode_value`: fresh objects. Strict: raises ProtocolError on anything it does
    not know. `may_import=False` (the worker) rebuilds numpy/pandas payloads only when that
    library is loaded already; otherwise (and when it is not installed) they become a Repr. A
    node met twice (an in-process tree is a DAG) gives the same object twice."""
    return _Decoder(may_import).dec(data, _depth)


class _Decoder:
    __slots__ = ("may_import", "memo")

    def __init__(self, may_import: bool) -> None:
        self.may_import = may_import
        self.memo: dict[int, object] = {}

    def dec(self, data, depth: int):
        t = type(data)
        if data is None or t is bool or t is str or t is int or t is float:
            return data
        if t is not list and t is not dict:
            raise ProtocolError(f"unexpected JSON type {t.__name__}")
        key = id(data)
        memo = self.memo
        if key in memo:
            return memo[key]
        if depth > 2 * _MAX_DEPTH + 10:
            raise ProtocolError("value nested too deeply")
        memo[key] = value = self._dec(data, t, depth + 1)
        return value

    def _dec(self, data, t, d):
        dec = self.dec
        if t is list:
            return [dec(x, d) for x in data]
        tag = data.get(TAG)
        if tag is None:
            return {k: dec(x, d) for k, x in data.items()}
        try:
            return _decode_tagged(tag, data, d, self)
        except ProtocolError:
            raise
        except LibraryMissing as missing:
            return Repr(f"<{tag} (needs {missing.args[0]}, which is not available here)>", tag)
        except (ValueError, TypeError, KeyError, OverflowError, IndexError, AttributeError,
                binascii.Error) as exc:
            raise ProtocolError(f"bad tagged value {tag!r}: {exc}") from None


def _bytes_of(v) -> bytes:
    if type(v) is bytes:
        return v
    if type(v) is str:
        return binascii.a2b_base64(v.encode("ascii"))
    raise ValueError("bytes payload must be base64 text")


def _decode_tagged(tag, data, d, decoder: _Decoder):
    if tag in DATA_TAGS:
        def label(x):
            return decoder.dec(x, d)

        return decode_data(tag, data, decoder.may_import, _bytes_of, label)
    v = data["v"]
    if tag in ("tuple", "set", "frozenset"):
        if type(v) is not list:
            raise ProtocolError(f"{tag} payload must be a list")
        items = [decoder.dec(x, d) for x in v]
        return tuple(items) if tag == "tuple" else set(items) if tag == "set" else frozenset(items)
    if tag == "dict":
        if type(v) is not list or not all(type(p) is list and len(p) == 2 for p in v):
            raise ProtocolError("dict payload must be a list of pairs")
        return {decoder.dec(k, d): decoder.dec(x, d)
                for k, x in v}
    if tag == "repr":
        type_name = data.get("type", "")
        if type(v) is not str or type(type_name) is not str:
            raise ProtocolError("repr payload must be a string")
        return Repr(v, type_name)
    if tag == "bytes":
        return _bytes_of(v)
    if type(v) is str:
        if tag == "float":
            if v not in ("nan", "inf", "-inf"):
                raise ProtocolError("float tag is only for nan/inf")
            return float(v)
        if tag == "int":
            return int(v, 16)
        if tag == "decimal":
            import decimal

            return decimal.Decimal(v)
        if tag in ("datetime", "date", "time"):
            import datetime

            return getattr(datetime, tag).fromisoformat(v)
    if tag == "complex" and type(v) is list and len(v) == 2 and all(type(x) is str for x in v):
        return complex(float(v[0]), float(v[1]))
    if tag == "timedelta" and type(v) is list and len(v) == 3 and all(type(x) is int for x in v):
        import datetime

        return datetime.timedelta(days=v[0], seconds=v[1], microseconds=v[2])
    raise ProtocolError(f"unknown or malformed tagged value {tag!r}")
