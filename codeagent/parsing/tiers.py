"""Find the Python action in a model's reply: the tiers, first match wins.

  0. drop `<think>…</think>` reasoning (`reasoning.strip_reasoning`), so draft code never runs;
  1. the agent's tags (`<code>…</code>` by default);
  2. markdown fences (```python, ```py, bare ``` holding Python, indented, unclosed at the end);
  3. the whole reply, if it parses and is not prose;
  4. a tool call in any dialect of the table (`dialects.py`: `{"name"|"tool"|..., "arguments"|...}`,
     `<tool_call>`, `[TOOL_CALLS]`, `<|python_tag|>`, ReAct `Action:`, ...), as Python calls; a
     block from tiers 1-3 that is such a call (`[TOOL_CALLS][...]` parses as a subscript) is too;
  5. otherwise `CodeParseError`, whose message tells the model what to send instead.

Every tier is a linear scan of the text; `ast.parse` runs only where a guess must be
confirmed (bare fences, the whole reply, one-line or unclosed tag blocks). The design is in
docs/architecture.md.
"""

from __future__ import annotations

import textwrap
from collections.abc import Collection

from .json_calls import tool_calls_to_code
from .jsonscan import decode_at
from .lesson import DEFAULT_TAGS, explain
from .reasoning import strip_reasoning
from .syntax import first_statement_acts, looks_like_code, trim, try_parse

__all__ = ["parse_code", "BlockWatch"]

# Fence labels that mean "this is Python we may run". `tool_code` is what Gemini models write.
_PYTHON_LANGS = frozenset({"python", "py", "python3", "py3", "tool_code", "ipython"})
_END_CODE = "<end_code>"  # smolagents' legacy stop marker: ```<end_code>


def parse_code(text: str, tags: tuple[str, str] = DEFAULT_TAGS, *, tools: Collection[str] | None = None) -> str:
    """Return the Python code the model meant to run, or raise `CodeParseError`.

    tools: the tool names the model may call; a tool call written in a dialect (tier 4) that names
    another raises `UnknownToolError` (a CodeParseError listing the tools). None: any name.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_code() expects the reply as str, got {type(text).__name__}")
    open_tag, close_tag = tags
    if not open_tag or not close_tag:
        raise ValueError("tags must be two non-empty strings, e.g. ('<code>', '</code>')")
    text = _normalize(text)
    stripped = strip_reasoning(text)
    body = stripped.text
    notes: list[str] = []  # what we saw but could not use, for the error message

    if open_tag in body:
        code = _from_tags(body, open_tag, close_tag, notes)
        if code:
            return _unless_a_call(code, tools)
    if "```" in body or "~~~" in body:
        code = _from_fences(body, notes)
        if code:
            return _unless_a_call(code, tools)
    code = _from_whole_reply(body, close_tag, notes)
    if code:
        return _unless_a_call(code, tools)
    code = tool_calls_to_code(body, tools)
    if code:
        return code
    raise explain(text, body, tags, stripped.only_reasoning, notes)


# Dialect markers that happen to parse as Python (a subscript) but no real code writes.
_CALL_MARKERS = ("[TOOL_CALLS]", "functools[")


def _unless_a_call(code: str, tools: Collection[str] | None) -> str:
    """`code`, or the Python for the tool call it is written as (`[TOOL_CALLS][...]`, a JSON
    object or array that is the whole block). A Python block that merely starts with `{` or `[`
    and holds a call-shaped dict further down stays the code it is."""
    if code.startswith(_CALL_MARKERS):
        return tool_calls_to_code(code, tools) or code
    if code.startswith(("{", "[")):
        whole = decode_at(code, 0)
        if whole is not None and not code[whole[1]:].strip():
            return tool_calls_to_code(code, tools) or code
    return code


# --- normalisation -----------------------------------------------------------------------


def _normalize(text: str) -> str:
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


# --- a reply as it streams: has its action closed? --------------------------------------------


class BlockWatch:
    """Where a reply's action closed, found as the reply streams in, so the rest need not be read:
    the agent's closing tag after its opening one (the text before the tag is kept, as a stop
    sequence would), or the closing line of a fence that holds Python (kept). Fences count only
    when the reply has no opening tag; text inside an unclosed `<think>` never counts.
    `end(text)` takes the whole text so far and costs only the new part."""

    __slots__ = ("open_tag", "close_tag", "_line", "_fence", "_open_at")

    def __init__(self, tags: tuple[str, str] = DEFAULT_TAGS) -> None:
        self.open_tag, self.close_tag = tags
        self._line = 0  # where the next line to look at starts
        self._fence: tuple[str, int, str, int] | None = None  # char, width, lang, content start
        self._open_at = -1  # where the opening tag ends

    def end(self, text: str) -> int | None:
        """The length of `text` to keep when its action has closed, else None."""
        if "<think>" in text:
            last = text.rfind("</think>")
            if last < text.rfind("<think>"):
                return None  # still reasoning
            if self._line < last:
                self._line, self._fence = last + len("</think>"), None
        if self._open_at < 0:
            found = text.find(self.open_tag, max(0, self._line - len(self.open_tag)))
            if found >= 0:
                self._open_at = found + len(self.open_tag)
        if self._open_at >= 0:
            close = text.find(self.close_tag, self._open_at)
            return close if close >= 0 else None
        return self._fence_end(text)

    def _fence_end(self, text: str) -> int | None:
        while True:
            newline = text.find("\n", self._line)
            if newline < 0:
                return None
            start, self._line = self._line, newline + 1
            stripped = text[start:newline].strip()
            if self._fence is None:
                if stripped.startswith(("```", "~~~")):
                    char = stripped[0]
                    width = len(stripped) - len(stripped.lstrip(char))
                    self._fence = (char, width, _fence_lang(stripped[width:]), newline + 1)
                continue
            char, width, lang, content = self._fence
            if not (stripped.startswith(char * width) and _is_closing_rest(stripped.lstrip(char))):
                continue
            self._fence = None
            code = trim(text[content:start])
            if lang in _PYTHON_LANGS or (lang == "" and code and (tree := try_parse(code)) is not None
                                         and looks_like_code(tree, code)):
                return newline + 1


# --- tier 1: the agent's tags -------------------------------------------------------------


def _from_tags(text: str, open_tag: str, close_tag: str, notes: list[str]) -> str | None:
    blocks: list[str] = []
    pos = 0
    while True:
        i = text.find(open_tag, pos)
        if i < 0:
            break
        start = i + len(open_tag)
        j = text.find(close_tag, start)
        closed = j >= 0
        if closed:
            content, pos = text[start:j], j + len(close_tag)
            if open_tag in content or _close_follows(text, pos, open_tag, close_tag):
                content, pos = _disambiguate(text, start, j, open_tag, close_tag)
        else:
            content, pos = _drop_partial_suffix(text[start:], close_tag), len(text)
            k = content.rfind(open_tag)
            if k >= 0:
                content = content[k + len(open_tag):]
        inline = closed and "\n" not in content
        code = _clean_block(content, notes)
        if code is None:
            continue
        if (inline or not closed) and not _is_runnable(code, notes, open_tag, close_tag, inline):
            # Inline or unterminated blocks are where tags quoted in prose end up ("wrap it in
            # <code>...</code>"): keep them only if they parse (inline: and do something).
            # Closed blocks on their own lines go to the executor as they are, so a syntax
            # error there comes back with its line and caret.
            continue
        blocks.append(code)
        if not closed:
            break
    return "\n".join(blocks) if blocks else None


def _close_follows(text: str, pos: int, open_tag: str, close_tag: str) -> bool:
    """Is there another closing tag before the next opening one? Then the first may be text."""
    j = text.find(close_tag, pos)
    if j < 0:
        return False
    i = text.find(open_tag, pos)
    return i < 0 or j < i


def _disambiguate(text: str, start: int, end: int, open_tag: str, close_tag: str) -> tuple[str, int]:
    """Tags inside the code (`html.split("</code>")`) or quoted in prose before the block
    (`use <code> tags`): the first reading that parses wins, else the plain one.

    Readings, in order: from the first opening tag to this closing tag or one of the next few;
    then from the last opening tag before them. Returns (content, resume position).
    """
    ends = [end]
    while len(ends) < 8:
        nxt = text.find(close_tag, ends[-1] + len(close_tag))
        if nxt < 0:
            break
        ends.append(nxt)
    for stop in ends:  # tags inside the code's strings
        if try_parse(trim(text[start:stop])) is not None:
            return text[start:stop], stop + len(close_tag)
    for stop in ends:  # a tag quoted in prose before the real block
        raw = text[start:stop]
        k = raw.rfind(open_tag)
        if k >= 0 and try_parse(trim(raw[k + len(open_tag):])) is not None:
            return raw[k + len(open_tag):], stop + len(close_tag)
    raw = text[start:end]
    k = raw.rfind(open_tag)
    return (raw[k + len(open_tag):] if k >= 0 else raw), end + len(close_tag)


def _clean_block(content: str, notes: list[str]) -> str | None:
    content = _drop_partial_suffix(content.rstrip(), _END_CODE)
    if "```" in content or "~~~" in content:
        # Fences inside the tags (`<code>```python …```</code>`): use their content, unless the
        # block already parses as it is (the backticks are inside a string).
        if try_parse(trim(content)) is None:
            fenced = _from_fences(content, notes, lenient=True)
            if fenced:
                return fenced
    code = trim(content)
    if code[:1] in (" ", "\t"):
        code = trim(textwrap.dedent(code))  # tags indented in a list item
    return code or None


def _is_runnable(code: str, notes: list[str], open_tag: str, close_tag: str, inline: bool) -> bool:
    tree = try_parse(code, notes, where=f"between {open_tag} and {close_tag}")
    return tree is not None and (not inline or looks_like_code(tree, code))


def _drop_partial_suffix(text: str, tag: str) -> str:
    """Remove `tag` or a prefix of it (`</cod`) at the very end: a stop sequence ate the rest."""
    stripped = text.rstrip()
    wordy = tag[0].isalnum() or tag[0] == "_"  # `END` cut to `EN` could be the end of a name
    for k in range(len(tag), 1, -1):
        if stripped.endswith(tag[:k]):
            head = stripped[: len(stripped) - k]
            if k == len(tag) or not wordy or not head or head.endswith("\n"):
                return head
    return text


# --- tier 2: markdown fences --------------------------------------------------------------


def _from_fences(text: str, notes: list[str], lenient: bool = False) -> str | None:
    """Join the Python fences in order. `lenient`: bare fences need not parse (inside tags)."""
    lines = text.split("\n")
    n = len(lines)
    blocks: list[str] = []
    i = 0
    while i < n:
        line = lines[i]
        stripped = line.lstrip()
        if not (stripped.startswith("```") or stripped.startswith("~~~")):
            i += 1
            continue
        fence_char = stripped[0]
        width = len(stripped) - len(stripped.lstrip(fence_char))
        lang = _fence_lang(stripped[width:])
        indent = len(line) - len(stripped)
        j = i + 1
        end_cut = None  # a closing fence glued to the last code line: `print(x)```
        while j < n:
            s = lines[j].strip()
            if s.startswith(fence_char * width) and _is_closing_rest(s.lstrip(fence_char)):
                break
            j += 1
        if j == n:  # unclosed: the reply ended (stop sequence) or the fence is glued to code
            for m in range(i + 1, n):
                if lines[m].rstrip().endswith(fence_char * 3):
                    j, end_cut = m, lines[m].rstrip()[: -3].rstrip(fence_char)
                    break
        content_lines = lines[i + 1 : j]
        if end_cut is not None and end_cut.strip():
            content_lines.append(end_cut)
        if j == n and content_lines and set(content_lines[-1].strip()) <= {fence_char}:
            content_lines.pop()  # half a closing fence: "``"
        i = j + 1
        if lang in _PYTHON_LANGS or (lang == "" and lenient):
            code = trim(_dedent(content_lines, indent))
            if code:
                blocks.append(code)
        elif lang == "":
            code = trim(_dedent(content_lines, indent))
            tree = try_parse(code) if code else None
            if tree is not None and looks_like_code(tree, code):
                blocks.append(code)
        else:
            notes.append(f"lang:{lang}")
    return "\n".join(blocks) if blocks else None


def _fence_lang(info: str) -> str:
    info = info.strip()
    if not info or info.startswith(_END_CODE[:2]):
        return ""
    word = info.split()[0]
    for sep in ":{,":
        word = word.split(sep)[0]
    return word.lower()


def _is_closing_rest(rest: str) -> bool:
    rest = rest.strip()
    return not rest or _END_CODE.startswith(rest) or rest == _END_CODE


def _dedent(lines: list[str], indent: int) -> str:
    """Undo a fence's indentation (list items): remove up to `indent` leading blanks a line."""
    if indent:
        out = []
        for line in lines:
            k = 0
            while k < indent and k < len(line) and line[k] in " \t":
                k += 1
            out.append(line[k:])
        lines = out
    code = "\n".join(lines)
    first = next((ln for ln in lines if ln.strip()), "")
    if first[:1] in (" ", "\t"):
        code = textwrap.dedent(code)  # still indented: the code cannot run as it is
    return code


# --- tier 3: the whole reply --------------------------------------------------------------


def _from_whole_reply(text: str, close_tag: str, notes: list[str]) -> str | None:
    code = trim(_drop_partial_suffix(_drop_partial_suffix(text, _END_CODE), close_tag))
    if not code:
        return None
    if code[0] in " \t":
        code = trim(textwrap.dedent(code))
    failures: list[str] = []
    tree = try_parse(code, failures, where="in your reply")
    if tree is not None and looks_like_code(tree, code):
        return code
    if failures and code.count("\n") >= 2 and first_statement_acts(code):
        notes.extend(failures)  # code, not prose: show the model its syntax error
    return None
