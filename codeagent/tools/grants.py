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

__all__ = ["executor_grants", "access_rule", "authorized", "files_section", "restricted", "MAX_LISTED_FILES"]

MAX_LISTED_FILES = 30  # entries of the listing in the prompt: enough to find the data, not a dump

NO_ACCESS = ("There is no file, network or shell access, and names starting with an underscore are "
             "not available.")
OPEN_NO_ACCESS = ("The code is full Python, but there are no files of the host to read and no network.")

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


# How code under the restricted policy (no open()) reads and writes files, by the module it needs.
_FILE_MODULES = (("pathlib", "pathlib.Path(...).read_text() / .write_text()"),
                 ("pandas", "pandas.read_csv / DataFrame.to_csv"),
                 ("polars", "polars.read_csv"),
                 ("numpy", "numpy.loadtxt / numpy.savetxt"))


def authorized(executor: Any, module: str) -> bool:
    """May code in `executor` import top-level `module`? (restricted policy: its authorized list)"""
    imports = tuple(getattr(executor, "authorized_imports", ()) or ())
    return "*" in imports or module in imports or f"{module}.*" in imports


def restricted(executor: Any) -> bool:
    return getattr(executor, "policy", "restricted") == "restricted"  # LocalExecutor: always restricted


def _file_modules(executor: Any) -> str:
    """The sentence on how the code can use files without open(), from what it may import."""
    ways = [how for module, how in _FILE_MODULES if authorized(executor, module)]
    if ways:
        return f" The builtin open() is not available: read and write files with {', '.join(ways)}."
    return (" The builtin open() is not available, and none of the modules you may import reads or writes "
            "files (pathlib or pandas would: they are not authorized here).")


def access_rule(executor: Any) -> str:
    """The prompt's sentence on files, network and shell for this executor's grants (true to its
    policy: under the restricted one, how files can be read with what it may import)."""
    grants = executor_grants(executor)
    guarded = restricted(executor)
    if grants is None or not _granted(grants):
        return NO_ACCESS if guarded else OPEN_NO_ACCESS
    files = ("Your code can read the files and directories listed under \"Files\" below and write "
             "where it says read-write; relative paths resolve in the working directory.")
    if not guarded:
        return f"{files} open() and any module can use them. " + (
            "The network is reachable." if grants.network else "There is no network access.")
    files += _file_modules(executor)
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
