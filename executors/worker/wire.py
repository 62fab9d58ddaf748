"""The wire between the host and a worker: framing, the text limits, and the codec's names. Stdlib only.

Both sides import this one module: the worker (which must run from a bare directory with nothing
but the standard library) and the host (`executors.remote.protocol` adds its validated message models on
top). No pickle anywhere: the host treats every byte from a worker as hostile.

  frame   = 4-byte big-endian length + UTF-8 JSON object with an "op" key; at most
            `max_frame_bytes` (DEFAULT_MAX_FRAME_BYTES unless configured); or, when the message
            carries raw bytes, a binary frame: the JSON and its blobs beside it, inline or in the
            worker's shared-memory arena, within `max_payload_bytes` (codec/frames.py).
  values  = the value codec (codec/, re-exported here): JSON plus tagged objects, numpy, pandas
            and Arrow as typed payloads whose buffers are blobs (data_values.py, arrow_data.py);
            anything else as its repr.

Messages (their fields are listed in `executors.remote.protocol`):
  host -> worker: configure, execute, tool_result, tool_error, set_variables, get_variables,
                  register_tools, reset, ping, shutdown.
  worker -> host: ok, error, pong, result, variables, tool_call.

Attachments (figures and images of a step) cross in the result message as
{media_type, name, width, height, data: tagged bytes}: `attachments_to_wire`; both sides check
them with `bounds.png.check_png` (the one media type, PNG, checked whole, its size read from its
own header).

Also here, because both sides cut text the same way: `truncate_text` (head + tail, the note's
count true: `display.cut_middle`), `safe_repr`
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
    Crossing,
    ProtocolError,
    Repr,
    TooLargeToCross,
    decode_value,
    decode_values,
    encode_value,
    opaque_repr,
    safe_repr,
    safe_str,
)
from .codec.frames import (
    FIXED,
    INLINE_MAX,
    Arena,
    BinaryFrame,
    FrameTooLarge,
    Outgoing,
    PayloadTooLarge,
    blob_ref,
    parse_binary_header,
    split_binary,
)
from .display import cut_middle, cut_parts, full_length, omitted_note

__all__ = [
    "Arena", "BinaryFrame", "Crossing", "DEFAULT_MAX_PAYLOAD_BYTES", "Outgoing", "PayloadTooLarge",
    "TooLargeToCross",
    "DEFAULT_MAX_FRAME_BYTES", "HEADER_BYTES", "MAX_PICTURES", "PNG", "REPR_CHARS", "TAG",
    "attachments_to_wire", "png_size",
    "FrameBuffer", "FrameTooLarge", "OutputBuffer", "ProtocolError", "Repr",
    "decode_value", "decode_values", "dumps", "encode_value", "loads", "opaque_repr", "pack_frame", "safe_repr",
    "safe_str",
    "truncate_text", "cut_middle", "cut_parts", "full_length", "omitted_note",
    "unpack_message",
]

DEFAULT_MAX_FRAME_BYTES = BOUNDS.frame_bytes
HEADER_BYTES = 4
PNG = "image/png"
MAX_PICTURES = BOUNDS.pictures  # attachments per step: a loop that opens 500 figures gets the first 20


DEFAULT_MAX_PAYLOAD_BYTES = BOUNDS.payload_bytes


# ---------------------------------------------------------------------------------------------
# Attachments


def attachments_to_wire(items) -> list:
    """The `attachments` field of a result message: figures.Picture or executors.Attachment
    objects (the same fields), their bytes as tagged raw bytes (blobs of the binary frame)."""
    return [{"media_type": str(item.media_type), "name": str(item.name), "width": item.width,
             "height": item.height, "data": {TAG: "bytes", "v": bytes(item.data)}}  # (a blob in the frame)
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
    t = type(obj)
    if t is bytes or t is bytearray or t is memoryview or issubclass(t, bytearray) or t.__name__ == "ndarray":
        return binascii.b2a_base64(bytes(obj), newline=False).decode("ascii")
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


def pack_frame(message: dict, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
               max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES):
    """Serialize one message (compact JSON, ASCII, no NaN): bytes, or an `Outgoing` binary frame
    when its tree holds raw bytes of more than INLINE_MAX (codec/frames.py). Raises FrameTooLarge
    over the limit (PayloadTooLarge over `max_payload_bytes`, Limits.max_payload_bytes)."""
    blobs: list = []
    body = _dumps_with(message, blobs).encode("ascii")
    if len(body) > max_frame_bytes:
        raise FrameTooLarge(f"frame of {len(body)} bytes exceeds the {max_frame_bytes}-byte limit")
    if not blobs:
        return len(body).to_bytes(HEADER_BYTES, "big") + body
    out = Outgoing(body, blobs)
    if out.total > max_payload_bytes:
        raise PayloadTooLarge(f"binary payloads of {out.total:,} bytes in one message, over the "
                              f"{max_payload_bytes:,} allowed (Limits.max_payload_bytes)")
    return out


def _dumps_with(message: dict, blobs: list) -> str:
    """`dumps`, raw bytes over INLINE_MAX moved out of the text into `blobs` as references."""

    def default(obj):
        t = type(obj)
        if t.__name__ == "ndarray":  # (an in-process blob: numpy's uint8 copy, `_owned_blob`)
            obj, t = memoryview(obj), memoryview
        if t is bytes or t is memoryview or issubclass(t, bytearray):
            n = obj.nbytes if t is memoryview else len(obj)
            if n > INLINE_MAX:
                blobs.append(obj)
                return blob_ref(len(blobs) - 1)
            return binascii.b2a_base64(bytes(obj), newline=False).decode("ascii")
        raise TypeError(f"{t.__name__} is not JSON serializable")

    try:
        import _json

        encoder = _json.make_encoder(None, default, _json.encode_basestring_ascii, None, ":", ",",
                                     False, False, False)
        return "".join(encoder(message, 0))
    except ImportError:
        import json

        return json.dumps(message, separators=(",", ":"), allow_nan=False, default=default)


def unpack_message(body, arena: Arena | None = None,
                   max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES) -> dict:
    """Parse one frame body (bytes, or a BinaryFrame) into a message dict with a str "op"
    (raises ProtocolError). A binary frame's blobs are checked and copied out first (from
    `arena` when they are there), each reference to one replaced by its bytes."""
    blobs = None
    if type(body) is BinaryFrame:
        blobs = body.blobs(arena, max_payload_bytes)
        body = body.json
    try:
        msg = loads(body.decode("utf-8")) if blobs is None else _loads_with(body.decode("utf-8"), blobs)
    except FrameBounds as exc:
        raise ProtocolError(f"frame over the bounds: {exc}") from None
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise ProtocolError(f"frame is not valid JSON: {str(exc)[:200]}") from None
    if type(msg) is not dict or type(msg.get("op")) is not str:
        raise ProtocolError("frame is not a JSON object with an 'op'")
    return msg


class _BlobUsedTwice(ValueError):
    pass


def _loads_with(text: str, blobs: list):
    """`loads`, each {"$t": "blob", "i": k} replaced by blob k (each used once: two values never
    share memory)."""
    used = [False] * len(blobs)

    def hook(d: dict):
        if d.get(TAG) != "blob":
            return d
        k = d.get("i")
        if len(d) != 2 or type(k) is not int or not 0 <= k < len(blobs) or used[k]:
            raise ValueError(f"a bad or repeated blob reference {str(k)[:20]}")
        used[k] = True
        return blobs[k]

    import _json

    class _Context:
        strict = True
        object_hook = staticmethod(hook)
        object_pairs_hook = None
        parse_float = float
        parse_int = staticmethod(_parse_int)
        parse_constant = staticmethod(_no_constants)
        memo: dict = {}

    try:
        obj, end = _json.make_scanner(_Context())(text, 0)
    except StopIteration:
        raise ValueError("invalid JSON") from None
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return obj


class FrameBuffer:
    """Incremental frame splitter: feed bytes in, take complete frame bodies out (bytes, or a
    BinaryFrame: codec/frames.py)."""

    __slots__ = ("_buf", "max_frame_bytes", "max_payload_bytes", "max_blobs")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
                 max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES) -> None:
        self._buf = bytearray()
        self.max_frame_bytes = max_frame_bytes
        self.max_payload_bytes = max_payload_bytes
        self.max_blobs = BOUNDS.blobs

    def feed(self, data: bytes) -> None:
        self._buf += data

    def next_frame(self):
        buf = self._buf
        if len(buf) < HEADER_BYTES:
            return None
        if buf[0] & 0x80:
            return self._binary()
        n = int.from_bytes(buf[:HEADER_BYTES], "big")
        if n > self.max_frame_bytes:
            raise FrameTooLarge(f"incoming frame of {n} bytes exceeds the {self.max_frame_bytes}-byte limit")
        end = HEADER_BYTES + n
        if len(buf) < end:
            return None
        body = bytes(buf[HEADER_BYTES:end])
        del buf[:end]
        return body

    def _binary(self):
        buf = self._buf
        j = int.from_bytes(buf[:HEADER_BYTES], "big") & 0x7FFFFFFF
        if j > self.max_frame_bytes:  # (refused on its first word, as a plain frame's length)
            raise FrameTooLarge(f"incoming frame of {j} bytes exceeds the {self.max_frame_bytes}-byte limit")
        if len(buf) < FIXED:
            return None
        j, n, b, in_arena = parse_binary_header(bytes(buf[:FIXED]), self.max_frame_bytes,
                                                self.max_blobs, self.max_payload_bytes)
        end = FIXED + 16 * n + j + b
        if len(buf) < end:
            return None
        if len(buf) > end:  # (another frame behind it: the inline section stops at `end`)
            rest = buf[end:]
            del buf[end:]
        else:
            rest = None
        frame = split_binary(buf, FIXED, j, n, in_arena)
        buf.clear()
        if rest:
            buf += rest
        return frame

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

    #: what native code wrote to fds 1/2 since the last look (the worker's capture file), taken
    #: in before each write so the logs keep CPython's order
    native = None

    def write(self, s) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        if self.native is not None and s != "\n":  # (not before print's own end: one look a line)
            earlier = self.native()
            if earlier:
                self._add(earlier)
        return self._add(s)

    def _add(self, s: str) -> int:
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
        return cut_parts(head, tail, self.total - len(head) - len(tail), self.limit)


def truncate_text(text: str, limit: int) -> str:
    """`text` within `limit` characters, head and tail kept, the cut marked with its true count."""
    return cut_middle(text, limit)
