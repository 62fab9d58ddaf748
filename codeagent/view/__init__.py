"""`codeagent view`: runs and batches as self-contained HTML pages, written to files or served
live on 127.0.0.1.

    from codeagent.view import write_site, render_run, serve
    write_site("out/3f2a.json")                  # -> out/3f2a.html (figures embedded)
    write_site("batch_out/")                     # -> batch_out/view.html + batch_out/view-runs/*.html
    write_site("batch_a/", against="batch_b/")   # -> batch_b/compare.html: the tasks that changed
    html = render_run(result)                    # one RunResult as a page (a str)

Model-written text is hostile everywhere on these pages: it is escaped (`html.tag`), the page
allows only its own script and style by hash (`page.content_security_policy`), and figures are
embedded only after their PNG is checked whole (`figures.check_png`).
"""

from __future__ import annotations

from typing import Any

from .page import content_security_policy, page
from .site import Site, default_out, write_site
from .sources import ViewError

__all__ = ["Site", "ViewError", "write_site", "default_out", "render_run", "serve", "content_security_policy"]


def render_run(run: Any) -> str:
    """The page of one `RunResult` (its figures embedded when their bytes are at hand)."""
    from .run_page import run_body, run_title

    return page(run_title(run), run_body(run))


def serve(*args: Any, **kwargs: Any) -> Any:
    """`codeagent.view.server.serve`: the pages of a PATH, live, on 127.0.0.1."""
    from .server import serve as _serve

    return _serve(*args, **kwargs)
