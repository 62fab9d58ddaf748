"""`fuzz()`: a hypothesis-driven campaign against one executor configuration.

The examples are split among the properties ("cpython": generated programs compared with
CPython; "escapes"; "bombs"), one phase each. Hypothesis draws the examples (reproducibly with
a seed), a `Session` evaluates them, a `FuzzReport` counts the outcomes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..judging.outcome import FuzzReport, Outcome
from .determinism import seed_only_generation
from .session import CANARY_ENV, Session

__all__ = ["fuzz", "PROPERTIES"]

PROPERTIES = ("cpython", "escapes", "bombs")
_SHARE = {"cpython": 0.6, "escapes": 0.3, "bombs": 0.1}
# Hypothesis remembers every example of a run to avoid repeats, which slows long runs down:
# long phases run as several runs of at most `batch_size` examples (default _BATCH), the k-th with
# the seed `seed + k`. A distributed campaign (shards.py) runs each such run as one shard.
_BATCH = 1000


class _TimeUp(BaseException):
    """Ends a campaign phase whose time budget is spent."""


class _Enough(BaseException):
    """Ends a hypothesis run once the phase has its planned number of outcomes."""


def _request(prop: str, mode: str, example: Any) -> dict[str, str]:
    if prop == "cpython":
        return {"category": "program", "code": example, "label": mode}
    if prop == "escapes":
        return {"category": "escape", "code": example.code, "label": example.label}
    return {"category": "bomb", "code": example.code, "label": example.label}


def _campaign(n: int, strategy: Any, prop: str, mode: str, phase_deadline: float | None,
              session: Session, report: FuzzReport,
              on_outcome: Callable[[Outcome], None] | None, target: int) -> Callable[[], None]:
    """One hypothesis run: draw up to `n` examples (until `phase_deadline`, or until the report
    holds `target` outcomes), run, record. An example whose code was already run in this run is
    skipped: hypothesis's mutations often give the same text from different choices (a draw the
    text does not use), up to 7 times each. The set is the run's own, not the phase's, so that
    a shard (one run, anywhere) sees exactly what the same run of the whole campaign sees."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import strategies as st

    seen: set[str] = set()

    # derandomize=False: the campaign's examples follow its seed even in a host whose hypothesis
    # profile derandomizes (a test suite's), so a seed names the same examples everywhere
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              derandomize=False, suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
              verbosity=Verbosity.quiet)
    @given(st.data())
    def campaign(data: Any) -> None:
        if phase_deadline is not None and time.perf_counter() > phase_deadline:
            raise _TimeUp()  # a BaseException: hypothesis lets it through as is
        if report.total() >= target:
            raise _Enough()
        request = _request(prop, mode, data.draw(strategy))
        if request["code"] in seen:
            return
        seen.add(request["code"])
        outcome = session.runner.run(request, session.budget)
        report.add(outcome)
        if on_outcome is not None:
            on_outcome(outcome)

    return campaign


def _strategy(prop: str, session: Session, mode: str, imports: Iterable[str] | None,
              bomb_kinds: Iterable[str] | None, families: Iterable[str] | None = None) -> Any:
    from ..attacks.bombs import BOMB_KINDS, resource_bombs
    from ..attacks.escapes import DEFAULT_FAMILIES, escape_attempts
    from ..differential.strategy import programs

    if prop == "cpython":
        return programs(session.tools, mode, authorized_imports=imports)
    if prop == "escapes":
        return escape_attempts(session.marker, CANARY_ENV, tools=session.tools, authorized_imports=imports,
                               families=tuple(families or DEFAULT_FAMILIES))
    return resource_bombs(tuple(bomb_kinds or BOMB_KINDS), limits=session.limits)


def check_properties(properties: Iterable[str]) -> list[str]:
    """The properties asked for, in order; ValueError naming the known ones otherwise."""
    props = list(properties)
    unknown = set(props) - set(PROPERTIES)
    if unknown or not props:
        raise ValueError(f"properties must be among {PROPERTIES}, got {props}")
    return props


def check_families(families: Iterable[str] | None) -> tuple[str, ...] | None:
    """The escape families asked for (None: all); ValueError naming the known ones otherwise."""
    if families is None:
        return None
    from ..attacks.escapes import FAMILIES

    chosen = tuple(families)
    unknown = [f for f in chosen if f not in FAMILIES]
    if unknown or not chosen:
        raise ValueError(f"escape families must be among {', '.join(FAMILIES)}; got {list(chosen)}")
    return chosen


def phase_plan(examples: int, properties: Iterable[str]) -> dict[str, int]:
    """How many of `examples` each property gets (its share, at least one), in campaign order."""
    weights = {p: _SHARE[p] for p in properties}
    total_w = sum(weights.values())
    return {p: max(1, round(examples * w / total_w)) for p, w in weights.items()}


def _run_phase(planned: int, strategy: Any, prop: str, mode: str, phase_deadline: float | None,
               session: Session, report: FuzzReport, seed: int | None,
               on_outcome: Callable[[Outcome], None] | None, batch_size: int = _BATCH) -> None:
    """Run hypothesis until `planned` more outcomes are in (or time is up, or nothing new comes).
    A run that hypothesis aborts as flaky (hypothesmith is not always deterministic) is replaced."""
    from hypothesis import seed as hseed
    from hypothesis.errors import Flaky

    target = report.total() + planned
    batch = flaky = 0
    while report.total() < target and flaky < 5:
        if phase_deadline is not None and time.perf_counter() > phase_deadline:
            break
        # the run's own share (a shard is exactly one such run), with room for the repeats that
        # are skipped; the run ends as soon as its share is in
        run_target = report.total() + min(batch_size, target - report.total())
        wanted = 4 * (run_target - report.total()) + 20
        campaign = _campaign(wanted, strategy, prop, mode, phase_deadline, session, report,
                             on_outcome, run_target)
        if seed is not None:
            campaign = hseed(seed + batch)(campaign)
        batch += 1
        before = report.total()
        try:
            with seed_only_generation():  # the seed alone decides the examples (determinism.py)
                campaign()
        except _Enough:
            continue
        except _TimeUp:
            break
        except Flaky:
            flaky += 1
            continue
        if report.total() == before:
            break  # nothing new to generate


def _run_phases(props: list[str], weights: dict[str, float], plan: dict[str, int], deadline: float | None,
                session: Session, report: FuzzReport, mode: str, imports: Iterable[str] | None,
                bomb_kinds: Iterable[str] | None, seed: int | None,
                on_outcome: Callable[[Outcome], None] | None, batch_size: int,
                families: Iterable[str] | None = None) -> None:
    """One phase per property, the time budget split by weight among the phases still to run."""
    for i, prop in enumerate(props):
        strategy = _strategy(prop, session, mode, imports, bomb_kinds, families)
        phase_deadline = None
        if deadline is not None:
            remaining_w = sum(weights[p] for p in props[i:])
            phase_deadline = time.perf_counter() + (deadline - time.perf_counter()) * weights[prop] / remaining_w
        _run_phase(plan[prop], strategy, prop, mode, phase_deadline, session, report, seed, on_outcome,
                   batch_size)


def fuzz(
    factory: Callable[[], Any],
    *,
    examples: int = 200,
    seconds: float | None = None,
    properties: Iterable[str] = PROPERTIES,
    mode: str = "data",
    tools: Mapping[str, Callable[..., Any]] | None = None,
    register_tools: bool = True,
    authorized_imports: Iterable[str] | None = None,
    bomb_kinds: Iterable[str] | None = None,
    margin_s: float = 1.0,
    host_memory_margin_mb: float = 500.0,
    isolate: bool | None = None,
    open_policy: bool | None = None,
    seed: int | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
    batch_size: int = _BATCH,
    escape_families: Iterable[str] | None = None,
) -> FuzzReport:
    """Run a campaign: `examples` generated examples (and at most `seconds`), split among the
    properties ("cpython": generated programs compared with CPython — also the internal-error
    check; "escapes"; "bombs"). Returns a FuzzReport; never raises for what it finds.

    tools: registered on each executor built by `factory` (default: `probe_tools()`) and given to
    the CPython reference; pass `register_tools=False` if your factory registers them itself.
    isolate: run the executor in a forked child (default: yes for in-process executors).
    open_policy: whether reaching `os` is allowed (default: read from the executor's `policy`).
    batch_size: examples per hypothesis run (the k-th run of a phase is seeded `seed + k`); the
    same campaign sharded over workers (executors.fuzzing.campaigns.shards) uses it as its shard size.
    escape_families: only these families of escape attempts (default: all but "deferred"; e.g.
    ["library"] for the attempts through the authorized libraries, ["deferred"] for model-made
    objects with hostile methods handed to the tools or left for the host).

        report = fuzz(LocalExecutor, examples=1000, seconds=60)
        print(report.total("program", "equal"), report.failures)
    """
    props = check_properties(properties)
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    families = check_families(escape_families)
    from .._hypothesis import private_storage
    from ..differential import strategy as program_strategy  # noqa: F401 - needs hypothesis: say so before building anything

    report = FuzzReport()
    t_start = time.perf_counter()
    deadline = t_start + seconds if seconds else None
    session = Session(factory, tools=tools, register_tools=register_tools, margin_s=margin_s,
                      host_memory_margin_mb=host_memory_margin_mb, isolate=isolate,
                      open_policy=open_policy)
    report.executor = session.executor_name
    weights = {p: _SHARE[p] for p in props}
    plan = phase_plan(examples, props)
    imports = authorized_imports if authorized_imports is not None else session.authorized_imports
    try:
        with private_storage():
            _run_phases(props, weights, plan, deadline, session, report, mode, imports, bomb_kinds, seed,
                        on_outcome, batch_size, families)
    finally:
        session.close()
        report.duration_s = time.perf_counter() - t_start
    return report
