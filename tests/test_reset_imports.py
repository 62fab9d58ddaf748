"""reset() forgets the model's variables, not the work of importing its libraries (issue 44):
the module proxies (sympy's takes ~100 ms to build) and what the host guard learnt of the host's
objects outlive it; the variables, and what the model's code defined, do not."""

from __future__ import annotations

import pytest

from executors import Limits, LocalExecutor
from executors.restricted.libraries.sandbox_modules import SandboxImporter

pytest.importorskip("sympy")


def test_an_import_after_reset_builds_no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    real = SandboxImporter._members

    def counting(self, name, module, hidden):  # noqa: ANN001, ANN202
        built.append(name)
        return real(self, name, module, hidden)

    monkeypatch.setattr(SandboxImporter, "_members", counting)
    with LocalExecutor(authorized_imports=["sympy", "numpy"], limits=Limits(timeout_s=60)) as ex:
        code = "import sympy\nfrom sympy.abc import x\nimport numpy as np\nprint(sympy.expand((x + 1)**2), np.arange(2))"
        assert ex.execute(code).logs == "x**2 + 2*x + 1 [0 1]\n"
        first = list(built)
        assert "sympy" in first and "numpy" in first
        for _ in range(3):
            ex.reset()
            r = ex.execute(code)
            assert r.error is None and r.logs == "x**2 + 2*x + 1 [0 1]\n"
        assert built == first  # (nothing built again)


def test_reset_still_forgets_what_the_model_made() -> None:
    with LocalExecutor(authorized_imports=["sympy", "builtins"], limits=Limits(timeout_s=60)) as ex:
        assert ex.execute("import builtins\nimport sympy\nx = sympy.Symbol('x')\ndef f():\n    return 1\n"
                          "class K:\n    pass\n").error is None
        kept = ex.execute("g = f").error
        assert kept is None
        ex.reset()
        for name in ("x", "f", "K", "g", "sympy", "builtins"):
            r = ex.execute(name)
            assert r.error is not None and r.error.type == "NameError", name
        # (`import builtins` gives the new namespace's own builtins)
        assert ex.execute("import builtins\nbuiltins.len([1])").output == 1


def test_a_workers_reset_rides_on_the_next_request() -> None:
    """SubprocessExecutor.reset() sends nothing by itself: the next step's frame carries it (one
    round trip, not two); any other request sends it first. Either way the variables are gone."""
    from executors import SubprocessExecutor

    with SubprocessExecutor(limits=Limits(timeout_s=30)) as ex:
        assert ex.execute("x = 1").error is None
        ex.reset()
        assert ex.get_variables() == {}
        assert ex.execute("y = 2").error is None
        ex.reset()
        ex.set_variables({"z": 3})
        r = ex.execute("print(z)\ny")
        assert r.logs == "3\n" and r.error is not None and r.error.type == "NameError"
        ex.reset()
        r = ex.execute("z")
        assert r.error is not None and r.error.type == "NameError" and not r.state_lost
