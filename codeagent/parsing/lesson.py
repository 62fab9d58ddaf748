"""What the model is told when its reply holds no runnable Python: `CodeParseError` and the format."""

from __future__ import annotations

from .answer import answer_suggestion

__all__ = ["DEFAULT_TAGS", "CodeParseError", "UnknownToolError", "expected_format", "explain"]

DEFAULT_TAGS: tuple[str, str] = ("<code>", "</code>")


class CodeParseError(ValueError):
    """No runnable Python in the reply. `.message` is written for the model, as an observation.

    `.suggestion` is the `final_answer(...)` call we propose when the reply looks like an answer
    given in prose (else None); `.reply` is the reply we were given.
    """

    def __init__(self, message: str, *, reply: str = "", suggestion: str | None = None):
        super().__init__(message)
        self.message = message
        self.reply = reply
        self.suggestion = suggestion


class UnknownToolError(CodeParseError):
    """The reply calls a tool that does not exist (`.name`); the message lists the tools."""

    def __init__(self, message: str, *, name: str, reply: str = ""):
        super().__init__(message, reply=reply)
        self.name = name


def expected_format(tags: tuple[str, str] = DEFAULT_TAGS) -> str:
    """The reply format we expect, as an example the model can copy."""
    open_tag, close_tag = tags
    return (
        "Thought: one or two sentences about what to do next.\n"
        f"{open_tag}\n"
        "result = some_tool(argument=\"value\")\n"
        "print(result)\n"
        f"{close_tag}"
    )


def explain(
    text: str, body: str, tags: tuple[str, str], reasoning_only: bool, notes: list[str]
) -> CodeParseError:
    """The error for a reply with no code: what we saw, the format to use, and how to answer."""
    open_tag, close_tag = tags
    parts: list[str] = []
    suggestion = None
    stripped = body.strip()
    syntax = next((n[len("syntax:"):] for n in notes if n.startswith("syntax:")), None)
    langs = sorted({n[len("lang:"):] for n in notes if n.startswith("lang:")})
    if reasoning_only:
        parts.append(
            "Your reply contained only reasoning inside <think>…</think>, with no code after it. "
            "Code inside <think> is never run."
        )
    elif not stripped:
        parts.append("Your reply was empty.")
    elif syntax:
        parts.append(syntax)
    else:
        if langs:
            fences = ", ".join(f"```{lang}" for lang in langs)
            parts.append(f"Your reply has a {fences} block, but only Python code can be run here.")
        else:
            parts.append("I could not find any Python code to run in your reply.")
        suggestion = answer_suggestion(stripped)
    parts.append(
        f"Write your code between {open_tag} and {close_tag}, exactly in this format:\n\n"
        f"{expected_format(tags)}"
    )
    if suggestion:
        parts.append(
            "If that was your answer, give it by calling final_answer in a code block:\n\n"
            f"{open_tag}\n{suggestion}\n{close_tag}"
        )
    else:
        parts.append("When you have the answer, call final_answer(answer) in a code block.")
    return CodeParseError("\n\n".join(parts), reply=text, suggestion=suggestion)
