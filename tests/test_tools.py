from __future__ import annotations

import time

import pytest
from pydantic import BaseModel

from codeagent import Tool, tool
from codeagent.tools.tool import ToolArgumentError, ToolTimeoutError, safe_repr, tools_by_name
from executors import ToolError


class Point(BaseModel):
    x: int
    y: int


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def search(query: str, limit: int = 5, *, tags: list[str] | None = None) -> list[str]:
    """Search the catalogue.

    Args:
        query: words to look for.
        limit: at most this many hits.
    """
    return [f"{query}-{i}" for i in range(limit)] + list(tags or [])


@tool
def norm(p: Point) -> int:
    """Manhattan norm of a point."""
    return abs(p.x) + abs(p.y)


def test_decorator_keeps_name_doc_and_behaviour():
    assert isinstance(add, Tool) and add.name == "add" and add.__name__ == "add"
    assert add.description == "Add two integers."
    assert add(2, 40) == 42 and add(a=1, b=2) == 3


def test_signature_and_docstring_are_rendered_for_the_prompt():
    assert add.render() == 'def add(a: int, b: int) -> int:\n    """Add two integers."""'
    text = search.render()
    assert text.startswith(
        "def search(query: str, limit: int = 5, *, tags: list[str] | None = None) -> list[str]:"
    )
    assert "    Args:\n        query: words to look for." in text
    assert norm.signature_text() == "norm(p: Point) -> int"


def test_future_annotations_are_resolved_and_validated():
    # This module uses `from __future__ import annotations`: hints are strings until resolved.
    assert add.signature.parameters["a"].annotation is int
    with pytest.raises(ToolArgumentError):
        add("x", 1)


def test_argument_mismatch_names_argument_and_expected_type():
    with pytest.raises(ToolArgumentError) as info:
        add("forty", 2)
    message = str(info.value)
    assert "add() argument 'a' must be int" in message
    assert "got str 'forty'" in message
    assert "add(a: int, b: int) -> int" in message
    assert isinstance(info.value, ToolError) and isinstance(info.value, TypeError)


def test_nested_types_are_validated_and_coerced():
    assert search("q", 2, tags=["t"]) == ["q-0", "q-1", "t"]
    with pytest.raises(ToolArgumentError, match=r"argument 'tags' must be list\[str\] \| None"):
        search("q", tags=[1, 2])
    assert norm({"x": 3, "y": -4}) == 7  # a dict becomes the pydantic model the hint names
    with pytest.raises(ToolArgumentError, match="argument 'p' must be Point.*y: Field required"):
        norm({"x": 1})


def test_missing_and_unexpected_arguments_are_tool_errors():
    with pytest.raises(ToolArgumentError, match=r"add\(\) missing a required argument: 'b'"):
        add(1)
    with pytest.raises(ToolArgumentError, match="unexpected keyword argument 'c'"):
        add(1, 2, c=3)


def test_a_tool_that_raises_is_reported_as_that_tools_error():
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        raise KeyError(key)

    with pytest.raises(ToolError, match=r"^tool 'lookup' failed: KeyError: 'k'$") as info:
        lookup("k")
    assert isinstance(info.value.__cause__, KeyError)


def _boom() -> int:
    """Always fails."""
    return 1 // 0


def test_a_tools_failure_is_worded_as_the_executors_word_a_plain_functions():
    # Called directly (ToolCallingAgent does), a Tool says what the executor says of a plain function.
    from executors.local import LocalExecutor

    with pytest.raises(ToolError) as info:
        tool(_boom, name="boom")()
    with LocalExecutor(tools={"boom": _boom}) as ex:
        plain = ex.execute("boom()").error
    assert plain is not None and plain.type == "ToolError"
    assert str(info.value) == plain.message == "tool 'boom' failed: ZeroDivisionError: integer division or modulo by zero"


@pytest.mark.parametrize("kind", ["local", "subprocess"])
def test_a_failed_tool_says_it_once_through_the_executor(kind):
    from executors.local import LocalExecutor
    from executors.process import SubprocessExecutor

    cls = LocalExecutor if kind == "local" else SubprocessExecutor
    errors = []
    for fn in (_boom, tool(_boom, name="boom")):
        with cls(tools={"boom": fn}) as ex:
            errors.append(str(ex.execute("boom()").error))
    assert errors[0] == errors[1] == "ToolError: tool 'boom' failed: ZeroDivisionError: integer division or modulo by zero (line 1: boom())"


def test_timeout():
    @tool(timeout_s=0.05)
    def slow(seconds: float) -> str:
        """Sleep."""
        time.sleep(seconds)
        return "done"

    assert slow(0) == "done"
    t0 = time.perf_counter()
    with pytest.raises(ToolTimeoutError, match=r"slow\(\) did not return within its 0.05 s timeout"):
        slow(2)
    assert time.perf_counter() - t0 < 1.0
    with pytest.raises(ValueError, match="timeout_s"):
        Tool(lambda: 1, name="bad", timeout_s=0)


def test_errors_inside_a_timed_tool_keep_their_message():
    @tool(timeout_s=1)
    def broken() -> int:
        """Always fails."""
        return 1 // 0

    with pytest.raises(ToolError, match="ZeroDivisionError"):
        broken()


def test_from_function_and_options():
    def mul(a: float, b: float = 2.0):
        return a * b

    t = Tool.from_function(mul, name="times", description="Multiply.")
    assert t.name == "times" and t.render() == 'def times(a: float, b: float = 2.0):\n    """Multiply."""'
    assert t(3) == 6.0 and t("1.5", 2) == 3.0  # pydantic's lax mode: numeric strings are accepted
    untyped = Tool(lambda x, *rest, **kw: (x, rest, kw), name="free")
    assert untyped(1, 2, k=3) == (1, (2,), {"k": 3})
    assert untyped.render().startswith("def free(x, *rest, **kw):")
    with pytest.raises(ValueError, match="public Python identifier"):
        Tool(mul, name="_private")


def test_tools_by_name():
    def plain(x: int) -> int:
        return x

    tools = tools_by_name([add, plain])
    assert list(tools) == ["add", "plain"] and all(isinstance(t, Tool) for t in tools.values())
    renamed = tools_by_name({"plus": add})
    assert renamed["plus"].name == "plus" and renamed["plus"](1, 1) == 2
    with pytest.raises(ValueError, match="unique"):
        tools_by_name([add, add])
    with pytest.raises(ValueError, match="final_answer"):
        tools_by_name({"final_answer": plain})


def test_safe_repr_never_runs_foreign_repr():
    class Evil:
        def __repr__(self):  # pragma: no cover - must not run
            raise AssertionError("host ran model code")

    assert safe_repr(Evil()) == "<Evil object>"
    assert safe_repr([Evil()]) == "<list of 1 items>"
    assert safe_repr("x" * 500).endswith("...") and len(safe_repr("x" * 500)) == 120


def test_tool_errors_reach_model_code_through_the_executor():
    local = pytest.importorskip("executors.local")
    with local.LocalExecutor(tools={"add": add}) as ex:
        r = ex.execute("add('forty', 2)")
        assert r.error is not None and "argument 'a' must be int" in r.error.message
        r = ex.execute("try:\n    add('x', 1)\nexcept Exception as e:\n    print('caught')\nadd(1, 2)")
        assert r.error is None and r.logs == "caught\n" and r.output == 3
