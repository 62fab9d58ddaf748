"""Properties of the parser on generated code (hypothesmith) and generated prose.

Examples per property: PARSING_EXAMPLES (default 100, kept modest so the suite stays fast).
A longer campaign: CODEAGENT_PARSING_EXAMPLES=2000 .venv/bin/python -m pytest tests/test_parsing_properties.py
"""

from __future__ import annotations

import ast
import json
import os
import tokenize
import warnings

import asttokens
import hypothesmith
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from codeagent.parsing import CodeParseError, fix_final_answer, looks_like_code, parse_code

pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

PARSING_EXAMPLES = int(os.environ.get("CODEAGENT_PARSING_EXAMPLES", "100"))
SETTINGS = settings(
    max_examples=PARSING_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

# Text that means "a block starts/ends here" to the parser. Generated code that holds one of these
# inside a string literal is genuinely ambiguous (a human reader could not tell either), so such
# examples are assumed away rather than "handled".
MARKERS = ("```", "~~~", "<code>", "</code>", "<think>", "</think>", "<end_code>", "<tool_call>")


def _compiles(code: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # `1()` and friends warn, still compile
            compile(code, "<generated>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


python_code = (
    hypothesmith.from_grammar()
    .filter(_compiles)
    .filter(lambda code: not any(marker in code for marker in MARKERS))
    # The parser normalizes line endings (CRLF replies are common), so a program whose meaning
    # depends on a bare CR is not the same program after it: `x;\n\\\r\n` compiles, `x;\n\\\n` does not.
    .filter(lambda code: "\r" not in code)
    .filter(lambda code: ast.parse(code).body != [])  # comments only: nothing to run
)

WORDS = (
    "the answer is Paris London yes no not sure maybe it and or in is True None 42 3.5 "
    "we need to search first then compute result value data weather today I think so "
    "capital of France looks fine done final"
).split()

sentence = st.builds(
    lambda words, end: " ".join(words) + end,
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=12),
    st.sampled_from(["", ".", "!", "?", ":"]),
)
prose = st.lists(sentence, min_size=0, max_size=3).map(lambda s: " ".join(s).capitalize())


def _same_ast(a: str, b: str) -> bool:
    return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))


def _indent(code: str, pad: str) -> str:
    return "\n".join(pad + line for line in code.split("\n"))


WRAPPERS = {
    "tags": lambda c, before, after: f"{before}\n<code>\n{c}\n</code>\n{after}",
    "tags unclosed": lambda c, before, after: f"{before}\n<code>\n{c}\n",
    "tags partial close": lambda c, before, after: f"{before}\n<code>\n{c}\n</co",
    "tags with fence": lambda c, before, after: f"{before}\n<code>\n```python\n{c}\n```\n</code>\n{after}",
    "fence python": lambda c, before, after: f"{before}\n```python\n{c}\n```\n{after}",
    "fence py": lambda c, before, after: f"{before}\n\n```py\n{c}\n```\n\n{after}",
    "fence Python": lambda c, before, after: f"{before}\n```Python\n{c}\n```\n{after}",
    "fence python3": lambda c, before, after: f"{before}\n```python3\n{c}\n```\n{after}",
    "fence unclosed": lambda c, before, after: f"{before}\n```python\n{c}\n",
    "fence indented (list item)": lambda c, before, after: (
        f"1. {before}\n   ```python\n{_indent(c, '   ')}\n   ```\n{after}"
    ),
    "legacy Code: end_code": lambda c, before, after: f"Thought: {before}\nCode:\n```py\n{c}\n```<end_code>",
    "crlf fence": lambda c, before, after: f"{before}\n```python\n{c}\n```\n{after}".replace("\n", "\r\n"),
    "think then tags": lambda c, before, after: (
        f"<think>\n{before}\n<code>\ndraft_that_must_not_run()\n</code>\n</think>\n<code>\n{c}\n</code>"
    ),
}


@SETTINGS
@given(code=python_code, before=prose, after=prose)
def test_wrapped_code_comes_back_with_the_same_ast(code, before, after):
    # Every wrapper on each generated program: generating the code is the costly part.
    for name, wrap in WRAPPERS.items():
        result = parse_code(wrap(code, before, after))
        assert _same_ast(result, code), name
    acts = looks_like_code(ast.parse(code), code)
    # a bare fence counts when it holds code; the whole reply counts unless it is prose
    if acts:
        assert _same_ast(parse_code(f"{before}\n```\n{code}\n```\n{after}"), code)
    try:
        result = parse_code(code)
    except CodeParseError:
        assert not acts
    else:
        assert acts and _same_ast(result, code)


@SETTINGS
@given(text=st.lists(sentence, min_size=1, max_size=4).map(" ".join))
def test_prose_is_refused(text):
    with pytest.raises(CodeParseError) as info:
        parse_code(text)
    assert "<code>" in info.value.message


json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
identifier = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True).filter(
    lambda s: s.isidentifier() and not __import__("keyword").iskeyword(s) and s != "final_answer"
)


@SETTINGS
@given(
    name=identifier,
    args=st.dictionaries(identifier, json_value, max_size=4),
    style=st.sampled_from(["plain", "tool_call", "string args", "parameters"]),
)
def test_json_tool_call_becomes_the_same_call(name, args, style):
    if style == "string args":
        reply = json.dumps({"name": name, "arguments": json.dumps(args)})
    elif style == "parameters":
        reply = json.dumps({"name": name, "parameters": args}, ensure_ascii=False)
    else:
        reply = json.dumps({"name": name, "arguments": args}, ensure_ascii=False, indent=2)
        if style == "tool_call":
            reply = f"<tool_call>\n{reply}\n</tool_call>"
    call = ast.parse(parse_code(reply)).body[0].value
    assert isinstance(call, ast.Call) and call.func.id == name
    assert {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords} == args


# --- fix_final_answer -----------------------------------------------------------------------


def _rename_identifier(code: str, old: str, new: str) -> str:
    tokens = asttokens.ASTTokens(code).tokens
    out, last = [], 0
    for tok in tokens:
        if tok.type == tokenize.NAME and tok.string == old:
            out += [code[last : tok.startpos], new]
            last = tok.endpos
    return "".join(out) + code[last:]


def _names(code: str) -> list[str]:
    return sorted({n.id for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Name)})


@st.composite
def code_using_final_answer(draw):
    """Generated code with one of its variables renamed to final_answer (bound or not)."""
    code = draw(python_code)
    names = [n for n in _names(code) if n not in ("match", "case", "_", "type")]
    assume(names)
    renamed = _rename_identifier(code, draw(st.sampled_from(names)), "final_answer")
    assume(_compiles(renamed))
    return renamed


def _binds_final_answer(code: str) -> bool:
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name) and node.id == "final_answer" and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, (ast.alias,)) and "final_answer" in (node.asname, node.name.split(".")[0]):
            return True
        if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name == "final_answer":
            return True
        if isinstance(node, ast.MatchMapping) and node.rest == "final_answer":
            return True
        if isinstance(node, (ast.Global, ast.Nonlocal)) and "final_answer" in node.names:
            return True
    return False


def _token_strings(code: str) -> list[str]:
    return [t.string for t in asttokens.ASTTokens(code).tokens]


@SETTINGS
@given(
    code=python_code | code_using_final_answer(),
    value=st.sampled_from(["compute()", "1 + 2", "'文字'", "[x for x in range(3)]"]),
)
def test_fix_final_answer_only_renames_and_always_parses(code, value):
    fixed = fix_final_answer(code)
    ast.parse(fixed)
    binds = _binds_final_answer(code)
    event(f"binds final_answer: {binds}; changed: {fixed != code}")
    if not binds:
        assert fixed is code  # byte-for-byte: nothing to fix
    else:
        before, after = _token_strings(code), _token_strings(fixed)
        assert len(before) == len(after)
        for old, new in zip(before, after, strict=True):
            assert old == new or (old == "final_answer" and new.startswith("final_answer_value"))
    # the classic slip, appended to the same program: the real final_answer ends up called
    program = f"{code}\nfinal_answer = {value}\nfinal_answer(final_answer)\n"
    if "final_answer" in code or not _compiles(program):
        return
    tail = fix_final_answer(program).rstrip("\n").split("\n")[-2:]
    assert tail == [f"final_answer_value = {value}", "final_answer(final_answer_value)"]


# Generated code almost never binds final_answer, so the renaming itself is exercised on programs
# assembled from every way Python can bind (or merely use) the name.
BINDING_FORMS = [
    "final_answer = {e}",
    "final_answer += {e}",
    "final_answer: int = {e}",
    "for final_answer in {e}:\n    pass",
    "with {e} as final_answer:\n    pass",
    "if (final_answer := {e}):\n    pass",
    "try:\n    pass\nexcept Exception as final_answer:\n    print(final_answer)",
    "import math as final_answer",
    "def f():\n    global final_answer\n    final_answer = {e}",
    "def g():\n    final_answer = {e}\n    return final_answer",
    "def outer():\n    final_answer = {e}\n    def inner():\n        nonlocal final_answer\n        final_answer = {e}\n    return final_answer",
    "match {e}:\n    case [*final_answer]:\n        pass\n    case {{'k': 1, **final_answer}}:\n        pass\n    case int() as final_answer:\n        pass",
    "xs = [final_answer for final_answer in range(3)]",
    "a, *final_answer = {e}",
    "class C:\n    final_answer = {e}\n    y = final_answer",
    "def h(final_answer):\n    return final_answer",
    "del final_answer",
    "print(final_answer)",
    "final_answer(final_answer)",
    "final_answer({e})",
    "y = lambda: final_answer",
    "print(f'{{final_answer!r:>{{final_answer}}}}')",
    "obj.final_answer = {e}",
    "call(final_answer={e})",
]
expression = st.sampled_from(["1", "compute()", "'文字'", "x + 1", "[1, 2]"])


@st.composite
def program_with_final_answer(draw):
    forms = draw(st.lists(st.sampled_from(BINDING_FORMS), min_size=1, max_size=6))
    return "\n".join(form.format(e=draw(expression)) for form in forms) + "\n"


def _assigning_scopes(code: str) -> list[str]:
    """Scopes (per `symtable`, an independent oracle) that still assign a final_answer variable."""
    import symtable

    found, tables = [], [symtable.symtable(code, "<program>", "exec")]
    while tables:
        table = tables.pop()
        tables.extend(table.get_children())
        if table.get_type() == "class":
            continue  # a class attribute does not shadow the tool
        try:
            sym = table.lookup("final_answer")
        except KeyError:
            continue
        if (sym.is_assigned() or sym.is_imported()) and not sym.is_parameter():
            found.append(table.get_name())
    return found


def _callees(code: str) -> int:
    return sum(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "final_answer"
        for n in ast.walk(ast.parse(code))
    )


@settings(max_examples=max(200, PARSING_EXAMPLES), deadline=None)
@given(program=program_with_final_answer())
def test_fix_final_answer_removes_every_shadowing_variable(program):
    fixed = fix_final_answer(program)
    ast.parse(fixed)
    assert _assigning_scopes(fixed) == []
    assert _callees(fixed) == _callees(program)  # calls still reach the real tool
    if not _assigning_scopes(program):
        assert fixed is program
