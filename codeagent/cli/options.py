"""The flags `run`, `exec` and `batch` share, and the range check of every number a user types.

One parser helper (`add_executor_options`) gives the three commands the same flags for where the
code runs (--executor), what it may import (--import, --packages), its time limit (--timeout)
and what it may touch (--read, --write, --workdir, --network); `executor_options` turns them into
the plain options of `codeagent.cli.executor_options.make_executor`. Every number is checked where it
is parsed (argparse types below), with one rule for timeouts: `executors.base.timeout_seconds`.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any, NoReturn

from executors.base import Limits, timeout_seconds

from .access import access_options, add_access_options
from .executor_options import EXECUTORS

__all__ = ["Parser", "seconds", "seconds_or_none", "count", "number", "add_executor_options", "executor_options",
           "task_after_tools"]


class Parser(argparse.ArgumentParser):
    """argparse, with a usage mistake reported in one line that says where the options are."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (options: {self.prog} --help)\n")


def seconds(text: str) -> float:
    """A time limit in seconds: a finite number > 0 (above MAX_TIMEOUT_S, what the OS can wait, it
    is MAX_TIMEOUT_S)."""
    try:
        return timeout_seconds(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")


def seconds_or_none(text: str) -> float:
    """A time limit in seconds, or 0 for none (returned as 0.0)."""
    if text.strip() in ("0", "0.0", "none"):
        return 0.0
    try:
        return timeout_seconds(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, or 0 for no limit, got {text!r}")


def count(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An integer in [minimum, maximum]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {minimum}, got {text!r}")
        if value < minimum or (maximum is not None and value > maximum):
            span = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
            raise argparse.ArgumentTypeError(f"must be {span}, got {value}")
        return value

    parse.__name__ = f"count >= {minimum}"
    return parse


def number(minimum: float, *, above: bool = False) -> Callable[[str], float]:
    """A finite number >= minimum (> minimum when `above`)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < minimum or (above and value == minimum):
            raise argparse.ArgumentTypeError(f"must be a number {'>' if above else '>='} {minimum:g}, got {text!r}")
        return value

    parse.__name__ = f"number >= {minimum:g}"
    return parse


def add_executor_options(p: argparse.ArgumentParser, *, imports: bool = True, batch: bool = False) -> None:
    """--executor, and (imports=True) --import, --packages, --timeout and the grants."""
    where = "one warm executor per worker, reused by its tasks" if batch else "where the code runs"
    p.add_argument("--executor", choices=tuple(EXECUTORS), default="subprocess",
                   help=f"{where}: local (in this process, restricted), subprocess (a child process, "
                        "restricted, confined by the kernel where it can) or docker (a container) "
                        "(default: subprocess)")
    if not batch:
        p.add_argument("--verbose", "-v", action="store_true",
                       help="show what the executor enforces and by what (its isolation table) on stderr")
    if not imports:
        return
    p.add_argument("--import", dest="imports", action="append", metavar="MODULE",
                   help="a module the code may import besides the safe defaults; 'pkg.*' for its "
                        "submodules (repeatable)")
    p.add_argument("--unconfined-native", action="store_true",
                   help="--executor subprocess: let native packages that hand out raw memory (numpy "
                        "and all on it) load even where the kernel's layers are missing (the isolation "
                        "table says which); the guard alone does not hold against native code")
    p.add_argument("--packages", action="append", metavar="DIST[,DIST...]", default=[],
                   help="--executor docker: distributions to put in the image, copied offline from this "
                        "Python's environment (repeatable; an --import the image lacks adds its own)")
    names = ("--timeout", "--action-timeout") if batch else ("--timeout",)  # batch's old name still works
    p.add_argument(*names, dest="timeout", type=seconds, default=None,
                   metavar="SECONDS",
                   help=f"time limit per code action, in seconds (default: {Limits().timeout_s:g})")
    add_access_options(p)


def executor_options(args: argparse.Namespace) -> dict[str, Any]:
    """The plain options (`codeagent.cli.executor_options`) the flags of add_executor_options ask for."""
    options: dict[str, Any] = {}
    if getattr(args, "imports", None):
        options["authorized_imports"] = list(args.imports)
    packages = [name.strip() for text in getattr(args, "packages", None) or () for name in text.split(",")]
    if any(packages):
        options["packages"] = [name for name in packages if name]
    if getattr(args, "timeout", None) is not None:
        options["timeout_s"] = args.timeout
    if getattr(args, "unconfined_native", False):
        options["unconfined_native"] = True
    grants = access_options(args)
    if grants is not None:
        options["access"] = grants
    return options


def task_after_tools(args: argparse.Namespace, positional: str) -> None:
    """`--tools a:b TASK`: argparse gives TASK to --tools (nargs="+"); a tool reference always has
    a colon, so a last item without one is the positional argument it swallowed."""
    tools = getattr(args, "tools", None) or []
    if getattr(args, positional, None) is None and tools and ":" not in tools[-1]:
        setattr(args, positional, tools.pop())
