"""The wire between the host and a worker: framing, the text limits, and the codec's names. Stdlib only.

Both sides import this one module: the worker (which must run from a bare directory with nothing
but the standard library) and the host (`executors.remote.protocol` adds its validated message models on
top). No pickle anywhere: the host treats every byte from a worker as hostile.

  frame   = 4-byte big-endian length + UTF-8 JSON object with an "op" key; at most
            `max_frame_bytes` (DEFAULT_MAX_FRAME_BYTES unless configured).
  values  = the value codec (codec.py, re-exported here): JSON plus tagged objects, numpy and
            pandas as typed payloads (data_values.py); anything else as its repr.

Messages (their fields are listed in `executors.remote.protocol`):
  host -> worker: configure, execute, tool_result, tool_error, set_variables, get_variables,
                  register_tools, reset, ping, shutdown.
  worker -> host: ok, error, pong, result, variables, tool_call.

Attachments (figures and images of a step) cross in the result message as
{media_type, name, width, height, data: tagged bytes}: `attachments_to_wire`; both sides check
them with `bounds.png.check_png` (the one media type, PNG, checked whole, its size read from its
own header).

Also here, because both sides cut text the same way: `truncate_text` (head + tail), `safe_repr`
(a repr that survives a hostile `__repr__`) and `OutputBuffer` (keeps the head and the tail of
everything written to it).
"""

from __future__ import annotations

# Start-up time matters (every worker imports this): `binascii` and the C JSON scanner instead of
# `base64` and `json`, which pull in `re`, enum and more.
import binascii

from .bounds import BOUNDS
from .bounds.scan import FrameBounds, int_literal
from .codec import (
    REPR_CHARS,
    TAG,
    ProtocolError,
    Repr,
    decode_value,
    decode_values,
    encode_value,
    opaque_repr,
    safe_repr,
    safe_str,
)

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES", "HEADER_BYTES", "MAX_PICTURES", "PNG", "REPR_CHARS", "TAG",
    "attachments_to_wire", "png_size",
    "FrameBuffer", "FrameTooLarge", "OutputBuffer", "ProtocolError", "Repr",
    "decode_value", "decode_values", "dumps", "encode_value", "loads", "opaque_repr", "pack_frame", "safe_repr",
    "safe_str",
    "truncate_text",
    "unpack_message",
]

DEFAULT_MAX_FRAME_BYTES = BOUNDS.frame_bytes
HEADER_BYTES = 4
PNG = "image/png"
MAX_PICTURES = BOUNDS.pictures  # attachments per step: a loop that opens 500 figures gets the first 20


class FrameTooLarge(ProtocolError):
    pass


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


def _raw_bytes(obj) -> str:
    """Raw bytes left in a tree by encode_value(binary=True) are written as base64 text."""
    if type(obj) is bytes:
        return binascii.b2a_base64(obj, newline=False).decode("ascii")
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def _no_constants(name: str):
    raise ValueError(f"{name} is not valid JSON")


_parse_int = int_literal(BOUNDS)


def _fast_json():
    try:
        import _json

        class _Context:
            strict = True
            object_hook = None
            object_pairs_hook = None
            parse_float = float
            parse_int = staticmethod(_parse_int)  # (a literal over Bounds.int_digits is refused)
            parse_constant = staticmethod(_no_constants)
            memo: dict = {}

        scanner = _json.make_scanner(_Context())
        encoder = _json.make_encoder(
            None, _raw_bytes, _json.encode_basestring_ascii, None, ":", ",", False, False, False
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
            return json.dumps(obj, separators=(",", ":"), allow_nan=False, default=_raw_bytes)

        def loads(text: str):
            return json.loads(text, parse_constant=_no_constants, parse_int=_parse_int)

        return dumps, loads


dumps, loads = _fast_json()


# ---------------------------------------------------------------------------------------------
# Sources sent once


class SourceRefs:
    """The sources one worker holds, by ref, on both ends of the channel: the host sends a step's
    code with a new ref the first time and the ref alone afterwards (a model repeats itself; a
    retry resends the same block), the worker keeps what it was sent. Both ends keep the same
    `SOURCE_REFS` newest sources in the order they were first sent, so they agree on what the
    worker still has without a message about it."""

    __slots__ = ("_by_code", "_by_ref", "_next")

    def __init__(self) -> None:
        self._by_code: dict[str, int] = {}
        self._by_ref: dict[int, str] = {}
        self._next = 0

    def ref_of(self, code: str) -> tuple[int, bool]:
        """(the ref of `code`, whether the worker has it already). Host side."""
        ref = self._by_code.get(code)
        if ref is not None:
            return ref, True
        self._next += 1
        self.keep(self._next, code)
        return self._next, False

    def keep(self, ref: int, code: str) -> None:
        """Remember `code` as `ref` (worker side: as sent), forgetting the oldest past the bound."""
        self._by_code[code] = ref
        self._by_ref[ref] = code
        while len(self._by_ref) > SOURCE_REFS:
            old = next(iter(self._by_ref))
            self._by_code.pop(self._by_ref.pop(old), None)

    def forget(self, code: str) -> None:
        """A source that was never sent after all (its frame was too large)."""
        ref = self._by_code.pop(code, None)
        self._by_ref.pop(ref, None)

    def code_of(self, ref: object) -> str | None:
        return self._by_ref.get(ref) if type(ref) is int else None


SOURCE_REFS = 64

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
    except FrameBounds as exc:
        raise ProtocolError(f"frame over the bounds: {exc}") from None
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

