"""A PNG checked whole before anything draws it. Stdlib only.

The bytes come from a worker (or from a run's folder): hostile. `check_png` walks every chunk
(lengths, CRCs, IHDR first with a valid header, at least one IDAT, IEND last, nothing after) and
refuses images over `max_pixels`, which whoever decodes them (a browser, a model's API, PIL)
would have to allocate: a 100-byte PNG can claim 60,000 × 60,000.
"""

from __future__ import annotations

import struct
import zlib

from .table import BOUNDS

__all__ = ["BadImage", "SIGNATURE", "check_png"]

SIGNATURE = b"\x89PNG\r\n\x1a\n"
# PNG colour type -> the bit depths it allows (PNG spec, 11.2.2)
_DEPTHS = {0: {1, 2, 4, 8, 16}, 2: {8, 16}, 3: {1, 2, 4, 8}, 4: {8, 16}, 6: {8, 16}}


class BadImage(ValueError):
    """The bytes are not a PNG within the bounds (the message says why)."""


def check_png(data: bytes, max_pixels: int = BOUNDS.picture_pixels) -> tuple[int, int]:
    """(width, height) of a well-formed PNG of at most `max_pixels`, else `BadImage`."""
    if not data.startswith(SIGNATURE):
        raise BadImage("not a PNG (no PNG signature)")
    pos, first, seen_idat, size = len(SIGNATURE), True, False, (0, 0)
    while True:
        if pos + 8 > len(data):
            raise BadImage("cut short (no IEND chunk)")
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        end = pos + 12 + length
        if length > 2**31 - 1 or end > len(data) or not kind.isalpha():
            raise BadImage(f"damaged chunk at byte {pos}")
        body = data[pos + 8:pos + 8 + length]
        if zlib.crc32(kind + body) != struct.unpack(">I", data[end - 4:end])[0]:
            raise BadImage(f"bad checksum in its {kind.decode('ascii')} chunk")
        if first:
            size = _header(kind, body, max_pixels)
            first = False
        seen_idat = seen_idat or kind == b"IDAT"
        pos = end
        if kind == b"IEND":
            break
    if not seen_idat:
        raise BadImage("no image data (IDAT chunk)")
    if pos != len(data):
        raise BadImage(f"{len(data) - pos} bytes after its end")
    return size


def _header(kind: bytes, body: bytes, max_pixels: int) -> tuple[int, int]:
    if kind != b"IHDR" or len(body) != 13:
        raise BadImage("its first chunk is not a valid IHDR")
    width, height, depth, colour = struct.unpack(">IIBB", body[:10])
    if not (0 < width < 2**31 and 0 < height < 2**31) or depth not in _DEPTHS.get(colour, ()):
        raise BadImage(f"invalid header ({width}×{height}, depth {depth}, colour type {colour})")
    if width * height > max_pixels:
        raise BadImage(f"too large to show: {width}×{height} pixels (at most {max_pixels:,})")
    return width, height
