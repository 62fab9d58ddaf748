"""Library-mediated escape attempts: a carrier of library_routes.py fed a payload route, drawn by
hypothesis, written in one attribute/string style and placed in one code carrier.

Only carriers whose modules are authorized (exact name or a "pkg.*" pattern) and importable on
this interpreter are drawn, so `codeagent fuzz --authorized-imports pandas.*` aims at pandas and
`--authorized-imports os pathlib` at those. Effects, judged by evaluate.py:
  read    the file secret (canaries.py) printed: a read outside the grants
  marker  anything created or changed in the canary directory: a write outside the grants, or
          code that ran (unpickling, native code, an evaluator, a process)
  canary  the canary environment variable's value printed
  tamper  a library setting that outlives the step (its probe differs in the next step, or in
          the host for in-process executors)
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .._hypothesis import st
from .attempt import EscapeAttempt
from .library_routes import (
    BYTE_WRITERS,
    FORMAT_FIELDS,
    KIND_EFFECT,
    LOCAL_READERS,
    LOCAL_WRITERS,
    PATH_ROUTES,
    PICKLE_CALLS,
    TAMPERS,
    Carrier,
    PathRoute,
    Tamper,
)
from .library_routes import (
    CARRIERS as LIBRARY_CARRIERS,
)
from .rendering import ATTR_STYLES, CARRIERS, STRING_STYLES, Renderer, carry

__all__ = ["LibraryPlan", "library_plan", "library_attempts", "format_pairs", "Targets"]

_CHAIN = re.compile(r"\$\(([A-Za-z_][\w.]*)\)")
_TOKEN = re.compile(r"\$(ENC_PARENT|ENC_BASE|ENC_DOTS|ENC_REL|ENC|LIBDIR|LIBNAME|LIBC|WB|FX|F0|[PMCNLBRWT])\b")


def _allowed(name: str, authorized: tuple[str, ...]) -> bool:
    for pattern in authorized:
        if pattern == name or (pattern.endswith(".*") and (name == pattern[:-2] or name.startswith(pattern[:-1]))):
            return True
    return False


@functools.cache
def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _usable(needs: Iterable[str], authorized: tuple[str, ...]) -> bool:
    return all(_allowed(n, authorized) and _importable(n) for n in needs)


@dataclass(frozen=True)
class LibraryPlan:
    """What can be drawn for one set of authorized imports (tables filtered, order kept)."""

    carriers: tuple[Carrier, ...]
    tampers: tuple[Tamper, ...]
    routes: tuple[PathRoute, ...]
    readers: tuple[tuple[str, tuple[str, ...], str], ...]
    writers: tuple[tuple[str, tuple[str, ...], str], ...]
    byte_writers: tuple[tuple[str, tuple[str, ...], str], ...]
    unique_names: bool  # `time` is authorized: local file names are made unique at run time

    def rows(self, effects: Iterable[str]) -> tuple[Carrier | Tamper, ...]:
        wanted = set(effects)
        rows: list[Carrier | Tamper] = [c for c in self.carriers if _effects_of(c) & wanted]
        if "tamper" in wanted:
            rows += self.tampers
        return tuple(rows)


def _effects_of(c: Carrier) -> set[str]:
    return {KIND_EFFECT[c.kind]}  # (a read aimed at /proc/self/environ turns into "canary")


@functools.lru_cache(maxsize=64)
def library_plan(authorized: tuple[str, ...]) -> LibraryPlan:
    """The carriers, tampers, path routes and local helpers usable with these authorized imports."""
    readers = tuple(r for r in LOCAL_READERS if _usable([r[0]], authorized))
    writers = tuple(w for w in LOCAL_WRITERS if _usable([w[0]], authorized))
    byte_writers = tuple(w for w in BYTE_WRITERS if _usable([w[0]], authorized))
    carriers = []
    for c in LIBRARY_CARRIERS:
        if not _usable(c.needs, authorized):
            continue
        if ("$R" in c.code and not readers) or ("$WB" in c.code and not byte_writers) or \
                (re.search(r"\$W\b", c.code) and not writers):
            continue
        carriers.append(c)
    return LibraryPlan(
        carriers=tuple(carriers),
        tampers=tuple(t for t in TAMPERS if _usable(t.needs, authorized)),
        routes=tuple(r for r in PATH_ROUTES if _usable(r.needs, authorized)),
        readers=readers, writers=writers, byte_writers=byte_writers,
        unique_names=_usable(["time"], authorized),
    )


@dataclass(frozen=True)
class Targets:
    """The paths and names an attempt aims at (see canaries.py)."""

    marker: str
    secret_file: str
    secret_dir: str
    root: str
    canary_env: str

    def path(self, target: str) -> str:
        return {"secret": self.secret_file, "secret_dir": self.secret_dir, "marker": self.marker,
                "root": self.root, "environ": "/proc/self/environ"}[target]


def _libc() -> tuple[str, str, str]:
    for path in ("/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6",
                 "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6", "/usr/lib/libc.so.6"):
        if os.path.exists(path):
            return path, os.path.dirname(path), os.path.basename(path)
    return "libc.so.6", "/lib", "libc.so.6"


def pickle_payload(module: str, name: str, args: tuple[str, ...], marker: str) -> bytes:
    """A protocol-0 pickle that calls module.name(*args) ($MARKER replaced) when loaded."""
    body = "".join("V" + a.replace("$MARKER", marker).encode("raw_unicode_escape").decode("latin-1")
                    .replace("\\", "\\u005c").replace("\n", "\\u000a") + "\n" for a in args)
    return f"c{module}\n{name}\n({body}tR.".encode("latin-1")


def _bytes_expr(draw: Any, data: bytes) -> str:
    style = draw(st.sampled_from(["literal", "hex", "list", "encode"]))
    if style == "hex":
        return f"bytes.fromhex({data.hex()!r})"
    if style == "list":
        return f"bytes({list(data)!r})"
    if style == "encode":
        return f"{data.decode('latin-1')!r}.encode('latin-1')"
    return repr(data)


def _dotted(path: str) -> str:
    parts = path.strip("/").split("/")
    return "/" + "/./".join(parts[:-1]) + "//" + parts[-1] if len(parts) > 1 else path


class _Filler:
    """Fills one template's tokens for one attempt (all draws go through hypothesis)."""

    def __init__(self, draw: Any, r: Renderer, targets: Targets, n: int, unique: bool) -> None:
        self.draw, self.r, self.t, self.n, self.unique = draw, r, targets, n, unique
        self.imports: set[str] = set()
        self.values: dict[str, str] = {"N": str(n), "M": self.s(targets.marker), "C": self.s(targets.canary_env)}
        libc, libdir, libname = _libc()
        self.values.update(LIBC=self.s(libc), LIBDIR=self.s(libdir), LIBNAME=self.s(libname))

    def s(self, text: str) -> str:
        """`text` as an expression in the attempt's string style, safe to follow with `.attr`."""
        expr = self.r.s(text)
        return expr if expr.startswith(("'", '"')) and expr.endswith(("'", '"')) else f"({expr})"

    def local(self, suffix: str) -> str:
        """A file name in the working directory; unique per run when `time` is authorized (an
        earlier attempt's link must not make this one fail before it reaches its carrier)."""
        if self.unique:
            self.imports.add("import time")
            return f"('fuzz-{self.n}-' + str(time.time_ns()) + {'-' + suffix!r})"
        return repr(f"fuzz-{self.n}-{suffix}")

    def fill(self, template: str, **values: str) -> str:
        table = {**self.values, **values}
        out = _CHAIN.sub(lambda m: self._chain(m.group(1)), template)
        return _TOKEN.sub(lambda m: table[m.group(1)] if m.group(1) in table else m.group(0), out)

    def _chain(self, dotted: str) -> str:
        root, *attrs = dotted.split(".")
        return self.r.chain(root, [("attr", a) for a in attrs])

    def path_values(self, path: str) -> dict[str, str]:
        s = self.s
        return {"ENC": s(path), "ENC_REL": s(path.lstrip("/")), "ENC_DOTS": s(_dotted(path)),
                "ENC_PARENT": s(os.path.dirname(path)), "ENC_BASE": s(os.path.basename(path))}


def _route_for(draw: Any, plan: LibraryPlan, carrier: Carrier, target: str) -> PathRoute:
    fits = [r for r in plan.routes if r.yields in carrier.accepts and target in r.targets]
    return draw(st.sampled_from(fits))


def _module_imports(needs: Iterable[str]) -> set[str]:
    return {f"import {n}" for n in needs}


def _carrier_body(draw: Any, f: _Filler, plan: LibraryPlan, c: Carrier,
                  pairs: tuple[tuple[str, str], ...]) -> tuple[str, str, str]:
    """(statement, effect, route label) for one library carrier."""
    effect = KIND_EFFECT[c.kind]
    setup = ""
    route_id = ""
    if f.unique and ("$L" in c.code or "$R" in c.code or "$W" in c.code):
        setup = "LOCAL = " + f.local("file")  # one name for the whole attempt
        local = "LOCAL"
    else:
        local = f.local("file")
    extra: dict[str, str] = {"L": local}
    if c.target:
        target = c.target
        if c.kind == "read" and draw(st.integers(0, 7)) == 7:
            target, effect = "environ", "canary"
        route = _route_for(draw, plan, c, target)
        f.imports |= _module_imports(route.needs)
        link = f.local("link")
        if f.unique and "$L" in route.setup:
            setup = (setup + "\n" if setup else "") + "LINK = " + link
            link = "LINK"
        pv = f.path_values(f.t.path(target))
        route_setup = f.fill(route.setup, L=link, **pv)
        setup = "\n".join(x for x in (setup, route_setup) if x)
        extra["P"] = f.fill(route.expr, L=link, **pv)
        route_id = route.id
    if "$B" in c.code or "$WB" in c.code:
        module, name, args = draw(st.sampled_from(PICKLE_CALLS))
        extra["B"] = _bytes_expr(draw, pickle_payload(module, name, args, f.t.marker))
        route_id = f"{module}.{name}"
    if "$T" in c.code:
        extra["T"], field = draw(st.sampled_from(pairs))
        extra["FX"], extra["F0"] = f.s("{x" + field + "}"), f.s("{0" + field + "}")
        route_id = route_id or extra["T"]
    for token, pool in (("$R", plan.readers), ("$WB", plan.byte_writers), ("$W", plan.writers)):
        if re.search(re.escape(token) + r"\b", c.code):
            _module, imports, code = draw(st.sampled_from(pool))
            f.imports |= set(imports)
            extra[token[1:]] = f.fill(code, L=local, B=extra.get("B", ""))
    body = f.fill(c.code, **extra)
    return (setup + "\n" + body if setup else body), effect, route_id


def _tamper_body(f: _Filler, t: Tamper) -> str:
    return f.fill(t.code)


def _expression_form(stmt: str) -> str | None:
    if "\n" in stmt:
        return None
    try:
        compile(stmt, "<carrier>", "eval")
    except SyntaxError:
        return None
    return stmt


# Code carriers for library attempts: every one, and twice those a restricted policy lets run
# (finalizers, __init_subclass__, metaclasses and coroutines are refused before any library call).
CODE_CARRIERS = CARRIERS + tuple(c for c in CARRIERS if c not in
                                 ("del", "del_later", "init_subclass", "metaclass", "coroutine"))

PREAMBLE = "MARKER = {marker!r}\nSECRET = {secret!r}\nCANARY = {canary!r}\n"


def format_pairs(tools: Iterable[str] | Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(root, format field) pairs that walk to the environment: checked against the tool objects
    when they are known (so every pair works where nothing stops it), else every combination."""
    import string

    names = sorted(tools)
    objects = dict(tools) if isinstance(tools, Mapping) else {}
    objects.setdefault("print", print)
    pairs = []
    for name in [*names, "final_answer", "print"]:
        for field in FORMAT_FIELDS:
            if name not in objects and not field.startswith(".__globals__"):
                continue  # an unknown function: only its globals are worth a try
            if name in objects:
                try:
                    found = string.Formatter().get_field("0" + field, [objects[name]], {})[0]
                except Exception:  # noqa: BLE001 - the field does not fit this object
                    continue
                if not hasattr(found, "keys"):
                    continue
            pairs.append((name, field))
    return tuple(pairs) or (("print", FORMAT_FIELDS[0]),)


@st.composite
def library_attempts(draw: Any, targets: Targets, plan: LibraryPlan, effects: tuple[str, ...],
                     pairs: tuple[tuple[str, str], ...]) -> Any:
    """One library attempt (an `EscapeAttempt` of family "library"); `pairs`: format_pairs()."""
    # the effect, then the kind of carrier, then a row: each class of escape gets its share of
    # the draws however many rows it has (there are many more writers than native-code loaders)
    available = [e for e in ("read", "marker", "canary", "tamper") if e in effects and plan.rows((e,))]
    rows = plan.rows((draw(st.sampled_from(available)),))
    kinds = list(dict.fromkeys(getattr(r, "kind", "tamper") for r in rows))
    kind = draw(st.sampled_from(kinds))
    row = draw(st.sampled_from([r for r in rows if getattr(r, "kind", "tamper") == kind]))
    attr_style = draw(st.sampled_from(ATTR_STYLES))
    string_style = draw(st.sampled_from(STRING_STYLES))
    r = Renderer(draw, attr_style, string_style)
    f = _Filler(draw, r, targets, draw(st.integers(0, 999_999)), plan.unique_names)
    f.imports |= set(row.imports)
    if isinstance(row, Tamper):
        stmt, effect, route = _tamper_body(f, row), "tamper", row.id
    else:
        stmt, effect, carried = _carrier_body(draw, f, plan, row, pairs)
        route = f"{row.id}+{carried}" if carried else row.id
    code_carrier = draw(st.sampled_from(CODE_CARRIERS))
    body = carry(code_carrier, stmt, _expression_form(stmt))
    head = sorted(s for s in f.imports | r.setup if s.startswith(("import", "from")))
    defs = sorted(s for s in r.setup if not s.startswith(("import", "from")))
    preamble = PREAMBLE.format(marker=targets.marker, secret=targets.secret_file, canary=targets.canary_env)
    code = "\n".join(head) + "\n" + preamble + "\n" + "\n\n".join(defs + [body]) + "\n"
    encoding = attr_style if attr_style in ("literal", "fullwidth") else f"{attr_style}+{string_style}"
    return EscapeAttempt(code=code, family="library", effect=effect, carrier=code_carrier,
                         encoding=encoding, route=route.replace("/", ":"))
