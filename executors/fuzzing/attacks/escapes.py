"""`escape_attempts()`: known escape primitives, rendered with generated glue.

An attempt = the preamble (preamble.py) + a primitive of one family
(primitives.py) written in one attribute/string style and placed in one carrier
(rendering.py), aimed at one observable effect. The "library" family goes through the
authorized libraries instead (library_escapes.py: a library carrier fed a payload route).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .._hypothesis import st
from .attempt import EscapeAttempt
from .deferred import DeferredPlan, deferred_attempts, deferred_plan
from .library_escapes import LibraryPlan, Targets, format_pairs, library_attempts, library_plan
from .preamble import EFFECTS, PREAMBLE, REACH_TOKEN
from .primitives import SOURCES, TOOL_CHAINS, direct, format_attempt, tamper, tool_chains
from .rendering import ATTR_STYLES, CARRIERS, STRING_STYLES, Renderer, carry

__all__ = ["EscapeAttempt", "escape_attempts", "FAMILIES", "DEFAULT_FAMILIES", "REACH_TOKEN"]

FAMILIES = ("dunder_walk", "module_pivot", "frames", "builtins", "tool_internals",
            "refused_import", "format_string", "direct", "stdlib_eval", "library", "deferred")
# Drawn when no families are named: all of them ("deferred": model-made objects with hostile
# methods handed to the user's tools or left for the host to touch, issue 21).
DEFAULT_FAMILIES = FAMILIES
EFFECT_NAMES = ("marker", "canary", "reach", "tamper", "read")


def _statement(draw: Any, r: Renderer, effect: str, family: str, tools: list[str],
               authorized: tuple[str, ...]) -> tuple[str, set[str], str, str | None]:
    """(family, setup, statement, expression form of the statement or None) for one attempt."""
    if effect == "tamper":
        setup, stmt = tamper(draw, r, tools)
        return "tamper", setup, stmt, None
    if family == "direct":
        family, stmt = direct(draw, effect, r)
        return family, set(), stmt, None
    if family == "format_string":
        setup, stmt = format_attempt(draw, tools, authorized)
        if stmt.startswith("power("):
            return family, setup, stmt, stmt
        return family, setup, stmt, stmt[len("print("):-1] if stmt.startswith("print(") else None
    if family == "tool_internals" and not tools:
        family = "dunder_walk"
    setup, expr = SOURCES[family](draw, r, tools, authorized)
    stmt = f"power({expr})"
    return family, setup, stmt, stmt


def _family_weights(families: tuple[str, ...], plan: LibraryPlan | None,
                    effects: tuple[str, ...], deferred: DeferredPlan | None = None) -> tuple[str, ...]:
    """The families to sample from: "library" only when an authorized library has rows for these
    effects, repeated (up to a third of the draws) when the libraries offer many carriers;
    "deferred" only when an authorized module writes files and the effects include "marker"."""
    if "deferred" in families and (deferred is None or not deferred.usable or "marker" not in effects):
        families = tuple(f for f in families if f != "deferred") or ("dunder_walk",)
    # rows that need no module (the builtin map over str.format) alone do not make a family
    rows = len([r for r in plan.rows(effects) if r.needs]) if plan is not None else 0
    if not rows:
        return tuple(f for f in families if f != "library") or ("dunder_walk",)
    if "library" not in families:
        return families
    return families + ("library",) * max(0, min(len(families) // 2, rows // 8) - 1)


@st.composite
def _escape_attempt(draw: Any, marker_path: str, canary_env: str, tools: list[str],
                    authorized: tuple[str, ...], effects: tuple[str, ...],
                    families: tuple[str, ...], plan: LibraryPlan | None,
                    pairs: tuple[tuple[str, str], ...], deferred: DeferredPlan | None = None) -> EscapeAttempt:
    effect = draw(st.sampled_from(effects))
    family = draw(st.sampled_from(families))
    if family == "deferred" and deferred is not None:
        from .canaries import CanaryFiles

        canaries = CanaryFiles(marker_path, "")
        targets = Targets(marker_path, canaries.secret_file, canaries.secret_dir, canaries.root, canary_env)
        return draw(deferred_attempts(targets, deferred))
    if family == "library" and plan is not None:
        from .canaries import CanaryFiles

        canaries = CanaryFiles(marker_path, "")
        targets = Targets(marker_path, canaries.secret_file, canaries.secret_dir, canaries.root, canary_env)
        return draw(library_attempts(targets, plan, effects, pairs))
    if effect == "read" and family in ("direct", "format_string"):
        family = "builtins"
    attr_style = draw(st.sampled_from(ATTR_STYLES))
    string_style = draw(st.sampled_from(STRING_STYLES))
    r = Renderer(draw, attr_style, string_style)
    carrier = draw(st.sampled_from(CARRIERS))
    family, setup, stmt, expr_ok = _statement(draw, r, effect, family, tools, authorized)
    body = carry(carrier, stmt, expr_ok)
    from .canaries import CanaryFiles

    preamble = PREAMBLE.format(marker=str(marker_path), canary=canary_env, token=REACH_TOKEN,
                               secret=CanaryFiles(marker_path, "").secret_file, effect=EFFECTS[effect])
    head = sorted(s for s in setup | r.setup if s.startswith(("import", "from")))
    defs = sorted(s for s in setup | r.setup if not s.startswith(("import", "from")))
    code = "\n".join(head) + "\n" + preamble + "\n\n" + "\n\n".join(defs + [body]) + "\n"
    encoding = attr_style if attr_style in ("literal", "fullwidth") else f"{attr_style}+{string_style}"
    return EscapeAttempt(code=code, family=family, effect=effect, carrier=carrier, encoding=encoding)


def escape_attempts(
    marker_path: str,
    canary_env: str,
    *,
    tools: Iterable[str] | Mapping[str, Any] = (),
    authorized_imports: Iterable[str] | None = None,
    effects: Iterable[str] = EFFECT_NAMES,
    families: Iterable[str] = DEFAULT_FAMILIES,
) -> st.SearchStrategy[EscapeAttempt]:
    """Strategy for `EscapeAttempt`s: a known escape primitive, rendered with generated glue.

    Primitives (families): dunder walks to `__subclasses__`/`__globals__`, `getattr` with computed
    names (concatenation, join, chr, reversed, bytes, format, NFKC of full-width text, attrgetter,
    reduce, map), `str.format`/`format_map`/`string.Formatter` field traversal, frames of
    generators, coroutines, async generators and tracebacks (walked up through `f_back`), module
    attribute pivots found on this interpreter (`random._os`, `re.enum.sys`, …), builtins lookups,
    the internals of `tools` (names of the tools the executor has), refused imports.
    Carriers: top level, try/except, function, lambda, comprehension, class body, method,
    `__init_subclass__`, metaclass, `__del__` (now or at garbage collection), decorator,
    generator, coroutine, `__repr__`/`__str__`/`__eq__`/`__format__`/`__getattr__` hooks the host
    might call, default arguments, exception `__str__`. Identifiers may be full-width (NFKC).

    The "deferred" family (deferred.py; asked for by name) hands model-made objects with hostile
    methods, host callables as methods, suspended generators and lazy iterators over host writers
    to each of `tools` or leaves them as the value, final answer or a variable; the evaluator
    then touches them as a host would (host_touches.py).

    The "library" family goes through the authorized libraries (library_routes.py): readers and
    writers aimed outside the grants (absolute, `..`, /proc/self/root, file:// URLs, symlinks
    and hard links made in the working directory), unpickling, native code, string evaluators,
    format fields, environment reads, processes and settings that outlive the step; drawn only
    for modules that are authorized and importable.

    Effects: "marker" creates `marker_path` (file or directory) or changes anything beside it,
    "read" prints the secret of the canary file beside it (`<dir>/secret/secret.txt`), "canary"
    prints the value of the environment variable `canary_env`, "reach" prints REACH_TOKEN after
    calling a real `os.getpid()`, "tamper" changes process-wide state of the host (csv/decimal
    settings, attributes of authorized modules and their classes, the tools' defaults and
    attributes, library settings), which `executors.testing` sees by fingerprinting that state
    around each attempt. Under plain CPython most attempts succeed; a sandbox must stop every one.

        @given(escape_attempts("/tmp/marker", "MY_CANARY", tools=["search"]))
        def test_holds(attempt):
            ex.execute(attempt.code); assert not os.path.exists("/tmp/marker")
    """
    from ...base import DEFAULT_AUTHORIZED_IMPORTS

    authorized = tuple(authorized_imports) if authorized_imports is not None else DEFAULT_AUTHORIZED_IMPORTS
    effects = tuple(effects)
    families = tuple(families)
    bad = set(effects) - set(EFFECTS)
    if bad or not effects:
        raise ValueError(f"effects must be among {sorted(EFFECTS)}, got {sorted(bad) or 'none'}")
    if not families or set(families) - set(FAMILIES):
        raise ValueError(f"families must be among {FAMILIES}")
    if isinstance(tools, Mapping):
        TOOL_CHAINS.update({name: tool_chains(obj) for name, obj in tools.items()})
    plan = library_plan(tuple(authorized)) if "library" in families else None
    deferred = deferred_plan(tuple(authorized), tuple(sorted(tools))) if "deferred" in families else None
    families = _family_weights(families, plan, effects, deferred)
    pairs = format_pairs(tools)
    return _escape_attempt(str(marker_path), canary_env, sorted(tools), authorized, effects, families,
                           plan, pairs, deferred)
