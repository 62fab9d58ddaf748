"""Are the authorized modules installed where the code will run? Asked when an executor is made.

Authorizing a module that is not installed is a setup mistake, and without this check it shows
up only when model code first imports it, as an ImportError the model cannot fix. Every place
asks its own interpreter: the host for the in-process executor (`python=None`), the worker's
interpreter for a subprocess (`python="/path/to/python"`, one short probe process).

Only each name's top-level package is looked up (`numpy` for `numpy.linalg` or `numpy.*`): finding
a submodule means importing its parents, and a check that runs when an executor is made must not
import anything on the host. Standard library only.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterable

__all__ = ["NotImportable", "NotInImage", "missing_modules", "ensure_importable", "PROBE_SOURCE",
           "distributions_for"]

PROBE_TIMEOUT_S = 30.0

# Run by another interpreter (`python -I -c PROBE_SOURCE name...`, e.g. inside a container image):
# prints the missing top-level names as one JSON list.
PROBE_SOURCE = """\
import importlib.util, json, sys
missing = []
for name in sys.argv[1:]:
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        found = name in sys.modules
    if not found:
        missing.append(name)
print(json.dumps(missing))
"""

# Interpreters whose probe found everything asked of them: (python, names) -> True. Failures are
# not cached, so installing the missing package and trying again works without a restart.
_PROBED_OK: set[tuple[str, frozenset[str]]] = set()


class NotImportable(ImportError):
    """Authorized modules that are not installed for the interpreter that will run the code.

    `missing`: the top-level names not found; `python`: that interpreter (None: this one);
    `setting`: the option the user set (named in the message, e.g. "authorized_imports").
    """

    def __init__(self, missing: Iterable[str], python: str | None, setting: str = "authorized_imports") -> None:
        self.missing = tuple(missing)
        self.python = python
        self.setting = setting
        where = f"this Python ({sys.executable})" if python is None else python
        one = len(self.missing) == 1
        names = ", ".join(self.missing)
        super().__init__(
            f"{setting} names {'a module' if one else 'modules'} not installed for {where}: {names}. "
            f"Install {'it' if one else 'them'} there, or remove {'it' if one else 'them'} from {setting}."
        )


class NotInImage(NotImportable):
    """Authorized modules that the Docker image lacks; the message names the fix:
    `DockerExecutor(packages=[...])` builds an image with them from this Python's environment."""

    def __init__(self, missing: Iterable[str], image: str, packages: Iterable[str] = (),
                 *, own_image: bool = True) -> None:
        ImportError.__init__(self)
        self.missing = tuple(missing)
        self.python = None
        self.setting = "authorized_imports"
        self.image = image
        wanted = list(dict.fromkeys([*packages, *distributions_for(self.missing)]))
        one = len(self.missing) == 1
        names = ", ".join(self.missing)
        fix = f"DockerExecutor(packages={wanted!r})"
        how = (f"Add {'it' if one else 'them'} with {fix} (an image built offline from the "
               "packages installed in this Python's environment)" if own_image else
               f"Install {'it' if one else 'them'} in that image, or drop image= and pass {fix} "
               "(an image built offline from this Python's environment)")
        self.msg = (f"authorized_imports names {'a module' if one else 'modules'} the Docker image "
                    f"{image} lacks: {names}. {how}, or remove {'it' if one else 'them'} from "
                    "authorized_imports.")
        self.args = (self.msg,)

    def __str__(self) -> str:
        return self.msg


def distributions_for(modules: Iterable[str]) -> list[str]:
    """The installed distributions that provide these top-level modules (`PIL` -> `pillow`);
    a module no distribution here provides is named as itself."""
    import importlib.metadata

    try:
        owners = importlib.metadata.packages_distributions()
    except Exception:  # noqa: BLE001 - a broken environment: guess the names
        owners = {}
    out: list[str] = []
    for module in modules:
        for name in owners.get(module) or [module]:
            if name not in out:
                out.append(name)
    return out


def top_level_names(names: Iterable[str]) -> list[str]:
    """The distinct top-level packages of authorized names ("pkg", "pkg.sub", "pkg.*"), in order.

    "*" (any module) asks for nothing; names that are not dotted identifiers are left to the
    executor's own validation (`executors.base.normalize_imports`), which explains them better.
    """
    if isinstance(names, str):
        raise TypeError("authorized_imports must be a list of module names, not a string")
    out: list[str] = []
    for name in names:
        if not isinstance(name, str):
            continue
        top = name.split(".", 1)[0]
        if top.isidentifier() and top not in out:
            out.append(top)
    return out


def _missing_here(names: list[str]) -> list[str]:
    missing = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # ValueError: in sys.modules without a __spec__
            found = name in sys.modules
        if not found:
            missing.append(name)
    return missing


def _missing_there(python: str, names: list[str]) -> list[str]:
    key = (python, frozenset(names))
    if key in _PROBED_OK:
        return []
    try:
        # -I as the worker runs: no PYTHON* variables, no user site, no current directory.
        proc = subprocess.run([python, "-I", "-c", PROBE_SOURCE, *names], capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT_S, cwd="/", stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ValueError(f"cannot run python={python!r} to check authorized_imports: {exc}") from None
    try:
        missing = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else None
    except (ValueError, IndexError):
        missing = None
    if not isinstance(missing, list):
        detail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]
        raise ValueError(f"python={python!r} could not check authorized_imports (exit status "
                         f"{proc.returncode}): {detail}")
    if not missing:
        _PROBED_OK.add(key)
    return [str(m) for m in missing]


def missing_modules(names: Iterable[str], python: str | None = None) -> list[str]:
    """The top-level packages of `names` that `python` (None: this interpreter) cannot import."""
    tops = top_level_names(names)
    if not tops:
        return []
    return _missing_here(tops) if python is None else _missing_there(str(python), tops)


def ensure_importable(names: Iterable[str] | None, python: str | None = None, *,
                      setting: str = "authorized_imports") -> None:
    """Raise `NotImportable` naming every module of `names` that `python` cannot import.

    python: None for this interpreter (an in-process executor), else the path of the interpreter
    the code will run in. Raises ValueError when that interpreter cannot be run at all.
    """
    missing = missing_modules(names or (), python)
    if missing:
        raise NotImportable(missing, python, setting)
