"""The worker loop: read a request, answer it, until `shutdown` or the channel closes. Stdlib only.

One runtime holds the model's namespace: `OpenRuntime` (open policy) or the in-process
`executors.restricted.RestrictedRuntime` (restricted policy; imported at `configure`, from the
package paths the host names). Both answer `execute`, `register_tools`, `set_variables`,
`get_variables` and `reset`; this loop turns their answers into frames. Every reply is built by
`reply()`; a step's result by `result_reply()`.
"""

from __future__ import annotations

import os
import sys
import time

from .codec import Crossing, TooLargeToCross
from .errors import ToolError
from .harden import Capture, CpuBackstop, cap_memory, confine, open_statm
from .open_runtime import OpenRuntime, Step, StepError
from .warm import warm_up as import_authorized
from .wire import (
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_MAX_PAYLOAD_BYTES,
    TAG,
    Arena,
    FrameBuffer,
    FrameTooLarge,
    OutputBuffer,
    ProtocolError,
    SourceRefs,
    attachments_to_wire,
    decode_value,
    encode_value,
    pack_frame,
    safe_str,
    truncate_text,
    unpack_message,
)

__all__ = ["ChannelGone", "Worker", "reply", "result_reply"]

_DEFAULT_LIMITS = {"timeout_s": 5.0, "max_output_chars": 20_000, "max_recursion_depth": 200}


class ChannelGone(BaseException):
    """The host closed the channel: the worker's work is over."""


def reply(op: str, request_id, **fields) -> dict:
    """Every message the worker sends: its op, the id of the request it answers, its fields."""
    return {"op": op, "id": request_id, **fields}


def result_reply(request_id, step, logs: str, duration_s: float, wire=None) -> dict:
    """The `result` of one step. `step` is what a runtime returned (an ExecutionResult from the
    restricted runtime, a Step from the open one: the same fields); `wire`, the output as the
    codec's tree when the runtime made it inside the step (the restricted one does), is sent as
    it is: the worker then never touches the model's value after the step.

    Fields at their default (no output, no logs, no error, ...) are left out: the host's model
    has the same defaults, and a trivial step's frame is a third of the size to write and parse.
    (`attachments` always goes: on the host a missing list default is copied, a sent one is not.)"""
    message = {"op": "result", "id": request_id, "duration_s": duration_s,
               "attachments": attachments_to_wire(getattr(step, "attachments", ()))}
    output = encode_value(step.output, raw=True) if wire is None else wire
    if output is not None:
        message["output"] = output
    if step.output_repr is not None:
        message["output_repr"] = step.output_repr
    if logs:
        message["logs"] = logs
    if step.is_final_answer:
        message["is_final_answer"] = True
    err = step.error
    if err is not None:
        message["error"] = {"type": err.type, "message": err.message, "lineno": err.lineno, "line": err.line}
    if getattr(step, "restart", False):
        message["restart"] = True
    operations = getattr(step, "operations", None)
    if operations is not None:
        message["operations"] = operations
    return message


class Worker:
    """Serves one host over two private descriptors (see `harden.protect_channel`)."""

    def __init__(self, fd_in: int, fd_out: int, capture_fd: int | None, memory=None) -> None:
        self.fd_in = fd_in
        self.memory = memory  # address space the worker may add once ready (harden.cap_memory)
        self.fd_out = fd_out
        self.capture_fd = capture_fd
        self.capture = Capture(capture_fd, self._output_limit)  # native writes to fds 1/2
        self.pid = os.getpid()
        self.frames = FrameBuffer(DEFAULT_MAX_FRAME_BYTES)
        self.max_frame_bytes = DEFAULT_MAX_FRAME_BYTES
        self.max_payload_bytes = DEFAULT_MAX_PAYLOAD_BYTES
        self.arena = None  # the host's shared-memory arena for binary payloads (configure)
        self.policy = None
        self.limits: dict = dict(_DEFAULT_LIMITS)
        self.runtime = None  # OpenRuntime or RestrictedRuntime, after configure
        self.tool_names: set[str] = set()
        self.authorized: list[str] = []
        self.exec_id = None
        self.call_seq = 0
        self.cpu = CpuBackstop()
        self.sources = SourceRefs()  # the steps' sources the host sent, by ref
        self._error_types: dict[str, type] = {}
        self._served = None  # executors.restricted.execution.served under the restricted policy

    # -- channel ------------------------------------------------------------------------------
    def send(self, message: dict) -> None:
        data = pack_frame(message, self.max_frame_bytes, self.max_payload_bytes)
        if type(data) is not bytes:
            try:
                data = data.render(self.arena)
            finally:
                if self.arena is not None:
                    self.arena.used.clear()  # (the host gives the pages back)
        n = os.write(self.fd_out, data)
        if n == len(data):  # (the pipe took it all: almost always)
            return
        view = memoryview(data)[n:]
        while view:
            n = os.write(self.fd_out, view)
            view = view[n:]

    def recv(self) -> dict:
        while True:
            body = self.frames.next_frame()
            if body is not None:
                return unpack_message(body, self.arena, self.max_payload_bytes)
            chunk = os.read(self.fd_in, 1 << 16)
            if not chunk:
                raise ChannelGone
            self.frames.feed(chunk)

    def serve(self) -> None:
        handlers = {
            "configure": self.on_configure,
            "execute": self.on_execute,
            "set_variables": self.on_set_variables,
            "get_variables": self.on_get_variables,
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
            if self.runtime is None and op not in ("configure", "ping"):
                self.send(reply("error", msg.get("id"), type="ProtocolError", message=f"{op} before configure"))
                continue
            handler(msg)

    def _error(self, msg: dict, type_: str, message: str) -> None:
        self.send(reply("error", msg.get("id"), type=type_, message=message))

    # -- control messages -----------------------------------------------------------------------
    def on_ping(self, msg: dict) -> None:
        self.send(reply("pong", msg.get("id"), pid=self.pid))

    def on_configure(self, msg: dict) -> None:
        self.max_frame_bytes = int(msg.get("max_frame_bytes") or DEFAULT_MAX_FRAME_BYTES)
        self.frames.max_frame_bytes = self.max_frame_bytes
        self.limits.update(msg.get("limits") or {})
        self._payloads(msg)
        policy = msg.get("policy", "restricted")
        if policy not in ("open", "restricted"):
            return self._error(msg, "ConfigurationError", f"unknown policy {policy!r}")
        self.policy = policy
        self.tool_names = {name for name in msg.get("tools") or [] if isinstance(name, str)}
        self.authorized = [n for n in msg.get("authorized_imports") or [] if isinstance(n, str)]
        tools = {name: self._tool_stub(name) for name in sorted(self.tool_names)}
        if policy == "open":
            self.runtime = OpenRuntime(self.limits, tools)
            if self.capture_fd is not None:
                OutputBuffer.native = staticmethod(self.capture.since)
            return self._confine_and_answer(msg)
        try:
            served = _load_restricted(msg.get("package_paths") or [])
        except Exception as exc:
            return self._error(
                msg, "ConfigurationError",
                "the restricted policy needs the 'executors' package (and RestrictedPython) "
                f"importable inside the worker, but importing it failed: {type(exc).__name__}: {exc}. "
                "Install the package where the worker runs, or use policy='open' in a trusted setup.",
            )
        try:
            grants = served.grants(msg.get("grants"))
        except ValueError as exc:
            return self._error(msg, "ConfigurationError", safe_str(exc))
        try:  # (a setting the runtime refuses is the host's mistake: say so, do not die of it)
            self.runtime = served.build(tools=tools, authorized_imports=list(msg.get("authorized_imports") or []),
                                        limits=self.limits, grants=grants, workdir=os.getcwd())
        except (ValueError, TypeError) as exc:
            return self._error(msg, "ConfigurationError", safe_str(exc))
        self._served = served
        if self.capture_fd is not None:
            served.read_native_output(self.capture.since)
        self._confine_and_answer(msg)

    def _payloads(self, msg: dict) -> None:
        """The host's payload limit and arena (codec/frames.py). The limit becomes this
        process's bounds row too (both copies of the codec: the worker's and the restricted
        runtime's), so the encoders cut where the host refuses."""
        limit = self.limits.get("max_payload_bytes")
        if type(limit) is int and limit > 0:
            self.max_payload_bytes = self.frames.max_payload_bytes = limit
            for name in ("worker.bounds.table", "executors.worker.bounds.table"):
                table = sys.modules.get(name)
                if table is not None:
                    object.__setattr__(table.BOUNDS, "payload_bytes", limit)
        arena = msg.get("arena")
        if type(arena) is list and len(arena) == 2 and all(type(x) is int and x > 2 for x in arena):
            self.arena = Arena(arena[0], arena[1])

    def _confine_and_answer(self, msg: dict) -> None:
        """With the runtime imported and built (what it needs is loaded), confine the process to
        the host's grants before any model code can run, and say what is in force. A worker that
        cannot confine itself says why and exits: it must not run code half confined."""
        access = msg.get("access")
        statm = open_statm()  # (before confinement closes /proc)
        if access is None:
            self._gate(msg, None)
            self._warm_up(statm)
            return self.send(reply("ok", msg.get("id")))
        keep = (0, 1, 2, self.fd_in, self.fd_out) + (() if self.capture_fd is None else (self.capture_fd,))
        keep += () if self.arena is None else (self.arena.fd,)
        keep += () if statm is None else (statm,)
        try:
            if type(access) is not dict:
                raise ValueError("access must be an object")
            report = confine(access, keep)
        except BaseException as exc:
            try:
                self._error(msg, "HardeningError", f"{type(exc).__name__}: {safe_str(exc)}")
            finally:
                os._exit(4)
        self._gate(msg, report)
        self._warm_up(statm)
        self.send(reply("ok", msg.get("id"), hardening=report))

    def _gate(self, msg: dict, report) -> None:
        """Native packages that hand out raw memory only where the kernel holds without the
        guard (`hardening.holds`), unless the user opted in; the open policy has no gate (the
        host refuses to start it where the kernel does not hold)."""
        if self.policy != "restricted" or msg.get("unconfined_native") is True:
            return
        from .hardening import holds

        missing = holds.missing(report)
        if missing:
            holds.gate("; ".join(missing))

    def _warm_up(self, statm) -> None:
        """Confined now (a single thread until here, as Landlock needs): the authorized packages
        import, with their helper threads, before the first step; then the memory cap, on top
        of what the worker holds."""
        warm_up = getattr(self.runtime, "warm_up", None)
        if warm_up is not None:
            warm_up()
        else:  # the open runtime: the same packages (warm.py is imported with this module:
            # once confined, the worker's own directory may be unreadable)
            import_authorized(self.authorized)
        self.capture.drain()  # what the libraries printed as they loaded is not a step's
        cap_memory(self.memory, statm)

    def on_reset(self, msg: dict) -> None:
        self.runtime.reset()
        self.send(reply("ok", msg.get("id")))

    def on_register_tools(self, msg: dict) -> None:
        # Names already known keep their stub (and a model variable that rebound one stays).
        new = [n for n in msg.get("tools") or [] if isinstance(n, str) and n not in self.tool_names]
        self.tool_names.update(new)
        self.runtime.register_tools({n: self._tool_stub(n) for n in new})
        self.send(reply("ok", msg.get("id")))

    def on_set_variables(self, msg: dict) -> None:
        values = decode_value(msg.get("values") or {}, may_import=False)
        if type(values) is not dict:
            return self._error(msg, "ProtocolError", "set_variables needs a dict")
        try:
            if self.policy == "restricted":  # (decoded from the frame: copies already, no second one)
                self.runtime.set_variables(values, fresh=True)
            else:
                self.runtime.set_variables(values)
        except Exception as exc:  # e.g. a name the runtime reserves
            return self._error(msg, type(exc).__name__, safe_str(exc))
        self.send(reply("ok", msg.get("id")))

    def on_get_variables(self, msg: dict) -> None:
        names = msg.get("names")
        if names is not None and (type(names) is not list or not all(type(n) is str for n in names)):
            return self._error(msg, "ProtocolError", "get_variables needs a list of names or null")
        getter = getattr(self.runtime, "get_variables", None)
        if getter is None:
            return self._error(msg, "NotImplementedError", "this worker's runtime cannot list its variables")
        wire = self.policy == "restricted"  # (its runtime hands the codec's trees: no second copy)
        try:
            values = getter(names, wire=True) if wire else getter(names)
        except KeyError as exc:
            text = exc.args[0] if exc.args and isinstance(exc.args[0], str) else safe_str(exc)
            return self._error(msg, "KeyError", text)
        except Exception as exc:
            return self._error(msg, type(exc).__name__, safe_str(exc))
        crossing = Crossing(raw=True)  # one budget for the message: a variable over what is left is cut
        encoded = values if wire else {name: crossing.encode(value) for name, value in values.items()}
        if TAG in encoded:  # (a model's variable named like the tag: the dict crosses tagged)
            encoded = {TAG: "dict", "v": [[name, tree] for name, tree in encoded.items()]} if wire \
                else encode_value(dict(values), raw=True)
        try:
            self.send(reply("variables", msg.get("id"), values=encoded))
        except FrameTooLarge:
            self._error(msg, "ValueError", "the variables are too large to send in one frame; ask for fewer names")

    # -- tools ----------------------------------------------------------------------------------
    def _tool_stub(self, name: str):
        worker = self

        def tool(*args, **kwargs):
            return worker.call_tool(name, args, kwargs)

        tool.__name__ = tool.__qualname__ = name
        return tool

    def call_tool(self, name: str, args: tuple, kwargs: dict):
        if os.getpid() != self.pid:
            raise ToolError(f"tool {name!r} cannot be called from a forked process")
        crossing = Crossing(raw=True)  # (one budget for all the arguments: one message)
        try:
            encoded_args = [crossing.encode(a, cut=False) for a in args]
            encoded_kwargs = {str(k): crossing.encode(v, cut=False) for k, v in kwargs.items()}
        except TooLargeToCross as exc:
            raise self._tool_exception(name, "ToolError", exc.for_tool(name)) from None
        self.call_seq += 1
        call = self.call_seq
        message = {"op": "tool_call", "id": self.exec_id, "call": call, "name": name,
                   "args": encoded_args, "kwargs": encoded_kwargs}
        clock = self.runtime if isinstance(self.runtime, OpenRuntime) else None
        if clock is not None:
            clock.in_tool = True
        try:
            self.send(message)
            answer = self.recv()
        except FrameTooLarge:
            if clock is not None:
                clock.in_tool = False
            raise ToolError(f"the arguments of tool {name!r} are too large to send") from None
        except BaseException:  # channel gone or broken: model code must not be able to swallow it
            os._exit(3)
        if answer.get("call") != call or answer.get("op") not in ("tool_result", "tool_error"):
            os._exit(3)  # the host broke the protocol: nothing sensible is left to do
        if clock is not None:
            clock.tool_call_returned()  # raises the deadline if it passed during the call
        if answer["op"] == "tool_error":
            raise self._tool_exception(name, str(answer.get("type") or "Exception"), str(answer.get("message") or ""))
        return decode_value(answer.get("value"), may_import=False)

    def _tool_exception(self, name: str, type_name: str, message: str) -> BaseException:
        if type_name == "ToolError":  # the host's tool worded its failure already: say it once
            # under the restricted policy, the class the runtime passes through: the worker runs
            # as the top-level package `worker`, the runtime imports `executors.worker.errors`
            return getattr(self._served, "ToolError", ToolError)(message)
        if self.policy == "open":
            return ToolError(f"tool {name!r} failed: {type_name}: {message}")
        # The restricted runtime wraps whatever a tool raises into its own ToolError with the
        # same wording; give it an exception named like the host's so the text matches in process.
        if not type_name.isidentifier() or len(type_name) > 100:
            type_name = "Exception"
        cls = self._error_types.get(type_name)
        if cls is None:
            cls = self._error_types[type_name] = type(type_name, (Exception,), {})
        return cls(message)

    # -- execute --------------------------------------------------------------------------------
    def on_execute(self, msg: dict) -> None:
        self.exec_id = msg.get("id")
        code, ref = msg.get("code"), msg.get("ref")
        if code is None:  # a source this worker was sent before, by its ref
            code = self.sources.code_of(ref)
            if code is None:
                return self._error(msg, "ProtocolError", f"execute of an unknown source ref {ref!r}")
        elif type(code) is not str:
            return self._error(msg, "ProtocolError", "execute without code")
        elif type(ref) is int:
            self.sources.keep(ref, code)
        if msg.get("reset") is True:  # (the host's reset(), sent with the next step)
            self.runtime.reset()
        start = time.perf_counter()
        self.cpu.arm(self.limits.get("timeout_s"))
        try:
            step = self._run(code)
        finally:
            if os.getpid() != self.pid:  # a fork of the model code must never talk to the host
                os._exit(0)
        logs = step.logs
        raw = self.capture.drain()
        if raw:
            logs = truncate_text(logs + raw, self._output_limit())
        wire = getattr(self.runtime, "last_output_wire", None)
        self.send_result(result_reply(self.exec_id, step, logs, time.perf_counter() - start, wire))

    def _run(self, code: str):
        if isinstance(self.runtime, OpenRuntime):
            return self.runtime.execute(code)
        try:
            return self.runtime.execute(code)
        except Exception as exc:  # a bug in the restricted runtime, not in the model's code
            return Step(error=StepError("ExecutorInternalError", f"{type(exc).__name__}: {exc}"))

    def _output_limit(self) -> int:
        return int(self.limits.get("max_output_chars") or 20_000)

    def send_result(self, result: dict) -> None:
        """Send a result; one too big for a frame degrades: the output becomes a repr marker,
        then logs and repr keep only their head and tail."""
        try:
            self.send(result)
            return
        except (FrameTooLarge, ValueError):  # the value is too big (or odd) for one frame
            pass
        if result.get("attachments"):  # figures first: the text matters more to the model
            names = ", ".join(str(a.get("name")) for a in result["attachments"])
            result["attachments"] = []
            result["logs"] = truncate_text(f"{result.get('logs') or ''}[{names} not returned: too large "
                                           "to send in one frame (max_frame_bytes)]\n", self._output_limit())
            try:
                self.send(result)
                return
            except (FrameTooLarge, ValueError):
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


#: The restricted policy's runtime, a plugin of this package: imported by name from the package
#: paths the host sends (this stdlib-only package never imports the floors above it).
RESTRICTED_RUNTIME = "executors.restricted.execution.served"


def _load_restricted(package_paths: list):
    """The module that builds the restricted runtime (`build(...)`, `ToolError`)."""
    import importlib

    for path in package_paths:
        if isinstance(path, str) and path not in sys.path:
            sys.path.insert(0, path)
    served = importlib.import_module(RESTRICTED_RUNTIME)
    runtime_codec = sys.modules.get("executors.worker.codec")
    if runtime_codec is not None:  # the runtime's copy of the codec: its Repr is ours too
        from . import codec

        codec.REPR_TYPES.add(runtime_codec.Repr)
    return served
