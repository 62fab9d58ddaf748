"""Where each executor stands against the library-escape corpus, today.

    .venv/bin/python tests/library_escape_report.py                 # local and subprocess
    .venv/bin/python tests/library_escape_report.py --executors plain,local --list
    .venv/bin/python tests/library_escape_report.py --only read-,tamper-np --json out.json

Per executor and class: attempts / escaped / refused (the step returned an error and nothing
escaped) / contained (no error, nothing escaped: e.g. the worker had no such env var). Then the
neighbours: works / broken. --list adds one line per attempt.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import library_escape_harness as harness  # noqa: E402
from escape_report_options import comma_list, report_parser, selected  # noqa: E402
from library_escapes import ATTEMPTS, CLASSES, NEIGHBOURS  # noqa: E402


def attempt_table(executor: str, attempts: list, outcomes: list) -> list[str]:
    rows = [f"### {executor}", "", "| class | attempts | escaped | refused | contained |", "|---|---:|---:|---:|---:|"]
    totals: Counter = Counter()
    for klass in CLASSES:
        pairs = [(a, o) for a, o in zip(attempts, outcomes, strict=True) if a.klass == klass]
        if not pairs:
            continue
        count = Counter(_verdict(o) for _, o in pairs)
        totals.update(count)
        totals["attempts"] += len(pairs)
        rows.append(f"| {klass} | {len(pairs)} | {count['escaped']} | {count['refused']} | {count['contained']} |")
    rows.append(f"| **all** | {totals['attempts']} | {totals['escaped']} | {totals['refused']} | {totals['contained']} |")
    return rows


def _verdict(outcome: harness.Outcome) -> str:
    if outcome.escaped:
        return "escaped"
    return "refused" if outcome.refused_error is not None else "contained"


def neighbour_table(results: dict[str, list]) -> list[str]:
    executors = list(results)
    rows = ["### neighbours", "", "| neighbour | " + " | ".join(executors) + " |",
            "|---|" + "---|" * len(executors)]
    for i, n in enumerate(NEIGHBOURS):
        cells = []
        for ex in executors:
            o = results[ex][i]
            cells.append("works" if o.works else "broken: " + (f"{o.error.type}: {o.error.message[:70]}" if o.error else "wrong output"))
        rows.append(f"| {n.id} | " + " | ".join(cells) + " |")
    return rows


def main(argv: list[str] | None = None) -> int:
    args = report_parser(__doc__, "executors", "local,subprocess",
                         "plain, local, subprocess, module:factory").parse_args(argv)
    attempts = selected(ATTEMPTS, args.only)
    executors = comma_list(args.executors)
    dump: dict = {}
    neighbour_results: dict[str, list] = {}
    with tempfile.TemporaryDirectory(prefix="escape-report-") as tmp:
        for executor in executors:
            t0 = time.monotonic()
            outcomes = harness.run_attempts(executor, attempts, Path(tmp) / executor.replace(":", "_"))
            print("\n".join(attempt_table(executor, attempts, outcomes)))
            print(f"\n({len(attempts)} attempts in {time.monotonic() - t0:.0f} s)\n")
            if args.list:
                for a, o in zip(attempts, outcomes, strict=True):
                    print(f"  {_verdict(o):9} {a.id:44} {o.detail.replace(chr(10), ' ')[:150]}")
                print()
            dump[executor] = {a.id: {"verdict": _verdict(o), "detail": o.detail} for a, o in zip(attempts, outcomes, strict=True)}
            if not args.no_neighbours:
                neighbour_results[executor] = harness.run_neighbours(executor, NEIGHBOURS, Path(tmp) / ("n-" + executor.replace(":", "_")))
    if neighbour_results:
        print("\n".join(neighbour_table(neighbour_results)))
        for ex, outcomes in neighbour_results.items():
            dump.setdefault(ex, {})["neighbours"] = {n.id: o.works for n, o in zip(NEIGHBOURS, outcomes, strict=True)}
    if args.json:
        Path(args.json).write_text(json.dumps(dump, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
