"""The wire between the host and a worker: value codec, framing, and the text limits. Stdlib only.

Both sides import this one module: the worker (which must run from a bare directory with nothing
but the standard library) and the host (`executors.remote.protocol` adds its validated message models on
top). No pickle anywhere: the host treats every byte from a worker as hostile.

  frame   = 4-byte big-endian length + UTF-8 JSON object with an "op" key; at most
            `max_frame_bytes` (DEFAULT_MAX_FRAME_BYTES unless configured).
  values  = JSON plus tagged objects {"$t": tag, "v": ...} for tuple, set, frozenset, bytes,
            complex, datetime, date, time, timedelta, Decimal, big int, non-finite float, dicts
            with non-str keys; anything else crosses as {"$t": "repr", "v": repr, "type": name}.

Messages (their fields are listed in `executors.remote.protocol`):
  host -> worker: configure, execute, tool_result, tool_error, set_variables, get_variables,
                  register_tools, reset, ping, shutdown.
  worker -> host: ok, error, pong, result, variables, tool_call.

Attachments (figures and images of a step) cross in the result message as
{media_type, name, width, height, data: tagged bytes}: `attachments_to_wire`; the host checks
them with `png_size` (the one media type, PNG, read from its own header).

Also here, because both sides cut text the same way: `truncate_text` (head + tail), `safe_repr`
(a repr that survives a hostile `__repr__`) and `OutputBuffer` (keeps the head and the tail of
everything written to it).
"""

from __future__ import annotations

# Start-up time matters (every worker imports this): `binascii` and the C JSON scanner instead of
# `base64` and `json`, which pull in `re`, enum and more.
import binascii
import math
import sys

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES", "HEADER_BYTES", "MAX_PICTURES", "PNG", "REPR_CHARS", "TAG",
    "attachments_to_wire", "png_size",
    "FrameBuffer", "FrameTooLarge", "OutputBuffer", "ProtocolError", "Repr",
    "decode_value", "dumps", "encode_value", "loads", "pack_frame", "safe_repr", "safe_str",
    "truncate_text",
    "unpack_message",
]

TAG = "$t"
DEFAULT_MAX_FRAME_BYTES = 32 * 1024 * 1024
HEADER_BYTES = 4
_BIG_INT_BITS = 12_000  # above ~3600 digits, str(int) may hit Python's int->str digit limit
_MAX_DEPTH = 100
_MAX_NODES = 1_000_000
REPR_CHARS = 10_000  # the longest repr a value crosses as
PNG = "image/png"
MAX_PICTURES = 20  # attachments per step: a loop that opens 500 figures gets the first 20


class ProtocolError(Exception):
    """A frame or message that breaks the protocol (malformed, oversized, unknown, out of order)."""


class FrameTooLarge(ProtocolError):
    pass


class Repr(str):
    """A value that could not cross the boundary as itself: its `repr`, marked as such."""

    __slots__ = ("type_name",)

    def __new__(cls, text: str, type_name: str = "") -> Repr:
        self = super().__new__(cls, text)
        self.type_name = type_name
        return self


class _TooLarge(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Value codec


def safe_repr(value, limit: int = REPR_CHARS) -> str:
    """`repr(value)` cut to `limit` characters (head and tail); a `__repr__` that raises or
    returns a non-str gives a placeholder instead of an exception."""
    try:
        text = repr(value)
    except BaseException as exc:  # a hostile __repr__ must not take the codec down
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        text = f"<unrepresentable {type(value).__name__} object>"
    if not isinstance(text, str):
        text = f"<unrepresentable {type(value).__name__} object>"
    if len(text) > limit:
        half = limit // 2
        text = f"{text[:half]}...[{len(text) - 2 * half} chars truncated]...{text[-half:]}"
    return text


def safe_str(value) -> str:
    """`str(value)`, or "" when a hostile `__str__` raises or returns a non-str."""
    try:
        text = str(value)
    except BaseException:
        return ""
    return text if isinstance(text, str) else ""


def _repr_marker(value) -> dict:
    return {TAG: "repr", "v": safe_repr(value), "type": type(value).__name__}


def _short_repr_marker(value) -> dict:
    """For containers too big or deep to walk: a bounded-effort repr (reprlib elides)."""
    import reprlib

    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother = 4, 200, 200
    try:
        text = short.repr(value)
    except Exception:
        text = f"<unrepresentable {type(value).__name__} object>"
    return {TAG: "repr", "v": text[:REPR_CHARS], "type": type(value).__name__}


def _float(v: float):
    if v != v or v in (math.inf, -math.inf):
        return {TAG: "float", "v": repr(v)}
    return v


def encode_value(value, *, max_nodes: int = _MAX_NODES):
    """Turn a Python value into JSON-able data (tagged extension). Never raises for odd values:
    unsupported objects, cycles and over-deep nesting become repr markers."""
    try:
        return _enc(value, 0, set(), [max_nodes])
    except _TooLarge:
        return _short_repr_marker(value)
    except RecursionError:
        return {TAG: "repr", "v": "<too deeply nested>", "type": type(value).__name__}


def _enc(v, depth, path, budget):
    t = type(v)
    if v is None or t is bool or t is str:
        return v
    if t is int:
        return v if v.bit_length() < _BIG_INT_BITS else {TAG: "int", "v": hex(v)}
    if t is float:
        return _float(v)
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooLarge
    if isinstance(v, Repr):
        return {TAG: "repr", "v": str(v), "type": v.type_name}
    if isinstance(v, bool):
        return bool(v)
    if isinstance(v, int):
        return _enc(int(v), depth, path, budget)
    if isinstance(v, float):
        return _float(float(v))
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {TAG: "bytes", "v": binascii.b2a_base64(bytes(v), newline=False).decode("ascii")}
    if isinstance(v, complex):
        return {TAG: "complex", "v": [repr(v.real), repr(v.imag)]}
    if isinstance(v, (list, tuple, set, frozenset, dict)):
        if depth >= _MAX_DEPTH or id(v) in path:
            return _short_repr_marker(v) if depth >= _MAX_DEPTH else {TAG: "repr", "v": "<cycle>", "type": t.__name__}
        path.add(id(v))
        try:
            d = depth + 1
            if isinstance(v, dict):
                if all(type(k) is str for k in v) and TAG not in v:
                    return {k: _enc(x, d, path, budget) for k, x in v.items()}
                return {TAG: "dict", "v": [[_enc(k, d, path, budget), _enc(x, d, path, budget)] for k, x in v.items()]}
            items = [_enc(x, d, path, budget) for x in v]
            if isinstance(v, list):
                return items
            if isinstance(v, tuple):
                return {TAG: "tuple", "v": items}
            return {TAG: "frozenset" if isinstance(v, frozenset) else "set", "v": items}
        finally:
            path.discard(id(v))
    # Types from modules that may not even be loaded: never import them just to check.
    mods = sys.modules
    dt = mods.get("datetime")
    if dt is not None:
        if isinstance(v, dt.datetime):
            return {TAG: "datetime", "v": v.isoformat()}
        if isinstance(v, dt.date):
            return {TAG: "date", "v": v.isoformat()}
        if isinstance(v, dt.time):
            return {TAG: "time", "v": v.isoformat()}
        if isinstance(v, dt.timedelta):
            return {TAG: "timedelta", "v": [v.days, v.seconds, v.microseconds]}
    dec = mods.get("decimal")
    if dec is not None and isinstance(v, dec.Decimal):
        return {TAG: "decimal", "v": str(v)}
    return _repr_marker(v)


def decode_value(data, _depth: int = 0):
    """Inverse of `encode_value`. Strict: raises ProtocolError on anything it does not know."""
    t = type(data)
    if data is None or t is bool or t is str or t is int or t is float:
        return data
    if _depth > 2 * _MAX_DEPTH + 10:
        raise ProtocolError("value nested too deeply")
    d = _depth + 1
    if t is list:
        return [decode_value(x, d) for x in data]
    if t is not dict:
        raise ProtocolError(f"unexpected JSON type {t.__name__}")
    tag = data.get(TAG)
    if tag is None:
        return {k: decode_value(x, d) for k, x in data.items()}
    try:
        return _decode_tagged(tag, data, d)
    except ProtocolError:
        raise
    except (ValueError, TypeError, KeyError, OverflowError, binascii.Error) as exc:
        raise ProtocolError(f"bad tagged value {tag!r}: {exc}") from None


def _decode_tagged(tag, data, d):
    v = data["v"]
    if tag in ("tuple", "set", "frozenset"):
        if type(v) is not list:
            raise ProtocolError(f"{tag} payload must be a list")
        items = [decode_value(x, d) for x in v]
        return tuple(items) if tag == "tuple" else set(items) if tag == "set" else frozenset(items)
    if tag == "dict":
        if type(v) is not list or not all(type(p) is list and len(p) == 2 for p in v):
            raise ProtocolError("dict payload must be a list of pairs")
        return {decode_value(k, d): decode_value(x, d) for k, x in v}
    if tag == "repr":
        type_name = data.get("type", "")
        if type(v) is not str or type(type_name) is not str:
            raise ProtocolError("repr payload must be a string")
        return Repr(v, type_name)
    if type(v) is str:
        if tag == "bytes":
            return binascii.a2b_base64(v.encode("ascii"))
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


# ---------------------------------------------------------------------------------------------
# Attachments


def attachments_to_wire(items) -> list:
    """The `attachments` field of a result message: figures.Picture or executors.Attachment
    objects (the same fields), their bytes as tagged bytes."""
    return [{"media_type": str(item.media_type), "name": str(item.name), "width": item.width,
             "height": item.height,
             "data": {TAG: "bytes", "v": binascii.b2a_base64(bytes(item.data), newline=False).decode("ascii")}}
            for item in items]


def png_size(data: bytes) -> tuple[int | None, int | None]:
    """Width and height from a PNG's IHDR chunk; (None, None) for anything else."""
    if len(data) >= 24 and data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return None, None


# ---------------------------------------------------------------------------------------------
# JSON: the C scanner/encoder behind the json module, used directly when available (`import
# json` pulls in `re`, enum, functools, ...).


def _no_constants(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _fast_json():
    try:
        import _json

        class _Context:
            strict = True
            object_hook = None
            object_pairs_hook = None
            parse_float = float
            parse_int = int
            parse_constant = staticmethod(_no_constants)
            memo: dict = {}

        scanner = _json.make_scanner(_Context())
        encoder = _json.make_encoder(
            None, None, _json.encode_basestring_ascii, None, ":", ",", False, False, False
        )

        def dumps(obj) -> str:
            return "".join(encoder(obj, 0))

        def loads(text: str):
            try:
                obj, end = scanner(text, 0)
            except StopIteration:
                raise ValueError("invalid JSON") from None
            if end != len(text):
                raise ValueError("extra data after the JSON value")
            return obj

        if loads(dumps({"a": [1, 2.5, "\u00e9", None, True]})) != {"a": [1, 2.5, "\u00e9", None, True]}:
            raise ValueError("self-test failed")
        return dumps, loads
    except Exception:  # another Python: fall back to the json module
        import json

        def dumps(obj) -> str:
            return json.dumps(obj, separators=(",", ":"), allow_nan=False)

        def loads(text: str):
            return json.loads(text, parse_constant=_no_constants)

        return dumps, loads


dumps, loads = _fast_json()


# ---------------------------------------------------------------------------------------------
# Framing


def pack_frame(message: dict, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> bytes:
    """Serialize one message (compact JSON, ASCII, no NaN). Raises FrameTooLarge over the limit."""
    body = dumps(message).encode("ascii")
    if len(body) > max_frame_bytes:
        raise FrameTooLarge(f"frame of {len(body)} bytes exceeds the {max_frame_bytes}-byte limit")
    return len(body).to_bytes(HEADER_BYTES, "big") + body


def unpack_message(body: bytes) -> dict:
    """Parse one frame body into a message dict with a str "op" (raises ProtocolError)."""
    try:
        msg = loads(body.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise ProtocolError(f"frame is not valid JSON: {str(exc)[:200]}") from None
    if type(msg) is not dict or type(msg.get("op")) is not str:
        raise ProtocolError("frame is not a JSON object with an 'op'")
    return msg


class FrameBuffer:
    """Incremental frame splitter: feed bytes in, take complete frame bodies out."""

    __slots__ = ("_buf", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._buf = bytearray()
        self.max_frame_bytes = max_frame_bytes

    def feed(self, data: bytes) -> None:
        self._buf += data

    def next_frame(self) -> bytes | None:
        buf = self._buf
        if len(buf) < HEADER_BYTES:
            return None
        n = int.from_bytes(buf[:HEADER_BYTES], "big")
        if n > self.max_frame_bytes:
            raise FrameTooLarge(f"incoming frame of {n} bytes exceeds the {self.max_frame_bytes}-byte limit")
        end = HEADER_BYTES + n
        if len(buf) < end:
            return None
        body = bytes(buf[HEADER_BYTES:end])
        del buf[:end]
        return body

    def pending(self) -> int:
        return len(self._buf)


# ---------------------------------------------------------------------------------------------
# Text limits: output and messages keep their head and their tail


class OutputBuffer:
    """A write-only text sink (a `sys.stdout` stand-in) that keeps the head and the tail of what
    is written, within `limit` characters; `text()` marks what was cut in the middle."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.half = limit // 2
        self.head: list[str] = []
        self.head_len = 0
        self.tail: list[str] = []
        self.tail_len = 0
        self.total = 0

    def write(self, s) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        n = len(s)
        self.total += n
        if self.head_len < self.half:
            take = s[: self.half - self.head_len]
            self.head.append(take)
            self.head_len += len(take)
            s = s[len(take):]
            if not s:
                return n
        self.tail.append(s)
        self.tail_len += len(s)
        if self.tail_len > 2 * self.half + 1024:  # amortized trimming
            joined = "".join(self.tail)[-self.half:]
            self.tail = [joined]
            self.tail_len = len(joined)
        return n

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def text(self) -> str:
        head = "".join(self.head)
        tail = "".join(self.tail)
        if self.total <= self.limit:
            return head + tail
        tail = tail[-self.half:]
        return f"{head}\n...[{self.total - len(head) - len(tail)} characters truncated]...\n{tail}"


def truncate_text(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, head and tail kept, the cut marked."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n...[{len(text) - 2 * half} characters truncated]...\n{text[-half:]}"

