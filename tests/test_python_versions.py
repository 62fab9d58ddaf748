"""What each CPython from 3.11 to 3.14 changed, held: new syntax runs as in CPython with the
guarantees of the rest (compiler/policy.py NEWER_SYNTAX says why for each feature), what CPython
evaluates lazily stops once the step is over, dataclasses and annotationlib read annotations in the
step, and the free-threaded build is refused at import.

Each test runs on the version that has the feature and skips (with the version it needs) on the
others: `scripts/test-pythons --tier` runs this file on 3.12, 3.13 and 3.14 (CI does).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from cpython_oracle import run_cpython

from executors import Limits, LocalExecutor
from executors.restricted.capabilities.generators import rebinds_annotations
from executors.restricted.compiler import names
from executors.restricted.compiler.instrument import instrument
from executors.restricted.guards.errors import SandboxFinished

ROOT = Path(__file__).resolve().parents[1]


def needs(version: tuple[int, int]) -> pytest.MarkDecorator:
    return pytest.mark.skipif(sys.version_info < version,
                              reason="CPython {}.{} syntax (scripts/test-pythons runs it there)".format(*version))


# (id, code, the CPython that has the syntax): each must print and answer as CPython does.
PROGRAMS = [
    ("type_alias", "type Pair = tuple[int, int]\nprint(Pair, Pair.__name__)\n[Pair]", (3, 12)),
    ("type_alias_generic", "type Grid[T] = list[list[T]]\nprint(Grid)\nGrid", (3, 12)),
    ("generic_function", "def first[T](xs: list[T]) -> T:\n    return xs[0]\nfirst([3, 4])", (3, 12)),
    ("generic_class", "class Box[T]:\n    def __init__(self, v: T):\n        self.v = v\n"
                      "    def get(self) -> T:\n        return self.v\n(Box[int](3).get(), Box('a').v)", (3, 12)),
    ("type_params_all_kinds", "def f[T: (int, str), U: int, *Ts, **P](x: T) -> T:\n    return x\n"
                              "(f(1), f('a'))", (3, 12)),
    ("type_param_default", "def f[T = int](x: T) -> T:\n    return x\nclass C[K, V = str]:\n    pass\n"
                           "(f(2), C.__name__)", (3, 13)),
    ("template_string", "who = 'world'\nt = t'hello {who!r:>8} and {1 + 1}'\n"
                        "print(t.strings, [(i.value, i.expression, i.conversion, i.format_spec) "
                        "for i in t.interpolations])\nt.values", (3, 14)),
    ("deferred_annotation_forward_name", "from dataclasses import dataclass, fields\n@dataclass\n"
                                         "class Node:\n    nxt: Node | None = None\n    v: int = 0\n"
                                         "print(Node(None, 3), [str(f.type) for f in fields(Node)])", (3, 14)),
    ("deferred_annotation_named_tuple", "from typing import NamedTuple\nclass P(NamedTuple):\n"
                                        "    x: int\n    y: Later = 0\nP(1)", (3, 14)),
    ("annotation_computed", "def f(x: sum(range(4))) -> int:\n    return x * 2\nf(21)", (3, 11)),
    ("dataclass_methods", "from dataclasses import dataclass\n@dataclass(order=True)\nclass P:\n"
                          "    x: int\n    y: int = 2\n(P(1), P(1) < P(2), P(3) == P(3, 2))", (3, 11)),
    ("enum_by_value", "import enum\nclass Color(enum.Enum):\n    RED = 1\n    GREEN = 2\n"
                      "(Color(2), Color['RED'], enum.Enum('E', 'A B')(2))", (3, 11)),
]


@pytest.mark.parametrize("code", [pytest.param(c, marks=needs(v)) for _, c, v in PROGRAMS],
                         ids=[i for i, _, _ in PROGRAMS])
def test_new_syntax_runs_as_in_cpython(code: str) -> None:
    ref = run_cpython(code)
    assert ref.error_type is None, ref
    with LocalExecutor() as ex:
        r = ex.execute(code)
    assert r.error is None, r.error
    assert (r.logs, r.output_repr) == (ref.logs, None if ref.output is None else repr(ref.output))


@needs((3, 12))
@pytest.mark.parametrize("code", ["def f[_T](x):\n    return x", "type _X = int",
                                  "class C[T: (lambda: 1).__globals__]:\n    pass"])
def test_new_syntax_keeps_the_policy(code: str) -> None:
    """Type parameters and aliases are names and expressions like any other: underscore names and
    attributes are refused with the usual teaching message."""
    with LocalExecutor() as ex:
        r = ex.execute(code)
    assert r.error is not None and r.error.type == "PolicyError", r.error
    assert "not allowed" in r.error.message and "'_" in r.error.message


def _instrumented(code: str) -> dict:
    """`code` checked-free but instrumented, run with a live flag the test turns off."""
    tree = instrument(ast.parse(code), metered=False)
    ns: dict = {names.LIVE: True}

    def dead() -> None:
        raise SandboxFinished("the step has ended")

    ns[names.DEAD] = dead
    exec(compile(tree, "<step-test>", "exec", dont_inherit=True), ns)  # (no __future__ of ours)
    ns[names.LIVE] = False  # the step is over
    return ns


LAZY = [
    ("type_alias_value", "type X = [i for i in range(3)]", lambda ns: ns["X"].__value__, (3, 12)),
    ("type_param_bound", "def f[T: sum([1, 2])](x): pass", lambda ns: ns["f"].__type_params__[0].__bound__, (3, 12)),
    ("type_param_constraint", "def f[T: (int, sum([1]))](x): pass",
     lambda ns: ns["f"].__type_params__[0].__constraints__, (3, 12)),
    ("type_param_default", "def f[T = sum([1])](x): pass",
     lambda ns: ns["f"].__type_params__[0].__default__, (3, 13)),
    ("deferred_annotation", "def f(x: sum(range(10 ** 6))) -> int: pass",
     lambda ns: ns["f"].__annotations__, (3, 14)),
    ("deferred_class_annotation", "class C:\n    x: [i for i in range(3)]",
     lambda ns: ns["C"].__annotations__, (3, 14)),
]


@pytest.mark.parametrize(("code", "ask"), [pytest.param(c, a, marks=needs(v)) for _, c, a, v in LAZY],
                         ids=[i for i, _, _, _ in LAZY])
def test_what_cpython_evaluates_later_stops_after_the_step(code: str, ask) -> None:
    with pytest.raises(SandboxFinished):
        ask(_instrumented(code))


@needs((3, 12))
def test_expressions_that_only_name_types_are_left_as_written() -> None:
    """`int | None`, `list[Node]`, `np.ndarray`: nothing of the model's runs in them but
    functions (checked at their entry), so they keep their text (annotationlib's STRING and
    FORWARDREF formats show it, as in CPython)."""
    ns = _instrumented("class Node:\n    pass\ntype X = dict[str, list[Node]] | None")
    node = ns["Node"]
    assert str(ns["X"].__value__) == str(dict[str, list[node]] | None)


@needs((3, 14))
def test_annotationlib_may_rebind_annotate_functions_only() -> None:
    import annotationlib

    def f(x: int) -> None:
        pass

    caller = annotationlib.call_annotate_function.__code__
    assert rebinds_annotations(caller, f.__annotate__.__code__)
    assert not rebinds_annotations(caller, f.__code__)  # any other function's code
    assert not rebinds_annotations(f.__code__, f.__annotate__.__code__)  # any other caller


def test_the_free_threaded_build_is_refused_at_import() -> None:
    # No free-threaded CPython is installed here (Debian and pyenv ship none): its build flag is
    # what the check reads, so the test sets it before the import.
    script = "import sys\nsys.abiflags = sys.abiflags + 't'\nimport executors"
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: executors does not run on CPython's free-threaded build")
    assert "python{}.{}t".format(*sys.version_info) in last


def test_a_step_that_times_out_leaves_the_host_its_interrupt_machinery() -> None:
    # 3.14 audits every ctypes call: the runtime's own (dropping a pending interrupt in the step's
    # thread) was refused by the step's guard, and the next CPU alarm killed the host.
    with LocalExecutor(limits=Limits(timeout_s=0.3)) as ex:
        for _ in range(3):
            r = ex.execute("import re\nre.match('(a+)+$', 'a' * 40 + 'b')")
            assert r.error is not None and r.error.type == "TimeoutError", r.error
        assert ex.execute("6 * 7").output == 42
