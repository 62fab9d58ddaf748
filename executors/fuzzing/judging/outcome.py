"""The verdict on one example (`Outcome`) and the tally of a campaign (`FuzzReport`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Outcome", "FuzzReport", "FAILING", "SAFETY_FAILURES"]

# Statuses that fail a property.
FAILING = frozenset({"escape", "internal-error", "hang", "uncontained", "mismatch", "crashed"})

# Statuses that fail a campaign run from the command line (mismatches only with --strict).
SAFETY_FAILURES = ("escape", "internal-error", "hang", "uncontained", "crashed")


@dataclass
class Outcome:
    """The verdict on one generated example.

    category: "program", "escape", "bomb" or "native". status: program → equal | refused |
    divergent (an ordinary exception CPython did not raise) | mismatch (accepted, different
    output); escape → held | escape; bomb → contained | uncontained; native → survived | crashed
    (the process hosting the executor died by a signal); any → internal-error | hang.
    """

    category: str
    label: str
    status: str
    code: str
    detail: str = ""
    error_type: str | None = None
    duration_s: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status in FAILING


@dataclass
class FuzzReport:
    """Counts of a campaign, every failing example, and the slowest ones."""

    counts: Counter = field(default_factory=Counter)  # (category/label-group, status) -> n
    error_types: Counter = field(default_factory=Counter)  # (category, error type) of refusals
    failures: list[Outcome] = field(default_factory=list)
    slowest: list[Outcome] = field(default_factory=list)
    duration_s: float = 0.0
    executor: str = ""

    def add(self, o: Outcome) -> None:
        self.counts[(o.category, o.status)] += 1
        if o.status in ("refused", "divergent", "held", "contained", "survived"):
            self.error_types[(o.category, o.error_type or "none")] += 1
        if o.failed or o.status == "divergent":
            self.failures.append(o)
        self.slowest.append(o)
        if len(self.slowest) > 40:
            self.slowest.sort(key=lambda x: -x.duration_s)
            del self.slowest[10:]

    def total(self, category: str | None = None, status: str | None = None) -> int:
        return sum(n for (c, s), n in self.counts.items()
                   if (category is None or c == category) and (status is None or s == status))

    def top_slowest(self, n: int = 5) -> list[Outcome]:
        return sorted(self.slowest, key=lambda x: -x.duration_s)[:n]

    def failed(self, statuses: Iterable[str] = FAILING) -> list[Outcome]:
        wanted = set(statuses)
        return [o for o in self.failures if o.status in wanted]

    def assert_ok(self, statuses: Iterable[str] = FAILING) -> None:
        bad = self.failed(statuses)
        if bad:
            shown = "\n\n".join(f"--- {o.category} {o.status} [{o.label}]: {o.detail}\n{o.code}" for o in bad[:5])
            raise AssertionError(f"{len(bad)} failing example(s) out of {self.total()} on {self.executor}:\n\n{shown}")
