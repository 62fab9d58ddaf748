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
from typing import Any

__all__ = ["SPELLINGS", "SCHEMA_SPELLINGS", "GRAMMAR_SPELLINGS", "TOOL_CHOICE_REQUIRED", "request_fields"]

SCHEMA_SPELLINGS = ("json_schema", "json_object", "guided_json")
GRAMMAR_SPELLINGS = ("grammar", "guided_grammar")
SPELLINGS: tuple[str, ...] = (*SCHEMA_SPELLINGS, *GRAMMAR_SPELLINGS)
# For ToolCallingAgent: the model must answer with a tool call (OpenAI, vLLM, llama-server).
TOOL_CHOICE_REQUIRED: Mapping[str, Any] = {"tool_choice": "required"}


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
