"""Escape routes that a CPython version closed on its own.

The corpora (tests/test_security.py, tests/library_escapes.py, tests/deferred_escapes.py) check
that every attempt really gets out of plain CPython: that is what makes holding it mean
something. Some routes go through the standard library's insides, which change: a module that no
longer imports another at its top, a module removed, a builtin that now binds like a method. On a
version where plain CPython itself no longer lets the attempt out, it is not a route there: the
corpora leave it out on that version (`open_here`), with the reason below, and keep it on the
others. Found by running the corpora on 3.11-3.14 (scripts/test-pythons).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")
Version = tuple[int, int]


def _since(version: Version) -> Callable[[Version], bool]:
    return lambda here: here >= version


def _only(*versions: Version) -> Callable[[Version], bool]:
    return lambda here: here in versions


# attempt id -> (the versions that closed it, why)
CLOSED: dict[str, tuple[Callable[[Version], bool], str]] = {
    # tests/test_security.py
    "dataclasses_builtins": (_since((3, 12)), "dataclasses no longer imports builtins"),
    "datetime_sys": (_since((3, 12)), "datetime no longer imports sys"),
    "import_traceback_stack": (_only((3, 12), (3, 13)), "traceback.walk_stack(None) starts from "
                               "its caller's caller there: from the attempt's call it finds no frame"),
    "star_import_math_self_loader": (_since((3, 13)), "BuiltinImporter has no get_data"),
    "uuid_platform_os": (_since((3, 13)), "uuid no longer imports platform"),
    "csv_re_pivot": (_since((3, 14)), "csv no longer imports re at its top"),
    "string_re_pivot": (_since((3, 14)), "string no longer imports re at its top"),
    # tests/library_escapes.py
    "exec-distutils-spawn": (_since((3, 12)), "distutils was removed from the standard library "
                             "(PEP 632)"),
    # tests/deferred_escapes.py
    "output-len": (_since((3, 14)), "functools.partial binds like a method: as a class's __len__ "
                   "it is handed the instance too, and fails before it writes"),
    "output-bool": (_since((3, 14)), "the same, as __bool__"),
    "runtime-hook-getitem": (_since((3, 13)), "np.load no longer indexes the str subclass it is "
                             "given on its way to the host's audit hook: nothing fires"),
}


def closed_here(attempt_id: str, here: Version = sys.version_info[:2]) -> str | None:
    """Why this CPython closed the route itself, or None (it is a route here)."""
    closed = CLOSED.get(attempt_id)
    if closed is None or not closed[0](here):
        return None
    return f"closed by CPython {here[0]}.{here[1]}: {closed[1]}"


def open_here(attempts: Iterable[T]) -> list[T]:
    """The attempts that are routes on this CPython (see the module's docstring)."""
    return [a for a in attempts if closed_here(a.id) is None]  # type: ignore[attr-defined]
