"""Find the Python action in a model's reply.

Tiers, first match wins (see ARCHITECTURE.md):
  0. drop `<think>…</think>` reasoning, so draft code inside it never runs;
  1. the agent's tags (`<code>…</code>` by default);
  2. markdown fences (```python, ```py, bare ``` holding Python, indented, unclosed at the end);
  3. the whole reply, if it parses and is not prose;
  4. JSON tool calls (`{"name": ..., "arguments": {...}}`, also in `<tool_call>` tags);
  5. otherwise `CodeParseError`, whose message tells the model what to send instead.

Every tier is a linear scan of the text; `ast.parse` runs only where a guess must be
confirmed (bare fences, the whole reply, one-line or unclosed tag blocks).
"""

from __future__ import annotations

import ast
import textwrap

from ._parsing_answer import answer_suggestion
from ._parsing_excerpt import source_excerpt
from ._parsing_final_answer import fix_final_answer
from ._parsing_json import tool_calls_to_code

__all__ = [
    "DEFAULT_TAGS",
    "CodeParseError",
    "expected_format",
    "fix_final_answer",
    "looks_like_code",
    "parse_code",
    "source_excerpt",
]

DEFAULT_TAGS: tuple[str, str] = ("<code>", "</code>")

# Fence labels that mean "this is Python we may run". `tool_code` is what Gemini models write.
_PYTHON_LANGS = frozenset({"python", "py", "python3", "py3", "tool_code", "ipython"})
_END_CODE = "<end_code>"  # smolagents' legacy stop marker: ```<end_code>
_REASONING_TAGS = (("<think>", "</think>"), ("<thinking>", "</thinking>"))


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


def parse_code(text: str, tags: tuple[str, str] = DEFAULT_TAGS) -> str:
    """Return the Python code the model meant to run, or raise `CodeParseError`."""
    if not isinstance(text, str):
        raise TypeError(f"parse_code() expects the reply as str, got {type(text).__name__}")
    open_tag, close_tag = tags
    if not open_tag or not close_tag:
        raise ValueError("tags must be two non-empty strings, e.g. ('<code>', '</code>')")
    text = _normalize(text)
    body, reasoning_only = _strip_reasoning(text)
    notes: list[str] = []  # what we saw but could not use, for the error message

    if open_tag in body:
        code = _from_tags(body, open_tag, close_tag, notes)
        if code:
            return code
    if "```" in body or "~~~" in body:
        code = _from_fences(body, notes)
        if code:
            return code
    code = _from_whole_reply(body, close_tag, notes)
    if code:
        return code
    if '"name"' in body or '"function"' in body:
        code = tool_calls_to_code(body)
        if code:
            return code
    raise _explain(text, body, tags, reasoning_only, notes)


def looks_like_code(tree: ast.Module, source: str | None = None) -> bool:
    """True if a parsed reply does something: a call, an assignment, an import, control flow…

    A reply made only of bare names, constants, comparisons or annotations (`Paris`, `yes`,
    `42`, `not sure`, `Answer: Paris`) is prose that happens to parse, not code.
    """
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr):
            if _expression_acts(stmt.value, source):
                return True
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is None:
            continue  # `Answer: Paris` parses as a bare annotation
        elif isinstance(stmt, ast.Pass):
            continue
        else:
            return True
    return False


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


# --- tier 0: normalisation and reasoning --------------------------------------------------


def _normalize(text: str) -> str:
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _strip_reasoning(text: str) -> tuple[str, bool]:
    """Remove reasoning blocks. Returns (rest, True if the reply was nothing but reasoning)."""
    only_reasoning = False
    for open_tag, close_tag in _REASONING_TAGS:
        if open_tag in text or close_tag in text:
            text, truncated = _strip_blocks(text, open_tag, close_tag)
            only_reasoning = only_reasoning or (truncated and not text.strip())
    return text, only_reasoning


def _strip_blocks(text: str, open_tag: str, close_tag: str) -> tuple[str, bool]:
    first_close = text.find(close_tag)
    first_open = text.find(open_tag)
    if first_close >= 0 and (first_open < 0 or first_close < first_open):
        # The chat template opened the block for the model: only the closing tag is in the reply.
        text = text[first_close + len(close_tag):]
    parts: list[str] = []
    pos = 0
    truncated = False
    while True:
        i = text.find(open_tag, pos)
        if i < 0:
            parts.append(text[pos:])
            break
        j = text.find(close_tag, i + len(open_tag))
        if j >= 0:
            parts.append(text[pos:i])
            pos = j + len(close_tag)
            continue
        # Unterminated: if it opens a line, everything after it is reasoning (cut by a limit).
        if i == 0 or text[:i].endswith("\n") or not text[:i].strip():
            parts.append(text[pos:i])
            truncated = True
        else:
            parts.append(text[pos:])
        break
    return "".join(parts), truncated


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
        if _try_parse(_trim(text[start:stop])) is not None:
            return text[start:stop], stop + len(close_tag)
    for stop in ends:  # a tag quoted in prose before the real block
        raw = text[start:stop]
        k = raw.rfind(open_tag)
        if k >= 0 and _try_parse(_trim(raw[k + len(open_tag):])) is not None:
            return raw[k + len(open_tag):], stop + len(close_tag)
    raw = text[start:end]
    k = raw.rfind(open_tag)
    return (raw[k + len(open_tag):] if k >= 0 else raw), end + len(close_tag)


def _clean_block(content: str, notes: list[str]) -> str | None:
    content = _drop_partial_suffix(content.rstrip(), _END_CODE)
    if "```" in content or "~~~" in content:
        # Fences inside the tags (`<code>```python …```</code>`): use their content, unless the
        # block already parses as it is (the backticks are inside a string).
        if _try_parse(_trim(content)) is None:
            fenced = _from_fences(content, notes, lenient=True)
            if fenced:
                return fenced
    code = _trim(content)
    if code[:1] in (" ", "\t"):
        code = _trim(textwrap.dedent(code))  # tags indented in a list item
    return code or None


def _is_runnable(code: str, notes: list[str], open_tag: str, close_tag: str, inline: bool) -> bool:
    tree = _try_parse(code, notes, where=f"between {open_tag} and {close_tag}")
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
            code = _trim(_dedent(content_lines, indent))
            if code:
                blocks.append(code)
        elif lang == "":
            code = _trim(_dedent(content_lines, indent))
            tree = _try_parse(code) if code else None
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
    code = _trim(_drop_partial_suffix(_drop_partial_suffix(text, _END_CODE), close_tag))
    if not code:
        return None
    if code[0] in " \t":
        code = _trim(textwrap.dedent(code))
    failures: list[str] = []
    tree = _try_parse(code, failures, where="in your reply")
    if tree is not None and looks_like_code(tree, code):
        return code
    if failures and code.count("\n") >= 2 and _first_statement_acts(code):
        notes.extend(failures)  # code, not prose: show the model its syntax error
    return None


def _first_statement_acts(code: str) -> bool:
    """Does the reply open with a line of real code (`x = 1`, `import os`, `f(x)`)?"""
    tree = _try_parse(code.split("\n", 1)[0])
    return tree is not None and looks_like_code(tree)


# --- helpers ------------------------------------------------------------------------------


def _trim(code: str) -> str:
    """Drop blank lines around the code and trailing blanks, never the first line's indent."""
    code = code.rstrip()
    start = 0
    while True:
        nl = code.find("\n", start)
        if nl < 0 or code[start:nl].strip():
            return code[start:]
        start = nl + 1


def _try_parse(code: str, notes: list[str] | None = None, where: str = "") -> ast.Module | None:
    try:
        return ast.parse(code)
    except SyntaxError as err:
        if notes is not None:
            notes.append("syntax:" + _describe_syntax_error(code, err, where))
        return None
    except (ValueError, RecursionError, MemoryError, OverflowError):
        return None


def _describe_syntax_error(code: str, err: SyntaxError, where: str) -> str:
    excerpt = source_excerpt(code, err)
    head = f"The code {where} is not valid Python: {err.msg} (line {err.lineno})."
    return f"{head}\n{excerpt}" if excerpt else head


def _expression_acts(node: ast.expr, source: str | None) -> bool:
    """Does this expression statement do anything (call, subscript, comprehension…)?"""
    if isinstance(node, ast.Call) and source is not None and _prose_call(node, source):
        return False
    for sub in ast.walk(node):
        if isinstance(
            sub,
            (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.Subscript, ast.Lambda,
             ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.NamedExpr),
        ):
            return True
    return False


def _prose_call(node: ast.Call, source: str) -> bool:
    """`Paris (France)`: a capitalised word, a space, words in parentheses — a phrase."""
    if not isinstance(node.func, ast.Name) or not node.func.id[:1].isupper():
        return False
    if node.keywords or not all(isinstance(a, (ast.Name, ast.Constant)) for a in node.args):
        return False
    line = source.split("\n", node.func.end_lineno)[node.func.end_lineno - 1]
    after = line.encode("utf-8")[node.func.end_col_offset : node.func.end_col_offset + 1]
    return after == b" "


def _explain(text, body, tags, reasoning_only, notes) -> CodeParseError:
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
