"""Spot an answer given in prose ("The final answer is 42") and turn it into final_answer(...)."""

from __future__ import annotations

import re

_ANSWER_WORD = re.compile(r"answer", re.IGNORECASE)  # a literal: no backtracking
_MAX_VALUE = 200  # longer "answers" are explanations: suggest the call's shape instead
_TAIL = 2_000  # answers come last: look no further back than this


def answer_suggestion(text: str) -> str | None:
    """`final_answer(<value>)` for a reply that states an answer in prose, else None."""
    text = text[-_TAIL:]
    value = _boxed(text)
    if value is None:
        match = None
        for found in _ANSWER_WORD.finditer(text):  # the last mention wins
            match = found
        if match is not None:
            line_end = text.find("\n", match.end())
            rest = text[match.end() : line_end if line_end >= 0 else len(text)].lstrip(" \t*_")
            # "answer is 42", "Answer: 42", "answer = 42"; not "the answer in the docs"
            for lead in ("is:", "is", "was", ":", "=", "-"):
                if rest.startswith(lead) and not rest[len(lead) : len(lead) + 1].isalnum():
                    value = rest[len(lead) :].lstrip(" \t*_:=-")
                    break
        elif _short_statement(text):
            value = text  # a bare reply such as "Paris." or "42"
    if value is None:
        return None
    value = value.strip().rstrip(".!").strip().strip("*_`\"'").strip()
    if not value or len(value) > _MAX_VALUE:
        return None
    return f"final_answer({_literal(value)})"


def _short_statement(text: str) -> bool:
    """A few words on one line, not a question or a lead-in ("Let me check:")."""
    text = text.strip()
    return "\n" not in text and len(text.split()) <= 5 and not text.endswith(("?", ":"))


def _boxed(text: str) -> str | None:
    r"""The content of the last LaTeX `\boxed{...}` (math models answer that way)."""
    i = text.rfind("\\boxed{")
    if i < 0:
        return None
    depth, start = 0, i + len("\\boxed{")
    for k in range(start, min(len(text), start + _MAX_VALUE)):
        ch = text[k]
        if ch == "{":
            depth += 1
        elif ch == "}":
            if depth == 0:
                return text[start:k]
            depth -= 1
    return None


def _literal(value: str) -> str:
    number = value.replace(",", "") if value.count(",") and value[0].isdigit() else value
    for kind in (int, float):
        try:
            parsed = kind(number)
        except ValueError:
            continue
        if kind is float and parsed != parsed or parsed in (float("inf"), float("-inf")):
            break  # nan / inf stay strings
        return repr(parsed)
    return repr(value)
