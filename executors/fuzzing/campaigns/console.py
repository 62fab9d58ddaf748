"""What a campaign run from the command line shows: a progress line, a summary table, figures."""

from __future__ import annotations

import sys
import time
from typing import Any

from ..judging.outcome import SAFETY_FAILURES, FuzzReport

__all__ = ["Progress", "report_table", "summary_dict"]


class Progress:
    """One self-rewriting line on stderr (a line every 10 s when stderr is not a terminal)."""

    def __init__(self, executor: str, planned: int) -> None:
        self.executor, self.planned = executor, planned
        self.tty = sys.stderr.isatty()
        self.t0 = time.monotonic()
        self.last = 0.0
        self.n = 0
        self.counts: dict[str, int] = {}

    def __call__(self, outcome: Any) -> None:
        self.n += 1
        self.counts[outcome.status] = self.counts.get(outcome.status, 0) + 1
        now = time.monotonic()
        if now - self.last >= (0.2 if self.tty else 10.0):
            self.last = now
            self.show()

    def show(self, end: str = "") -> None:
        c = self.counts
        bad = sum(c.get(s, 0) for s in SAFETY_FAILURES)
        line = (f"fuzz {self.executor}: {self.n}/{self.planned}  equal {c.get('equal', 0)}  "
                f"refused {c.get('refused', 0)}  held {c.get('held', 0)}  contained {c.get('contained', 0)}  "
                f"divergent {c.get('divergent', 0)}  mismatch {c.get('mismatch', 0)}  FAILURES {bad}  "
                f"{time.monotonic() - self.t0:.0f}s")
        if self.tty:
            sys.stderr.write("\r" + line.ljust(120) + end)
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def report_table(report: FuzzReport) -> str:
    """The campaign's counts as a text table, one row per category and a total."""
    cats = [("program", "programs"), ("escape", "escapes"), ("bomb", "bombs"), ("native", "native calls")]
    cols = ["examples", "refusals", "CPython-equal", "divergent", "mismatches", "contained", "escapes",
            "internal", "hangs"]
    rows = []
    for cat, name in cats:
        n = report.total(cat)
        if not n:
            continue
        refused = report.total(cat, "refused") if cat == "program" else report.total(cat, "held")
        if cat == "native":  # 'contained' = survived, 'hangs' = hangs and crashes
            rows.append([name, n, "-", "-", "-", "-", report.total(cat, "survived"), "-",
                         report.total(cat, "internal-error"),
                         report.total(cat, "hang") + report.total(cat, "crashed")])
            continue
        rows.append([name, n, refused, report.total(cat, "equal"), report.total(cat, "divergent"),
                     report.total(cat, "mismatch"),
                     report.total(cat, "contained") if cat == "bomb" else "-",
                     report.total(cat, "escape"), report.total(cat, "internal-error"),
                     report.total(cat, "hang") + report.total(cat, "uncontained")])
    totals = ["total", report.total(), report.total("program", "refused") + report.total("escape", "held"),
              report.total(None, "equal"), report.total(None, "divergent"), report.total(None, "mismatch"),
              report.total("bomb", "contained"),
              report.total(None, "escape"), report.total(None, "internal-error"),
              report.total(None, "hang") + report.total(None, "uncontained")]
    rows.append(totals)
    head = ["", *cols]
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(str(v).rjust(w) if i else str(v).ljust(w) for i, (v, w) in enumerate(zip(r, widths, strict=True)))
             for r in [head, *rows]]
    lines.insert(1, "-" * len(lines[0]))
    lines.insert(len(lines) - 1, "-" * len(lines[0]))
    return "\n".join(lines) + "\n  (escapes row: 'refusals' = attempts held; bombs: 'hangs' = uncontained)"


def summary_dict(report: FuzzReport, options: Any) -> dict[str, Any]:
    """The campaign's figures as JSON-ready data (`options`: its executor and mode)."""
    return {
        "executor": options.executor, "mode": options.mode, "duration_s": round(report.duration_s, 1),
        "examples": report.total(),
        "programs": report.total("program"), "refusals": report.total("program", "refused"),
        "cpython_equal": report.total("program", "equal"), "divergent": report.total("program", "divergent"),
        "mismatches": report.total("program", "mismatch"),
        "escape_attempts": report.total("escape"), "escapes": report.total(None, "escape"),
        "bombs": report.total("bomb"), "bombs_contained": report.total("bomb", "contained"),
        "bombs_uncontained": report.total("bomb", "uncontained"),
        "internal_errors": report.total(None, "internal-error"), "hangs": report.total(None, "hang"),
        "native_calls": report.total("native"), "native_survived": report.total("native", "survived"),
        "host_crashes": report.total(None, "crashed"),
        "error_types": {f"{c}:{t}": n for (c, t), n in report.error_types.most_common()},
    }
