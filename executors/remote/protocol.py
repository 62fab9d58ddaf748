"""Host <-> worker protocol: framing, the tagged-JSON value codec, and the message models.

The codec and framing are stdlib-only and live in `executors.worker.wire` (the worker must run
from a bare directory with nothing but the standard library); they are re-exported here so the
host has one place to import from.
The message models are pydantic and used only on the host, which validates every frame it reads
and treats the worker as hostile. JSON only: no pickle in either direction.

Frame: 4-byte big-endian length, then a UTF-8 JSON object with an "op" key (see `MAX_FRAME_BYTES`);
a message with binary payloads is a binary frame, its blobs beside the JSON (worker/codec/frames.py).

  host -> worker                                    worker -> host
  configure {id, policy, tools, authorized_imports,  ok {id, hardening?} | error {id, type, message}
             limits, max_frame_bytes, package_paths,    (error type HardeningError: the worker
             access?}                                    could not confine itself and exits)
  execute {id, code?, ref?}                          tool_call* {id, call, name, args, kwargs}
    tool_result {call, value} | tool_error {call,    ... then result {id, output, output_repr,
      type, message} answers each tool_call              logs, is_final_answer, error, duration_s,
                                                         restart}
  set_variables {id, values}                         ok | error
  get_variables {id, names (list or null)}           variables {id, values} | error (KeyError: names)
  register_tools {id, tools}                         ok
  reset {id}                                         ok
  ping {id}                                          pong {id, pid}
  shutdown                                           (exits)
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ..base import Attachment
from ..worker.bounds import BOUNDS, Bounds
from ..worker.bounds.png import BadImage, check_png
from ..worker.bounds.scan import FrameBounds, check_body
from ..worker.wire import (
    DEFAULT_MAX_FRAME_BYTES,
    HEADER_BYTES,
    PNG,
    TAG,
    FrameBuffer,
    FrameTooLarge,
    ProtocolError,
    Repr,
    decode_value,
    decode_values,
    encode_value,
    pack_frame,
    unpack_message,
)

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "HEADER_BYTES",
    "MAX_FRAME_BYTES",
    "TAG",
    "FrameBuffer",
    "FrameTooLarge",
    "ProtocolError",
    "Repr",
    "decode_value",
    "decode_values",
    "encode_value",
    "pack_frame",
    "unpack_message",
    "parse_worker_message",
    "Configure", "Execute", "ToolResult", "ToolErrorReply", "SetVariables", "GetVariables",
    "RegisterTools", "Reset", "Ping", "Shutdown", "Ok", "ErrorReply", "Pong", "Result", "Variables",
    "ToolCall", "ErrorInfo", "AttachmentInfo", "checked_attachments", "checked_variables",
]

MAX_FRAME_BYTES = DEFAULT_MAX_FRAME_BYTES

# Values are tagged JSON (see encode_value); pydantic sees them as opaque JSON.
Value = Any


class _Msg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def frame(self, max_frame_bytes: int = MAX_FRAME_BYTES,
              max_payload_bytes: int = BOUNDS.payload_bytes):
        """bytes, or an `Outgoing` binary frame (arrays, bytes): `WorkerLink.send` lays it out."""
        # Host -> worker messages are flat (no nested models), so the field dict is the message.
        message = dict(self.__dict__)
        if any(isinstance(v, BaseModel) for v in message.values()):
            message = self.model_dump()
        return pack_frame(message, max_frame_bytes, max_payload_bytes)


# -- host -> worker -------------------------------------------------------------------------------


class Configure(_Msg):
    op: Literal["configure"] = "configure"
    id: int
    policy: Literal["open", "restricted"]
    tools: list[str] = []
    authorized_imports: list[str] = []
    limits: dict[str, Any] = {}
    max_frame_bytes: int = MAX_FRAME_BYTES
    package_paths: list[str] = []
    # The grants the worker confines itself to before any model code runs (None: it does not):
    # {read: [abs paths], write: [abs paths, the workdir first], network: bool, user: [uid, gid]}
    access: dict[str, Any] | None = None
    # What the capability guard (the audit hook of the restricted runtime) lets libraries touch:
    # {read: [abs paths], write: [abs paths, the workdir first], network: bool}; None: nothing.
    grants: dict[str, Any] | None = None
    # The user let native packages that hand out raw memory load where the kernel does not hold
    # without the guard (`worker.hardening.holds`): SubprocessExecutor(unconfined_native=True).
    unconfined_native: bool = False
    # The shared-memory arena for binary payloads (codec/frames.py): [fd in the worker, size];
    # None: payloads cross inline in the frames (a container, a worker without memfd).
    arena: list[int] | None = None


class Execute(_Msg):
    """A step. `ref` names the source for the worker (`SourceRefs`): a source it has been sent
    before comes as its ref alone, `code` omitted. The host's reset() rides on the next step's
    frame as `"reset": true` (the worker forgets the variables first; framed on the hot path,
    not from this model)."""

    op: Literal["execute"] = "execute"
    id: int
    code: str | None = None
    ref: int | None = None


class ToolResult(_Msg):
    op: Literal["tool_result"] = "tool_result"
    call: int
    value: Value = None


class ToolErrorReply(_Msg):
    op: Literal["tool_error"] = "tool_error"
    call: int
    type: str
    message: str


class SetVariables(_Msg):
    op: Literal["set_variables"] = "set_variables"
    id: int
    values: Value  # an encoded dict


class GetVariables(_Msg):
    op: Literal["get_variables"] = "get_variables"
    id: int
    names: list[str] | None = None  # None: all of the model's variables


class RegisterTools(_Msg):
    op: Literal["register_tools"] = "register_tools"
    id: int
    tools: list[str]


class Reset(_Msg):
    op: Literal["reset"] = "reset"
    id: int


class Ping(_Msg):
    op: Literal["ping"] = "ping"
    id: int


class Shutdown(_Msg):
    op: Literal["shutdown"] = "shutdown"


# -- worker -> host (validated strictly: the worker is hostile) ----------------------------------


class _Strict(_Msg):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ErrorInfo(_Strict):
    type: Annotated[str, Field(max_length=200)]
    message: str
    lineno: Annotated[int, Field(ge=0, le=2**31)] | None = None
    line: str | None = None


class AttachmentInfo(_Strict):
    """A figure or image of a step (`executors.Attachment`); the host checks the bytes."""

    media_type: Annotated[str, Field(max_length=100)]
    name: Annotated[str, Field(max_length=200)] = ""
    width: int | None = None
    height: int | None = None
    data: Value  # tagged bytes


class Ok(_Strict):
    op: Literal["ok"]
    id: int
    # configure only: what the worker put in force (`hardening.HardeningReport.to_dict()`), sent
    # before any model code has run in it, so it is the worker's own word, not the model's.
    hardening: dict[str, Any] | None = None


class ErrorReply(_Strict):
    op: Literal["error"]
    id: int
    type: Annotated[str, Field(max_length=200)]
    message: str


class Pong(_Strict):
    op: Literal["pong"]
    id: int
    pid: Annotated[int, Field(ge=0, le=2**31)]


class Result(_Strict):
    op: Literal["result"]
    id: int
    output: Value = None
    output_repr: str | None = None
    logs: str = ""
    is_final_answer: bool = False
    error: ErrorInfo | None = None
    duration_s: float = 0.0
    restart: bool = False  # the worker asks to be replaced (e.g. threads it could not stop)
    attachments: Annotated[list[AttachmentInfo], Field(max_length=100)] = []
    operations: Annotated[int, Field(ge=0, le=2**63 - 1)] | None = None  # the restricted policy's budget used


class Variables(_Strict):
    op: Literal["variables"]
    id: int
    values: Value  # an encoded dict {name: value}


class ToolCall(_Strict):
    op: Literal["tool_call"]
    id: int
    call: int
    name: Annotated[str, Field(max_length=200)]
    args: list[Value] = []
    kwargs: dict[str, Value] = {}


WorkerMessage = Annotated[Ok | ErrorReply | Pong | Result | Variables | ToolCall, Field(discriminator="op")]
_worker_message = TypeAdapter(WorkerMessage)


def parse_worker_message(body, bounds: Bounds = BOUNDS, arena=None,
                         max_payload_bytes: int | None = None) -> Ok | ErrorReply | Pong | Result | Variables | ToolCall:
    """Validate one frame body (bytes, or a binary frame) from a worker. Raises ProtocolError for
    anything off-contract, and for a frame over `bounds` before the JSON parser builds anything
    from it; a binary frame's blobs are checked against `max_payload_bytes` before they are
    read (from `arena` when they are there)."""
    try:
        check_body(body if type(body) is bytes else body.json, bounds)
    except FrameBounds as exc:
        raise ProtocolError(f"frame over the bounds: {exc}") from None
    limit = bounds.payload_bytes if max_payload_bytes is None else max_payload_bytes
    msg = unpack_message(body, arena, limit)
    try:
        return _worker_message.validate_python(msg)
    except ValueError as exc:  # pydantic.ValidationError is a ValueError
        raise ProtocolError(f"invalid {msg.get('op')!r} message from the worker: {str(exc)[:300]}") from None


def checked_attachments(msg: Result, max_bytes: int, bounds: Bounds = BOUNDS) -> tuple[Attachment, ...]:
    """A result's pictures, checked as the hostile bytes they are before anything decodes them:
    at most `bounds.pictures` and `max_bytes` in all (`Limits.max_attachment_bytes`; their base64
    text is measured before it is decoded), each a whole, well-formed PNG of at most
    `bounds.picture_pixels` (`check_png`: every chunk's length and CRC, its size from its own
    header, not the worker's word). The worker's collector sends nothing else, so anything else
    is a lie: ProtocolError."""
    if len(msg.attachments) > bounds.pictures:
        raise ProtocolError(f"{len(msg.attachments)} pictures in one result, over the {bounds.pictures} a step may return")
    left = max_bytes
    out: list[Attachment] = []
    for info in msg.attachments:
        data = info.data
        raw = data.get("v") if type(data) is dict and data.get(TAG) == "bytes" else None
        if type(raw) is str:
            size = len(raw) // 4 * 3 - 2  # (base64: 4 characters a 3 bytes)
        elif raw is not None and type(raw) is not dict and type(raw) is not list and hasattr(raw, "nbytes"):
            size = raw.nbytes  # a blob of the binary frame (a view, or memory copied out of the arena)
        elif type(raw) in (bytes, bytearray):
            size = len(raw)
        else:
            size = None
        if size is None or info.media_type != PNG:
            raise ProtocolError("an attachment must be PNG bytes")
        if size > left:
            raise ProtocolError(f"pictures of over {max_bytes:,} bytes in one result (Limits.max_attachment_bytes)")
        data = decode_value(data)
        try:
            width, height = check_png(data, bounds.picture_pixels)
        except BadImage as exc:
            raise ProtocolError(f"attachment {info.name[:100]!r} is not a PNG the host takes: {exc}") from None
        left -= len(data)
        out.append(Attachment(PNG, data, info.name, width, height))
    return tuple(out)


def checked_variables(msg: Variables) -> dict[str, Any]:
    """A get_variables answer as a dict of str names (ProtocolError when it is not a mapping)."""
    values = decode_value(msg.values, parsed=True)
    if not isinstance(values, dict):
        raise ProtocolError(f"a {type(values).__name__}, not a dict")
    return {k: v for k, v in values.items() if isinstance(k, str)}
