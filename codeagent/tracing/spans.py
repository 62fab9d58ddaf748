"""The spans of one agent run, opened by the run's Recorder and the agents' execute moves:

    invoke_agent {agent}        INTERNAL  the run: mode, max steps, status, usage, final answer
      step {n}                  INTERNAL  one step: action format, error kind
        chat {model}            CLIENT    one model request: request settings, usage, finish
                                          reasons; retries and empty replies as events
        execute_code            INTERNAL  one execution: executor, policy, isolation, duration,
                                          error type, operations, attachments
          execute_tool {tool}   INTERNAL  each tool the code calls (codeagent.tracing.tools)
        execute_tool {tool}     INTERNAL  ToolCallingAgent: its calls, under their step

The run is a generator, so no span stays "current" across a yield (the consumer's code between two
events must not run inside the run's spans): each span is started with its parent given
explicitly, and made current only around a synchronous call (the model request, so HTTP client
instrumentation nests under `chat`; the execution, so the tool spans of its tool calls nest under
`execute_code`, on whichever thread the executor answers its tool channel). With no tracer
provider, a run gets `NO_TRACE`, whose hooks do nothing.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from .content import Settings, input_messages, output_message, run_settings, settings
from .metrics import record_chat
from .otel import otel_trace, set_error, tracer

__all__ = ["NO_TRACE", "RunTrace", "start_run", "provider_name"]

# The request settings the conventions name; nothing else of a request is read (no headers, keys).
REQUEST_OPTIONS = {"temperature": "temperature", "max_tokens": "max_tokens", "max_completion_tokens": "max_tokens",
                   "top_p": "top_p", "top_k": "top_k", "seed": "seed", "frequency_penalty": "frequency_penalty",
                   "presence_penalty": "presence_penalty"}


METRIC_ATTRIBUTES = ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.system", "gen_ai.request.model",
                     "server.address", "server.port")


class _Null:
    """A span hook that does nothing (tracing off)."""

    def __enter__(self) -> _Null:
        return self

    def __exit__(self, *exc: object) -> bool:
        return False

    def reply(self, reply: Any, has_content: bool) -> None:
        pass

    def result(self, result: Any) -> None:
        pass

    def aside(self) -> _Null:
        return self


_NULL = _Null()


class NullTrace:
    """The hooks of a run that is not traced."""

    def step(self, number: int) -> None:
        return None

    def end_step(self, span: Any, record: Any) -> None:
        pass

    def chat(self, step_span: Any, messages: Any, attempt: int) -> _Null:
        return _NULL

    def execution(self, step_span: Any, executor: Any, code: str) -> _Null:
        return _NULL

    def current(self, span: Any) -> _Null:
        return _NULL

    def end(self, rec: Any) -> None:
        pass

    def close(self, error: BaseException | None = None) -> None:
        pass


NO_TRACE = NullTrace()


def provider_name(model: Any) -> str:
    """`gen_ai.provider.name` of a model: its `provider_name`, else `_OTHER` (the conventions')."""
    name = getattr(model, "provider_name", None)
    return name if isinstance(name, str) and name else "_OTHER"


def start_run(**fields: Any) -> NullTrace | RunTrace:
    """The trace of a run that starts now (its parent: the caller's current span, if any)."""
    found = tracer()
    return NO_TRACE if found is None else RunTrace(found, settings(), **fields)


class RunTrace:
    """The spans of one traced run; see the module docstring."""

    def __init__(self, tracer_: Any, s: Settings, *, agent: str, model: Any, mode: str, action_format: Any,
                 max_steps: int, executor: str, run_id: str, task: str) -> None:
        api = self.api = otel_trace()
        self.tracer, self.s, self.model, self.format = tracer_, s, model, action_format
        self.model_id = str(getattr(model, "model_id", type(model).__name__))
        self.provider_key = "gen_ai.provider.name" if s.latest else "gen_ai.system"
        self.provider = provider_name(model)
        format_name = type(action_format).__name__ if action_format is not None else None
        attributes = {
            "gen_ai.operation.name": "invoke_agent", self.provider_key: self.provider, "gen_ai.agent.name": agent,
            "gen_ai.request.model": self.model_id, "gen_ai.conversation.id": run_id, "codeagent.run_id": run_id,
            "codeagent.mode": mode,
            "codeagent.action_format": format_name or "tool_calls", "codeagent.max_steps": max_steps,
            "codeagent.executor": executor,
        }
        self.format_name = attributes["codeagent.action_format"]
        self.span = tracer_.start_span(f"invoke_agent {agent}", kind=api.SpanKind.INTERNAL, attributes=attributes)
        self.context = api.set_span_in_context(self.span)
        self.steps: dict[int, Any] = {}
        self.ended = False
        self._isolation: dict[int, tuple[str | None, str | None]] = {}
        if s.capture:
            self.span.set_attribute("codeagent.task", s.cut(task))
            self._content(self.span, "gen_ai.input.messages", [{"role": "user", "parts": [
                {"type": "text", "content": s.cut(task)}]}], "gen_ai.user.message", {"content": s.cut(task)})

    # -- steps ---------------------------------------------------------------------------------

    def step(self, number: int) -> Any:
        span = self.tracer.start_span(f"step {number}", context=self.context, kind=self.api.SpanKind.INTERNAL,
                                      attributes={"codeagent.step": number, "codeagent.action_format": self.format_name})
        self.steps[number] = span
        return span

    def end_step(self, span: Any, record: Any) -> None:
        if span is None:
            return
        self.steps.pop(record.step, None)
        usage = record.usage
        span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
        if record.is_final_answer:
            span.set_attribute("codeagent.final_answer", True)
        if record.error_kind:
            span.set_attribute("codeagent.error_kind", record.error_kind)
            set_error(span, record.error_kind, self.s.describe(record.error_kind, record.error))
        if self.s.capture and record.code is not None:
            span.set_attribute("codeagent.code", self.s.cut(record.code))
        span.end()

    def chat(self, step_span: Any, messages: Any, attempt: int) -> _Chat:
        return _Chat(self, step_span, messages, attempt)

    def execution(self, step_span: Any, executor: Any, code: str) -> _Execution:
        return _Execution(self, step_span, executor, code)

    def current(self, span: Any) -> _Current:
        """Make `span` current around a synchronous block (ToolCallingAgent's tool calls)."""
        return _Current(self.api, span, self.s)

    # -- the end -------------------------------------------------------------------------------

    def end(self, rec: Any) -> None:
        span, s = self.span, self.s
        span.set_attribute("codeagent.status", rec.status)
        span.set_attribute("codeagent.steps", len(rec.steps))
        span.set_attribute("gen_ai.usage.input_tokens", rec.usage.prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", rec.usage.completion_tokens)
        if rec.status != "success":
            kinds = [step.error_kind for step in rec.steps if step.error_kind]
            kind = "max_steps" if rec.status == "max_steps" else (kinds[-1] if kinds else "failed")
            set_error(span, kind, s.describe(kind, rec.error))
        elif s.capture and rec.output_repr is not None:
            answer = s.cut(rec.output_repr)
            span.set_attribute("codeagent.final_answer", answer)
            self._content(span, "gen_ai.output.messages", [{"role": "assistant", "parts": [
                {"type": "text", "content": answer}], "finish_reason": "stop"}],
                "gen_ai.choice", {"index": 0, "finish_reason": "stop", "message": answer})
        self._end()

    def close(self, error: BaseException | None = None) -> None:
        """End what is still open: the run stopped early (its stream was dropped) or raised."""
        if self.ended:
            return
        kind = "cancelled" if error is None or isinstance(error, GeneratorExit) else type(error).__name__
        for span in list(self.steps.values()):
            set_error(span, kind)
            span.end()
        self.steps.clear()
        set_error(self.span, kind)
        self._end()

    def _end(self) -> None:
        self.ended = True
        self.span.end()

    # -- helpers -------------------------------------------------------------------------------

    def _content(self, span: Any, attribute: str, value: Any, event: str, fields: dict[str, Any]) -> None:
        """Captured content in the shape in force: a JSON attribute (latest) or a span event."""
        if self.s.latest:
            span.set_attribute(attribute, _json(value))
        else:
            span.add_event(event, {self.provider_key: self.provider, **{k: v if isinstance(v, (str, int)) else _json(v)
                                                                          for k, v in fields.items()}})

    def isolation(self, executor: Any) -> tuple[str | None, str | None]:
        """(policy, isolation summary) of an executor, computed once per run."""
        key = id(executor)
        if key not in self._isolation:
            policy = getattr(executor, "policy", None)
            if policy is None and type(executor).__name__ == "LocalExecutor":
                policy = "restricted"
            try:
                iso = executor.isolation
                # each layer's enforcer, without its details: "files: Landlock; network: ..."
                summary = f"{iso.place}: " + "; ".join(f"{k}: {str(v).split(':')[0][:80]}"
                                                       for k, v in iso.layers.items())
            except Exception:  # an executor without an isolation report
                summary = None
            self._isolation[key] = (policy if isinstance(policy, str) else None,
                                    summary[:500] if summary else None)
        return self._isolation[key]


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, default=str)


class _Current:
    def __init__(self, api: Any, span: Any, s: Settings) -> None:
        self.api, self.span, self.s = api, span, s

    def __enter__(self) -> _Current:
        from opentelemetry import context

        self._token = context.attach(self.api.set_span_in_context(self.span)) if self.span is not None else None
        self._settings = run_settings.set(self.s)
        return self

    def __exit__(self, *exc: object) -> bool:
        run_settings.reset(self._settings)
        if self._token is not None:
            from opentelemetry import context

            context.detach(self._token)
        return False


class _Chat:
    """One model request's span (`with trace.chat(...) as chat: reply = send(...); chat.reply(...)`)."""

    def __init__(self, trace: RunTrace, step_span: Any, messages: Any, attempt: int) -> None:
        self.trace, self.step_span, self.messages, self.attempt = trace, step_span, messages, attempt

    def __enter__(self) -> _Chat:
        trace, api = self.trace, self.trace.api
        model = trace.model
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", trace.provider_key: trace.provider,
                                      "gen_ai.request.model": trace.model_id, "codeagent.attempt": self.attempt}
        attributes.update(_server(model, trace.provider))
        for option, value in (getattr(model, "request_options", None) or {}).items():
            name = REQUEST_OPTIONS.get(option)
            if name and isinstance(value, (int, float)) and not isinstance(value, bool):
                attributes[f"gen_ai.request.{name}"] = value
        constrain = getattr(model, "constrain", None)
        if isinstance(constrain, str):
            attributes["codeagent.constrain"] = constrain
        kind = getattr(trace.format, "constraint_kind", None)
        if isinstance(kind, str):
            attributes["codeagent.constraint"] = kind
        span_kind = api.SpanKind.INTERNAL if getattr(model, "scripted", False) else api.SpanKind.CLIENT
        parent = api.set_span_in_context(self.step_span) if self.step_span is not None else trace.context
        self.span = trace.tracer.start_span(f"chat {trace.model_id}", context=parent, kind=span_kind,
                                            attributes=attributes)
        self.metric_attributes = {k: v for k, v in attributes.items() if k in METRIC_ATTRIBUTES}
        self.usage, self.started = None, time.perf_counter()
        if trace.s.capture:
            self._input()
        self.seen = len(getattr(model, "adaptations", None) or ())
        from opentelemetry import context

        self.token = context.attach(api.set_span_in_context(self.span))
        return self

    def _input(self) -> None:
        trace, s = self.trace, self.trace.s
        system, messages = input_messages(self.messages, s)
        if s.latest:
            if system:
                self.span.set_attribute("gen_ai.system_instructions", _json(system))
            self.span.set_attribute("gen_ai.input.messages", _json(messages))
            return
        for part in system:
            self.span.add_event("gen_ai.system.message", {trace.provider_key: trace.provider, "content": part["content"]})
        for m in messages:
            text = "\n".join(str(p.get("content", p.get("result", ""))) for p in m["parts"])
            self.span.add_event(f"gen_ai.{m['role']}.message", {trace.provider_key: trace.provider, "content": text})

    def reply(self, reply: Any, has_content: bool) -> None:
        span, s = self.span, self.trace.s
        self.usage = reply.usage
        span.set_attribute("gen_ai.usage.input_tokens", reply.usage.prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", reply.usage.completion_tokens)
        span.set_attribute("gen_ai.response.finish_reasons", [reply.finish_reason or "stop"])
        if not has_content:
            span.add_event("codeagent.empty_reply", {"codeagent.attempt": self.attempt})
        if s.capture:
            message = output_message(reply, s)
            if s.latest:
                span.set_attribute("gen_ai.output.messages", _json([message]))
            else:
                span.add_event("gen_ai.choice", {self.trace.provider_key: self.trace.provider, "index": 0,
                                                 "finish_reason": message["finish_reason"], "message": _json(message)})

    @contextlib.contextmanager
    def aside(self) -> Iterator[None]:
        """The span not current for a while: a streamed reply's delta goes out to the caller, whose
        own spans meanwhile are not the request's children."""
        from opentelemetry import context

        context.detach(self.token)
        try:
            yield
        finally:
            self.token = context.attach(self.trace.api.set_span_in_context(self.span))

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        from opentelemetry import context

        context.detach(self.token)
        notes = list(getattr(self.trace.model, "adaptations", None) or ())
        for note in notes[self.seen:]:  # the model retried after the endpoint rejected an option
            self.span.add_event("codeagent.retry", {"codeagent.reason": str(note)[:500]})
        kind = None
        if exc is not None:
            status = getattr(exc, "status", None)
            kind = str(status) if isinstance(status, int) else type(exc).__name__
            set_error(self.span, kind, self.trace.s.describe(kind, str(exc)))
        self.span.end()
        record_chat(self.metric_attributes, time.perf_counter() - self.started, self.usage, kind)
        return False


def _server(model: Any, provider: str) -> dict[str, Any]:
    """server.address / server.port of a model endpoint: host and port only (never credentials)."""
    base_url = getattr(model, "base_url", None)
    if not isinstance(base_url, str) or not base_url:
        return {"server.address": "api.openai.com", "server.port": 443} if provider == "openai" else {}
    try:
        parts = urlsplit(base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return {}
    return {"server.address": parts.hostname, "server.port": port} if parts.hostname else {}


class _Execution:
    """One `execute()`'s span (`with trace.execution(...) as ex: r = executor.execute(code); ex.result(r)`)."""

    def __init__(self, trace: RunTrace, step_span: Any, executor: Any, code: str) -> None:
        self.trace, self.step_span, self.executor, self.code = trace, step_span, executor, code

    def __enter__(self) -> _Execution:
        trace, api = self.trace, self.trace.api
        policy, isolation = trace.isolation(self.executor)
        attributes: dict[str, Any] = {"codeagent.executor": type(self.executor).__name__}
        if policy:
            attributes["codeagent.policy"] = policy
        if isolation:
            attributes["codeagent.isolation"] = isolation
        if trace.s.capture:
            attributes["codeagent.code"] = trace.s.cut(self.code)
        parent = api.set_span_in_context(self.step_span) if self.step_span is not None else trace.context
        self.span = trace.tracer.start_span("execute_code", context=parent, kind=api.SpanKind.INTERNAL,
                                            attributes=attributes)
        from opentelemetry import context

        self.token = context.attach(api.set_span_in_context(self.span))
        self.settings_token = run_settings.set(trace.s)
        return self

    def result(self, result: Any) -> None:
        span, s = self.span, self.trace.s
        span.set_attribute("codeagent.execution.duration_s", float(result.duration_s))
        span.set_attribute("codeagent.final_answer", bool(result.is_final_answer))
        span.set_attribute("codeagent.attachments", len(result.attachments))
        operations = getattr(result, "operations", None)
        if isinstance(operations, int):
            span.set_attribute("codeagent.execution.operations", operations)
        if result.state_lost:
            span.set_attribute("codeagent.state_lost", True)
        if s.capture:
            if result.logs:
                span.set_attribute("codeagent.logs", s.cut(result.logs))
            if result.output_repr is not None:
                span.set_attribute("codeagent.output", s.cut(result.output_repr))
        if result.error is not None and not result.is_final_answer:
            set_error(span, result.error.type, s.describe(result.error.type, str(result.error)))

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        from opentelemetry import context

        run_settings.reset(self.settings_token)
        context.detach(self.token)
        if exc is not None:
            set_error(self.span, type(exc).__name__, self.trace.s.describe(type(exc).__name__, str(exc)))
        self.span.end()
        return False
