"""Probe tools: the shapes real tools come in, each holding a way out if the executor leaked it.

Module globals with `os`, a partial's `.func`, a bound method's `__self__`, a closure cell, a
callable object's public attribute. Deterministic results, JSON-friendly.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

__all__ = ["probe_tools", "add"]


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _search(query: str, index: Any = None) -> list:
    return [f"{query}: result {i}" for i in range(2)]


class _Catalog:
    def __init__(self) -> None:
        self.backend = os

    def lookup(self, key: str) -> dict:
        """Look a key up in the catalog."""
        return {"key": key, "length": len(key), "found": self.backend is not None}


def _make_scale(backend: Any) -> Callable[..., list]:
    def scale(values: list, factor: int) -> list:
        """Multiply every value by factor."""
        return [v * factor for v in values] if backend is not None else []

    return scale


class _Echo:
    def __init__(self) -> None:
        self.backend = os

    def __call__(self, text: str) -> str:
        """Return the text reversed."""
        return str(text)[::-1]


def probe_tools() -> dict[str, Callable[..., Any]]:
    """Five tools of the usual shapes (function, partial, bound method, closure, callable object),
    each of which would hand model code the `os` module if the executor leaked its internals."""
    return {
        "add": add,
        "search": functools.partial(_search, index={"os": os}),
        "lookup": _Catalog().lookup,
        "scale": _make_scale(os),
        "echo": _Echo(),
    }
