"""`codeagent fuzz`: run the executor properties as a campaign against one configuration.

    codeagent fuzz --executor local --examples 2000
    codeagent fuzz --executor docker --seconds 300 --tools mypkg.tools:TOOLS
    python -m codeagent.cli.fuzz --executor subprocess --authorized-imports numpy pandas
    python -m codeagent.cli.fuzz --replay fuzz-failures/escape-*.py --executor local
    codeagent fuzz --backend ray --address auto --workers 64 --examples 1000000 --seed 7

With --backend the campaign runs as shards of --shard-size examples (one hypothesis run each, a
seed and a count) on a local process pool or Ray (codeagent.batch), merged into one report: the
report the in-process run gives for the same --seed, --examples and --shard-size.

Prints a progress line on stderr and a summary table on stdout, saves every failing example as
a .py file that says how to rerun it, and exits 1 on any escape, internal error, hang or
uncontained bomb (mismatches with CPython and divergent errors too with --strict), else 0.

This module only parses the command line; the campaign is `executors.fuzzing.run_command`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["add_fuzz_arguments", "run_fuzz", "main"]


def add_fuzz_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of `codeagent fuzz` on `parser` (every number range-checked here)."""
    from .flags.options import count, number, seconds

    parser.add_argument("--executor", choices=("local", "subprocess", "docker"), default="local",
                        help="which executor to fuzz (default: local)")
    parser.add_argument("--policy", choices=("restricted", "open"), default=None,
                        help="policy of the subprocess/docker executor (default: the executor's own)")
    parser.add_argument("--examples", type=count(1), default=1000, metavar="N",
                        help="how many examples to generate (default: 1000)")
    parser.add_argument("--seconds", type=seconds, default=None, metavar="S",
                        help="a time budget: the campaign stops at it or at --examples, whichever comes first")
    parser.add_argument("--authorized-imports", nargs="*", default=None, metavar="MODULE",
                        help="modules the generated code may import besides the safe defaults (as --import does)")
    parser.add_argument("--tools", nargs="*", default=None, metavar="MODULE:ATTR",
                        help="your tools, called from the generated code: a callable, Tool, or dict/list of them "
                             "(default: the probe tools of executors.testing)")
    parser.add_argument("--mode", choices=("data", "grammar", "all"), default="data",
                        help="program generator: model-like data programs, hypothesmith grammar, or both")
    parser.add_argument("--properties", nargs="*", choices=("cpython", "escapes", "bombs", "crashes"),
                        default=["cpython", "escapes", "bombs"], help="what to check: cpython (ordinary programs print what CPython prints), escapes (hostile "
                             "code gets nothing out), bombs (resource bombs are contained) (default: all three); crashes "
                             "feeds numpy, pandas, pyarrow, scipy and polars hostile shapes, strides, offsets and indices "
                             "(it authorizes them unless --authorized-imports says otherwise)")
    parser.add_argument("--escape-families", nargs="+", default=None, metavar="FAMILY",
                        help="only these families of escape attempts, e.g. 'library' for the attempts "
                             "through the authorized libraries, 'deferred' for model-made objects with "
                             "hostile methods handed to your tools or left for the host (default: all; "
                             "a wrong name lists them)")
    parser.add_argument("--timeout", type=seconds, default=2.0, metavar="SECONDS",
                        help="time limit per example (Limits.timeout_s) (default: 2)")
    parser.add_argument("--margin", type=number(0), default=1.0, metavar="SECONDS",
                        help="seconds a bomb may overrun its timeout (default: 1)")
    parser.add_argument("--save-dir", default="fuzz-failures", metavar="DIR",
                        help="where failing examples are saved as reproducible .py files (default: fuzz-failures)")
    parser.add_argument("--seed", type=count(0), default=None, metavar="N",
                        help="hypothesis seed: the same seed draws the same examples (default: a fresh one)")
    parser.add_argument("--strict", action="store_true",
                        help="also fail on CPython mismatches and divergent errors")
    parser.add_argument("--no-isolate", action="store_true",
                        help="run an in-process executor in this process (default: a forked child)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the summary as JSON")
    parser.add_argument("--replay", nargs="*", default=None, metavar="FILE",
                        help="rerun saved failing examples instead of generating new ones")
    dist = parser.add_argument_group("distributed campaigns")
    dist.add_argument("--backend", choices=("local", "ray"), default=None,
                      help="run the shards on a local process pool or on Ray (default: all in this process)")
    dist.add_argument("--workers", type=count(1, 1024), default=2, metavar="N",
                      help="worker processes or Ray actors (default: 2)")
    dist.add_argument("--address", default=None, metavar="ADDRESS",
                      help="Ray cluster: 'auto', host:port or ray://host:port (default: a new local instance)")
    dist.add_argument("--shard-size", type=count(1), default=1000, metavar="N",
                      help="examples per shard (one hypothesis run); part of what the seed reproduces")
    dist.add_argument("--shard-dir", default=None, metavar="DIR",
                      help="keep shard results here; rerunning with the same DIR skips finished shards")


def make_factory(args: argparse.Namespace) -> Callable[..., Any]:
    """The executor factory described by the command-line options."""
    from executors.fuzzing import executor_factory

    return executor_factory(args.executor, timeout_s=args.timeout,
                            authorized_imports=args.authorized_imports, policy=args.policy)


def make_distribute(options: Any) -> Callable[[Any], Any] | None:
    """The shard runner for `options.backend` (codeagent.batch on a process pool or Ray), or None."""
    if options.backend is None:
        return None
    from codeagent.batch.fuzz_shards import ShardProgress, run_fuzz_shards

    progress = ShardProgress(f"fuzz {options.executor} on {options.backend} × {options.workers}")

    def distribute(tasks: Any) -> Any:
        return run_fuzz_shards(tasks, backend=options.backend, workers=options.workers,
                               address=options.address, out=options.shard_dir, progress=progress)

    return distribute


def _usage(message: str) -> SystemExit:
    """A usage mistake: one line, exit 2 (1 means the campaign found something)."""
    print(f"codeagent fuzz: {message}", file=sys.stderr)
    return SystemExit(2)


def run_fuzz(args: argparse.Namespace) -> int:
    """Run the campaign described by `args` (from add_fuzz_arguments); returns the exit code."""
    import importlib.util

    # looked up, not imported: importing hypothesis makes .hypothesis/ in the current directory
    missing = [name for name in ("hypothesis", "hypothesmith") if importlib.util.find_spec(name) is None]
    if missing:  # a plain install: they come with the fuzz extra
        raise _usage(f"fuzzing needs {' and '.join(missing)}: pip install 'codeagent[fuzz]'")
    from executors.fuzzing import CommandOptions, check_options, load_tools, run_command

    options = CommandOptions.from_mapping(vars(args))
    try:
        tools = load_tools(args.tools)
    except ValueError as exc:
        raise _usage(str(exc)) from None
    except Exception as exc:  # the user's tools module failed to import, or lacks the name
        raise _usage(f"--tools {' '.join(args.tools or ())}: {type(exc).__name__}: {exc}") from None
    try:
        distribute = make_distribute(options)
        check_options(options, distribute)
    except ValueError as exc:
        raise _usage(str(exc)) from None
    if "crashes" in args.properties and args.authorized_imports is None:
        from executors.fuzzing.attacks.native_calls import NATIVE_IMPORTS

        args.authorized_imports = [m for m in NATIVE_IMPORTS
                                   if importlib.util.find_spec(m.split(".")[0]) is not None]
    factory = make_factory(args)
    _check_executor(factory, args)
    if distribute is None:
        return run_command(options, factory, tools)
    from codeagent.batch import BatchError

    try:
        return run_command(options, factory, tools, distribute=distribute)
    except BatchError as exc:  # no Ray, workers that cannot start
        raise SystemExit(f"codeagent fuzz: {exc}") from None


def _check_executor(factory: Callable[..., Any], args: argparse.Namespace) -> None:
    """Start the executor once before the campaign: a module that is not installed (or an engine
    that is not there) is a usage error now, not a failure on every example."""
    from executors.importable import NotImportable

    try:
        if args.executor == "local":  # (built here, its libraries' thread pools would not
            from executors.base import extra_imports  # survive the campaign's fork)
            from executors.importable import ensure_importable

            ensure_importable(extra_imports(args.authorized_imports))
            return
        executor = factory()
    except NotImportable as exc:
        raise _usage(f"--authorized-imports {' '.join(exc.missing)}: not installed where the {args.executor} "
                     "executor runs (install it, or drop it)") from None
    except Exception as exc:
        raise _usage(f"cannot start the {args.executor} executor: {type(exc).__name__}: {exc}") from None
    executor.close()


def main(argv: list[str] | None = None) -> int:
    from .flags.options import Parser

    parser = Parser(prog="codeagent fuzz", description=__doc__.splitlines()[0])
    add_fuzz_arguments(parser)
    return run_fuzz(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
