"""Figures and images a step hands back: rendered to PNG, size-capped, closed. Stdlib only.

Both runtimes use this module (the restricted one in process and in the worker, the open one in
the worker), so a figure comes back the same way from every executor:

- every pyplot figure open at the end of a step (left open, or shown: `plt.show()` keeps figures
  on the off-screen Agg backend) is rendered with `savefig` into memory as a PNG at its own dpi,
  then closed; figures that were open before the step (the host's own, in process) are left alone;
- a PIL image as the step's value (or final answer) is saved as a PNG.

The libraries are reached through `sys.modules` only: nothing is imported here, so a step that
used no matplotlib pays one dict lookup. Rendering runs model callbacks (tick formatters, artists
the model subclassed), so callers run `collect()` under the step's limits; `deadline` (a
`time.monotonic()` value) stops it from starting another render once the time is up.

Size: at most `max_bytes` in all (`Limits.max_attachment_bytes`; 0: nothing is rendered). A PNG
over what is left is rendered once more at a lower dpi that should fit; if it still does not,
it is dropped and a note in the step's logs says so. Notes are the lines `collect()` returns.
"""

from __future__ import annotations

import sys
import time

from .bounds import BOUNDS
from .bounds.png import BadImage, check_png
from .wire import MAX_PICTURES, PNG

__all__ = ["Picture", "collect", "is_pil_image", "max_pixels", "open_figures", "pil_description"]

# Drawing needs about 8 bytes a pixel (the RGBA canvas and the PNG encoder's copy): a figure
# over the memory it may use is drawn at a lower dpi. matplotlib refuses 2**16 pixels a side.
BYTES_PER_PIXEL = 8
MAX_PIXELS = BOUNDS.picture_pixels
_MIN_DPI = 20
_PIL_PNG_MODES = frozenset({"1", "L", "LA", "I", "I;16", "P", "RGB", "RGBA"})


class Picture:
    """One rendered attachment: the fields of `executors.Attachment`."""

    __slots__ = ("media_type", "data", "name", "width", "height")

    def __init__(self, media_type: str, data: bytes, name: str, width: int | None,
                 height: int | None) -> None:
        self.media_type, self.data, self.name = media_type, data, name
        self.width, self.height = width, height



def open_figures() -> set:
    """The numbers of the pyplot figures open now (empty when pyplot is not loaded)."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return set()
    try:
        return set(plt.get_fignums())
    except Exception:  # noqa: BLE001 - a broken pyplot state: nothing to collect
        return set()


def is_pil_image(value) -> bool:
    image = sys.modules.get("PIL.Image")
    return image is not None and isinstance(value, image.Image)


def pil_description(value) -> str:
    """What a PIL image reads as in output_repr: `<PIL image 640×480 RGB>`."""
    try:
        width, height = value.size
        return f"<PIL image {int(width)}×{int(height)} {value.mode}>"
    except Exception:  # noqa: BLE001 - a broken image object
        return "<PIL image>"


class _Budget:
    def __init__(self, max_bytes: int, deadline: float | None) -> None:
        self.left = max_bytes
        self.deadline = deadline
        self.notes: list[str] = []
        self.pictures: list[Picture] = []

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline


def max_pixels(memory_mb: int | None) -> int:
    """The largest figure (in pixels) drawn at its own size with `memory_mb` to use."""
    if not memory_mb:
        return MAX_PIXELS
    return max(100_000, min(MAX_PIXELS, memory_mb * 2**20 // 2 // BYTES_PER_PIXEL))


def collect(before: set | None, output=None, *, max_bytes: int, deadline: float | None = None,
            into: list | None = None, notes: list | None = None, pixels: int = MAX_PIXELS) -> list[str]:
    """Render the figures opened since `before` (then close them; None: leave pyplot alone) and
    a PIL image `output`. Pictures go to `into` and notes for the logs (what was dropped, and
    why) to `notes` as they are made, so a caller interrupted midway keeps them; returns notes."""
    budget = _Budget(max_bytes, deadline)
    if into is not None:
        budget.pictures = into
    if notes is not None:
        budget.notes = notes
    plt = sys.modules.get("matplotlib.pyplot")
    numbers = sorted(open_figures() - before) if plt is not None and before is not None else []
    for index, number in enumerate(numbers):
        try:
            figure = _figure(plt, number)
            if figure is None:
                continue
            if max_bytes and index >= MAX_PICTURES:
                if index == MAX_PICTURES:
                    budget.notes.append(f"[{len(numbers) - MAX_PICTURES} more figures not returned: "
                                        f"at most {MAX_PICTURES} per step]")
                continue
            if max_bytes:
                _add(budget, f"figure {number}", lambda dpi, f=figure: _savefig(f, dpi),
                     _fitting_dpi(figure, pixels))
        finally:
            try:
                plt.close(number)
            except Exception:  # noqa: BLE001 - the leftovers are closed by the caller anyway
                pass
    if max_bytes and output is not None and is_pil_image(output):
        _add(budget, "image", lambda dpi: _save_pil(output, dpi), None)
    return budget.notes


def _figure(plt, number):
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    manager = helpers.Gcf.figs.get(number) if helpers is not None else None
    return manager.canvas.figure if manager is not None else None


def _fitting_dpi(figure, pixels: int) -> float:
    """The figure's dpi, or a lower one at which it has at most `pixels` pixels."""
    dpi = float(figure.dpi)
    width, height = (float(x) for x in figure.get_size_inches())
    area = width * height * dpi * dpi
    if area > pixels:
        dpi *= (pixels / area) ** 0.5
    return dpi


_TRIES = 3  # renders of one figure at most: its own dpi, then lower ones until it fits


def _add(budget: _Budget, name: str, render, dpi) -> None:
    """Render one picture within what is left of the budget (again, smaller, if needed)."""
    if len(budget.pictures) >= MAX_PICTURES:
        budget.notes.append(f"[{name} not returned: at most {MAX_PICTURES} pictures per step]")
        return
    if budget.out_of_time():
        budget.notes.append(f"[{name} not returned: the step's time (Limits.timeout_s) ran out "
                            "before it was rendered]")
        return
    try:
        data = render(dpi)
        for _ in range(_TRIES - 1):
            if len(data) <= budget.left or not dpi or budget.out_of_time():
                break
            dpi = dpi * (budget.left / len(data)) ** 0.5 * 0.8
            if dpi < _MIN_DPI:
                break
            data = render(dpi)
    except Exception as exc:  # noqa: BLE001 - a figure that cannot be drawn: say why, go on
        budget.notes.append(f"[{name} not returned: rendering it failed: {type(exc).__name__}: "
                            f"{_text(exc)[:300]}]")
        return
    except BaseException:  # the step's deadline (an interrupt): say so, and stop here
        budget.notes.append(f"[{name} not returned: the step's time (Limits.timeout_s) ran out "
                            "while it was rendered]")
        raise
    if len(data) > budget.left:
        budget.notes.append(f"[{name} not returned: its PNG is {len(data):,} bytes, over the "
                            f"{budget.left:,} bytes left of Limits.max_attachment_bytes]")
        return
    try:  # what the host takes (it refuses anything else as a lie)
        width, height = check_png(data)
    except BadImage as exc:
        budget.notes.append(f"[{name} not returned: {exc}]")
        return
    budget.left -= len(data)
    budget.pictures.append(Picture(PNG, data, name, width, height))


def _savefig(figure, dpi) -> bytes:
    import io

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def _save_pil(image, dpi) -> bytes:
    import io

    width, height = image.size
    if width * height > MAX_PIXELS:  # (refused before it is encoded: the host takes no more)
        raise ValueError(f"{width}×{height} pixels, over the {MAX_PIXELS:,} a picture may have")
    if image.mode not in _PIL_PNG_MODES:
        image = image.convert("RGBA" if "A" in image.mode else "RGB")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _text(exc: BaseException) -> str:
    try:
        text = str(exc)
        return text if type(text) is str else ""
    except Exception:  # noqa: BLE001 - a hostile __str__
        return ""
