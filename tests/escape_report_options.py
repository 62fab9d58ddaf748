"""The options both escape-corpus reports take (tests/library_escape_report.py and
tests/deferred_escape_report.py) and the attempts they select."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any


def report_parser(description: str | None, where: str, default: str, choices: str) -> argparse.ArgumentParser:
    """--<where> (comma list), --only, --list, --no-neighbours, --json."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(f"--{where}", default=default, help=f"comma list of {choices}")
    parser.add_argument("--only", default="", help="comma list of attempt id prefixes")
    parser.add_argument("--list", action="store_true", help="one line per attempt")
    parser.add_argument("--no-neighbours", action="store_true")
    parser.add_argument("--json", help="write every outcome to this file")
    return parser


def comma_list(text: str) -> list[str]:
    return [part for part in text.split(",") if part]


def selected(attempts: Sequence[Any], only: str) -> list[Any]:
    """The attempts whose id starts with one of the --only prefixes (all without any)."""
    prefixes = comma_list(only)
    return [a for a in attempts if not prefixes or any(a.id.startswith(p) for p in prefixes)]
