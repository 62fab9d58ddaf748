"""The decoding half of the codec: plain data into fresh objects, strictly: anything unknown,
malformed or over the bounds table is a ProtocolError, raised before anything is built from it.
Stdlib only."""

from __future__ import annotations

import binascii

from ..bounds import BOUNDS, Bounds
from ..bounds.numbers import decimal_from_text, int_from_hex
from ..data_values import DATA_TAGS, LibraryMissing, decode_data
from .text import TAG, ProtocolError, Repr

__all__ = ["decode_value", "decode_values"]

_MAX_DEPTH = BOUNDS.depth
_DATE_CHARS = 64  # '2024-02-29T12:30:01.000005+05:30' and the like
_FLOAT_CHARS = 32  # repr() of any float


def decode_value(data, _depth: int = 0, *, may_import: bool = True, bounds: Bounds = BOUNDS,
                 parsed: bool = False):
    """Inverse of `encode_value`: fresh objects. Strict: raises ProtocolError on anything it does
    not know or that is over `bounds` (a number's digits or exponent, a date's text). `may_import=False`
    (the worker) rebuilds numpy/pandas payloads only when that library is loaded already;
    otherwise (and when it is not installed) they become a Repr. A node met twice (an in-process
    tree is a DAG) gives the same object twice. `parsed=True`: the tree was just parsed from a
    frame and nothing else holds it, so its lists and dicts are filled in place (no second copy of
    a million containers, no memo: parsed JSON shares no node)."""
    return _Decoder(may_import, bounds, parsed).dec(data, _depth)


def decode_values(trees, *, may_import: bool = True, bounds: Bounds = BOUNDS, parsed: bool = False) -> list:
    """`decode_value` of each tree of one message (a tool call's arguments, say), with one memo:
    a node the encoder shared between them is one object again."""
    decoder = _Decoder(may_import, bounds, parsed)
    return [decoder.dec(tree, 0) for tree in trees]


class _Decoder:
    __slots__ = ("may_import", "memo", "bounds")

    def __init__(self, may_import: bool, bounds: Bounds, parsed: bool = False) -> None:
        self.may_import = may_import
        self.bounds = bounds
        self.memo: dict[int, object] | None = None if parsed else {}

    def dec(self, data, depth: int):
        t = type(data)
        if data is None or t is bool or t is str or t is int or t is float:
            return data
        if t is not list and t is not dict:
            raise ProtocolError(f"unexpected JSON type {t.__name__}")
        if depth > 2 * _MAX_DEPTH + 10:
            raise ProtocolError("value nested too deeply")
        memo = self.memo
        if memo is None:
            return self._dec(data, t, depth + 1)
        key = id(data)
        if key in memo:
            return memo[key]
        memo[key] = value = self._dec(data, t, depth + 1)
        return value

    def _dec(self, data, t, d):
        dec = self.dec
        if t is list:
            if self.memo is None:  # (parsed: in place)
                for i, x in enumerate(data):
                    data[i] = dec(x, d)
                return data
            return [dec(x, d) for x in data]
        tag = data.get(TAG)
        if tag is None:
            if self.memo is None:
                for k, x in data.items():
                    data[k] = dec(x, d)
                return data
            return {k: dec(x, d) for k, x in data.items()}
        try:
            return _decode_tagged(tag, data, d, self)
        except ProtocolError:
            raise
        except LibraryMissing as missing:
            return Repr(f"<{tag} (needs {missing.args[0]}, which is not available here)>", tag)
        except (ValueError, TypeError, KeyError, ArithmeticError, IndexError, AttributeError,
                binascii.Error) as exc:  # (ArithmeticError: decimal's InvalidOperation, OverflowError)
            raise ProtocolError(f"bad tagged value {tag!r}: {str(exc)[:300]}") from None


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
            return int_from_hex(v, decoder.bounds)
        if tag == "decimal":
            return decimal_from_text(v, decoder.bounds)
        if tag in ("datetime", "date", "time") and len(v) <= _DATE_CHARS:
            import datetime

            return getattr(datetime, tag).fromisoformat(v)
    if tag == "complex" and type(v) is list and len(v) == 2 and \
            all(type(x) is str and len(x) <= _FLOAT_CHARS for x in v):
        return complex(float(v[0]), float(v[1]))
    if tag == "timedelta" and type(v) is list and len(v) == 3 and all(type(x) is int for x in v):
        import datetime

        return datetime.timedelta(days=v[0], seconds=v[1], microseconds=v[2])
    raise ProtocolError(f"unknown or malformed tagged value {tag!r}")
