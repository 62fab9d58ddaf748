import pytest

from executors import ExecutionError, ExecutionResult, FinalAnswer, Limits
from executors.base import normalize_imports, normalize_tools


def test_final_answer_is_not_an_exception():
    assert issubclass(FinalAnswer, BaseException) and not issubclass(FinalAnswer, Exception)
    assert FinalAnswer(42).value == 42


def test_limits_validate():
    with pytest.raises(ValueError, match="timeout_s"):
        Limits(timeout_s=0)
    with pytest.raises(ValueError, match="max_operations"):
        Limits(max_operations=-1)
    assert Limits(max_operations=None).max_operations is None


def test_error_renders_for_the_model():
    e = ExecutionError("NameError", "name 'x' is not defined", 3, "print(x)")
    assert str(e) == "NameError: name 'x' is not defined (line 3: print(x))"
    assert ExecutionResult().ok and not ExecutionResult(error=e).ok


def test_normalize_tools_and_imports():
    def add(a, b):
        return a + b

    assert normalize_tools([add]) == {"add": add}
    with pytest.raises(ValueError):
        normalize_tools({"_secret": add})
    with pytest.raises(ValueError):
        normalize_tools({"final_answer": add})
    assert "numpy.*" in normalize_imports(["numpy.*"])
    with pytest.raises(TypeError):
        normalize_imports("math")
