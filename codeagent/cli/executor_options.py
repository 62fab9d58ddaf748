"""The executor a command asks for, as plain JSON options, and the one function that builds it.
(Other keys, from Python callers of run_batch(executor_options=...), go to the constructor as they are.)

`codeagent run`, `exec` and `batch` (and each batch worker) describe the executor the same way:

    {"authorized_imports": ["pandas"], "packages": ["pandas"], "timeout_s": 30,
     "access": {"read": ["data/"], "write": [], "workdir": null, "network": false}}

`make_executor(kind, options)` turns that into a LocalExecutor, SubprocessExecutor or
DockerExecutor, and every setup mistake into a `SetupError` whose message names the command-line
flag to change (--import, --packages, --timeout, --read, ...). `batch` calls it once in the driver
before the first task, so a bad flag is exit 2 there, not an `error` row for every task.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from executors.base import Limits

__all__ = ["EXECUTORS", "SetupError", "make_executor", "access_of", "limits_of"]

EXECUTORS = {"local": ("executors.local", "LocalExecutor"),
             "subprocess": ("executors.process", "SubprocessExecutor"),
             "docker": ("executors.docker", "DockerExecutor")}


class SetupError(ValueError):
    """A setup mistake the user fixes with a flag: the message names it."""


def limits_of(options: Mapping[str, Any]) -> Limits | None:
    timeout = options.get("timeout_s")
    if timeout is None:
        return None
    try:
        return Limits(timeout_s=timeout)
    except ValueError as exc:
        raise SetupError(str(exc).replace("Limits.timeout_s", "--timeout"))


def access_of(options: Mapping[str, Any]) -> Any:
    """The `executors.Access` of options["access"] (None: the executor's default, nothing granted)."""
    grants = options.get("access")
    if not grants or not isinstance(grants, Mapping):  # None, or already an Access
        return grants or None
    from .access import GrantError, checked_access

    try:
        return checked_access(read=list(grants.get("read") or ()), write=list(grants.get("write") or ()),
                              workdir=grants.get("workdir"), network=bool(grants.get("network")))
    except GrantError as exc:
        raise SetupError(str(exc))


def _check_imports(kind: str, imports: Sequence[str] | None) -> None:
    """--import of a module that is not installed where the code runs: a setup error, now."""
    if not imports or kind == "docker":  # the docker executor checks its image itself
        return
    from executors.importable import NotImportable, ensure_importable

    # local: this process; subprocess: a worker started from this same interpreter
    try:
        ensure_importable(imports, python=None if kind == "local" else sys.executable, setting="--import")
    except NotImportable as exc:
        names = " ".join(exc.missing)
        raise SetupError(f"--import {names}: not installed for {exc.python or sys.executable} "
                         f"(install it there, or drop that --import)")


def make_executor(kind: str, options: Mapping[str, Any] | None = None, *, tools: Any = None,
                  notes: list[str] | None = None) -> Any:
    """The executor `kind` ("local", "subprocess", "docker") with these options (see the module
    docstring). Docker: modules named by --import that its image lacks are added as --packages
    (installed here, copied offline), and `notes` gets a line saying so."""
    options = dict(options or {})
    if kind not in EXECUTORS:
        raise SetupError(f"unknown executor {kind!r}: choose one of {', '.join(EXECUTORS)} (--executor)")
    imports = list(options.get("authorized_imports") or ()) or None
    packages = list(options.get("packages") or ())
    if packages and kind != "docker":
        raise SetupError("--packages builds a Docker image: it needs --executor docker (for the other "
                         "executors, install the packages in this Python and pass --import)")
    _check_imports(kind, imports)
    module_name, cls_name = EXECUTORS[kind]
    try:
        cls = getattr(importlib.import_module(module_name), cls_name)
    except (ImportError, AttributeError) as exc:
        raise SetupError(f"the {kind} executor is not available in this installation: {exc}")
    from executors.access import AccessError
    from executors.importable import NotInImage, distributions_for

    known = ("authorized_imports", "packages", "timeout_s", "access", "unconfined_native")
    settings: dict[str, Any] = {k: v for k, v in options.items() if k not in known}  # Python callers' own
    settings["authorized_imports"] = imports
    if options.get("unconfined_native"):
        if kind != "subprocess":
            raise SetupError("--unconfined-native is for --executor subprocess (the local executor "
                             "has no kernel layer to miss, a container is the boundary of docker)")
        settings["unconfined_native"] = True
    if tools is not None:
        settings["tools"] = tools
    timeout = limits_of(options)
    if timeout is not None:  # --timeout on top of a caller's own Limits, if any
        given = settings.get("limits")
        settings["limits"] = dataclasses.replace(given, timeout_s=timeout.timeout_s) if given else timeout
    access = access_of(options)
    if access is not None:
        settings["access"] = access
    if packages:
        settings["packages"] = packages
    try:
        try:
            return cls(**settings)
        except NotInImage as exc:
            if packages or kind != "docker":
                raise
            settings["packages"] = distributions_for(exc.missing)
            if notes is not None:
                notes.append(f"--import {' '.join(exc.missing)}: the Docker image gets --packages "
                             f"{' '.join(settings['packages'])} (copied from this Python's environment)")
            return cls(**settings)
    except NotInImage as exc:
        wanted = " ".join(dict.fromkeys([*packages, *distributions_for(exc.missing)]))
        raise SetupError(f"--import {' '.join(exc.missing)}: the Docker image lacks it; add --packages "
                         f"{wanted} (built offline from the packages installed in this Python), or drop "
                         "that --import")
    except AccessError as exc:  # a grant the executor refuses: name the flag
        from .access import grant_error

        raise SetupError(grant_error(exc))
    except Exception as exc:
        text = (str(exc).replace("packages=", "--packages ").replace("authorized_imports", "--import")
                .replace("SubprocessExecutor(unconfined_native=True)", "--unconfined-native"))
        raise SetupError(f"cannot start the {kind} executor: {type(exc).__name__}: {text}")

