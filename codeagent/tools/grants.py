"""What the model is told about the files and network its code may use.

The executor owns the grants (`executors.Access`, resolved when the executor is made); the agent
only reads them — `executor.grants` (LocalExecutor) or `executor.access` once resolved
(SubprocessExecutor, DockerExecutor): anything with `listing(max_entries)` — and writes them into
the system prompt: a rule (what the code may read, write, reach) and a capped listing of the files
it can see. An executor that grants nothing beyond its private scratch directory gets the old
rule, "no file, network or shell access", and no listing.
"""

from __future__ import annotations

from typing import Any

__all__ = ["executor_grants", "access_rule", "files_section", "MAX_LISTED_FILES"]

MAX_LISTED_FILES = 30  # entries of the listing in the prompt: enough to find the data, not a dump

NO_ACCESS = ("There is no file, network or shell access, and names starting with an underscore are "
             "not available.")


def executor_grants(executor: Any) -> Any | None:
    """The executor's resolved grants (an `executors.ResolvedAccess`), or None if it has none."""
    for name in ("grants", "access"):
        value = getattr(executor, name, None)
        if callable(getattr(value, "listing", None)) and hasattr(value, "workdir"):
            return value
    return None


def _granted(grants: Any) -> bool:
    """Anything beyond a private scratch workdir: files, a workdir the user chose, the network."""
    return bool(grants.read or grants.write or not getattr(grants, "private_workdir", True) or grants.network)


def access_rule(executor: Any) -> str:
    """The prompt's sentence on files, network and shell for this executor's grants."""
    grants = executor_grants(executor)
    if grants is None or not _granted(grants):
        return NO_ACCESS
    files = ("Your code can read the files and directories listed under \"Files\" below and write "
             "where it says read-write; relative paths resolve in the working directory.")
    if getattr(executor, "policy", "restricted") == "restricted":  # LocalExecutor has no `policy`: always restricted
        files += (" The builtin open() is not available: read and write files with the modules you can "
                  "import (pandas.read_csv, json with pathlib.Path.read_text, ...).")
    if grants.network:
        return f"{files} The network is reachable. There is no shell access, and names starting with an underscore are not available."
    return f"{files} There is no network or shell access, and names starting with an underscore are not available."


def files_section(executor: Any, max_entries: int = MAX_LISTED_FILES) -> str:
    """The listing of what the code can see (capped), as a prompt section; "" when nothing is granted."""
    grants = executor_grants(executor)
    if grants is None or not _granted(grants):
        return ""
    listing = grants.listing(max_entries)
    # A container may mount the workdir elsewhere: show the path the code will see.
    workdir = getattr(executor, "workdir", None)
    if isinstance(workdir, str) and workdir != grants.workdir:
        listing = listing.replace(grants.workdir, workdir)
    return f"\nFiles:\n{listing}\n"
