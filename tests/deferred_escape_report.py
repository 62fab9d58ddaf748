"""Where each executor stands against the deferred-escape corpus, today.

    .venv/bin/python tests/deferred_escape_report.py                    # every mode
    .venv/bin/python tests/deferred_escape_report.py --modes local,unhardened --list
    .venv/bin/python tests/deferred_escape_report.py --only output-,tool-book --json out.json

Per mode and class: attempts / held / escaped / crashed, and how many of them left a model-made
object in the host's hands (leaked: informational). Then the ids that got out per mode (the list
the executors' fixes work from), and the neighbours: works / broken. --list adds one line per
attempt. Modes: plain (CPython: every attempt must get out), local, subprocess, unhardened
(SubprocessExecutor(harden=False)).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import deferred_escape_harness as harness  # noqa: E402
from deferred_escapes import ATTEMPTS, CLASSES, NEIGHBOURS  # noqa: E402
from escape_report_options import comma_list, report_parser, selected  # noqa: E402


def attempt_table(mode: str, attempts: list, outcomes: list) -> list[str]:
    rows = [f"### {mode}", "", "| class | attempts | held | escaped | crashed | leaked |",
            "|---|---:|---:|---:|---:|---:|"]
    totals: Counter = Counter()
    for klass in CLASSES:
        pairs = [(a, o) for a, o in zip(attempts, outcomes, strict=True) if a.klass == klass]
        if not pairs:
            continue
        count = Counter(o.verdict for _, o in pairs)
        count["leaked"] = sum(1 for _, o in pairs if o.leaked)
        count["attempts"] = len(pairs)
        totals.update(count)
        rows.append(f"| {klass} | {len(pairs)} | {count['held']} | {count['escaped']} | "
                    f"{count['crashed']} | {count['leaked']} |")
    rows.append(f"| **all** | {totals['attempts']} | {totals['held']} | {totals['escaped']} | "
                f"{totals['crashed']} | {totals['leaked']} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    args = report_parser(__doc__, "modes", ",".join(harness.MODES), ", ".join(harness.MODES)).parse_args(argv)
    attempts = selected(ATTEMPTS, args.only)
    modes = comma_list(args.modes)
    dump: dict = {}
    out_lists: dict[str, list[str]] = {}
    neighbours: dict[str, list] = {}
    with tempfile.TemporaryDirectory(prefix="deferred-report-") as tmp:
        for mode in modes:
            t0 = time.monotonic()
            outcomes, found = harness.run_corpus(mode, attempts, [] if args.no_neighbours else NEIGHBOURS, Path(tmp))
            print("\n".join(attempt_table(mode, attempts, outcomes)))
            print(f"\n({len(attempts)} attempts in {time.monotonic() - t0:.0f} s)\n")
            if args.list:
                for a, o in zip(attempts, outcomes, strict=True):
                    print(f"  {o.verdict:8} {a.id:40} {o.detail.replace(chr(10), ' ')[:160]}")
                print()
            out_lists[mode] = [o.id for o in outcomes if not o.held]
            dump[mode] = {o.id: {"verdict": o.verdict, "escaped": list(o.escaped), "crashed": o.crashed,
                                 "leaked": list(o.leaked), "registry_changes": list(o.registry_changes),
                                 "detail": o.detail} for o in outcomes}
            if found:
                neighbours[mode] = found
    for mode, ids in out_lists.items():
        label = "do not get out (must be none)" if mode == "plain" else "get out or crash"
        shown = [a.id for a in attempts if a.id not in ids] if mode == "plain" else ids
        print(f"{mode}: {len(shown)} {label}: {' '.join(shown) or '-'}\n")
    if neighbours:
        print("### neighbours\n")
        for mode, outcomes in neighbours.items():
            broken = [f"{o.id} ({o.detail[:120]})" for o in outcomes if not o.works]
            print(f"{mode}: {len(outcomes) - len(broken)}/{len(outcomes)} work" +
                  ("; broken: " + "; ".join(broken) if broken else ""))
            dump.setdefault(mode, {})["neighbours"] = {o.id: o.works for o in outcomes}
    if args.json:
        Path(args.json).write_text(json.dumps(dump, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
