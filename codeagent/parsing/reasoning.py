"""Separate reasoning (`<think>…</think>`) from the rest of a reply: the one stripper.

Models use it to keep a reasoning model's thoughts out of `ModelReply.text` (and record them as
`reasoning`); the parser uses it as its tier 0, so draft code written while thinking never runs.
Shapes handled: closed blocks; a lone closing tag first (the chat template opened the block for the
model: everything before it is reasoning); an unclosed block (the reply ran out mid-thought).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["THINK_TAGS", "REASONING_TAGS", "Stripped", "strip_reasoning", "split_reasoning"]

THINK_TAGS: tuple[str, str] = ("<think>", "</think>")
REASONING_TAGS: tuple[tuple[str, str], ...] = (THINK_TAGS, ("<thinking>", "</thinking>"))


class Stripped(NamedTuple):
    """A reply without its reasoning.

    text: the rest of the reply, as it was (not trimmed).
    blocks: the reasoning, one entry per block, in order (untrimmed).
    found: any reasoning tag was seen.
    only_reasoning: an unclosed block ran to the end of a reply that has nothing else in it.
    """

    text: str
    blocks: tuple[str, ...] = ()
    found: bool = False
    only_reasoning: bool = False

    @property
    def reasoning(self) -> str | None:
        """The blocks, trimmed and joined by blank lines; None when there is no reasoning text."""
        return "\n\n".join(b.strip() for b in self.blocks if b.strip()) or None


def strip_reasoning(
    text: str, tags: tuple[tuple[str, str], ...] = REASONING_TAGS, *, open_mid_line_is_reasoning: bool = False
) -> Stripped:
    """Remove every reasoning block of each (open, close) pair in `tags`.

    An unclosed opening tag that starts a line (or the reply) makes the rest of the reply reasoning.
    One in the middle of a line ("wrap it in <think> tags") is prose quoting the tag, and stays, unless
    `open_mid_line_is_reasoning` (a model's raw reply, where the tag is the model's own token).
    """
    blocks: list[str] = []
    found = only_reasoning = False
    for open_tag, close_tag in tags:
        if open_tag in text or close_tag in text:
            found = True
            text, cut_off = _strip_pair(text, open_tag, close_tag, blocks, open_mid_line_is_reasoning)
            only_reasoning = only_reasoning or (cut_off and not text.strip())
    return Stripped(text, tuple(blocks), found, only_reasoning)


def split_reasoning(text: str) -> tuple[str, str | None]:
    """(reply without `<think>` reasoning, the reasoning or None): how models see a raw reply.

    Any unclosed `<think>` starts reasoning, mid-line too; the text is stripped of the newlines the
    blocks leave around it.
    """
    if THINK_TAGS[0] not in text and THINK_TAGS[1] not in text:
        return text, None  # the common case, without building a Stripped
    stripped = strip_reasoning(text, (THINK_TAGS,), open_mid_line_is_reasoning=True)
    if not stripped.found:
        return text, None
    return stripped.text.strip("\n"), stripped.reasoning


def _strip_pair(
    text: str, open_tag: str, close_tag: str, blocks: list[str], open_mid_line_is_reasoning: bool
) -> tuple[str, bool]:
    """Remove one tag pair's blocks, appending them to `blocks`; (rest, True if one was unclosed)."""
    first_close = text.find(close_tag)
    first_open = text.find(open_tag)
    if first_close >= 0 and (first_open < 0 or first_close < first_open):
        # The chat template opened the block for the model: only the closing tag is in the reply.
        blocks.append(text[:first_close])
        text = text[first_close + len(close_tag):]
    parts: list[str] = []
    pos = 0
    cut_off = False
    while True:
        i = text.find(open_tag, pos)
        if i < 0:
            parts.append(text[pos:])
            break
        j = text.find(close_tag, i + len(open_tag))
        if j >= 0:
            parts.append(text[pos:i])
            blocks.append(text[i + len(open_tag):j])
            pos = j + len(close_tag)
            continue
        # Unclosed: the reply was cut mid-thought (a token limit), unless the tag is quoted in prose.
        if open_mid_line_is_reasoning or i == 0 or text[:i].endswith("\n") or not text[:i].strip():
            parts.append(text[pos:i])
            blocks.append(text[i + len(open_tag):])
            cut_off = True
        else:
            parts.append(text[pos:])
        break
    return "".join(parts), cut_off
