"""Constrained decoding for weak models: make the wrong answers impossible to write.

Pure building blocks, no model calls and no agent state:

- schemas: `single_call_schema(tools)` (one `oneOf` branch per tool + final_answer),
  `code_action_schema()`, `to_call(instance)` / `code_action_text(instance)` back to what the
  agent's parser reads.
- grammar: `schema_to_gbnf(schema)`, `single_call_grammar(tools, tags)` (one Python call in the
  single-call agent's own format), `code_action_grammar(tags)` (llama.cpp GBNF).
- request: `request_fields(constrain, schema=..., grammar=...)`, the request body fields of each
  spelling ("json_schema", "json_object", "grammar", "guided_json", "guided_grammar"), and
  `Constraint`, what an agent passes to `model.complete(..., constraint=...)`.
- probe: `probe_constraint(send)`, which spelling an endpoint honours.
- fewshot: `fewshot_messages(tools, style)`, short worked examples built from the actual tools.
"""

from .fewshot import STYLES, example_arguments, example_shot, fewshot_messages, fewshot_text
from .grammar import code_action_grammar, schema_to_gbnf, single_call_grammar
from .probe import PROBE_ORDER, ProbeResult, probe_constraint, sdk_sender
from .request import (
    CONSTRAIN_SETTINGS,
    SPELLINGS,
    TOOL_CHOICE_REQUIRED,
    Constraint,
    check_constrain,
    model_spelling,
    request_fields,
    spelling_kind,
)
from .schemas import (
    SCALAR_ANSWER_SCHEMA,
    arguments_schema,
    code_action_schema,
    code_action_text,
    render_call,
    single_call_schema,
    to_call,
)

__all__ = [
    "STYLES",
    "SPELLINGS",
    "CONSTRAIN_SETTINGS",
    "Constraint",
    "check_constrain",
    "model_spelling",
    "spelling_kind",
    "PROBE_ORDER",
    "TOOL_CHOICE_REQUIRED",
    "SCALAR_ANSWER_SCHEMA",
    "ProbeResult",
    "arguments_schema",
    "code_action_grammar",
    "code_action_schema",
    "code_action_text",
    "example_arguments",
    "example_shot",
    "fewshot_messages",
    "fewshot_text",
    "probe_constraint",
    "render_call",
    "request_fields",
    "schema_to_gbnf",
    "sdk_sender",
    "single_call_grammar",
    "single_call_schema",
    "to_call",
]
