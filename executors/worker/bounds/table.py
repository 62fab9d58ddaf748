"""The bounds table: every number that limits what one value or message from a worker can make
the host hold or compute. Stdlib only; one instance, `BOUNDS`, unless a caller asks for others.

Each row says what it bounds and why the number:

  frame_bytes       one frame's body (the wire's default; executors may set their own)
  values            JSON values in one value tree (each element, member value and container):
                    a frame of `[{},{},...]` would otherwise make ~24 bytes of objects per byte
  containers        JSON arrays and objects in one value tree (the costly values: ~60 bytes each,
                    copied again when decoded)
  depth             containers nested in one value (the encoder's; tags nest at most twice over)
  text_bytes        characters of all strings and bytes in one value (in process there is no
                    frame: this is what keeps a 200 MB string final answer off the host)
  int_digits        digits of an int: CPython's default `sys.int_info.default_max_str_digits`, so
                    any Python prints what crosses, and one without the limit does it at once
  decimal_digits    digits of a Decimal's coefficient (as int_digits)
  decimal_exponent  a Decimal's exponents (adjusted and last digit's): `int(d)`, `round(d)` and
                    `format(d, "f")` then make at most ~8,600 digits (1E+999999999 made 2.3 GB)
  array_dims        dimensions of an array payload
  pictures          figures and images in one result
  picture_pixels    width × height of one PNG (a 100-byte PNG can claim 60,000 × 60,000)
  stall_s           seconds a frame may stay half-written before the worker counts as stalled
"""

from __future__ import annotations

__all__ = ["BOUNDS", "Bounds", "ENVELOPE_VALUES"]

# JSON values a message holds besides its value trees (op, id, logs, error, attachments' fields)
ENVELOPE_VALUES = 1_000


class Bounds:
    """One set of bounds (see the module docstring for each row). Read-only; `replace()` makes
    another."""

    __slots__ = ("frame_bytes", "values", "containers", "depth", "text_bytes", "int_digits",
                 "decimal_digits", "decimal_exponent", "array_dims", "pictures", "picture_pixels",
                 "stall_s", "int_bits")

    def __init__(self, *, frame_bytes: int = 32 * 1024 * 1024, values: int = 2_000_000,
                 containers: int = 1_000_000, depth: int = 100, text_bytes: int | None = None,
                 int_digits: int = 4300, decimal_digits: int = 4300, decimal_exponent: int = 4300,
                 array_dims: int = 32, pictures: int = 20, picture_pixels: int = 50_000_000,
                 stall_s: float = 10.0) -> None:
        fields = dict(frame_bytes=frame_bytes, values=values, containers=containers, depth=depth,
                      text_bytes=frame_bytes if text_bytes is None else text_bytes,
                      int_digits=int_digits, decimal_digits=decimal_digits,
                      decimal_exponent=decimal_exponent, array_dims=array_dims, pictures=pictures,
                      picture_pixels=picture_pixels, stall_s=stall_s)
        for name, value in fields.items():
            if type(value) not in (int, float) or value < 0:
                raise ValueError(f"Bounds.{name} must be a number >= 0, got {value!r}")
            object.__setattr__(self, name, value)
        # the largest bit length whose ints have at most int_digits digits (log2(10) = 3.3219...)
        object.__setattr__(self, "int_bits", int_digits * 33219280 // 10_000_000)

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError("Bounds are read-only: use replace()")

    def replace(self, **changes) -> Bounds:
        fields = {name: getattr(self, name) for name in self.__slots__ if name != "int_bits"}
        fields.update(changes)
        return Bounds(**fields)

    def __repr__(self) -> str:
        return "Bounds(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__) + ")"


BOUNDS = Bounds()
