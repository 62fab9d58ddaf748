"""The `compile` row's list of code that builds its own source: the stdlib's and the libraries'.

A library that compiles source it built itself, from its own names and signatures, never from a
string the model wrote, compiles without the policy check (capabilities/table.py `judge_compile`);
whatever else a library compiles is checked with the policy (restricted/guards/evaluators.py). Each entry
says what may be compiled and why. Stdlib only (the worker imports it).
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

from .grants import text_of

__all__ = ["LIBRARY_CODE_GENERATORS", "builds_its_own", "rebinds_annotations"]

# Stdlib functions that compile source they generated themselves from checked identifiers, by
# (file, qualified name): dataclasses compiles each method with `_create_fn` up to 3.12 and all of
# a class's methods in one `__create_fn__` from 3.13 (`_FuncBuilder.add_fns_to_class`).
_CODE_GENERATORS = {
    ("dataclasses.py", "_create_fn"), ("dataclasses.py", "_FuncBuilder.add_fns_to_class"),
    ("__init__.py", "namedtuple"),  # collections
}

_IMPORT_LINE = r"(?:import [\w.]+|from [\w.]+ import (?:\*|\w+))"
# Library functions (installed in site-packages) that compile source they build themselves, from
# their own names and signatures, never from a string the model wrote:
# (path inside site-packages, function) -> (the sources allowed, as a regex; None: whatever it
# builds) and the reason. What else a library compiles is checked with the policy
# (restricted/guards/evaluators.py): sympify's and lambdify's expressions, patsy's and formulaic's
# formula terms, pandas' eval/query, numexpr.
LIBRARY_CODE_GENERATORS: dict[tuple[str, str], tuple[str | None, str]] = {
    ("networkx/utils/decorators.py", "compile"): (
        None, "argmap (networkx's decorators) wraps a function in code built from its "
              "signature's parameter names and mangled function names, at its first call"),
    ("scipy/stats/_distn_infrastructure.py", "_attach_argparser_methods"): (
        None, "a distribution's argument parsers, from its shape names (scipy checks that "
              "they are identifiers and not keywords), when a distribution is made or frozen"),
    ("sympy/parsing/sympy_parser.py", "parse_expr"): (
        r"from sympy import \*", "sympify's namespace (the constant `from sympy import *`); the "
                                 "expression itself is checked with the policy"),
    ("sympy/utilities/lambdify.py", "_import"): (
        rf"{_IMPORT_LINE}(?:; {_IMPORT_LINE})*|import_module\('[\w.]+'\)",
        "lambdify's module table (`from numpy import *`, ...); the function it generates is "
        "checked with the policy"),
    ("sympy/utilities/lambdify.py", "lambdify"): (
        rf"{_IMPORT_LINE}|\w+ = [\w.]+", "the printer's imports of the functions it names; the "
                                         "generated function itself is checked with the policy"),
}
_GENERATOR_PATTERNS: dict[tuple[str, str], Any] = {}


def _library_generator(code: Any, source: Any) -> bool:
    """Is `code` (the frame compiling) a library code generator allowed to compile `source`?"""
    filename, name = code.co_filename, code.co_name
    for (path, function), (pattern, _reason) in LIBRARY_CODE_GENERATORS.items():
        if name != function or not filename.endswith("/" + path) or \
                not _in_site_packages(filename[:-len(path) - 1]):
            continue
        if pattern is None:
            return True
        text = text_of(source)
        if type(text) is bytes:  # (exec and eval of a str report it UTF-8 encoded)
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError:
                return False
        compiled = _GENERATOR_PATTERNS.get((path, function))
        if compiled is None:
            compiled = _GENERATOR_PATTERNS[(path, function)] = re.compile(pattern)
        return type(text) is str and compiled.fullmatch(text) is not None
    return False


@functools.lru_cache(maxsize=64)
def _in_site_packages(directory: str) -> bool:
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    roots = {os.path.realpath(p) for p in (paths.get("purelib"), paths.get("platlib"),
                                           *getattr(site, "getsitepackages", list)()) if p}
    return os.path.realpath(directory) in roots


def builds_its_own(code: Any, source: Any) -> bool:
    """Does the function running `code` compile `source` as code it built itself?"""
    if (os.path.basename(code.co_filename), code.co_qualname) in _CODE_GENERATORS and \
            _in_stdlib(code.co_filename):
        return True
    return _library_generator(code, source)


def _in_stdlib(filename: str) -> bool:
    import sysconfig

    return filename.startswith(sysconfig.get_paths()["stdlib"])


def rebinds_annotations(caller: Any, built: Any) -> bool:
    """Is the function running `caller` annotationlib rebinding an `__annotate__` function's code
    (`built`) to stand-in globals? From 3.14 (PEP 649) that is how dataclasses, NamedTuple,
    TypedDict and typing read annotations that name something not defined yet: the code is the
    compiler's from the model's annotations (checked and instrumented like the rest of its code),
    run over a copy of its own globals in which a missing name becomes a forward reference."""
    return getattr(built, "co_name", None) == "__annotate__" and \
        caller.co_name == "call_annotate_function" and \
        os.path.basename(caller.co_filename) == "annotationlib.py" and _in_stdlib(caller.co_filename)
