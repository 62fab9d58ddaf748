"""Find the Python action in a model's reply (public names only; the tiers are in `tiers`).

    parse_code(text, tags=("<code>", "</code>")) -> str     raises CodeParseError (a ValueError)

Modules: `tiers` (parse_code, tiers 1-3), `reasoning` (the one `<think>` stripper, used by models
too), `json_calls` (tier 4: tool calls in any dialect), `dialects` (the table of dialects, each with
its source), `dialect_readers` (one reader per dialect), `calls` (the rule that tells a call from
data, and how a call is written as Python), `jsonscan` (JSON values in free text), `lesson`
(CodeParseError, UnknownToolError and the format shown to the model),
`answer` (an answer in prose becomes a final_answer(...) suggestion), `syntax` (does a text parse and
act), `excerpt` (a failing line with a caret), `final_answer` (the `final_answer = ...` fix).
"""

from __future__ import annotations

from .dialects import DIALECTS, Dialect
from .excerpt import source_excerpt
from .final_answer import fix_final_answer
from .lesson import DEFAULT_TAGS, CodeParseError, UnknownToolError, expected_format
from .reasoning import split_reasoning, strip_reasoning
from .syntax import looks_like_code
from .tiers import BlockWatch, parse_code

__all__ = [
    "BlockWatch",
    "DEFAULT_TAGS",
    "DIALECTS",
    "CodeParseError",
    "Dialect",
    "UnknownToolError",
    "expected_format",
    "fix_final_answer",
    "looks_like_code",
    "parse_code",
    "source_excerpt",
    "split_reasoning",
    "strip_reasoning",
]
