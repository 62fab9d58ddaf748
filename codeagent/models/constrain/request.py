"""How each server spells "decode only what fits this schema / grammar" in a chat request.

`request_fields(constrain, schema=..., grammar=...)` returns the extra request fields, as a dict to
merge into the chat-completions body. `OpenAIModel._request` already sends keys the `openai` SDK
knows (`response_format`, `tool_choice`) as arguments and every other key through `extra_body`,
which lands at the top level of the JSON body, where these servers read them.

| spelling        | fields                                                                 | honoured by |
|-----------------|------------------------------------------------------------------------|-------------|
| json_schema     | response_format={"type": "json_schema", "json_schema": {name, schema, strict}} | OpenAI, vLLM, Ollama, LM Studio, llama.cpp's llama-server |
| json_object     | response_format={"type": "json_object", "schema": schema}               | llama-cpp-python's server (converts the schema to a grammar) |
| grammar         | grammar=<GBNF text>                                                     | llama-cpp-python's server, llama.cpp's llama-server |
| guided_json     | guided_json=schema                                                      | vLLM (before `structured_outputs`) |
| guided_grammar  | guided_grammar=<grammar text>                                           | vLLM (its grammar backends take GBNF-style EBNF) |

Measured on llama-cpp-python's server 0.3.36 (benchmarks/constrained_probe.py): `json_schema` is
answered with HTTP 500 ("Input should be 'text' or 'json_object'", its request model's literal);
`json_object` + schema and `grammar` are honoured; `guided_json` / `guided_grammar` are silently
ignored (unknown fields), which is why the probe checks the reply, not only the status.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SPELLINGS", "SCHEMA_SPELLINGS", "GRAMMAR_SPELLINGS", "TOOL_CHOICE_REQUIRED", "CONSTRAIN_SETTINGS",
           "Constraint", "request_fields", "spelling_kind", "check_constrain", "model_spelling"]

SCHEMA_SPELLINGS = ("json_schema", "json_object", "guided_json")
GRAMMAR_SPELLINGS = ("grammar", "guided_grammar")
SPELLINGS: tuple[str, ...] = (*SCHEMA_SPELLINGS, *GRAMMAR_SPELLINGS)
# For ToolCallingAgent: the model must answer with a tool call (OpenAI, vLLM, llama-server).
TOOL_CHOICE_REQUIRED: Mapping[str, Any] = {"tool_choice": "required"}
# What OpenAIModel(constrain=...) takes: None (no constraint), a spelling, or "auto" (probe it).
CONSTRAIN_SETTINGS: tuple[str | None, ...] = (None, "auto", *SPELLINGS)


def check_constrain(value: Any) -> str | None:
    """`value` if it is a valid `constrain=` setting, else a ValueError that lists the valid ones."""
    if value is not None and (not isinstance(value, str) or value not in CONSTRAIN_SETTINGS):
        raise ValueError(f"constrain must be None, 'auto' or one of {', '.join(map(repr, SPELLINGS))}; "
                         f"got {value!r}")
    return value


def spelling_kind(spelling: str | None) -> str | None:
    """"schema" for the spellings that carry a JSON schema, "grammar" for GBNF ones, None for None."""
    if spelling is None:
        return None
    return "schema" if spelling in SCHEMA_SPELLINGS else "grammar"


def model_spelling(model: Any) -> str | None:
    """The constraint spelling `model` uses now (None: it sends no constraint, or cannot).

    Any model with a `constraint_spelling()` method takes part (OpenAIModel, ScriptedModel); for an
    OpenAIModel with constrain="auto" the first call runs the probe.
    """
    get = getattr(model, "constraint_spelling", None)
    return get() if callable(get) else None


@dataclass(frozen=True)
class Constraint:
    """What one request asks the server to decode, in a form every spelling can be made from.

    schema: a JSON schema (sent as is by the schema spellings, converted to GBNF by the grammar
        ones when there is no `grammar`).
    grammar: a GBNF grammar (only the grammar spellings can carry it). A constraint with a grammar
        and no schema is sent unconstrained by a schema spelling: the agent picks the format to
        suit the spelling (`spelling_kind`), so that happens only after a fallback mid-run.
    name: OpenAI's json_schema name.
    tool_choice: "required" for native tool calls (ToolCallingAgent), independent of the spelling.
    """

    schema: Mapping[str, Any] | None = None
    grammar: str | None = None
    name: str = "action"
    tool_choice: str | None = None

    def expressible(self, spelling: str | None) -> bool:
        """True if `spelling` can carry this constraint's schema or grammar."""
        if spelling is None:
            return False
        if spelling in SCHEMA_SPELLINGS:
            return self.schema is not None
        return self.grammar is not None or self.schema is not None

    def fields(self, spelling: str | None) -> dict[str, Any]:
        """The request fields in `spelling` ({} when it cannot carry this constraint)."""
        if not self.expressible(spelling):
            return {}
        return request_fields(spelling, schema=self.schema, grammar=self.grammar, name=self.name)


def request_fields(
    constrain: str | None,
    *,
    schema: Mapping[str, Any] | None = None,
    grammar: str | None = None,
    name: str = "action",
    strict: bool = False,
) -> dict[str, Any]:
    """The request fields that carry the constraint in `constrain`'s spelling ({} for None).

    schema: the JSON schema (for the schema spellings; for the grammar spellings it is converted
        with `schema_to_gbnf` when no `grammar` is given).
    grammar: a GBNF grammar (the grammar spellings only).
    name / strict: OpenAI's `json_schema` name, and whether the server must follow the schema to
        the letter (OpenAI's strict mode takes a subset of JSON schema: no `oneOf`, every property
        required; leave it False for the single-call schema).
    """
    if constrain is None:
        return {}
    if constrain not in SPELLINGS:
        raise ValueError(f"unknown constraint spelling {constrain!r}; use one of {', '.join(SPELLINGS)} or None")
    if constrain in SCHEMA_SPELLINGS:
        if schema is None:
            raise ValueError(f"constrain={constrain!r} needs a JSON schema")
        schema = dict(schema)
        if constrain == "json_schema":
            return {"response_format": {"type": "json_schema",
                                        "json_schema": {"name": name, "schema": schema, "strict": strict}}}
        if constrain == "json_object":
            return {"response_format": {"type": "json_object", "schema": schema}}
        return {"guided_json": schema}
    if grammar is None:
        if schema is None:
            raise ValueError(f"constrain={constrain!r} needs a grammar (or a JSON schema to convert)")
        from .grammar import schema_to_gbnf

        grammar = schema_to_gbnf(schema)
    return {constrain: grammar}  # "grammar" or "guided_grammar", both top-level body fields
