"""How an escape attempt is written: string encodings, attribute styles, carriers.

A primitive names its steps ("attr", "item", "call", "pick"); `Renderer` writes them with one
attribute style (literal, full-width, getattr with a computed name, attrgetter, ...) and one
string style (concatenation, chr codes, NFKC of full-width text, ...), so that no policy can
match the literal text. `carry()` places the statement in one of the `CARRIERS`: the places model
code runs besides the top level (hooks the host may call, finalizers, class machinery, ...).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._hypothesis import st

__all__ = ["ATTR_STYLES", "CARRIERS", "STRING_STYLES", "Renderer", "carry", "fullwidth"]

FULLWIDTH = {c: chr(ord(c) - 0x21 + 0xFF01) for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"}


def fullwidth(name: str) -> str:
    return "".join(FULLWIDTH.get(c, c) for c in name)


def encode_string(draw: Any, text: str, style: str, setup: set[str]) -> str:
    """A Python expression that evaluates to `text`, built so that `text` never appears literally."""
    if style == "literal" or len(text) < 2:
        return repr(text)
    cut = draw(st.integers(1, len(text) - 1))
    if style == "concat":
        return f"{text[:cut]!r} + {text[cut:]!r}"
    if style == "join":
        return f"''.join({[text[:cut], text[cut:]]!r})"
    if style == "chr":
        return f"''.join(map(chr, {[ord(c) for c in text]!r}))"
    if style == "reversed":
        return draw(st.sampled_from([f"{text[::-1]!r}[::-1]", f"''.join(reversed({text[::-1]!r}))"]))
    if style == "bytes":
        return f"bytes({[ord(c) for c in text]!r}).decode()"
    if style == "format":
        return f"'{{}}{{}}'.format({text[:cut]!r}, {text[cut:]!r})"
    if style == "percent":
        return f"'%s%s' % ({text[:cut]!r}, {text[cut:]!r})"
    if style == "replace":
        return f"{text.replace('_', '#')!r}.replace('#', '_')"
    if style == "case":
        return f"{text.upper()!r}.lower()" if text == text.lower() else repr(text)
    if style == "nfkc":
        setup.add("import unicodedata")
        wide = "".join("\uff3f" if c == "_" else FULLWIDTH.get(c, c) for c in text)
        return f"unicodedata.normalize('NFKC', {wide!r})"
    raise AssertionError(style)


STRING_STYLES = ("literal", "concat", "join", "chr", "reversed", "bytes", "format", "percent",
                  "replace", "case", "nfkc")
ATTR_STYLES = ("literal", "literal", "fullwidth", "getattr", "getattr", "getattr_default",
                "attrgetter", "reduce", "map", "getattribute", "methodcaller", "partial")


class Renderer:
    """Renders a chain of steps with one attribute style and one string style."""

    def __init__(self, draw: Any, attr_style: str, string_style: str) -> None:
        self.draw, self.attr_style, self.string_style = draw, attr_style, string_style
        self.setup: set[str] = set()

    def s(self, text: str) -> str:
        return encode_string(self.draw, text, self.string_style, self.setup)

    def attr(self, x: str, name: str) -> str:
        style = self.attr_style
        if style == "literal" and name.isidentifier():
            return f"{x}.{name}"
        if style == "fullwidth" and name.isidentifier():
            return f"{x}.{fullwidth(name)}"
        if style == "attrgetter":
            self.setup.add("import operator")
            return f"operator.attrgetter({self.s(name)})({x})"
        if style == "reduce":
            self.setup.add("import functools")
            return f"functools.reduce(getattr, [{self.s(name)}], {x})"
        if style == "map":
            return f"next(map(getattr, [{x}], [{self.s(name)}]))"
        if style == "getattribute":
            return f"object.__getattribute__({x}, {self.s(name)})"
        if style == "methodcaller":
            self.setup.add("import operator")
            return f"operator.methodcaller({self.s('__getattribute__')}, {self.s(name)})({x})"
        if style == "partial":
            self.setup.add("import functools")
            return f"functools.partial(getattr, {x})({self.s(name)})"
        if style == "getattr_default":
            return f"getattr({x}, {self.s(name)}, None)"
        return f"getattr({x}, {self.s(name)})"

    def chain(self, root: str, steps: Iterable[tuple[str, Any]]) -> str:
        x = root
        for kind, arg in steps:
            if kind == "attr":
                x = self.attr(x, arg)
            elif kind == "item":
                x = f"{x}[{self.s(arg) if isinstance(arg, str) else arg!r}]"
            elif kind == "call":
                x = f"{x}({arg})"
            elif kind == "pick":
                x = f"pick({x}, {self.s(arg)})"
            else:  # pragma: no cover
                raise AssertionError(kind)
        return x


_PIVOT_CACHE: dict[tuple[str, ...], list[tuple[str, list[str], str]]] = {}


# Carrier templates: {s4}/{s8} is the statement indented by 4/8 spaces, {e} its expression form.
# Carriers that need an expression fall back to "plain" for statements that have none.
_CARRIER_TEMPLATES = {
    "plain": "{s0}",
    "try": "try:\n{s4}\nexcept Exception as exc:\n    print('refused', type(exc).__name__)",
    "function": "def attempt():\n{s4}\n\nattempt()",
    "lambda": "(lambda: {e})()",
    "comprehension": "[{e} for _ in range(1)]",
    "class_body": "class Holder:\n{s4}",
    "method": "class Holder:\n    def run(self):\n{s8}\n\nHolder().run()",
    "init_subclass": ("class Base:\n    def __init_subclass__(cls, **kwargs):\n{s8}\n\n"
                      "class Child(Base):\n    pass"),
    "metaclass": ("class Meta(type):\n    def __new__(mcs, name, bases, ns):\n{s8}\n"
                  "        return super().__new__(mcs, name, bases, ns)\n\n"
                  "class Made(metaclass=Meta):\n    pass"),
    "del": "class Finalizer:\n    def __del__(self):\n{s8}\n\nf = Finalizer()\ndel f",
    "del_later": ("class Finalizer:\n    def __del__(self):\n{s8}\n\n"
                  "keep = Finalizer()\ncycle = [keep]\ncycle.append(cycle)"),
    "decorator": "def deco(fn):\n{s4}\n    return fn\n\n@deco\ndef decorated():\n    pass",
    "generator": "def gen():\n{s4}\n    yield 1\n\nlist(gen())",
    "repr_hook": "class Shown:\n    def __repr__(self):\n{s8}\n        return 'shown'\n\nShown()",
    "str_hook": ("class Answer:\n    def __str__(self):\n{s8}\n        return 'answer'\n\n"
                 "    def __repr__(self):\n        return str(self)\n\nfinal_answer(Answer())"),
    "default_arg": "def defaults(x={e}):\n    return x\n\ndefaults()",
    "exception_str": ("class Loud(Exception):\n    def __str__(self):\n{s8}\n        return 'loud'\n\n"
                      "raise Loud()"),
    "coroutine": ("async def co():\n{s4}\n\nc = co()\ntry:\n    c.send(None)\n"
                  "except StopIteration:\n    pass"),
    "getattr_hook": ("class Lazy:\n    def __getattr__(self, name):\n{s8}\n        return 1\n\n"
                     "Lazy().anything"),
    "format_hook": ("class Fmt:\n    def __format__(self, spec):\n{s8}\n        return 'fmt'\n\n"
                    "print(f'{{Fmt():>3}}')"),
    "eq_hook": ("class Sly:\n    def __eq__(self, other):\n{s8}\n        return True\n\n"
                "    def __hash__(self):\n        return 1\n\nfinal_answer(Sly())"),
}

# The order hypothesis samples carriers from.
CARRIERS = ("plain", "try", "function", "lambda", "comprehension", "class_body", "method",
            "init_subclass", "metaclass", "del", "del_later", "decorator", "generator",
            "repr_hook", "str_hook", "default_arg", "exception_str", "coroutine", "getattr_hook",
            "format_hook", "eq_hook")


def _indent(block: str, n: int) -> str:
    return "\n".join(" " * n + line if line else line for line in block.split("\n"))


def carry(carrier: str, stmt: str, expr_ok: str | None) -> str:
    """Place `stmt` (one or more lines) inside the carrier; expr_ok is an expression form if any."""
    template = _CARRIER_TEMPLATES[carrier]
    if "{e}" in template and not expr_ok:
        return stmt
    return template.format(s0=stmt, s4=_indent(stmt, 4), s8=_indent(stmt, 8), e=expr_ok)
