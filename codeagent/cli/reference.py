"""docs/cli.md, written from the command line's own parsers: every command's `--help`, as a user
reads it. `python -m codeagent.cli.reference > docs/cli.md` (scripts/cli-reference) writes it;
tests/test_docs.py fails when the page is not what the parsers say.
"""

from __future__ import annotations

import argparse
import importlib
import os
from collections.abc import Iterator

__all__ = ["render", "main"]

WIDTH = "100"  # help is wrapped at this width whatever the terminal (the page is the same everywhere)

INTRO = """\
# The command line

Every command's `--help`, written from the parsers themselves (`scripts/cli-reference`; the
test suite fails when this page is out of date). Exit status everywhere: 0 success, 1 the run,
the code or the check failed, 2 a usage or setup error (one line that names the flag), 130
interrupted (Ctrl-C; a run is saved, a batch resumes).
"""


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _own_parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(title, parser) for the top command and each subcommand, in the order of `codeagent --help`."""
    from .main import build_parser

    top = build_parser()
    yield "codeagent", top
    own = {"batch": ("codeagent.batch.cli", "build_parser"), "view": ("codeagent.cli.view", "build_parser"),
           "docker": ("codeagent.cli.docker", "build_parser")}
    for name, parser in _subparsers(top).items():
        if name in own:
            module, function = own[name]
            parser = getattr(importlib.import_module(module), function)()
        elif name == "fuzz":
            from .flags.options import Parser
            from .fuzz import add_fuzz_arguments

            parser = Parser(prog="codeagent fuzz", description="Fuzz the executors.")
            add_fuzz_arguments(parser)
        yield f"codeagent {name}", parser
        for sub, child in _subparsers(parser).items():
            yield f"codeagent {name} {sub}", child


def render() -> str:
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parts = [INTRO]
        for title, parser in _own_parsers():
            parts.append(f"## `{title}`\n\n```text\n{parser.format_help().rstrip()}\n```\n")
        return "\n".join(parts)
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved


def main() -> int:
    print(render(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
