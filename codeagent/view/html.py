"""HTML that is safe by construction: every value is escaped unless it is `Safe` (made here).

The pages show model-written text (replies, code, logs, answers, file and tool names), all hostile.
So nothing is pasted into markup: `tag()` escapes its text children and attribute values, refuses
attribute names that could carry script (`on*`, `style`, `srcdoc`, ...) and links that are not
relative paths or data URIs we made. A string becomes `Safe` only by passing through here or
through Pygments (which escapes what it highlights).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from urllib.parse import quote

__all__ = ["Safe", "esc", "tag", "join", "relative_link", "data_uri"]

_ATTR = re.compile(r"[a-z][a-z0-9-]*")
# Attributes that run script or fetch things behind the page's back; none of our pages needs them.
_FORBIDDEN_ATTRS = ("on", "style", "srcdoc", "formaction", "action", "xlink", "background", "ping")
_URL_ATTRS = frozenset({"href", "src"})
_VOID = frozenset({"img", "meta", "br", "input", "hr", "col"})


class Safe(str):
    """Markup that was built by this module (or escaped by it): inserted as it is."""

    __slots__ = ()


def esc(value: object) -> Safe:
    """`value` as text in HTML (quotes escaped too, so it is safe inside attributes)."""
    return value if isinstance(value, Safe) else Safe(html.escape(str(value), quote=True))


def join(parts: Iterable[object], sep: str = "") -> Safe:
    return Safe(esc(sep).join(esc(p) for p in parts))


def relative_link(*parts: str) -> str:
    """A link to a file of ours beside the page: path segments, each percent-encoded, so no part
    (a task id, say) can make it absolute, climb out or carry a scheme such as `javascript:`."""
    segments = [quote(p, safe="") if p not in (".", "..") else p for p in parts if p]
    return "/".join(segments) or "."


def data_uri(media_type: str, encoded: str) -> str:
    """The src of an embedded image (base64 `encoded`, checked by the caller)."""
    return f"data:{media_type};base64,{encoded}"


def _checked_url(name: str, value: str) -> str:
    if value.startswith("data:image/png;base64,") and name == "src":
        return value
    scheme = re.match(r"\s*([A-Za-z][A-Za-z0-9+.-]*):", value)
    if scheme or value.startswith(("/", "\\")):
        raise ValueError(f"{name}={value[:40]!r}: the pages link only to relative paths of their own")
    return value


def tag(name: str, /, *children: object, **attrs: object) -> Safe:
    """`<name attrs>children</name>`. Children: strings (escaped), Safe markup, None (skipped), or
    iterables of those. Attributes: `class_` for class, `data_x` for data-x; None or False leaves
    one out, True writes it bare."""
    if not _ATTR.fullmatch(name):
        raise ValueError(f"not a tag name: {name!r}")
    out = [f"<{name}"]
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        attr = key.rstrip("_").replace("_", "-")
        if not _ATTR.fullmatch(attr) or attr.startswith(_FORBIDDEN_ATTRS):
            raise ValueError(f"attribute {attr!r} is not allowed on the pages")
        if value is True:
            out.append(f" {attr}")
            continue
        text = str(value)
        if attr in _URL_ATTRS:
            text = _checked_url(attr, text)
        out.append(f' {attr}="{esc(text)}"')
    out.append(">")
    if name in _VOID:
        return Safe("".join(out))
    out.extend(_flatten(children))
    out.append(f"</{name}>")
    return Safe("".join(out))


def _flatten(children: Iterable[object]) -> Iterable[str]:
    for child in children:
        if child is None or child is False:
            continue
        if isinstance(child, str):
            yield esc(child)
        elif isinstance(child, Iterable):
            yield from _flatten(child)
        else:
            yield esc(child)
