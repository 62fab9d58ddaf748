"""Which packages import as the library in a step: the authorized ones and those they require.

An authorized package brings the packages its distribution declares it needs (scikit-learn:
scipy, joblib, threadpoolctl, narwhals; statsmodels: patsy, formulaic, pandas...) and, when they
are installed, those its extras name for use (networkx's `default`: scipy, numpy, pandas,
matplotlib; pandas': pyarrow, scipy), never those of its test, documentation, development or
build extras. Their modules load lazily, at call time (scikit-learn's `fit` imports narwhals'
pandas support, networkx's `pagerank` scipy.sparse), so they import as the library as well
(trusted_imports.py). Read from the installed distributions' metadata (top_level.txt or RECORD)
when a step first loads a module of a package that is not authorized itself (100-300 ms), then
kept for the process. Stdlib only.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["LibraryPackages", "library_packages"]

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA = re.compile(r"""extra\s*==\s*['"]([^'"]+)['"]""")
# Extras that are for working on the package, not with it.
_NOT_FOR_USE = re.compile(r"test|doc|dev|bench|lint|typ|build|example|check|style|format|debug|"
                          r"release|mypy|cover|install|ci\b", re.IGNORECASE)


# Packages a library imports in its own code when they are installed, that its distribution does
# not declare (not even as an extra): pyarrow's metadata names no requirement, yet its scalars
# and tables convert through pandas (`pa.scalar(date(...), type=pa.date32())` imports pandas).
_USES_WHEN_INSTALLED: dict[str, tuple[str, ...]] = {"pyarrow": ("numpy", "pandas")}


class LibraryPackages:
    """`top in packages`: do the modules of top-level package `top` import as the library? The
    authorized packages at once; the packages they require, read from the metadata on first
    need. Immutable once made."""

    __slots__ = ("authorized", "_closure", "_guard")

    def __init__(self, authorized: Iterable[str], guard: Callable[[], Any] | None = None) -> None:
        """`authorized`: names as in authorized_imports ("pkg", "pkg.sub", "pkg.*"); `guard`: a
        context manager factory the metadata is read under (the capability guard stands aside:
        this is the runtime's own lookup, made inside a step's import)."""
        self.authorized = frozenset(
            name.split(".")[0] for name in authorized
            if type(name) is str and name.split(".")[0] not in sys.stdlib_module_names)
        self._closure: frozenset[str] | None = None
        self._guard = guard

    def __contains__(self, top: object) -> bool:
        if top in self.authorized:
            return True
        if type(top) is not str or not self.authorized:
            return False
        closure = self._closure
        if closure is None:
            if self._guard is None:
                closure = _closure(self.authorized)
            else:
                with self._guard():
                    closure = _closure(self.authorized)
            self._closure = closure
        return top in closure

    def __repr__(self) -> str:
        return f"LibraryPackages({sorted(self.authorized)})"


def library_packages(authorized: Iterable[str]) -> frozenset[str]:
    """Every top-level package whose modules import as the library for this authorization."""
    tops = LibraryPackages(authorized).authorized
    return _closure(tops) if tops else frozenset()


@functools.lru_cache(maxsize=32)
def _closure(tops: frozenset[str]) -> frozenset[str]:
    try:
        import importlib.metadata as metadata
    except ImportError:  # pragma: no cover - every supported Python has it
        return tops
    found = set(tops)
    queue = [d for d in (_distribution_of(top, metadata) for top in sorted(tops)) if d is not None]
    seen: set[str] = set()
    while queue:
        dist = queue.pop()
        name = (dist.metadata["Name"] or "").lower()
        if name in seen:
            continue
        seen.add(name)
        provided = _modules_of(dist)
        found |= provided
        for top in sorted(provided & _USES_WHEN_INSTALLED.keys()):
            for used in _USES_WHEN_INSTALLED[top]:
                used_dist = _distribution_of(used, metadata)
                if used_dist is not None:
                    queue.append(used_dist)
        for requirement in dist.requires or []:
            marker = requirement.partition(";")[2]
            extra = _EXTRA.search(marker)
            if extra is not None and _NOT_FOR_USE.search(extra.group(1)) or \
                    extra is None and "extra" in marker:
                continue
            match = _NAME.match(requirement)
            if match is None:
                continue
            try:
                queue.append(metadata.distribution(match.group(1)))
            except metadata.PackageNotFoundError:
                continue  # not installed here (a platform-specific requirement)
    return frozenset(n for n in found if n.isidentifier() and n != "__pycache__")


def _distribution_of(top: str, metadata) -> object | None:
    """The installed distribution that provides the top-level package `top`."""
    try:
        dist = metadata.distribution(top)
        if top in _modules_of(dist):
            return dist
    except metadata.PackageNotFoundError:
        pass
    for dist in metadata.distributions():  # (scikit-learn provides sklearn: look for it)
        if top in _modules_of(dist):
            return dist
    return None


def _modules_of(dist) -> set[str]:
    """The top-level modules a distribution provides."""
    text = dist.read_text("top_level.txt")
    if text:
        return {line.strip() for line in text.splitlines() if line.strip()}
    names = set()
    for line in (dist.read_text("RECORD") or "").splitlines():
        path = line.split(",", 1)[0]
        first, slash, _rest = path.partition("/")
        if slash:
            if not first.endswith((".dist-info", ".data", ".libs", ".egg-info")):
                names.add(first)
        elif first.endswith(".py"):
            names.add(first[:-3])
        elif first.endswith((".so", ".pyd")):
            names.add(first.split(".")[0])
    return names
