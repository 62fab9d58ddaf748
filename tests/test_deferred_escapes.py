"""The deferred-escape corpus (issues 21 and 29): what model code leaves behind for the host, hands
to a tool, or changes in objects the host shares with it.

Every attempt is code the restricted policy accepts, gets out in plain CPython (the same steps,
tools and host actions with no sandbox: that makes it real), and must be held — nothing fired,
no crash — by LocalExecutor, the hardened SubprocessExecutor and SubprocessExecutor(harden=False);
the registries of the authorized packages are unchanged after every shared-state attempt in
process; the neighbours (data programs, figures, numpy/pandas values to and from tools,
get_variables of a DataFrame) keep working everywhere.

One runner process per mode forks a child per attempt (or per group of attempts that share an
executor, see deferred_escape_harness.SHARED_EXECUTOR_CLASSES); the outcomes are computed once
per mode and shared by the parametrized tests. `tests/deferred_escape_report.py` prints the same
outcomes as counts per class and mode.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import deferred_escape_harness as harness
import pytest
from deferred_escapes import ATTEMPTS, CANARIES, CLASSES, NEIGHBOURS, Attempt, attempt
from deferred_host import HOST_ONLY, LIFECYCLE_ACTIONS, TOOL_NAMES, VALUE_ACTIONS

from executors.base import DEFAULT_AUTHORIZED_IMPORTS
from executors.restricted.compiler.checker import inspect_tree
from executors.restricted.libraries.sandbox_modules import Authorization

pytestmark = pytest.mark.timeout(900)
IDS = [a.id for a in ATTEMPTS]
NEIGHBOUR_IDS = [n.id for n in NEIGHBOURS]
_PLACEHOLDER = re.compile(r"\{[A-Z_]+\}")
HOST_OBJECTS = ("df", "series", "arr", "fig", "config", "history")
# Registry attempts whose target is not a module-level container the generic fingerprint walks:
# a cache (left out by name: caches fill by themselves) and numpy's print options (a context
# variable). Their probes still see them.
NOT_MODULE_LEVEL = ("shared-mpl-colour-cache", "shared-np-printoptions")

_cache: dict[str, dict] = {}


def _run(mode: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    if mode not in _cache:
        outcomes, neighbours = harness.run_corpus(mode, ATTEMPTS, NEIGHBOURS, tmp_path_factory.mktemp(f"deferred-{mode}"))
        _cache[mode] = dict(zip(IDS, outcomes, strict=True))
        _cache["neighbours-" + mode] = dict(zip(NEIGHBOUR_IDS, neighbours, strict=True))


def _outcomes(mode: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, harness.Outcome]:
    _run(mode, tmp_path_factory)
    return _cache[mode]


def _neighbours(mode: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, harness.NeighbourOutcome]:
    _run(mode, tmp_path_factory)
    return _cache["neighbours-" + mode]


# ----------------------------------------------------------------------------- the corpus itself
def test_corpus_is_broad() -> None:
    assert len(ATTEMPTS) >= 150
    assert len(set(IDS)) == len(IDS)
    per_class = Counter(a.klass for a in ATTEMPTS)
    assert set(per_class) == set(CLASSES)
    assert min(per_class.values()) >= 8, per_class
    assert {a.canary for a in ATTEMPTS} == set(CANARIES)
    # every tool of the harness is attacked, and many different host actions
    assert {t for a in ATTEMPTS for t in a.tools} == set(TOOL_NAMES)
    assert len({h.split("@")[0] for a in ATTEMPTS for h in a.host}) >= 40
    assert len(NEIGHBOURS) >= 10


def _known_action(action: str) -> bool:
    name, _, source = action.partition("@")
    if name in HOST_ONLY or name.partition(":")[0] in LIFECYCLE_ACTIONS:
        return not source
    kind, _, arg = source.partition(":")
    sources_ok = (not source or kind == "output" or (kind == "var" and arg) or
                  (kind == "host" and arg in (*HOST_OBJECTS, "figure")) or source in ("tool:catalog", "tool:frame"))
    return name in VALUE_ACTIONS and bool(sources_ok)


@pytest.mark.parametrize("item", ATTEMPTS + NEIGHBOURS, ids=IDS + NEIGHBOUR_IDS)
def test_attempt_is_well_formed(item: Attempt) -> None:
    assert item.klass in (*CLASSES, "neighbour")
    assert item.canary in CANARIES
    assert all(_known_action(a) for a in item.host), item.host
    assert set(item.tools) <= set(TOOL_NAMES)
    assert set(item.variables) <= set(HOST_OBJECTS)
    canaries = harness.dummy_canaries()
    for code in (*item.steps, *item.after, item.probe):
        rendered = harness.render(code, canaries)
        assert not _PLACEHOLDER.search(rendered), f"unknown placeholder in {item.id}: {rendered}"


def _imported_modules(tree: ast.AST) -> list[str]:
    names = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    return names + [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]


@pytest.mark.parametrize("item", ATTEMPTS + NEIGHBOURS, ids=IDS + NEIGHBOUR_IDS)
def test_attempt_is_accepted_by_the_policy(item: Attempt) -> None:
    """The language is not the way out: every step (and the probe) passes the AST policy and
    imports only what the attempt authorizes. What the host does afterwards is the way out."""
    canaries = harness.dummy_canaries()
    authorization = Authorization(list(item.imports) + list(DEFAULT_AUTHORIZED_IMPORTS))
    for code in (*item.steps, *item.after, item.probe):
        if not code:
            continue
        tree = ast.parse(harness.render(code, canaries))
        violations = inspect_tree(tree, frozenset(item.tools) | {"final_answer"})
        assert violations == [], [v.message for v in violations]
        # by the authorization's rule: a package brings its public modules (pandas.core.accessor
        # too: what holds there is that its registries' members are hidden, rules.hidden_object)
        unauthorized = [m for m in _imported_modules(tree) if not authorization.allows(m)]
        assert unauthorized == [], f"{item.id} imports {unauthorized} beyond {item.imports}"


# ----------------------------------------------------------------------------- plain CPython
@pytest.mark.parametrize("attempt_id", IDS)
def test_attempt_gets_out_in_plain_cpython(attempt_id: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    outcome = _outcomes("plain", tmp_path_factory)[attempt_id]
    aim = next(a for a in ATTEMPTS if a.id == attempt_id).canary
    assert aim in outcome.escaped, f"{attempt_id} does not reach its {aim} canary in plain CPython: {outcome.detail}"


@pytest.mark.parametrize("attempt_id", [a.id for a in ATTEMPTS if a.canary == "registry" and a.id not in NOT_MODULE_LEVEL])
def test_generic_fingerprint_sees_each_registry_attempt(attempt_id: str,
                                                        tmp_path_factory: pytest.TempPathFactory) -> None:
    """The registry enumeration is not blind: in plain CPython it sees every registry change."""
    assert _outcomes("plain", tmp_path_factory)[attempt_id].registry_changes


@pytest.mark.parametrize("neighbour_id", NEIGHBOUR_IDS)
def test_neighbour_works_in_plain_cpython(neighbour_id: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    outcome = _neighbours("plain", tmp_path_factory)[neighbour_id]
    assert outcome.works, outcome.detail


# ----------------------------------------------------------------------------- the harness judges
def _control(id: str, canary: str, steps: str, host: str = "", **kw: object) -> Attempt:
    return attempt(id, "output", "pathlib tempfile", steps, host, canary, **kw)


# Shaped like attempts, aimed next to the canary: a harness that calls these escapes is broken.
CONTROLS = [
    _control("ctl-target", "target", 'import pathlib\npathlib.Path("scratch.txt").write_text("x")'),
    _control("ctl-secret", "secret", 'import pathlib\nprint(pathlib.Path("{SECRET}").name)', host="print"),
    _control("ctl-toolkey", "toolkey", 'print(forecast("oslo"))', tools="forecast"),
    _control("ctl-env", "env", 'print(verify("1234"))', tools="verify"),
    _control("ctl-thread", "thread", "class Answer:\n    pass\nAnswer()", host="print reset"),
    attempt("ctl-registry", "shared", "http", "import http\nhttp.HTTPStatus.OK.value", "", "registry",
            probe="import http\nhttp.HTTPStatus.OK.phrase"),
]


def test_harness_does_not_call_near_misses_escapes(tmp_path: Path) -> None:
    for mode in ("plain", "local"):
        outcomes = harness.run_attempts(mode, CONTROLS, tmp_path / mode)
        assert [(c.id, o.escaped) for c, o in zip(CONTROLS, outcomes, strict=True)] == \
            [(c.id, ()) for c in CONTROLS], [o.detail for o in outcomes]
        assert all(not o.registry_changes for o in outcomes), [o.registry_changes for o in outcomes]


# ----------------------------------------------------------------------------- the executors
@pytest.mark.parametrize("mode", harness.SANDBOXED)
@pytest.mark.parametrize("attempt_id", IDS)
def test_attempt_is_held(mode: str, attempt_id: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    outcome = _outcomes(mode, tmp_path_factory)[attempt_id]
    assert outcome.held, f"{attempt_id} {outcome.verdict} in {mode}: {outcome.detail}"


@pytest.mark.parametrize("attempt_id", [a.id for a in ATTEMPTS if a.klass == "shared"])
def test_registries_unchanged_in_process(attempt_id: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The module-level mutable state of numpy, pandas, matplotlib, the default stdlib set and
    what the attempt authorizes (enumerated generically: executors.fuzzing.judging.registries) is the
    same after a shared-state attempt in LocalExecutor as before it."""
    changes = _outcomes("local", tmp_path_factory)[attempt_id].registry_changes
    assert changes == (), f"{attempt_id} changed {', '.join(changes)}"


@pytest.mark.parametrize("mode", harness.SANDBOXED)
@pytest.mark.parametrize("neighbour_id", NEIGHBOUR_IDS)
def test_neighbour_works(mode: str, neighbour_id: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    outcome = _neighbours(mode, tmp_path_factory)[neighbour_id]
    assert outcome.works, outcome.detail
