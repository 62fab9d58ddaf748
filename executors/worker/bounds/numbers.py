"""Numbers whose text or value can grow without bound, checked before anyone formats them.

An int of a million digits prints in quadratic time (or not at all: CPython's int->str digit
limit raises, where it is set; it is process-global, so nothing here relies on it). A Decimal
of a few bytes, `Decimal('1E+999999999')`, becomes a billion digits when a host calls `int()`,
`round()` or `format(d, 'f')` on it. Both sides of the wire use these checks: the encoder to cut
a number over the table (it crosses as a marked repr that says why), the decoder to refuse one
(only a lying worker sends it).
"""

from __future__ import annotations

import sys

from .table import Bounds

__all__ = ["decimal_over", "decimal_from_text", "int_from_hex", "int_over"]

# C Decimal's size: ~104 bytes plus 8 for every 19 digits of its coefficient (read in O(1))
_DECIMAL_BASE, _DIGITS_PER_WORD = 104, 19


def int_over(value: int, bounds: Bounds) -> str | None:
    """Why `value` (an exact int) may not cross as a number, or None. O(1): no conversion."""
    bits = value.bit_length()
    if bits <= bounds.int_bits:
        return None
    digits = bits * 30103 // 100_000 + 1
    return (f"an int of about {digits:,} digits, over the {bounds.int_digits:,} a number may have "
            "to cross the boundary (Bounds.int_digits)")


def decimal_over(value, bounds: Bounds) -> str | None:
    """Why `value` (an exact decimal.Decimal) may not cross as a number, or None. Reads its size
    first (O(1)), and its digits only when they are few."""
    words = (sys.getsizeof(value) - _DECIMAL_BASE) // 8
    if words > 4 * (bounds.decimal_digits // _DIGITS_PER_WORD + 1):
        return (f"a Decimal of about {words * _DIGITS_PER_WORD:,} digits, over the "
                f"{bounds.decimal_digits:,} a number may have (Bounds.decimal_digits)")
    _sign, digits, exponent = value.as_tuple()
    if len(digits) > bounds.decimal_digits:
        return (f"a Decimal of {len(digits):,} digits, over the {bounds.decimal_digits:,} a number "
                "may have (Bounds.decimal_digits)")
    if type(exponent) is int:  # (a str for NaN and Infinity)
        adjusted = exponent + len(digits) - 1
        top = bounds.decimal_exponent
        if not (-top <= exponent <= top and -top <= adjusted <= top):
            shown = exponent if abs(exponent) > abs(adjusted) else adjusted
            return (f"a Decimal with the exponent {shown:,}, beyond the ±{top:,} a number may have "
                    "(Bounds.decimal_exponent): int(), round() or format(d, 'f') of it would make "
                    "that many digits")
    return None


def decimal_from_text(text: str, bounds: Bounds):
    """A Decimal from a worker's text, within the bounds (ValueError otherwise)."""
    import decimal

    if len(text) > bounds.decimal_digits + 32:
        raise ValueError(f"a Decimal of {len(text):,} characters")
    value = decimal.Decimal(text)
    why = decimal_over(value, bounds)
    if why is not None:
        raise ValueError(why)
    return value


def int_from_hex(text: str, bounds: Bounds) -> int:
    """A big int from a worker's hex text, within the bounds (ValueError otherwise)."""
    if len(text) > bounds.int_bits // 4 + 4:  # (a sign and 0x)
        raise ValueError(f"an int of {len(text):,} hex digits, over Bounds.int_digits")
    value = int(text, 16)
    why = int_over(value, bounds)
    if why is not None:
        raise ValueError(why)
    return value
