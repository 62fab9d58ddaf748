"""The tiered parser on realistic replies, the final_answer fix, and error excerpts."""

from __future__ import annotations

import ast

import pytest

from codeagent.parsing import (
    CodeParseError,
    fix_final_answer,
    looks_like_code,
    parse_code,
    source_excerpt,
)

REFUSED = CodeParseError  # marker in the table: the reply must be refused

# (case id, reply, expected code or REFUSED). Each row is a reply a real model could send.
TABLE: list[tuple[str, str, str | type]] = [
    # tier 1: the agent's tags
    ("tags", "Thought: add them.\n<code>\nx = add(1, 2)\nprint(x)\n</code>", "x = add(1, 2)\nprint(x)"),
    ("tags one line", "<code>final_answer(42)</code>", "final_answer(42)"),
    ("tags several blocks", "First:\n<code>\na = 1\n</code>\nthen:\n<code>\nprint(a)\n</code>", "a = 1\nprint(a)"),
    ("tags unclosed at end", "Thought: go\n<code>\nx = search('q')\nprint(x)\n", "x = search('q')\nprint(x)"),
    ("tags partial close </code", "<code>\nprint(1)\n</code", "print(1)"),
    ("tags partial close </cod", "<code>\nprint(1)\n</cod", "print(1)"),
    ("tags partial close </", "<code>\nprint(1)\n</", "print(1)"),
    ("tags with fence inside", "<code>\n```python\nprint(2)\n```\n</code>", "print(2)"),
    ("tags beat fences", "```python\nwrong()\n```\n<code>\nright()\n</code>", "right()"),
    ("tags inside prose then block", "I will wrap code in <code>...</code> tags.\n<code>\ny = 2\nprint(y)\n</code>", "y = 2\nprint(y)"),
    ("tag mentioned, real block after", "Use the <code> tag:\n<code>\nprint(3)\n</code>", "print(3)"),
    ("tag in prose, fence follows", "No <code> tags today:\n```python\nprint(4)\n```", "print(4)"),
    ("closing tag inside a string", "<code>\nparts = page.split('</code>')\nprint(parts[0])\n</code>", "parts = page.split('</code>')\nprint(parts[0])"),
    ("both tags inside strings", "<code>\nhtml = '<code>x</code>'\nprint(html)\n</code>\nDone.", "html = '<code>x</code>'\nprint(html)"),
    ("custom tags", "<python>\nprint(5)\n</python>", "print(5)"),
    ("tags windows endings", "Thought: x\r\n<code>\r\nfor i in range(2):\r\n    print(i)\r\n</code>\r\n", "for i in range(2):\n    print(i)"),
    ("tags indented block", "- step:\n  <code>\n  x = 1\n  print(x)\n  </code>", "x = 1\nprint(x)"),
    ("tags chinese literal", "<code>\nprint('你好，世界')\nfinal_answer('北京')\n</code>", "print('你好，世界')\nfinal_answer('北京')"),
    ("tags end_code legacy", "<code>\nprint(6)\n<end_code>", "print(6)"),
    ("tags syntax error multi-line kept", "<code>\nx = (1 +\nprint(x)\n</code>", "x = (1 +\nprint(x)"),
    ("tags one-line syntax error refused", "<code>print('a'</code>", REFUSED),
    # tier 0: reasoning
    ("think removed", "<think>maybe <code>bad()</code></think>\n<code>\ngood()\n</code>", "good()"),
    ("think with fence draft", "<think>\n```python\ndraft()\n```\n</think>\n```python\nfinal()\n```", "final()"),
    ("think unterminated", "<think>\nLet me try\n<code>\ndraft()\n</code>\n", REFUSED),
    ("think closing only (template opened it)", "draft = 1\n</think>\n<code>\nfinal_answer(2)\n</code>", "final_answer(2)"),
    ("thinking tags removed", "<thinking>\ntry <code>draft()</code>\n</thinking>\n<code>\nfinal()\n</code>", "final()"),
    # tier 2: fences
    ("fence python", "Here:\n```python\nprint('x')\n```\nDone.", "print('x')"),
    ("fence py", "```py\nimport math\nprint(math.pi)\n```", "import math\nprint(math.pi)"),
    ("fence Python", "```Python\nprint(7)\n```", "print(7)"),
    ("fence python3", "```python3\nprint(8)\n```", "print(8)"),
    ("fence bare parses", "Run this:\n```\nresult = add(1, 2)\n```", "result = add(1, 2)"),
    ("fence bare prose ignored", "```\nParis\n```", REFUSED),
    ("fence indented in list", "1. Compute:\n   ```python\n   x = 1\n   if x:\n       print(x)\n   ```", "x = 1\nif x:\n    print(x)"),
    ("fence crlf", "```python\r\nprint('crlf')\r\n```\r\n", "print('crlf')"),
    ("fence unclosed at end", "Thought: go\n```python\nx = 1\nprint(x)\n", "x = 1\nprint(x)"),
    ("fence half closing", "```python\nprint(9)\n``", "print(9)"),
    ("fence glued close", "```python\nprint(10)```", "print(10)"),
    ("fence several joined", "```python\na = 1\n```\nand\n```py\nprint(a)\n```", "a = 1\nprint(a)"),
    ("fence json ignored", "```json\n{\"x\": 1}\n```\n```python\nprint(11)\n```", "print(11)"),
    ("fence bash only", "```bash\npip install numpy\n```", REFUSED),
    ("legacy Code: end_code", "Thought: go\nCode:\n```py\nprint(12)\n```<end_code>", "print(12)"),
    ("fence tool_code (gemini)", "```tool_code\nprint(search('a'))\n```", "print(search('a'))"),
    ("fence tildes", "~~~python\nprint(13)\n~~~", "print(13)"),
    ("fence with emoji literal", "```python\nprint('done ✅ — 🎉')\n```", "print('done ✅ — 🎉')"),
    # tier 3: the whole reply
    ("whole reply code", "x = add(2, 40)\nfinal_answer(x)", "x = add(2, 40)\nfinal_answer(x)"),
    ("whole reply import", "import math\nmath.sqrt(2)", "import math\nmath.sqrt(2)"),
    ("whole reply with stray close tag", "print(14)\n</code>", "print(14)"),
    ("prose Paris", "Paris", REFUSED),
    ("prose yes", "yes", REFUSED),
    ("prose number", "42", REFUSED),
    ("prose not sure", "not sure", REFUSED),
    ("prose Answer: Paris (annotation)", "Answer: Paris", REFUSED),
    ("prose phrase with parens", "Paris (France)", REFUSED),
    ("prose sentence", "The final answer is 42.", REFUSED),
    ("prose yes or no", "yes or no", REFUSED),
    ("empty reply", "", REFUSED),
    ("whitespace reply", "  \n\n ", REFUSED),
    # tier 4: JSON tool calls
    ("json call", '{"name": "add", "arguments": {"a": 1, "b": 2}}', "add(a=1, b=2)"),
    ("json true null", '{"name": "f", "arguments": {"x": true, "y": null, "z": [1.5, false]}}', "f(x=True, y=None, z=[1.5, False])"),
    ("json parameters key", '{"name": "search", "parameters": {"query": "东京 weather"}}', "search(query='东京 weather')"),
    ("json arguments as string", '{"name": "add", "arguments": "{\\"a\\": 1}"}', "add(a=1)"),
    ("json in tool_call tags", '<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call>', "add(a=1)"),
    ("json several tool_calls", '<tool_call>{"name": "a", "arguments": {}}</tool_call>\n<tool_call>{"name": "b", "arguments": {"k": "v"}}</tool_call>', "a()\nb(k='v')"),
    ("json list of calls", '[{"name": "a", "arguments": {"n": 1}}, {"name": "b", "arguments": {"n": 2}}]', "a(n=1)\nb(n=2)"),
    ("json openai function shape", '{"type": "function", "function": {"name": "add", "arguments": "{\\"a\\": 3}"}}', "add(a=3)"),
    ("json in json fence", 'Calling the tool:\n```json\n{"name": "add", "arguments": {"a": 4}}\n```', "add(a=4)"),
    ("json final_answer positional", '{"name": "final_answer", "arguments": {"answer": "Paris"}}', "final_answer('Paris')"),
    ("json odd keys", '{"name": "f", "arguments": {"first-name": "Ada", "class": 1}}', "f(**{'first-name': 'Ada', 'class': 1})"),
    ("json mid-sentence", 'I will call {"name": "search", "arguments": {"q": "café"}} now.', "search(q='café')"),
    ("json bad name refused", '{"name": "not a name", "arguments": {}}', REFUSED),
]


@pytest.mark.parametrize(("reply", "expected"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_table(reply, expected):
    if expected is REFUSED:
        with pytest.raises(CodeParseError):
            parse_code(reply)
    else:
        code = parse_code(reply) if "<python>" not in reply else parse_code(reply, ("<python>", "</python>"))
        assert code == expected


def test_table_is_big_enough():
    assert len(TABLE) >= 40


# --- error messages are written for the model -----------------------------------------------


def test_error_shows_format_with_the_agents_tags():
    with pytest.raises(CodeParseError) as info:
        parse_code("I think we should search first.", tags=("<py>", "</py>"))
    err = info.value
    assert isinstance(err, ValueError)
    assert "<py>" in err.message and "</py>" in err.message
    assert "final_answer" in err.message
    assert str(err) == err.message


@pytest.mark.parametrize(
    ("reply", "suggestion"),
    [
        ("The final answer is 42.", "final_answer(42)"),
        ("After checking, the answer is: **Paris**", "final_answer('Paris')"),
        ("So the result is \\boxed{3.5}", "final_answer(3.5)"),
        ("Final Answer: 1,234", "final_answer(1234)"),
        ("Paris", "final_answer('Paris')"),
    ],
)
def test_error_suggests_final_answer_for_prose_answers(reply, suggestion):
    with pytest.raises(CodeParseError) as info:
        parse_code(reply)
    assert info.value.suggestion == suggestion
    assert f"<code>\n{suggestion}\n</code>" in info.value.message


def test_error_does_not_take_a_plan_for_an_answer():
    with pytest.raises(CodeParseError) as info:
        parse_code("I could not find the answer in the documents, I will search the web.")
    assert info.value.suggestion is None
    assert "final_answer(answer)" in info.value.message


def test_error_for_reasoning_only_says_so():
    with pytest.raises(CodeParseError) as info:
        parse_code("<think>\nI need to compute x = 1 first")
    assert "<think>" in info.value.message and "never run" in info.value.message


def test_error_names_non_python_fence():
    with pytest.raises(CodeParseError) as info:
        parse_code("```bash\nls -la\n```")
    assert "```bash" in info.value.message


def test_error_quotes_syntax_error_of_one_line_block():
    with pytest.raises(CodeParseError) as info:
        parse_code("<code>print('a'</code>")
    assert "was never closed" in info.value.message and "^" in info.value.message


def test_looks_like_code():
    assert looks_like_code(ast.parse("x = 1"))
    assert looks_like_code(ast.parse("print(1)"))
    assert looks_like_code(ast.parse("for i in x:\n    pass"))
    assert not looks_like_code(ast.parse("Paris"))
    assert not looks_like_code(ast.parse("Answer: Paris"))
    assert not looks_like_code(ast.parse("yes\nno"))


def test_non_str_reply_is_a_type_error():
    with pytest.raises(TypeError):
        parse_code(None)  # type: ignore[arg-type]


# --- fix_final_answer ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "fixed"),
    [
        ("final_answer = compute()\nfinal_answer(final_answer)", "final_answer_value = compute()\nfinal_answer(final_answer_value)"),
        ("final_answer += 1", "final_answer_value += 1"),
        ("final_answer: int = 3\nprint(f'{final_answer!r}')", "final_answer_value: int = 3\nprint(f'{final_answer_value!r}')"),
        ("for final_answer in xs:\n    pass\nfinal_answer(final_answer)", "for final_answer_value in xs:\n    pass\nfinal_answer(final_answer_value)"),
        ("with ctx() as final_answer:\n    final_answer(final_answer.x)", "with ctx() as final_answer_value:\n    final_answer(final_answer_value.x)"),
        ("if (final_answer := f()):\n    final_answer(final_answer)", "if (final_answer_value := f()):\n    final_answer(final_answer_value)"),
        ("a, (final_answer, *b) = t", "a, (final_answer_value, *b) = t"),
        ("try:\n    f()\nexcept E as final_answer:\n    final_answer(str(final_answer))", "try:\n    f()\nexcept E as final_answer_value:\n    final_answer(str(final_answer_value))"),
        ("import numpy as final_answer\nfinal_answer(final_answer.pi)", "import numpy as final_answer_value\nfinal_answer(final_answer_value.pi)"),
        ("def f():\n    global final_answer\n    final_answer = 1\nf()\nfinal_answer(final_answer)", "def f():\n    global final_answer_value\n    final_answer_value = 1\nf()\nfinal_answer(final_answer_value)"),
        # only the function's local is renamed; module-level uses still mean the real tool
        ("def f():\n    final_answer = 2\n    return final_answer\ng = final_answer\nfinal_answer(f())", "def f():\n    final_answer_value = 2\n    return final_answer_value\ng = final_answer\nfinal_answer(f())"),
        ("final_answer_value = 1\nfinal_answer = 2\nfinal_answer(final_answer)", "final_answer_value = 1\nfinal_answer_value_2 = 2\nfinal_answer(final_answer_value_2)"),
        # comments and strings are not code: untouched
        ("final_answer = 1  # final_answer\ns = 'final_answer'\nfinal_answer(final_answer)", "final_answer_value = 1  # final_answer\ns = 'final_answer'\nfinal_answer(final_answer_value)"),
        ("总数 = 3\nfinal_answer = '答案' + str(总数)\nfinal_answer(final_answer)", "总数 = 3\nfinal_answer_value = '答案' + str(总数)\nfinal_answer(final_answer_value)"),
        ("match p:\n    case [*final_answer]:\n        final_answer(final_answer)", "match p:\n    case [*final_answer_value]:\n        final_answer(final_answer_value)"),
        ("match p:\n    case {'k': 1, **final_answer}:\n        pass", "match p:\n    case {'k': 1, **final_answer_value}:\n        pass"),
        ("[final_answer for final_answer in range(3)]", "[final_answer_value for final_answer_value in range(3)]"),
    ],
)
def test_fix_final_answer_renames(code, fixed):
    assert fix_final_answer(code) == fixed
    ast.parse(fix_final_answer(code))


@pytest.mark.parametrize(
    "code",
    [
        "final_answer(42)",
        "x = 1\nfinal_answer(x)",
        "obj.final_answer = 3\nf(final_answer=1)",
        "class A:\n    final_answer = 3\nprint(A.final_answer)",  # a class attribute
        "def f(final_answer):\n    return final_answer\nf(final_answer=1)",  # a parameter
        "def final_answer(x):\n    print(x)",  # a deliberate definition
        "from tools import final_answer",
        "print('final_answer = 3')",
        "final_answer (x)\nmy_final_answer = 1\nfinal_answer_value = 2",  # only calls it
        "r = final_answer\nfinal_answer(r)",  # a load, not a binding (slow path)
        "x = (",  # does not parse: returned as is
    ],
)
def test_fix_final_answer_leaves_other_code_alone(code):
    assert fix_final_answer(code) is code


# --- source_excerpt -----------------------------------------------------------------------


def test_excerpt_from_syntax_error():
    code = "x = 1\ny = (2 +\nprint(y)"
    try:
        compile(code, "<code>", "exec")
    except SyntaxError as err:
        excerpt = source_excerpt(code, err)
    line, carets = excerpt.split("\n")
    assert line == "   2 | y = (2 +"
    assert carets.index("^") == line.index("(")


def test_excerpt_from_line_number_underlines_statement():
    excerpt = source_excerpt("a = 1\n    total = sum(prices)\n", 2)
    line, carets = excerpt.split("\n")
    assert line.endswith("    total = sum(prices)")
    assert carets.count("^") == len("total = sum(prices)")
    assert carets.index("^") == line.index("t")


def test_excerpt_with_column_and_wide_characters():
    excerpt = source_excerpt("s = '中文' + )", 1, col=11)
    line, carets = excerpt.split("\n")
    # two CJK characters take two columns each, so the caret sits under the ")"
    assert carets.index("^") == len(line[: line.index(")")]) + 2


def test_excerpt_unknown_line_is_empty():
    assert source_excerpt("x = 1", 5) == ""
    assert source_excerpt("x = 1", 0) == ""


def test_excerpt_unexpected_eof_points_at_end():
    code = "def f():\n"
    try:
        compile(code, "<code>", "exec")
    except SyntaxError as err:
        assert source_excerpt(code, err).startswith("   1 | def f():")


def test_error_quotes_syntax_error_of_a_code_only_reply():
    with pytest.raises(CodeParseError) as info:
        parse_code("x = 1\ny = 2\nz = (3 +\nprint(z)")
    assert "(line 3)" in info.value.message and "   3 | z = (3 +" in info.value.message


def test_word_like_custom_close_tag_is_not_cut_from_a_name():
    # with tags ("<c>", "END"), a stop sequence may leave "EN"; a name ending in EN must survive
    assert parse_code("<c>\nx = TOKEN\n", ("<c>", "END")) == "x = TOKEN"
    assert parse_code("<c>\nx = TOKEN\nEN", ("<c>", "END")) == "x = TOKEN"
