"""Figures on a page: a PNG is checked whole before it is embedded, anything else is described.

The bytes come from a run's folder, written by model code or by whoever had the folder: hostile.
`check_png` (the executors' own, which the host checks a worker's pictures with) walks every
chunk (lengths, CRCs, IHDR first with a valid header, at least one IDAT, IEND last, nothing
after) and refuses images over `MAX_PIXELS`, which a browser would have to allocate to decode (a
100-byte PNG can claim 60,000 × 60,000). Only a checked PNG becomes a `data:image/png` URI, shown
at its own size (`width`/`height` from its header, scaled down by CSS to fit the page).
"""

from __future__ import annotations

import base64
from typing import Any

from executors.worker.bounds import BOUNDS
from executors.worker.bounds.png import BadImage, check_png

from .html import Safe, data_uri, esc, tag

__all__ = ["check_png", "BadImage", "figure_html", "MAX_PIXELS", "MAX_EMBED_BYTES"]

MAX_PIXELS = BOUNDS.picture_pixels  # what the executors send at most
MAX_EMBED_BYTES = 20_000_000  # one figure; the executors send at most 5 MB a step


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
