"""The library-escape corpus (tests/library_escapes.py and, for the PyData stack,
tests/library_escapes_pydata.py): every attempt really escapes plain CPython, is code the restricted
policy accepts, and the neighbours (ordinary data code) work; and under the capability guard
every attempt is refused (or contained) in LocalExecutor and SubprocessExecutor while every
neighbour keeps working in both.

Attempts run in batches: one runner process forks a fresh child per attempt (see
tests/library_escape_harness.py), so the whole plain corpus takes seconds and touches nothing here.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import library_escape_harness as harness
import pytest
from library_escapes import ATTEMPTS as BASE_ATTEMPTS
from library_escapes import CLASSES, Attempt
from library_escapes import NEIGHBOURS as BASE_NEIGHBOURS
from library_escapes_pydata import PYDATA_ATTEMPTS, PYDATA_NEIGHBOURS

from executors.base import DEFAULT_AUTHORIZED_IMPORTS
from executors.restricted.checker import inspect_tree
from executors.restricted.sandbox_modules import Authorization

# Every attempt must be refused (or contained) by LocalExecutor and SubprocessExecutor, and every
# neighbour must keep working in both (set False to study the corpus against plain CPython only).
SANDBOX_ASSERTIONS = True
# the worker without its kernel layer too (issue 29): the guard alone must hold the corpus
SANDBOXED = ("local", "subprocess", "subprocess-noharden")

pytestmark = pytest.mark.timeout(600)
# numpy/pandas/matplotlib and the stdlib (library_escapes.py), then the PyData stack (issue 22)
ATTEMPTS = BASE_ATTEMPTS + PYDATA_ATTEMPTS
NEIGHBOURS = BASE_NEIGHBOURS + PYDATA_NEIGHBOURS
IDS = [a.id for a in ATTEMPTS]
NEIGHBOUR_IDS = [n.id for n in NEIGHBOURS]
_PLACEHOLDER = re.compile(r"\{[A-Z_]+\}")


# ----------------------------------------------------------------------------- batches
_cache: dict[str, dict] = {}


def _attempt_outcomes(executor: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, harness.Outcome]:
    if executor not in _cache:
        tmp = tmp_path_factory.mktemp(f"escapes-{executor}")
        outcomes = harness.run_attempts(executor, ATTEMPTS, tmp)
        _cache[executor] = dict(zip(IDS, outcomes, strict=True))
    return _cache[executor]


def _neighbour_outcomes(executor: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, harness.NeighbourOutcome]:
    key = "neighbours-" + executor
    if key not in _cache:
        tmp = tmp_path_factory.mktemp(key)
        _cache[key] = dict(zip(NEIGHBOUR_IDS, harness.run_neighbours(executor, NEIGHBOURS, tmp), strict=True))
    return _cache[key]


# ----------------------------------------------------------------------------- the corpus itself
def test_corpus_is_broad() -> None:
    assert len(ATTEMPTS) >= 90
    per_class = Counter(a.klass for a in ATTEMPTS)
    assert set(per_class) == set(CLASSES)
    assert min(per_class.values()) >= 5, per_class
    libraries = {a.library for a in ATTEMPTS}
    assert {"numpy", "pandas", "matplotlib"} <= libraries
    # many independent routes, not variations of one
    for klass in CLASSES:
        routes = {a.route for a in ATTEMPTS if a.klass == klass}
        assert len(routes) >= 5, (klass, routes)
    for lib in ("numpy", "pandas", "matplotlib"):
        assert len({a.klass for a in ATTEMPTS if a.library == lib}) >= 5, lib
    assert len(NEIGHBOURS) >= 20
    assert len(set(IDS)) == len(IDS) and len(set(NEIGHBOUR_IDS)) == len(NEIGHBOUR_IDS)


def test_the_pydata_stack_is_in_the_corpus() -> None:
    """Issue 22: reads and writes outside the grants, joblib/statsmodels pickles, sympy and patsy
    strings with attribute chains, native code and processes through the PyData libraries."""
    routes = {a.klass: set() for a in PYDATA_ATTEMPTS}
    for a in PYDATA_ATTEMPTS:
        routes[a.klass].add(a.library)
    assert {"polars", "pyarrow", "sklearn", "networkx"} <= routes["read"]
    assert {"polars", "pyarrow", "scipy", "joblib", "networkx"} <= routes["write"]
    assert {"joblib", "statsmodels"} <= routes["unpickle"]
    assert {"sympy", "statsmodels", "patsy"} <= routes["evaluator"]
    assert routes["native"] and {"joblib", "sklearn"} <= routes["execute"]
    assert {"pyarrow", "scipy", "polars", "sklearn", "seaborn"} <= routes["tamper"]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=IDS)
def test_attempt_is_well_formed(attempt: Attempt) -> None:
    assert attempt.klass in CLASSES
    assert attempt.canary in ("secret", "target", "marker", "env", "port", "stdout", "tamper")
    assert (attempt.canary == "tamper") == bool(attempt.probe)
    canaries = harness.dummy_canaries()
    for code in (attempt.code, attempt.probe):
        rendered = harness.render(code, canaries)
        assert not _PLACEHOLDER.search(rendered), f"unknown placeholder in {attempt.id}: {rendered}"


def _imported_modules(tree: ast.AST) -> list[str]:
    names = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    return names + [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=IDS)
def test_attempt_is_accepted_by_the_policy(attempt: Attempt) -> None:
    """The language is not the way out: the code (and the tamper probe) passes the AST policy and
    imports only what the attempt authorizes. The library is what escapes."""
    canaries = harness.dummy_canaries()
    for code, imports in ((attempt.code, attempt.imports), (attempt.probe, attempt.imports + attempt.probe_imports)):
        if not code:
            continue
        tree = ast.parse(harness.render(code, canaries))
        violations = inspect_tree(tree)
        assert violations == [], [v.message for v in violations]
        authorization = Authorization(list(imports) + list(DEFAULT_AUTHORIZED_IMPORTS))
        unauthorized = [m for m in _imported_modules(tree) if not authorization.allows(m)]
        assert unauthorized == [], f"{attempt.id} imports {unauthorized} beyond {imports}"


# ----------------------------------------------------------------------------- plain CPython
@pytest.mark.parametrize("attempt_id", IDS)
def test_attempt_escapes_plain_cpython(attempt_id: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    outcome = _attempt_outcomes("plain", tmp_path_factory)[attempt_id]
    assert outcome.escaped, f"{attempt_id} does not escape plain CPython: {outcome.detail}"


@pytest.mark.parametrize("neighbour_id", NEIGHBOUR_IDS)
def test_neighbour_works_in_plain_cpython(neighbour_id: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    outcome = _neighbour_outcomes("plain", tmp_path_factory)[neighbour_id]
    assert outcome.works, outcome.detail


# ----------------------------------------------------------------------------- the harness judges
def _control(id: str, canary: str, code: str, probe: str = "", imports: tuple[str, ...] = ()) -> Attempt:
    return Attempt(id=id, klass="read", imports=imports, code=code, route="control", canary=canary, probe=probe)


# Shaped like attempts, aimed next to the canary: a harness that calls these escapes is broken.
CONTROLS = [
    _control("ctl-secret", "secret", 'import pathlib\npathlib.Path("{WORK_DIR}/x").write_text("no secret")\n'
             'print(pathlib.Path("{WORK_DIR}/x").read_text())\n', imports=("pathlib",)),
    _control("ctl-target", "target", 'import pathlib\npathlib.Path("{WORK_DIR}/out").write_text("x")\n',
             imports=("pathlib",)),
    _control("ctl-marker", "marker", 'import subprocess\nsubprocess.run(["touch", "{WORK_DIR}/m"])\n',
             imports=("subprocess",)),
    _control("ctl-env", "env", 'import os\nos.environ.get("HOME")\n', imports=("os",)),
    _control("ctl-port", "port", "import socket\ns = socket.socket()\ns.close()\n", imports=("socket",)),
    _control("ctl-stdout", "stdout", 'print("{TOKEN}")\n'),
    _control("ctl-tamper", "tamper", "import numpy as np\nnp.get_printoptions()\n",
             probe='import numpy as np\nnp.get_printoptions()["precision"]', imports=("numpy",)),
]


def test_harness_does_not_call_near_misses_escapes(tmp_path: Path) -> None:
    outcomes = harness.run_attempts("plain", CONTROLS, tmp_path)
    assert [(c.id, o.escaped) for c, o in zip(CONTROLS, outcomes, strict=True)] == [(c.id, False) for c in CONTROLS], [
        o.detail for o in outcomes]


def test_harness_in_process_factory(tmp_path: Path) -> None:
    """A callable factory runs in this process; the step's own prints stay in its logs."""
    from executors import LocalExecutor

    outcomes = harness.run_attempts(lambda imports: LocalExecutor(authorized_imports=imports),
                                    [CONTROLS[5], CONTROLS[6]], tmp_path)
    assert [o.escaped for o in outcomes] == [False, False], [o.detail for o in outcomes]
    assert outcomes[0].refused_error is None and "stdout" in outcomes[0].logs


# ----------------------------------------------------------------------------- the sandbox (off until the guard lands)
sandbox = pytest.mark.skipif(not SANDBOX_ASSERTIONS, reason="capability guard not built yet: flip SANDBOX_ASSERTIONS")


@sandbox
@pytest.mark.parametrize("executor", SANDBOXED)
@pytest.mark.parametrize("attempt_id", IDS)
def test_attempt_is_refused_by_the_sandbox(executor: str, attempt_id: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    outcome = _attempt_outcomes(executor, tmp_path_factory)[attempt_id]
    assert not outcome.escaped, f"{attempt_id} escapes {executor}: {outcome.detail}"


@sandbox
@pytest.mark.parametrize("executor", SANDBOXED)
@pytest.mark.parametrize("neighbour_id", NEIGHBOUR_IDS)
def test_neighbour_works_in_the_sandbox(executor: str, neighbour_id: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    outcome = _neighbour_outcomes(executor, tmp_path_factory)[neighbour_id]
    assert outcome.works, outcome.detail
