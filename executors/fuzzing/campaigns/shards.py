"""A campaign cut into shards that any worker can run, and their reports merged back into one.

A campaign with a seed is a deterministic function of (seed, examples, shard size, options):
`fuzz()` runs each property's examples as hypothesis runs of at most `batch_size` examples, the
k-th seeded `seed + k`. A shard is exactly one such run — (property, k, its example count, the
campaign seed) — so shards can run anywhere, in any order, on any number of workers, and merging
their reports in shard order gives the report `fuzz(..., seed=seed, batch_size=shard_size)` gives
in one process: the same counts, the same refusal types in the same order, the same failing
examples in the same order. (One exception, inherent to hypothesis: a strategy that runs out of
new examples before a run is full; `fuzz()` then tops up from the next seeds of the same phase,
a shard from the seeds after its own.)

    shards = plan_shards(examples=5000, properties=PROPERTIES, seed=7, shard_size=1000)
    reports = [run_shard(s, options) for s in shards]          # anywhere: only JSON crosses
    report = merge_reports(report_from_dict(r) for r in reports)

What crosses between driver and workers is JSON: `ShardSpec.to_dict()` and `report_to_dict()`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..judging.outcome import FuzzReport, Outcome
from .campaign import (
    _BATCH,
    ALL_PROPERTIES,
    PROPERTIES,
    _run_phase,
    _strategy,
    check_properties,
    phase_plan,
)

__all__ = ["ShardSpec", "plan_shards", "run_shard", "run_shards_inline", "report_to_dict",
           "report_from_dict", "merge_reports", "shard_of", "DEFAULT_SHARD_SIZE"]

DEFAULT_SHARD_SIZE = _BATCH
_CATEGORY = {"cpython": "program", "escapes": "escape", "bombs": "bomb"}
_KEEP_SLOWEST = 10


@dataclass(frozen=True)
class ShardSpec:
    """One hypothesis run of a campaign: `examples` examples of `prop`, the `batch`-th run of that
    property's phase, seeded `seed + batch`. `index`: its place in the campaign (merge order)."""

    index: int
    prop: str
    batch: int
    examples: int
    seed: int | None

    @property
    def hypothesis_seed(self) -> int | None:
        return None if self.seed is None else self.seed + self.batch

    @property
    def category(self) -> str:
        return _CATEGORY[self.prop]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ShardSpec:
        spec = cls(**{f.name: data[f.name] for f in dataclasses.fields(cls)})
        if spec.prop not in ALL_PROPERTIES or spec.examples < 1 or spec.batch < 0:
            raise ValueError(f"not a shard of a campaign: {dict(data)}")
        return spec

    def describe(self) -> dict[str, Any]:
        """What a saved failing example records about where it came from."""
        return {"property": self.prop, "shard": self.batch, "campaign_seed": self.seed,
                "hypothesis_seed": self.hypothesis_seed, "examples": self.examples}


def plan_shards(examples: int, properties: Iterable[str] = PROPERTIES, seed: int | None = None,
                shard_size: int = DEFAULT_SHARD_SIZE) -> list[ShardSpec]:
    """The shards of a campaign, in campaign order (the order their reports are merged in).
    The plan depends on nothing but these arguments: not on the number of workers."""
    props = check_properties(properties)
    if shard_size < 1:
        raise ValueError(f"shard_size must be >= 1, got {shard_size}")
    plan = phase_plan(examples, props)
    shards: list[ShardSpec] = []
    for prop in props:  # a repeated property runs its phase again, as fuzz() does
        for batch in range(math.ceil(plan[prop] / shard_size)):
            n = min(shard_size, plan[prop] - batch * shard_size)
            shards.append(ShardSpec(len(shards), prop, batch, n, seed))
    return shards


def run_shard(spec: ShardSpec, factory: Callable[[], Any], *,
              tools: Mapping[str, Callable[..., Any]] | None = None, mode: str = "data",
              margin_s: float = 1.0, isolate: bool | None = None,
              authorized_imports: Iterable[str] | None = None,
              escape_families: Iterable[str] | None = None) -> FuzzReport:
    """Run one shard against a fresh session of `factory` (the arguments mean what they mean for
    fuzz()). Never raises for what it finds."""
    import time

    from .session import Session

    report = FuzzReport()
    t0 = time.perf_counter()
    session = Session(factory, tools=tools, margin_s=margin_s, isolate=isolate)
    report.executor = session.executor_name
    imports = authorized_imports if authorized_imports is not None else session.authorized_imports
    try:
        strategy = _strategy(spec.prop, session, mode, imports, None, escape_families)
        # _run_phase seeds its k-th run `seed + k`: from this shard's seed, its first run is the
        # campaign's run number `batch`, and only a run that comes up short needs a second.
        _run_phase(spec.examples, strategy, spec.prop, mode, None, session, report,
                   spec.hypothesis_seed, None, batch_size=spec.examples)
    finally:
        session.close()
        report.duration_s = time.perf_counter() - t0
    return report


def run_shards_inline(shards: Iterable[ShardSpec], run: Callable[[ShardSpec], FuzzReport]) -> FuzzReport:
    """Every shard in this process, one after another, merged: the reference a distributed run
    must equal (`run` is e.g. `functools.partial(run_shard, factory=...)`)."""
    return merge_reports(run(s) for s in shards)


def _outcome_dict(o: Outcome) -> dict[str, Any]:
    return asdict(o)


def report_to_dict(report: FuzzReport) -> dict[str, Any]:
    """A FuzzReport as JSON-ready data; counters keep their first-seen order (it orders ties)."""
    return {
        "executor": report.executor, "duration_s": report.duration_s,
        "counts": [[c, s, n] for (c, s), n in report.counts.items()],
        "error_types": [[c, t, n] for (c, t), n in report.error_types.items()],
        "failures": [_outcome_dict(o) for o in report.failures],
        "slowest": [_outcome_dict(o) for o in report.top_slowest(_KEEP_SLOWEST)],
    }


def report_from_dict(data: Mapping[str, Any]) -> FuzzReport:
    """The FuzzReport `report_to_dict` described (ValueError/TypeError/KeyError if malformed)."""
    report = FuzzReport(executor=str(data.get("executor", "")), duration_s=float(data.get("duration_s", 0.0)))
    for c, s, n in data["counts"]:
        report.counts[(str(c), str(s))] += int(n)
    for c, t, n in data["error_types"]:
        report.error_types[(str(c), str(t))] += int(n)
    report.failures = [Outcome(**o) for o in data["failures"]]
    report.slowest = [Outcome(**o) for o in data["slowest"]]
    return report


def merge_reports(reports: Iterable[FuzzReport]) -> FuzzReport:
    """One report from shard reports given in shard order: counts summed, failing examples in
    order; `duration_s` is the sum of the shards' (the caller sets the wall time)."""
    merged = FuzzReport()
    for r in reports:
        merged.executor = merged.executor or r.executor
        merged.counts.update(r.counts)  # a key new to the merge lands last: first-seen order holds
        merged.error_types.update(r.error_types)
        merged.failures.extend(r.failures)
        merged.slowest = sorted([*merged.slowest, *r.top_slowest(_KEEP_SLOWEST)],
                                key=lambda o: -o.duration_s)[:_KEEP_SLOWEST]
        merged.duration_s += r.duration_s
    return merged


def shard_of(shards: Iterable[ShardSpec], category: str, position: int) -> ShardSpec | None:
    """The shard of plan `shards` that generates the `position`-th example (from 0) of `category`
    when the campaign runs in one process (each hypothesis run full), or None."""
    for spec in shards:
        if spec.category == category:
            if position < spec.examples:
                return spec
            position -= spec.examples
    return None
