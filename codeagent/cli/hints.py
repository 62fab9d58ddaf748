"""The command line's hint after a refused import: the fix may be a flag, never one the command
already has."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["flag_hint"]

_REFUSED = (re.compile(r"import of '([\w.]+)' is not allowed"),
            re.compile(r"cannot import '(\w+)' from '([\w.]+)'"),
            re.compile(r"module '([\w.]+)' has no attribute '(\w+)' in the sandbox"))


def flag_hint(error: Any, given: Any = ()) -> str:
    """The refusal is written for a model; on the command line the fix may be a flag. Never one
    the command already has (in any form: 'numpy' covers numpy.linalg, as does 'numpy.*'): then
    the refusal stands for its own reason, and the hint says so instead of sending the user
    round again."""
    if error.type not in ("ImportError", "PolicyError", "AttributeError"):
        return ""
    for pattern in _REFUSED:
        m = pattern.search(error.message or "")
        if m is not None:
            break
    else:
        return ""
    module = m.group(1) if m.re is _REFUSED[0] else \
        (f"{m.group(2)}.{m.group(1)}" if m.re is _REFUSED[1] else f"{m.group(1)}.{m.group(2)}")
    if any(part.startswith("_") for part in module.split(".")):
        return ""  # private: no flag opens it
    for name in given or ():
        base = name[:-2] if name.endswith(".*") else name
        if module == base or module.startswith(base + "."):
            if m.re is _REFUSED[2]:
                return ""  # (authorized: the attribute is hidden, or the module has none)
            return (f"\nhint: --import {name} already authorizes {module}; it stays refused for "
                    "the reason above, which no --import changes")
    return f"\nhint: to allow it, pass --import {module.split('.')[0]}"
