"""Runtime guards of the restricted runtime: sizes of arithmetic, attribute names, format fields.

What the AST check cannot see is checked here, inside model code's calls: computed attribute
names (getattr, format fields, match patterns) and the size of results one C call would compute
(`**`, `<<`). Written for speed: no per-attribute wrappers.
"""

from __future__ import annotations

import _string
import builtins
import operator
import string
from collections.abc import Callable
from typing import Any

from ..compiler.policy import (
    FORBIDDEN_ATTRIBUTES,
    FORMAT_ATTRIBUTES,
    GUARDED_LOADS,
    INTERCHANGE_DUNDERS,
    READABLE_DUNDERS,
    is_private_name,
)
from .errors import PolicyError

MAX_INT_BITS = 1_000_000  # ~300,000 decimal digits: past that one C operation (a power, a
# division) on such numbers takes seconds, and off the main thread nothing can interrupt it


# -- sizes ---------------------------------------------------------------------------------------
def _too_big(what: str, bits: int) -> MemoryError:
    digits = int(bits * 0.30103)
    return MemoryError(
        f"{what} would have about {digits:,} digits, over the sandbox limit of "
        f"{int(MAX_INT_BITS * 0.30103):,}; compute with smaller numbers (or use math.log / floats)"
    )


_int_value = int.__pos__  # the int value of an int subclass, whatever it overrides


def _bits(x: Any) -> int:
    """Bit size of an int, or of a Fraction-like's numerator/denominator; 0 for other types."""
    if isinstance(x, int):
        return int.bit_length(_int_value(x))
    num, den = getattr(x, "numerator", None), getattr(x, "denominator", None)
    if isinstance(num, int) and isinstance(den, int) and not isinstance(x, float):
        return max(int.bit_length(_int_value(num)), int.bit_length(_int_value(den)))
    return 0


def check_pow(base: Any, exp: Any) -> None:
    if isinstance(exp, int):
        e = _int_value(exp)
        if e > 64:
            bits = _bits(base)
            if bits > 1 and bits * e > MAX_INT_BITS:
                raise _too_big(f"a {bits}-bit number ** {e}", bits * e)


def guarded_pow(base: Any, exp: Any, mod: Any = None) -> Any:
    if mod is None:
        check_pow(base, exp)
        return base**exp
    if isinstance(mod, int) and isinstance(exp, int):
        # modular: one squaring of a mod-sized number per exponent bit
        mod_bits, exp_bits = _bits(mod), _bits(exp)
        if mod_bits > 20_000 and mod_bits * exp_bits > 50_000_000:
            raise MemoryError(
                f"pow(x, <{exp_bits}-bit exponent>, <{mod_bits}-bit modulus>) is too slow for the "
                "sandbox; use a smaller modulus or exponent"
            )
    return builtins.pow(base, exp, mod)


def check_lshift(value: Any, shift: Any) -> None:
    if isinstance(shift, int) and isinstance(value, int):
        s = _int_value(shift)
        if value and s > MAX_INT_BITS:
            raise _too_big(f"{value} << {s}", s + _bits(value))


def guarded_lshift(value: Any, shift: Any) -> Any:
    check_lshift(value, shift)
    return value << shift


# In-place forms: `x **= y` is `x = _ipow(x, y)`, which must still try `x.__ipow__` first (a
# mutable object changes itself), exactly as the statement does in CPython.
def guarded_ipow(target: Any, exp: Any) -> Any:
    check_pow(target, exp)
    return operator.ipow(target, exp)


def guarded_ilshift(target: Any, shift: Any) -> Any:
    check_lshift(target, shift)
    return operator.ilshift(target, shift)


# -- attributes ----------------------------------------------------------------------------------
def exact_name(name: Any) -> str:
    """An attribute name as an exact str: a str subclass could lie in startswith/__eq__/__hash__
    between our check and the real lookup."""
    if type(name) is str:
        return name
    if isinstance(name, str):
        return str.__str__(name)
    raise TypeError(f"attribute name must be a string, not {type(name).__name__}")


def check_attr_name(name: Any, *, write: bool = False) -> str:
    name = exact_name(name)
    if name.startswith("_"):
        if write or name not in READABLE_DUNDERS:
            why = INTERCHANGE_DUNDERS.get(name) or "attributes starting with '_' are private"
            raise PolicyError(f"the attribute '{name}' is not allowed: {why}")
    elif name in FORBIDDEN_ATTRIBUTES:
        raise PolicyError(f"the attribute '{name}' is not allowed: it exposes interpreter internals")
    return name


_formatter_parse = string.Formatter().parse
_checked_templates: dict[str, bool] = {}


def check_format_template(template: Any) -> None:
    if not isinstance(template, str):
        return
    exact = type(template) is str  # a str subclass could lie in __eq__/__hash__: no cache
    if exact and template in _checked_templates:
        return
    for _literal, field, spec, _conv in _formatter_parse(template):
        if field:
            _first, rest = _string.formatter_field_name_split(field)
            for is_attr, key in rest:
                if is_attr:
                    check_attr_name(key)
        if spec and "{" in spec:
            check_format_template(spec)
    if exact and len(_checked_templates) < 4096:
        _checked_templates[template] = True


_STR_FORMATTERS = (str.format, str.format_map)


def fmt_attr(obj: Any, name: str) -> Any:
    """`x.format` / `x.format_map` with the template's fields checked before formatting.

    Decided by what the attribute resolves to, not by what `obj` is, so `super().format`,
    str subclasses and `str.format` itself are all covered."""
    method = getattr(obj, name)
    owner = getattr(method, "__self__", None)
    if isinstance(owner, str) and getattr(method, "__name__", None) in ("format", "format_map"):
        def bound(*args: Any, **kwargs: Any) -> Any:
            check_format_template(owner)
            return method(*args, **kwargs)

        return bound
    if method in _STR_FORMATTERS:
        def unbound(template: Any, *args: Any, **kwargs: Any) -> Any:
            check_format_template(template)
            return method(template, *args, **kwargs)

        return unbound
    return method


_MISSING = object()


def match_check(*classes: Any) -> None:
    """Before a match statement: the __match_args__ of its class patterns must be safe names."""
    for cls in classes:
        names = getattr(cls, "__match_args__", ())
        if not isinstance(names, tuple):
            raise PolicyError("__match_args__ must be a tuple of attribute names")
        for name in names:
            if type(name) is not str:
                raise PolicyError("__match_args__ must hold plain strings")
            check_attr_name(name)
            if name in GUARDED_LOADS or name.startswith("_"):
                raise PolicyError(f"matching on the attribute '{name}' is not allowed")


def make_getattr(attr_hook: Callable[[Any, str], Any], private_hook: Callable[[Any, str], Any]) -> Callable[..., Any]:
    """The sandbox getattr(): name checks, and the same runtime guards as `obj.name`."""

    def getattr_(obj: Any, name: Any, default: Any = _MISSING) -> Any:
        name = exact_name(name)
        try:
            if is_private_name(name):
                return private_hook(obj, name)
            check_attr_name(name)
            if name in FORMAT_ATTRIBUTES:
                return fmt_attr(obj, name)
            if name in GUARDED_LOADS:
                return attr_hook(obj, name)
            return getattr(obj, name)
        except AttributeError:
            if default is _MISSING:
                raise
            return default

    getattr_.__name__ = getattr_.__qualname__ = "getattr"
    return getattr_


def make_hasattr(getattr_: Callable[..., Any]) -> Callable[[Any, Any], bool]:
    def hasattr_(obj: Any, name: Any) -> bool:
        try:
            getattr_(obj, name)
        except AttributeError:
            return False
        return True

    hasattr_.__name__ = hasattr_.__qualname__ = "hasattr"
    return hasattr_


def safe_dir(ns: dict[str, Any]) -> Callable[..., list[str]]:
    def dir_(*args: Any) -> list[str]:
        names = builtins.dir(*args) if args else list(ns)
        return sorted(n for n in names if not n.startswith("_"))

    return dir_



def check_kwargs(mapping: Any) -> Any:
    """`f(**mapping)`: keyword names starting with '_' are refused as written ones are (a
    library object that stores its keywords as attributes would get `__array_interface__`).
    A mapping that is not an exact dict is read once, as CPython would (keys(), then items)."""
    if type(mapping) is not dict:
        if not hasattr(mapping, "keys"):
            return mapping  # (CPython's own TypeError says what is wrong)
        mapping = {key: mapping[key] for key in mapping.keys()}
    for key in mapping:
        if type(key) is str and key[:1] == "_":
            raise PolicyError(f"the keyword argument '{key}' is not allowed (leading '_')")
    return mapping
