"""`codeagent fuzz`: run the executor properties as a campaign against one configuration.

    codeagent fuzz --executor local --examples 2000
    codeagent fuzz --executor docker --seconds 300 --tools mypkg.tools:TOOLS
    python -m codeagent.fuzz --executor subprocess --authorized-imports numpy pandas
    python -m codeagent.fuzz --replay fuzz-failures/escape-*.py --executor local

Prints a progress line on stderr and a summary table on stdout, saves every failing example as
a .py file that says how to rerun it, and exits 1 on any escape, internal error, hang or
uncontained bomb (mismatches with CPython and divergent errors too with --strict), else 0.

This module only parses the command line; the campaign is `executors.fuzzing.run_command`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

__all__ = ["add_fuzz_arguments", "run_fuzz", "main"]


def add_fuzz_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of `codeagent fuzz` on `parser`."""
    parser.add_argument("--executor", choices=("local", "subprocess", "docker"), default="local",
                        help="which executor to fuzz (default: local)")
    parser.add_argument("--policy", choices=("restricted", "open"), default=None,
                        help="policy of the subprocess/docker executor (default: the executor's own)")
    parser.add_argument("--examples", type=int, default=1000, help="number of generated examples (default: 1000)")
    parser.add_argument("--seconds", type=float, default=None, help="time budget; stops at whichever comes first")
    parser.add_argument("--authorized-imports", nargs="*", default=None, metavar="MODULE",
                        help="modules to authorize on top of the safe defaults")
    parser.add_argument("--tools", nargs="*", default=None, metavar="MODULE:ATTR",
                        help="tools to register: a callable, Tool, or dict/list of them (default: "
                             "the probe tools of executors.testing)")
    parser.add_argument("--mode", choices=("data", "grammar", "all"), default="data",
                        help="program generator: model-like data programs, hypothesmith grammar, or both")
    parser.add_argument("--properties", nargs="*", choices=("cpython", "escapes", "bombs"),
                        default=["cpython", "escapes", "bombs"], help="which properties to run")
    parser.add_argument("--timeout", type=float, default=2.0, help="Limits.timeout_s for the campaign (default: 2)")
    parser.add_argument("--margin", type=float, default=1.0,
                        help="seconds a bomb may overrun its timeout (default: 1)")
    parser.add_argument("--save-dir", default="fuzz-failures", help="where failing examples are saved")
    parser.add_argument("--seed", type=int, default=None, help="hypothesis seed, for a reproducible campaign")
    parser.add_argument("--strict", action="store_true",
                        help="also fail on CPython mismatches and divergent errors")
    parser.add_argument("--no-isolate", action="store_true",
                        help="run an in-process executor in this process (default: a forked child)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the summary as JSON")
    parser.add_argument("--replay", nargs="*", default=None, metavar="FILE",
                        help="rerun saved failing examples instead of generating new ones")


def make_factory(args: argparse.Namespace) -> Callable[..., Any]:
    """The executor factory described by the command-line options."""
    from executors.fuzzing import executor_factory

    return executor_factory(args.executor, timeout_s=args.timeout,
                            authorized_imports=args.authorized_imports, policy=args.policy)


def run_fuzz(args: argparse.Namespace) -> int:
    """Run the campaign described by `args` (from add_fuzz_arguments); returns the exit code."""
    from executors.fuzzing import CommandOptions, load_tools, run_command

    try:
        tools = load_tools(args.tools)
    except ValueError as exc:
        raise SystemExit(f"codeagent fuzz: {exc}") from None
    return run_command(CommandOptions.from_mapping(vars(args)), make_factory(args), tools)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="codeagent fuzz", description=__doc__.splitlines()[0])
    add_fuzz_arguments(parser)
    return run_fuzz(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
