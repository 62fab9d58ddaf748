"""The page shell: one self-contained HTML document, and the policy that lets only its own script run.

Stylesheet and script are inline (assets/view.css, assets/view.js, plus Pygments' colours), so a
page needs no network and moves as one file. The Content-Security-Policy names each of them by
its SHA-256 hash: no other script or style can run, whatever the model wrote, and images may only
be the `data:` URIs `figures.py` made. Hashes (not nonces) keep a page the same bytes each time it
is rendered from the same run. `connect-src 'self'` only where the live server polls.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from importlib import resources

from .html import Safe, tag

__all__ = ["page", "content_security_policy"]


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


@functools.cache
def _style() -> str:
    from pygments.formatters import HtmlFormatter

    return _asset("view.css") + HtmlFormatter(style="default").get_style_defs(".hl") + "\n"


@functools.cache
def _script() -> str:
    return _asset("view.js")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy(*, live: bool = False) -> str:
    """What the page may load: its own style and script (by hash), embedded PNGs, and nothing else
    (its live server's state, when served)."""
    return "; ".join([
        "default-src 'none'", f"script-src {_hash(_script())}", f"style-src {_hash(_style())}",
        "img-src data:", "connect-src 'self'" if live else "connect-src 'none'",
        "base-uri 'none'", "form-action 'none'",
    ])


def page(title: str, body: Safe, *, state_url: str | None = None, state: str | None = None) -> str:
    """The whole document. With `state_url` the page polls it and reloads when it stops answering
    `state` (the live server's fingerprint of the files the page was built from)."""
    live = state_url is not None
    head = Safe("".join([
        '<meta charset="utf-8">',
        tag("meta", http_equiv="Content-Security-Policy", content=content_security_policy(live=live)),
        tag("meta", name="referrer", content="no-referrer"),
        tag("meta", name="viewport", content="width=device-width, initial-scale=1"),
        tag("title", title),
        f"<style>{_style()}</style>",
    ]))
    badge = tag("div", "live", class_="live badge s-success", title="reloads when the files change") if live else None
    document = tag("html", tag("head", head),
                   tag("body", tag("main", body), badge, Safe(f"<script>{_script()}</script>"),
                       data_state_url=state_url, data_state=state),
                   lang="en")
    return "<!DOCTYPE html>\n" + document + "\n"

