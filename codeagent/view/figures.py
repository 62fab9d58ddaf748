"""Figures on a page: a PNG is checked whole before it is embedded, anything else is described.

The bytes come from a run's folder, written by model code or by whoever had the folder: hostile.
`check_png` walks every chunk (lengths, CRCs, IHDR first with a valid header, at least one IDAT,
IEND last, nothing after) and refuses images over `MAX_PIXELS`, which a browser would have to
allocate to decode (a 100-byte PNG can claim 60,000 × 60,000). Only a checked PNG becomes a
`data:image/png` URI, shown at its own size (`width`/`height` from its header, scaled down by CSS
to fit the page).
"""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

from .html import Safe, data_uri, esc, tag

__all__ = ["check_png", "BadImage", "figure_html", "MAX_PIXELS", "MAX_EMBED_BYTES"]

MAX_PIXELS = 50_000_000  # what the executors render at most (executors.worker.figures.MAX_PIXELS)
MAX_EMBED_BYTES = 20_000_000  # one figure; the executors send at most 5 MB a step
_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# PNG colour type -> the bit depths it allows (PNG spec, 11.2.2)
_DEPTHS = {0: {1, 2, 4, 8, 16}, 2: {8, 16}, 3: {1, 2, 4, 8}, 4: {8, 16}, 6: {8, 16}}


class BadImage(ValueError):
    """The bytes are not a PNG the page shows (the message says why, for the page)."""


def check_png(data: bytes) -> tuple[int, int]:
    """(width, height) of a well-formed PNG, else `BadImage` saying what is wrong."""
    if not data.startswith(_SIGNATURE):
        raise BadImage("not a PNG (no PNG signature)")
    pos, first, seen_idat, size = len(_SIGNATURE), True, False, (0, 0)
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
            size = _header(kind, body)
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


def _header(kind: bytes, body: bytes) -> tuple[int, int]:
    if kind != b"IHDR" or len(body) != 13:
        raise BadImage("its first chunk is not a valid IHDR")
    width, height, depth, colour = struct.unpack(">IIBB", body[:10])
    if not (0 < width < 2**31 and 0 < height < 2**31) or depth not in _DEPTHS.get(colour, ()):
        raise BadImage(f"invalid header ({width}×{height}, depth {depth}, colour type {colour})")
    if width * height > MAX_PIXELS:
        raise BadImage(f"too large to show: {width}×{height} pixels (at most {MAX_PIXELS:,})")
    return width, height


def figure_html(record: Any) -> Safe:
    """One attachment of a step (`AttachmentRecord`): the image, or a line saying why it is not shown."""
    label = record.describe()
    caption = tag("figcaption", label)
    if record.media_type != "image/png":
        return _missing(caption, f"not shown: a {record.media_type} attachment (pages show PNG images only)")
    try:
        data = record.data()
    except OSError as exc:
        return _missing(caption, f"not shown: its file {record.file} cannot be read ({exc.strerror or exc})")
    if data is None:
        why = (f"its file {record.file} is missing" if record.file else
               "only its description was saved with the run (`run --out DIR` and RunResult.save keep the "
               "figures; a batch's run files do not)")
        return _missing(caption, f"not shown: {why}")
    if len(data) > MAX_EMBED_BYTES:
        return _missing(caption, f"not shown: {len(data):,} bytes, over the page's {MAX_EMBED_BYTES:,}")
    try:
        width, height = check_png(data)
    except BadImage as exc:
        return _missing(caption, f"not shown: {exc}")
    src = data_uri("image/png", base64.b64encode(data).decode("ascii"))
    return tag("figure", tag("img", src=src, width=width, height=height, alt=label, decoding="async"), caption,
               class_="fig")


def _missing(caption: Safe, why: str) -> Safe:
    return tag("figure", tag("div", esc(why), class_="fig-missing"), caption, class_="fig fig-absent")
