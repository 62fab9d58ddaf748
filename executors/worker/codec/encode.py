"""The encoding half of the codec: a value into plain data within one budget of the bounds
table (`Crossing`), exact types only, a marker that says what was cut for what is over it. Stdlib only."""

from __future__ import annotations

import binascii
import sys

from ..bounds import BOUNDS, Bounds
from ..bounds.numbers import decimal_over, int_over
from ..data_values import NotData, encode_data
from .decode import decode_value
from .text import REPR_TYPES, TAG, NotPlain, cut_marker, safe_repr

__all__ = ["Crossing", "TooLargeToCross", "encode_value", "plain_copy"]

_BIG_INT_BITS = 12_000  # above ~3600 digits, str(int) may hit a worker's int->str digit limit
_MAX_DEPTH = BOUNDS.depth


def _base64(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def encode_value(value, *, max_nodes: int | None = None, binary: bool = False, describe=safe_repr,
                 strict: bool = False, bounds: Bounds = BOUNDS):
    """Turn a value into plain data (the tagged extension), within `bounds` (the table in
    `bounds/table.py`; `max_nodes` overrides its JSON values). Never raises for odd values:
    unsupported objects, cycles and over-deep nesting become repr markers, their text from
    `describe` (safe_repr; opaque_repr where no model code may run), and a value over the bounds
    becomes a marker that says what was cut. `strict=True` takes only builtin data within the
    bounds (no payloads, which call the library on the value, no reprs) and raises NotPlain for
    anything else: then no method of the value can run, anywhere."""
    crossing = Crossing(bounds, binary=binary)
    if max_nodes is not None:
        crossing.values = max_nodes
    return crossing.encode(value, describe=describe, strict=strict)


def plain_copy(value):
    """A fresh copy of builtin data (exact types); raises NotPlain for anything else. Copying runs
    no code of the value's: it may be called outside a step on a model's value."""
    return decode_value(encode_value(value, binary=True, strict=True))


class TooLargeToCross(ValueError):
    """A value over the bounds where a cut would mislead (a tool's argument): says why."""

    def for_tool(self, name: str) -> str:
        """What the model reads when a tool's arguments cannot cross to the host."""
        return (f"the arguments of tool {name!r} are too large to cross to the host: {self}. Pass "
                "less data per call (a slice, a summary, a file name), or a number as its str()")


class Crossing:
    """One budget of `bounds` for the values of one message: a result's output, a tool call's
    arguments, the variables asked for. Each `encode()` spends from it; a value over what is left
    crosses as a marker that says what was cut (or, with `cut=False`, raises TooLargeToCross)."""

    __slots__ = ("bounds", "blob", "memo", "values", "containers", "text")

    def __init__(self, bounds: Bounds = BOUNDS, *, binary: bool = False) -> None:
        self.bounds = bounds
        self.blob = bytes if binary else _base64
        # In process (raw bytes, no JSON) a container met again is the same encoded node: the
        # tree stays a DAG, and a structure of 2**40 paths through shared lists costs its 40
        # distinct lists. JSON would expand the DAG, so there the budget bounds the walk.
        self.memo: dict[int, object] | None = {} if binary else None
        self.values, self.containers, self.text = bounds.values, bounds.containers, bounds.text_bytes

    def encode(self, value, *, describe=safe_repr, strict: bool = False, cut: bool = True):
        left = (self.values, self.containers, self.text)
        encoder = _Encoder(self, None if strict else describe, cut)
        try:
            tree = encoder.enc(value, 0)
            encoder.spend(1, 0)  # (the value itself; its parts are spent by their container)
            if self.text < 0:
                raise _TooLarge(_over_text(self.bounds))
            return tree
        except _TooLarge as exc:
            self.values, self.containers, self.text = left
            if strict:
                raise NotPlain from None
            if not cut:
                raise TooLargeToCross(exc.args[0]) from None
            marker = cut_marker(value, describe, exc.args[0], self.bounds)
            self.values, self.containers = self.values - 4, self.containers - 1
            return marker
        except RecursionError:
            self.values, self.containers, self.text = left
            if strict:
                raise NotPlain from None
            why = (f"nested deeper than the recursion limit lets it be copied (Limits.max_recursion_depth; "
                   f"at most {self.bounds.depth} levels cross, Bounds.depth)")
            if not cut:
                raise TooLargeToCross(why) from None
            self.values, self.containers = self.values - 4, self.containers - 1
            return {TAG: "repr", "v": f"<{type(value).__name__} that did not cross the boundary: {why}>",
                    "type": type(value).__name__}


def _over_text(bounds: Bounds) -> str:
    return (f"over the {bounds.text_bytes:,} characters of text and bytes a value may hold to "
            "cross the boundary (Bounds.text_bytes)")


class _TooLarge(Exception):
    """Over the bounds: args[0] says which."""


class _Encoder:
    __slots__ = ("crossing", "blob", "describe", "memo", "path", "cut")

    def __init__(self, crossing: Crossing, describe, cut: bool) -> None:
        self.crossing = crossing
        self.blob = crossing.blob
        self.describe = describe
        self.cut = cut
        self.path: set[int] = set()
        self.memo = crossing.memo

    def spend(self, values: int, containers: int) -> None:
        c = self.crossing
        c.values -= values
        c.containers -= containers
        if c.values < 0 or c.containers < 0:
            b = c.bounds
            raise _TooLarge(f"over the {b.values:,} values or {b.containers:,} containers a value may "
                            "hold to cross the boundary (Bounds.values, Bounds.containers)")

    def marker(self, v) -> dict:
        if self.describe is None:
            raise NotPlain
        self.spend(3, 1)
        return {TAG: "repr", "v": self.describe(v), "type": type(v).__name__}

    def too_large(self, v, why: str) -> dict:
        """A number over the bounds: a marker naming it by its size (never its digits)."""
        if self.describe is None:
            raise NotPlain
        if not self.cut:
            raise _TooLarge(why)
        self.spend(3, 1)
        return {TAG: "repr", "v": f"<{type(v).__name__} that did not cross the boundary: {why}>",
                "type": type(v).__name__}

    def tagged(self, tag: str, payload, values: int = 2, containers: int = 1) -> dict:
        self.spend(values, containers)
        return {TAG: tag, "v": payload}

    def enc(self, v, depth: int):
        t = type(v)
        if t is str:
            self.crossing.text -= len(v)
            return v
        if v is None or t is bool:
            return v
        if t is int:
            if v.bit_length() < _BIG_INT_BITS:
                return v
            why = int_over(v, self.crossing.bounds)
            return self.tagged("int", hex(v)) if why is None else self.too_large(v, why)
        if t is float:
            return v if v - v == 0.0 else self.tagged("float", repr(v))  # (inf - inf, nan: nan)
        if t in REPR_TYPES:
            name = v.type_name
            self.spend(3, 1)
            self.crossing.text -= len(v)
            return {TAG: "repr", "v": str.__str__(v), "type": name if type(name) is str else ""}
        if t is bytes or t is bytearray or t is memoryview:
            data = bytes(v)
            self.crossing.text -= len(data)
            if self.crossing.text < 0:
                raise _TooLarge(_over_text(self.crossing.bounds))
            return self.tagged("bytes", self.blob(data))
        if t is complex:
            return self.tagged("complex", [repr(v.real), repr(v.imag)], 4, 2)
        if t is list or t is tuple or t is set or t is frozenset or t is dict:
            return self.container(v, t, depth)
        base = _builtin_base(t)
        if base is not None:  # a subclass of a builtin: its base's data, read by the base's C code
            return self.enc(_base_data(v, base), depth) if base not in _CONTAINERS else \
                self.container(v, base, depth)
        simple = _stdlib_value(v, t, self)
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
        if type(payload) is not dict:
            return self.enc(payload, depth)  # (a numpy scalar)
        self.payload(payload)
        return payload

    def payload(self, tree) -> None:
        """Spend what a data payload (numpy, pandas) holds: its JSON values, containers, text."""
        crossing = self.crossing
        stack = [tree]
        while stack:
            node = stack.pop()
            t = type(node)
            if t is str or t is bytes:
                crossing.text -= len(node)
                continue
            if t is dict:
                self.spend(len(node) or 1, 1)
                stack.extend(node.values())
            elif t is list:
                self.spend(len(node) or 1, 1)
                stack.extend(x for x in node if type(x) is not str or len(x) > 64)
        if crossing.text < 0:
            raise _TooLarge(_over_text(crossing.bounds))

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
            why = f"nested over {_MAX_DEPTH} levels deep (Bounds.depth)"
            if not self.cut:
                raise _TooLarge(why)
            self.spend(4, 1)
            return cut_marker(v, self.describe, why, self.crossing.bounds)
        if key in self.path:
            return self.marker(v)  # (a cycle: the container's repr shows it as [...])
        self.path.add(key)
        try:
            d = depth + 1
            enc = self.enc
            # the base's own data, read by its C code (_base_data): a subclass's overrides
            # (__iter__, keys, items, __getitem__, __hash__ ...) never run
            data = (dict.items(v) if t is dict else v) if type(v) is t else _base_data(v, t)
            # (spent as the frame scan counts them: an empty container as two values)
            n = len(data)
            m = n or 1
            if t is dict:
                # (every key an exact str: the C lookup of TAG compares str with str only)
                if all(type(k) is str for k, _ in data) and not dict.__contains__(v, TAG):
                    self.spend(m, 1)
                    out = {k: enc(x, d) for k, x in data}
                    self.crossing.text -= sum(map(len, out))
                else:
                    self.spend(2 + m + 2 * n, 2 + n)
                    out = {TAG: "dict", "v": [[enc(k, d), enc(x, d)] for k, x in data]}
            else:
                if t is list:
                    self.spend(m, 1)
                else:
                    self.spend(m + 2, 2)
                items = [enc(x, d) for x in data]
                out = items if t is list else {
                    TAG: "tuple" if t is tuple else "frozenset" if t is frozenset else "set", "v": items}
            if self.crossing.text < 0:
                raise _TooLarge(_over_text(self.crossing.bounds))
            return out
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


def _stdlib_value(v, t, encoder: _Encoder):
    """Dates, times and Decimals of exact types (modules looked up, never imported): their tag,
    _NOT_PLAIN for one holding a time zone that is not a plain one, or None."""
    mods = sys.modules
    dt = mods.get("datetime")
    if dt is not None:
        if t is dt.datetime or t is dt.time:
            if not _plain_zone(v.tzinfo, dt, mods):
                return _NOT_PLAIN
            return encoder.tagged("datetime" if t is dt.datetime else "time", v.isoformat())
        if t is dt.date:
            return encoder.tagged("date", v.isoformat())
        if t is dt.timedelta:
            return encoder.tagged("timedelta", [v.days, v.seconds, v.microseconds], 5, 2)
    dec = mods.get("decimal")
    if dec is not None and t is dec.Decimal:
        why = decimal_over(v, encoder.crossing.bounds)
        return encoder.tagged("decimal", str(v)) if why is None else encoder.too_large(v, why)
    return None


def _plain_zone(tz, dt, mods) -> bool:
    """A time zone whose offset is computed by C code, not by a model's tzinfo subclass."""
    if tz is None or type(tz) is dt.timezone:
        return True
    zoneinfo = mods.get("zoneinfo")
    return zoneinfo is not None and type(tz) is zoneinfo.ZoneInfo
