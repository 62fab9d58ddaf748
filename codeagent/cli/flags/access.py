"""The command line's grants: `--read DIR --write DIR --workdir DIR --network` as an `executors.Access`.

The same flags serve every executor (`--executor local|subprocess|docker`): the executor enforces
them its own way. A path that does not exist, or a grant the executors refuse (a write grant over
the host's code, overlapping grants), is a usage error in one line that names the flag.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

__all__ = ["add_access_options", "access_from_args", "access_options", "checked_access", "grant_error"]


class GrantError(Exception):
    """A bad --read / --write / --workdir: the message names the flag and the path."""


def add_access_options(p: argparse.ArgumentParser) -> None:
    # (inside a group already, as batch's "running" group: its flags join it; nesting is deprecated)
    g = p if isinstance(p, argparse._ArgumentGroup) else p.add_argument_group(
        "files and network (what the code may touch; default: nothing but a private scratch directory)")
    g.add_argument("--read", action="append", default=[], metavar="PATH",
                   help="a directory or file the code may read (repeatable)")
    g.add_argument("--write", action="append", default=[], metavar="DIR",
                   help="a directory the code may read and write (repeatable)")
    g.add_argument("--workdir", metavar="DIR",
                   help="the code's working directory, read-write: relative paths resolve here "
                        "(default: a private temporary directory, removed afterwards)")
    g.add_argument("--network", action="store_true", help="let the code open network connections")


def access_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The grant flags as plain JSON (what `executor_options` and a batch's workers take); None
    when none was given."""
    read, write = list(getattr(args, "read", None) or ()), list(getattr(args, "write", None) or ())
    workdir, network = getattr(args, "workdir", None), bool(getattr(args, "network", False))
    if not (read or write or workdir or network):
        return None
    return {"read": read, "write": write, "workdir": workdir, "network": network}


def access_from_args(args: argparse.Namespace) -> Any:
    """The `executors.Access` the flags ask for; None when none was given (the executor's default)."""
    grants = access_options(args)
    return None if grants is None else checked_access(**grants)


def checked_access(*, read: list[str], write: list[str], workdir: str | None, network: bool) -> Any:
    """An `executors.Access` of these grants; a path that does not exist, or a grant the executors
    refuse, is a GrantError naming the flag."""
    for flag, paths in (("--read", read), ("--write", write), ("--workdir", [workdir] if workdir else [])):
        for path in paths:
            full = os.path.realpath(os.path.expanduser(path))
            if not os.path.exists(full):
                raise GrantError(f"{flag} {path}: {full} does not exist (create it first, or fix the path)")
            if flag != "--read" and not os.path.isdir(full):
                raise GrantError(f"{flag} {path}: {full} is not a directory")
    from executors.access import Access, AccessError

    try:
        return Access(read=read, write=write, workdir=workdir, network=network)
    except AccessError as exc:
        raise GrantError(grant_error(exc)) from None


_ACCESS_FIELD = re.compile(r"Access\((read|write|workdir)=[^)]*\)")


def grant_error(exc: BaseException) -> str:
    """An executors.AccessError's message in the command line's terms (flags, not Access fields)."""
    text = str(exc)
    text = _ACCESS_FIELD.sub(lambda m: f"--{m.group(1)}", text)
    text = re.sub(r",? or pass Access\(\.\.\., force=True\) if you mean it", "", text)
    return text.replace("Access grants overlap", "the grants overlap").replace("Access(...)", "the grant")
