"""The version table (issue 43) from the JUnit reports of `scripts/test-pythons --junit DIR`.

    scripts/test-pythons --tier --junit .pythons 3.12 3.13 3.14   # (and the suite's own for 3.11)
    .venv/bin/python tests/python_versions_report.py .pythons/*.xml

One column per report (named by its file: 3.12.xml -> 3.12), one row per corpus: how many of its
cases held (passed) out of those that ran, in process and in the worker; a row's cell says what
failed, when something did.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

# row -> (test file, test function, a pattern the case id must match)
ROWS: list[tuple[str, str, str, str]] = [
    ("resource bombs, in process", "test_resources", "test_limit_holds", ""),
    ("resource bombs, worker", "test_subprocess", "test_(open_policy_)?bombs|generated_bombs", ""),
    ("standard programs = CPython", "test_coverage", "test_(matches_cpython|errors_match|state_across)", ""),
    ("escapes (policy), in process", "test_security", r"test_attempt_is_refused\[", ""),
    ("escapes (policy), worker", "test_security", "test_attempt_is_refused_in_the_worker", ""),
    ("library escapes, in process", "test_library_escapes", "test_attempt_is_refused_by_the_sandbox", r"-local\]"),
    ("library escapes, worker", "test_library_escapes", "test_attempt_is_refused_by_the_sandbox", r"-subprocess\]"),
    ("deferred escapes, in process", "test_deferred_escapes", "test_attempt_is_held", r"-local\]"),
    ("deferred escapes, worker", "test_deferred_escapes", "test_attempt_is_held", r"-subprocess\]"),
    ("corpora get out of plain CPython", "test_", "test_attempt_(really_escapes|escapes|gets_out_in)_plain_cpython", ""),
    ("new syntax and internals", "test_python_versions", "test_", ""),
    ("monitoring and tracing tools", "test_host_tracing", "test_", ""),
]


def cases(report: Path) -> list[tuple[str, str, str]]:
    """(file, test name with its id, outcome) for every case in a JUnit report."""
    out = []
    for case in ET.parse(report).iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "skipped"
        out.append((case.get("classname", "").split(".")[-1], case.get("name", ""), outcome))
    return out


def cell(found: list[tuple[str, str, str]], file: str, test: str, ids: str) -> str:
    picked = [(name, outcome) for f, name, outcome in found
              if f.startswith(file) and re.match(test, name) and re.search(ids, name)]
    ran = [p for p in picked if p[1] != "skipped"]
    if not ran:
        return "-"
    failed = [name for name, outcome in ran if outcome == "failed"]
    text = f"{len(ran) - len(failed)}/{len(ran)}"
    if failed:
        text += " (failed: " + ", ".join(n.partition("[")[2].rstrip("]") or n for n in failed[:4]) + \
            (", ..." if len(failed) > 4 else "") + ")"
    return text


def main(argv: list[str]) -> int:
    reports = [Path(a) for a in argv]
    if not reports:
        print(__doc__)
        return 2
    found = {r.stem: cases(r) for r in reports}
    print("| | " + " | ".join(found) + " |")
    print("|---|" + "---|" * len(found))
    for label, file, test, ids in ROWS:
        print(f"| {label} | " + " | ".join(cell(c, file, test, ids) for c in found.values()) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
