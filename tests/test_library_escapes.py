"""The library-escape corpus (tests/library_escapes.py and, for the PyData stack,
tests/library_escapes_pydata.py): every attempt really escapes plain CPython, is code the restricted
policy accepts, and the neighbours (ordinary data code) work; and under the capability guard
every attempt is refused (or contained) in LocalExecutor and SubprocessExecutor while every
neighbour keeps working in both.

Attempts run in batches: one runner process forks a fresh child per attempt (see
tests/library_escape_harness.py), so the whole plain corpus takes seconds and touches nothing here.

DockerExecutor ("docker", tests/library_escape_docker.py: policy="restricted" on the PyData image,
one fresh container per attempt, two at a time, the canaries mounted in the container but not
granted) runs DOCKER_ATTEMPTS: the PyData attempts (their canaries: secret, target, marker,
tamper) and the base attempts whose canary the container places differently (env: in the
container's environment; port: the host's loopback, which the container's network="none" keeps
out of reach, so the network setting is what holds those, the guard behind it; stdout: the
container's stderr stream), and the PyData neighbours. Measured on the shared 2-core machine
under load (five CI suites running): ~0.8-1 s per attempt, so these 62 attempts, 8 neighbours and
the controls add ~75 s. The whole base corpus (211 attempts) would add ~3.5 min more, over the
suite's budget; the restricted worker in the container is the same code as SubprocessExecutor's,
which runs the whole corpus (with and without its kernel layer). DOCKER_CONTROLS prove the mode
sees an escape when one happens: a granted read and write, the probe of a step's own state, and,
with the guard off (policy="open"), the same canaries reached.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import library_escape_docker as docker_mode
import library_escape_harness as harness
import pytest
from cpython_routes import open_here
from library_escapes import ATTEMPTS as BASE_ATTEMPTS
from library_escapes import CLASSES, Attempt
from library_escapes import NEIGHBOURS as BASE_NEIGHBOURS
from library_escapes_pydata import PYDATA_ATTEMPTS, PYDATA_NEIGHBOURS

from executors.base import DEFAULT_AUTHORIZED_IMPORTS
from executors.restricted.compiler.checker import inspect_tree
from executors.restricted.libraries.sandbox_modules import Authorization

# Every attempt must be refused (or contained) by LocalExecutor and SubprocessExecutor, and every
# neighbour must keep working in both (set False to study the corpus against plain CPython only).
SANDBOX_ASSERTIONS = True
# the worker without its kernel layer too (issue 29): the guard alone must hold the corpus
SANDBOXED = ("local", "subprocess", "subprocess-noharden")

pytestmark = pytest.mark.timeout(600)
# numpy/pandas/matplotlib and the stdlib (library_escapes.py), then the PyData stack (issue 22)
ATTEMPTS = open_here(BASE_ATTEMPTS + PYDATA_ATTEMPTS)  # (cpython_routes.py: closed by this CPython)
NEIGHBOURS = BASE_NEIGHBOURS + PYDATA_NEIGHBOURS
IDS = [a.id for a in ATTEMPTS]
NEIGHBOUR_IDS = [n.id for n in NEIGHBOURS]
# In DockerExecutor too (see the module docstring): the PyData stack, and every canary kind.
DOCKER_ATTEMPTS = PYDATA_ATTEMPTS + [a for a in BASE_ATTEMPTS if a.canary in ("env", "port", "stdout")]
DOCKER_IDS = {a.id for a in DOCKER_ATTEMPTS}
DOCKER_NEIGHBOUR_IDS = {n.id for n in PYDATA_NEIGHBOURS}
_PLACEHOLDER = re.compile(r"\{[A-Z_]+\}")


# ----------------------------------------------------------------------------- batches
_cache: dict[str, dict] = {}


def _attempt_outcomes(executor: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, harness.Outcome]:
    if executor not in _cache:
        tmp = tmp_path_factory.mktemp(f"escapes-{executor}")
        if executor == "docker":
            run = _docker_run("attempts", docker_mode.run_attempts, DOCKER_ATTEMPTS, tmp)
            _cache[executor] = {a.id: o for a, o in zip(DOCKER_ATTEMPTS, run.outcomes, strict=True)}
        else:
            outcomes = harness.run_attempts(executor, ATTEMPTS, tmp)
            _cache[executor] = dict(zip(IDS, outcomes, strict=True))
    return _cache[executor]


def _neighbour_outcomes(executor: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, harness.NeighbourOutcome]:
    key = "neighbours-" + executor
    if key not in _cache:
        tmp = tmp_path_factory.mktemp(key)
        if executor == "docker":
            run = _docker_run("neighbours", docker_mode.run_neighbours, PYDATA_NEIGHBOURS, tmp)
            _cache[key] = {n.id: o for n, o in zip(PYDATA_NEIGHBOURS, run.outcomes, strict=True)}
        else:
            _cache[key] = dict(zip(NEIGHBOUR_IDS, harness.run_neighbours(executor, NEIGHBOURS, tmp), strict=True))
    return _cache[key]


_docker_runs: dict[str, docker_mode.DockerRun] = {}  # what each Docker run left behind is checked too


def _docker_run(name: str, run: Callable[..., docker_mode.DockerRun], *args: Any, **kwargs: Any) -> docker_mode.DockerRun:
    _docker_runs[name] = result = run(*args, **kwargs)
    return result


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


def _in_sandboxes(ids: list[str], in_docker: set[str]) -> list[Any]:
    """(executor, id) for every sandbox, plus "docker" for the ids it runs; shown as id-executor."""
    return [pytest.param(ex, i, id=f"{i}-{ex}") for i in ids
            for ex in (*SANDBOXED, *(("docker",) if i in in_docker else ()))]


@sandbox
@pytest.mark.parametrize(("executor", "attempt_id"), _in_sandboxes(IDS, DOCKER_IDS))
def test_attempt_is_refused_by_the_sandbox(executor: str, attempt_id: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    outcome = _attempt_outcomes(executor, tmp_path_factory)[attempt_id]
    assert not outcome.escaped, f"{attempt_id} escapes {executor}: {outcome.detail}"
    # Held because the attempt's process died or hung without a result (a host crash in process,
    # a worker that did not start) would prove nothing.
    assert "runner_error" not in outcome.detail, outcome.detail
    if executor == "docker":
        # nor because a canary (or the program a route runs) is missing in the container
        assert "No such file or directory" not in outcome.detail, f"missing in the container: {outcome.detail}"


@sandbox
@pytest.mark.parametrize(("executor", "neighbour_id"), _in_sandboxes(NEIGHBOUR_IDS, DOCKER_NEIGHBOUR_IDS))
def test_neighbour_works_in_the_sandbox(executor: str, neighbour_id: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    outcome = _neighbour_outcomes(executor, tmp_path_factory)[neighbour_id]
    assert outcome.works, outcome.detail


# ----------------------------------------------------------------------------- the Docker mode sees escapes
# Each reaches its canary in the container when nothing stops it: (attempts, run settings).
DOCKER_CONTROLS = [
    # The restricted worker, with the canary granted: the grant is what lets it through.
    ([_control("dctl-granted-read", "secret", 'import pathlib\nprint(pathlib.Path("{SECRET_FILE}").read_text())\n',
               imports=("pathlib",)),
      _control("dctl-granted-write", "target", 'import pathlib\npathlib.Path("{TARGET_FILE}").write_text("x")\n',
               imports=("pathlib",)),
      _control("dctl-own-state", "tamper", "level = 3\n", probe="level\n")],
     {"grant": ("secret", "target")}),
    # No guard (the container is the boundary): the same canaries, ungranted, are there to reach.
    ([_control("dctl-open-read", "secret", 'print(open("{SECRET_FILE}").read())\n'),
      _control("dctl-open-env", "env", 'import os\nprint(os.environ["{ENV_VAR}"])\n'),
      _control("dctl-open-marker", "marker", 'import os\nos.system("touch {MARKER}")\n'),
      _control("dctl-open-stderr", "stdout", 'f = open("/proc/1/fd/2", "w")\nf.write("{TOKEN}")\nf.close()\n')],
     {"policy": "open"}),
    # The host's loopback from the host's network namespace: the network setting is what holds port.
    ([_control("dctl-open-port", "port", 'import socket\nsocket.create_connection(("127.0.0.1", {PORT})).close()\n')],
     {"policy": "open", "network": "host"}),
]


@sandbox
@pytest.mark.parametrize(("attempts", "settings"), DOCKER_CONTROLS, ids=["granted", "open", "open-host-network"])
def test_the_docker_mode_sees_an_escape(attempts: list[Attempt], settings: dict, tmp_path: Path) -> None:
    run = _docker_run(attempts[0].id, docker_mode.run_attempts, attempts, tmp_path, **settings)
    assert [(a.id, o.escaped) for a, o in zip(attempts, run.outcomes, strict=True)] == [
        (a.id, True) for a in attempts], [o.detail for o in run.outcomes]


@sandbox
def test_the_docker_mode_holds_the_port_by_its_network(tmp_path: Path) -> None:
    """Without the guard and without a network, the host's listener is out of reach."""
    attempt = DOCKER_CONTROLS[2][0][0]
    run = _docker_run("port-no-network", docker_mode.run_attempts, [attempt], tmp_path, policy="open")
    assert not run.outcomes[0].escaped and "ConnectionRefusedError" in run.outcomes[0].detail, run.outcomes[0].detail


@sandbox
def test_the_docker_runs_leave_nothing_behind(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every container closed by its executor, every workdir removed (the run removes what is
    left anyway: this says whether it had to)."""
    _attempt_outcomes("docker", tmp_path_factory)
    _neighbour_outcomes("docker", tmp_path_factory)
    assert {name: run.leftovers for name, run in _docker_runs.items() if run.leftovers} == {}
