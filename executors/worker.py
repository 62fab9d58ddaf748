"""The worker: runs model code in its own process (a subprocess or a container). Stdlib only.

Run as `python worker.py` (or `python -m executors.worker`); it needs nothing but this file and a
Python >= 3.10. The host talks to it over fds 0 (host -> worker) and 1 (worker -> host); at start
the worker moves that channel to private descriptors and points fds 0/1/2 elsewhere (fd 0 at
/dev/null, fds 1/2 at an in-memory capture file that is read back into the logs), so nothing the
model code writes to fd 1 or 2 can forge a frame.

Wire format (shared with the host; `executors.protocol` re-exports the codec below):
  frame   = 4-byte big-endian length + UTF-8 JSON object with an "op" key; at most `max_frame_bytes`.
  values  = JSON plus tagged objects {"$t": tag, "v": ...} for tuple, set, frozenset, bytes,
            complex, datetime, date, time, timedelta, Decimal, big int, non-finite float, dicts
            with non-str keys; anything else crosses as {"$t": "repr", "v": repr, "type": name}.
  No pickle anywhere.

Messages, host -> worker: configure, execute, tool_result, tool_error, set_variables,
register_tools, reset, ping, shutdown.  Worker -> host: ok, error, pong, result, tool_call.
"""

from __future__ import annotations

# Start-up time matters: the C modules `_ast` and `_signal` avoid the imports (enum, contextlib,
# re, ...) that `ast`, `signal` and `json` would pull in.
import _ast as ast
import _signal as signal
import binascii
import math
import os
import sys
import time

TAG = "$t"
DEFAULT_MAX_FRAME_BYTES = 32 * 1024 * 1024
HEADER_BYTES = 4
_BIG_INT_BITS = 12_000  # above ~3600 digits, str(int) may hit Python's int->str digit limit
_MAX_DEPTH = 100
_MAX_NODES = 1_000_000
_REPR_CHARS = 10_000


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


def _safe_repr(value, limit: int = _REPR_CHARS) -> str:
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


def _repr_marker(value) -> dict:
    return {TAG: "repr", "v": _safe_repr(value), "type": type(value).__name__}


def _short_repr_marker(value) -> dict:
    """For containers too big or deep to walk: a bounded-effort repr (reprlib elides)."""
    import reprlib

    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother = 4, 200, 200
    try:
        text = short.repr(value)
    except Exception:
        text = f"<unrepresentable {type(value).__name__} object>"
    return {TAG: "repr", "v": text[:_REPR_CHARS], "type": type(value).__name__}


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


_dumps, _loads = _fast_json()


# ---------------------------------------------------------------------------------------------
# Framing


def pack_frame(message: dict, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> bytes:
    """Serialize one message (compact JSON, ASCII, no NaN). Raises FrameTooLarge over the limit."""
    body = _dumps(message).encode("ascii")
    if len(body) > max_frame_bytes:
        raise FrameTooLarge(f"frame of {len(body)} bytes exceeds the {max_frame_bytes}-byte limit")
    return len(body).to_bytes(HEADER_BYTES, "big") + body


def unpack_message(body: bytes) -> dict:
    """Parse one frame body into a message dict with a str "op" (raises ProtocolError)."""
    try:
        msg = _loads(body.decode("utf-8"))
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
# The worker program


class _OutputCapture:
    """A write-only text sink that keeps the head and the tail of what is written."""

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
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n...[{len(text) - 2 * half} characters truncated]...\n{text[-half:]}"


class _Deadline(BaseException):
    """Raised inside model code when the soft deadline passes (open policy)."""


class _ChannelGone(BaseException):
    pass


class FinalAnswer(BaseException):
    """Raised by final_answer(); a BaseException so `except Exception:` cannot swallow it."""

    def __init__(self, value=None) -> None:
        super().__init__(value)
        self.value = value


class ToolError(Exception):
    """A host tool failed; model code may catch it."""


def _error_dict(exc: BaseException, code_lines: list[str], filename: str = "<code>") -> dict:
    lineno = None
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        lineno = exc.lineno
        message = exc.msg
    else:
        message = _safe_repr(exc) if not _exc_str(exc) else _exc_str(exc)
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == filename:
                lineno = tb.tb_lineno
            tb = tb.tb_next
    line = code_lines[lineno - 1] if lineno and 0 < lineno <= len(code_lines) else None
    return {"type": type(exc).__name__, "message": truncate_text(message, 2000), "lineno": lineno, "line": line}


def _exc_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except BaseException:
        return ""


class Worker:
    def __init__(self, fd_in: int, fd_out: int, capture_fd: int | None) -> None:
        self.fd_in = fd_in
        self.fd_out = fd_out
        self.capture_fd = capture_fd
        self.pid = os.getpid()
        self.frames = FrameBuffer(DEFAULT_MAX_FRAME_BYTES)
        self.max_frame_bytes = DEFAULT_MAX_FRAME_BYTES
        self.policy = None
        self.limits: dict = {"timeout_s": 5.0, "max_output_chars": 20_000, "max_recursion_depth": 200}
        self.authorized_imports: list = []
        self.tool_names: list[str] = []
        self.runtime = None  # RestrictedRuntime under the restricted policy
        self.globals: dict = {}
        self.exec_id = None
        self.call_seq = 0
        self.final: list = []
        self.in_tool = False
        self.deadline_pending = False
        self.ToolError = ToolError
        self.cpu_soft_limit = 0.0
        self._error_types: dict[str, type] = {}

    # -- channel ------------------------------------------------------------------------------
    def send(self, message: dict) -> None:
        data = pack_frame(message, self.max_frame_bytes)
        view = memoryview(data)
        while view:
            n = os.write(self.fd_out, view)
            view = view[n:]

    def recv(self) -> dict:
        while True:
            body = self.frames.next_frame()
            if body is not None:
                return unpack_message(body)
            chunk = os.read(self.fd_in, 1 << 16)
            if not chunk:
                raise _ChannelGone
            self.frames.feed(chunk)

    # -- main loop ----------------------------------------------------------------------------
    def serve(self) -> None:
        handlers = {
            "configure": self.on_configure,
            "execute": self.on_execute,
            "set_variables": self.on_set_variables,
            "register_tools": self.on_register_tools,
            "reset": self.on_reset,
            "ping": self.on_ping,
        }
        while True:
            msg = self.recv()
            op = msg["op"]
            if op == "shutdown":
                return
            if op in ("tool_result", "tool_error"):
                continue  # the answer to a tool_call forged by model code: nobody waits for it
            handler = handlers.get(op)
            if handler is None:
                raise ProtocolError(f"unexpected message {op!r}")
            handler(msg)

    def reply_ok(self, msg: dict) -> None:
        self.send({"op": "ok", "id": msg.get("id")})

    def reply_error(self, msg: dict, type_: str, message: str) -> None:
        self.send({"op": "error", "id": msg.get("id"), "type": type_, "message": message})

    def on_ping(self, msg: dict) -> None:
        self.send({"op": "pong", "id": msg.get("id"), "pid": self.pid})

    def on_configure(self, msg: dict) -> None:
        self.max_frame_bytes = int(msg.get("max_frame_bytes") or DEFAULT_MAX_FRAME_BYTES)
        self.frames.max_frame_bytes = self.max_frame_bytes
        self.limits.update(msg.get("limits") or {})
        self.authorized_imports = list(msg.get("authorized_imports") or [])
        self.tool_names = list(msg.get("tools") or [])
        policy = msg.get("policy", "restricted")
        if policy not in ("open", "restricted"):
            return self.reply_error(msg, "ConfigurationError", f"unknown policy {policy!r}")
        self.policy = policy
        if policy == "restricted":
            for path in msg.get("package_paths") or []:
                if path not in sys.path:
                    sys.path.insert(0, path)
            try:
                from executors.base import ToolError as BaseToolError
                from executors.restricted import RestrictedRuntime  # noqa: F401
            except Exception as exc:
                return self.reply_error(
                    msg,
                    "ConfigurationError",
                    "the restricted policy needs the 'executors' package (and RestrictedPython) "
                    f"importable inside the worker, but importing it failed: {type(exc).__name__}: {exc}. "
                    "Install the package where the worker runs, or use policy='open' in a trusted setup.",
                )
            self.ToolError = BaseToolError
        else:
            sys.setrecursionlimit(int(self.limits.get("max_recursion_depth") or 200) + 60)
            signal.signal(signal.SIGALRM, self._on_alarm)
        self._new_state()
        self.reply_ok(msg)

    def _new_state(self) -> None:
        stubs = {name: self._tool_stub(name) for name in self.tool_names}
        if self.policy == "restricted":
            from executors.base import Limits
            from executors.restricted import RestrictedRuntime

            fields = set(Limits.__dataclass_fields__)
            limits = Limits(**{k: v for k, v in self.limits.items() if k in fields})
            self.runtime = RestrictedRuntime(tools=stubs, authorized_imports=self.authorized_imports, limits=limits)
        else:
            self.runtime = None
            self.globals = {"__name__": "__main__", "__builtins__": __builtins__, "final_answer": self._final_answer}
            self.globals.update(stubs)

    def on_reset(self, msg: dict) -> None:
        if self.policy is None:
            return self.reply_error(msg, "ProtocolError", "reset before configure")
        if self.runtime is not None:
            self.runtime.reset()
        else:
            self._new_state()
        self.reply_ok(msg)

    def on_register_tools(self, msg: dict) -> None:
        names = [n for n in msg.get("tools") or [] if isinstance(n, str)]
        new = [n for n in names if n not in self.tool_names]
        self.tool_names.extend(new)
        stubs = {n: self._tool_stub(n) for n in new}
        if self.runtime is not None:
            self.runtime.register_tools(stubs)
        else:
            self.globals.update(stubs)
        self.reply_ok(msg)

    def on_set_variables(self, msg: dict) -> None:
        values = decode_value(msg.get("values") or {})
        if type(values) is not dict:
            return self.reply_error(msg, "ProtocolError", "set_variables needs a dict")
        try:
            if self.runtime is not None:
                self.runtime.set_variables(values)
            else:
                self.globals.update(values)
        except Exception as exc:  # e.g. a name the runtime reserves
            return self.reply_error(msg, type(exc).__name__, _exc_str(exc))
        self.reply_ok(msg)

    # -- model-facing helpers -----------------------------------------------------------------
    def _final_answer(self, value=None):
        if not self.final:
            self.final.append(value)
        raise FinalAnswer(value)

    def _tool_stub(self, name: str):
        worker = self

        def tool(*args, **kwargs):
            return worker.call_tool(name, args, kwargs)

        tool.__name__ = tool.__qualname__ = name
        return tool

    def call_tool(self, name: str, args: tuple, kwargs: dict):
        if os.getpid() != self.pid:
            raise self.ToolError(f"tool {name!r} cannot be called from a forked process")
        self.call_seq += 1
        call = self.call_seq
        message = {
            "op": "tool_call", "id": self.exec_id, "call": call, "name": name,
            "args": [encode_value(a) for a in args],
            "kwargs": {str(k): encode_value(v) for k, v in kwargs.items()},
        }
        self.in_tool = True
        try:
            self.send(message)
            reply = self.recv()
        except (FrameTooLarge, _TooLarge):
            self.in_tool = False
            raise self.ToolError(f"the arguments of tool {name!r} are too large to send") from None
        except BaseException:  # channel gone or broken: model code must not be able to swallow it
            os._exit(3)
        self.in_tool = False
        if reply.get("call") != call or reply.get("op") not in ("tool_result", "tool_error"):
            os._exit(3)  # the host broke the protocol: nothing sensible is left to do
        if self.deadline_pending:
            self.deadline_pending = False
            raise _Deadline
        if reply["op"] == "tool_error":
            raise self._tool_exception(name, str(reply.get("type") or "Exception"), str(reply.get("message") or ""))
        return decode_value(reply.get("value"))

    def _tool_exception(self, name: str, type_name: str, message: str) -> BaseException:
        if self.runtime is None:
            return self.ToolError(f"tool {name!r} failed: {type_name}: {message}")
        # The restricted runtime wraps whatever a tool raises into its own ToolError with the
        # same wording; give it an exception named like the host's so the text matches in process.
        if not type_name.isidentifier() or len(type_name) > 100:
            type_name = "Exception"
        cls = self._error_types.get(type_name)
        if cls is None:
            cls = self._error_types[type_name] = type(type_name, (Exception,), {})
        return cls(message)

    def _on_alarm(self, signum, frame):
        if self.in_tool:
            self.deadline_pending = True
            return
        raise _Deadline

    # -- execute ------------------------------------------------------------------------------
    def on_execute(self, msg: dict) -> None:
        self.exec_id = msg.get("id")
        code = msg.get("code")
        if self.policy is None or type(code) is not str:
            return self.reply_error(msg, "ProtocolError", "execute before configure or without code")
        start = time.perf_counter()
        self._arm_cpu_limit()
        try:
            if self.runtime is not None:
                try:
                    result = self._run_restricted(code)
                except Exception as exc:  # a bug in the runtime, not in the model's code
                    result = {"output": None, "output_repr": None, "logs": "", "is_final_answer": False,
                              "error": {"type": "ExecutorInternalError", "message": f"{type(exc).__name__}: {exc}",
                                        "lineno": None, "line": None}}
            else:
                result = self._run_open(code)
        finally:
            if os.getpid() != self.pid:  # a fork of the model code must never talk to the host
                os._exit(0)
        result["duration_s"] = time.perf_counter() - start
        raw = self._drain_capture()
        if raw:
            limit = int(self.limits.get("max_output_chars") or 20_000)
            result["logs"] = truncate_text(result["logs"] + raw, limit)
        self.send_result(result)

    def _arm_cpu_limit(self) -> None:
        """Backstop for CPU burnt outside the wall clock (threads): SIGXCPU past this execute's
        share. RLIMIT_CPU is cumulative, so it is moved forward before every execute."""
        timeout = self.limits.get("timeout_s")
        if not timeout:
            return
        used = time.process_time()
        if self.cpu_soft_limit - used >= 2 * float(timeout) + 1:
            return  # still far enough ahead: skip the syscalls
        try:
            import resource

            soft = int(used + 4 * float(timeout)) + 2
            _old, hard = resource.getrlimit(resource.RLIMIT_CPU)
            if hard == resource.RLIM_INFINITY or soft <= hard:
                resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
                self.cpu_soft_limit = soft
        except (ImportError, OSError, ValueError):
            pass

    def send_result(self, result: dict) -> None:
        result["op"] = "result"
        result["id"] = self.exec_id
        try:
            self.send(result)
            return
        except (FrameTooLarge, ValueError):  # the value is too big (or odd) for one frame
            pass
        result["output"] = {TAG: "repr", "v": truncate_text(result.get("output_repr") or "", 10_000), "type": "too large"}
        try:
            self.send(result)
            return
        except (FrameTooLarge, ValueError):
            pass
        for key in ("logs", "output_repr"):  # a tiny max_frame_bytes: keep only a little of each
            if result.get(key):
                result[key] = truncate_text(result[key], 1000)
        result["output"] = {TAG: "repr", "v": "<too large to send>", "type": "too large"}
        self.send(result)

    def _encode_output(self, value):
        return encode_value(value)

    def _run_restricted(self, code: str) -> dict:
        r = self.runtime.execute(code)
        err = r.error
        return {
            "output": self._encode_output(r.output),
            "output_repr": r.output_repr,
            "logs": r.logs,
            "is_final_answer": bool(r.is_final_answer),
            "error": None if err is None else {"type": err.type, "message": err.message, "lineno": err.lineno, "line": err.line},
        }

    def _run_open(self, code: str) -> dict:
        limit = int(self.limits.get("max_output_chars") or 20_000)
        restart = False
        capture = _OutputCapture(limit)
        self.final = []
        self.deadline_pending = False
        lines = code.splitlines()
        output = None
        error = None
        old_out, old_err = sys.stdout, sys.stderr
        timeout = self.limits.get("timeout_s")
        sys.stdout = sys.stderr = capture
        try:
            try:
                if timeout:
                    signal.setitimer(signal.ITIMER_REAL, float(timeout))
                tree = compile(code, "<code>", "exec", ast.PyCF_ONLY_AST)
                last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
                exec(compile(tree, "<code>", "exec"), self.globals)
                if last is not None:
                    output = eval(compile(ast.Expression(last.value), "<code>", "eval"), self.globals)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except FinalAnswer:
            pass
        except _Deadline:
            error = {"type": "TimeoutError", "message": f"execution exceeded the {timeout} s time limit (Limits.timeout_s); make the code faster or do less per step.", "lineno": None, "line": None}
            threading = sys.modules.get("threading")
            if (threading is not None and threading.active_count() > 1) or _has_children():
                restart = True  # threads or processes we cannot stop would keep running
        except _ChannelGone:
            raise
        except BaseException as exc:
            if isinstance(exc, ProtocolError):
                raise
            error = _error_dict(exc, lines)
            if isinstance(exc, SystemExit) and os.getpid() != self.pid:
                os._exit(0)
        finally:
            sys.stdout, sys.stderr = old_out, old_err
        if error is not None and not restart and _has_children():
            restart = True  # e.g. a fork bomb that ended in BlockingIOError: its forks live on
        is_final = bool(self.final)
        if is_final:
            output, error = self.final[0], None
        return {
            "output": self._encode_output(output),
            "output_repr": None if output is None else _safe_repr(output, limit),
            "logs": capture.text(),
            "is_final_answer": is_final,
            "error": error,
            "restart": restart,
        }

    def _drain_capture(self) -> str:
        """Whatever was written to raw fds 1/2 (also by child processes) during the execute."""
        fd = self.capture_fd
        if fd is None:
            return ""
        try:
            size = os.fstat(fd).st_size
            if not size:
                return ""
            limit = int(self.limits.get("max_output_chars") or 20_000)
            if size <= 2 * limit:
                data = os.pread(fd, size, 0)
            else:
                data = os.pread(fd, limit, 0) + b"\n...[output truncated]...\n" + os.pread(fd, limit, size - limit)
            os.ftruncate(fd, 0)
            return data.decode("utf-8", "replace")
        except OSError:
            return ""


def _has_children() -> bool:
    """Does this process have live child processes (forks, subprocesses) right now?"""
    me = os.getpid()
    try:
        for tid in os.listdir(f"/proc/{me}/task"):
            with open(f"/proc/{me}/task/{tid}/children", "rb") as f:
                if f.read().strip():
                    return True
        return False
    except OSError:
        pass
    try:  # no /proc/.../children: scan parent pids
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat", "rb") as f:
                        if int(f.read().rsplit(b")", 1)[1].split()[1]) == me:
                            return True
                except (OSError, ValueError, IndexError):
                    continue
    except OSError:
        pass
    return False


def _protect_channel() -> tuple[int, int, int | None]:
    """Move the protocol channel off fds 0/1 and point 0/1/2 somewhere harmless."""
    fd_in = os.dup(0)  # os.dup makes non-inheritable fds: child processes do not get them
    fd_out = os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    capture = None
    try:
        capture = os.memfd_create("worker-output", 0)
    except (AttributeError, OSError):
        try:
            capture = os.open(os.devnull, os.O_WRONLY)
        except OSError:
            capture = None
    if capture is not None:
        import fcntl

        fcntl.fcntl(capture, fcntl.F_SETFL, fcntl.fcntl(capture, fcntl.F_GETFL) | os.O_APPEND)
        os.dup2(capture, 1)
        os.dup2(capture, 2)
    return fd_in, fd_out, capture


def _harden(spec: dict) -> None:
    """Process settings the host asks for (subprocess workers), applied before any frame is read:
    die with the parent (PR_SET_PDEATHSIG), and rlimits, soft = hard so model code cannot raise
    them (unless it runs as root)."""
    parent = spec.get("parent")
    if isinstance(parent, int):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
        except Exception:
            pass
        if os.getppid() != parent:  # the host died before the death signal was armed
            os._exit(1)
    rlimits = spec.get("rlimits")
    if isinstance(rlimits, dict) and rlimits:
        import resource

        for name, value in rlimits.items():
            which = getattr(resource, str(name), None)
            if not isinstance(which, int) or not isinstance(value, int):
                continue
            try:
                _soft, hard = resource.getrlimit(which)
                if hard != resource.RLIM_INFINITY and value > hard:
                    value = hard
                resource.setrlimit(which, (value, value))
            except (OSError, ValueError):
                pass


def main(argv: list[str] | None = None) -> int:
    """Serve the host on fds 0/1. argv[1], if given, is a JSON object of process settings
    (see _harden); `python worker.py` with no arguments just serves."""
    argv = sys.argv if argv is None else argv
    if len(argv) > 1:
        try:
            spec = _loads(argv[1])
        except ValueError:
            spec = None
        if not isinstance(spec, dict):
            os.write(2, b"worker: argv[1] must be a JSON object\n")
            return 2
        _harden(spec)
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # RLIMIT_FSIZE -> OSError, not death
    fd_in, fd_out, capture = _protect_channel()
    sys.stdin = None  # model code reading input() gets an error, not the channel
    worker = Worker(fd_in, fd_out, capture)

    def _in_child() -> None:  # forks made by model code lose the channel
        for fd in (fd_in, fd_out):
            try:
                os.close(fd)
            except OSError:
                pass

    os.register_at_fork(after_in_child=_in_child)
    try:
        worker.serve()
    except (_ChannelGone, BrokenPipeError):
        pass
    except ProtocolError as exc:
        try:
            os.write(2, f"worker: protocol error: {exc}\n".encode())
        except OSError:
            pass
        return 3
    return 0


if __name__ == "__main__":
    os._exit(main())
