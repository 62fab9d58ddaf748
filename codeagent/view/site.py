"""The pages of one PATH (or of two batches compared): a root page and the run pages it links to.

One `Site` serves both ways of looking: `write_site` writes every page as files (the root at OUT,
the run pages in `<OUT stem>-runs/`, linked relatively), and the live server renders a route when
it is asked and tells the page when the files it was built from change (`Site.state`).
Routes are paths relative to the root: "" for the root page, "<runs_dir>/<name>.html" for a run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..batch.store import META, RESULTS, RUNS, read_results
from ..batch.summary import BatchSummary, compare
from ..batch.tasks import run_file_name
from ..tools.attachments import AttachmentRecord
from .html import Safe, relative_link, tag
from .page import page
from .run_page import RunContext, run_body, run_title
from .sources import (
    ViewError,
    batch_dir,
    figure_files,
    fingerprint,
    folder_listing,
    kind_of,
    last_session,
    load_run,
    run_files,
)
from .tables import batch_body, compare_body, figures_body, runs_body

__all__ = ["Site", "write_site", "default_out"]


@dataclass
class _Route:
    render: Callable[[], tuple[str, Safe]]  # -> (title, body)
    deps: Callable[[], list[Path]]


class Site:
    """The pages of `path` (or, with `against`, of the comparison of batch `path` to `against`).

    runs_dir: where run pages live, relative to the root page; root_name: the root page's file
    name as run pages link back to it ("" when served: the root is the folder's index).
    """

    def __init__(self, path: str | os.PathLike[str], *, against: str | os.PathLike[str] | None = None,
                 runs_dir: str = "runs", root_name: str = "", live: bool = False) -> None:
        self.path = Path(path)
        self.against = Path(against) if against is not None else None
        self.runs_dir, self.root_name, self.live = runs_dir, root_name, live
        self._cache: tuple[str, dict[str, _Route]] | None = None
        if not self.path.exists():
            kind_of(self.path)  # the error that names what to pass
        if not live:
            self.kind()  # a path that cannot be shown is an error now, not a page that says so

    def kind(self) -> str:
        """What the path holds now (a served folder may fill up while it is watched)."""
        if self.against is None:
            return kind_of(self.path)
        for side in (self.path, self.against):
            if not (batch_dir(side) / RESULTS).is_file():
                raise ViewError(f"--compare takes two batch folders (with {RESULTS}); {side} is not one")
        return "compare"

    # -- routes ------------------------------------------------------------------------------

    def routes(self) -> dict[str, _Route]:
        """Every page of the site now; built again only when a file that lists pages changed (a
        live page asks for its state every second: that must not re-read a 1,000-task batch)."""
        key = fingerprint(self._listings())
        cached = self._cache
        if cached is not None and cached[0] == key:
            return cached[1]
        builders = {"run": self._run_routes, "batch": self._batch_routes, "runs": self._runs_routes,
                    "figures": self._figures_routes, "compare": self._compare_routes}
        try:
            routes = builders[self.kind()]()
        except (ViewError, ValueError) as exc:  # ValueError: a damaged results.jsonl
            if not self.live:
                raise ViewError(str(exc)) if not isinstance(exc, ViewError) else exc
            routes = {"": self._waiting(str(exc))}
        self._cache = (key, routes)
        return routes

    def _listings(self) -> list[Path]:
        """The files and folders whose change can add, drop or re-kind a page."""
        found = []
        for side in (self.path, self.against):
            if side is not None:
                found += [side] if side.is_file() else [*folder_listing(side), side / RUNS]
        return found

    def _waiting(self, why: str) -> _Route:
        """Live, a folder that cannot be shown yet: say why, and reload when it changes."""
        watched = [p for p in (self.path, self.against) if p is not None]

        def render() -> tuple[str, Safe]:
            return "waiting", Safe(tag("h1", "Nothing to show yet") + tag("div", why, class_="box warning")
                                   + tag("p", "This page reloads when the files change.", class_="muted"))

        return _Route(render, lambda: [f for p in watched for f in folder_listing(p)])

    def render(self, route: str, routes: dict[str, _Route] | None = None) -> str:
        """The page at `route` (KeyError when there is none); `routes`: this site's, if at hand."""
        found = (routes or self.routes())[route]
        try:
            title, body = found.render()
        except ViewError as exc:  # one damaged run must not take the batch page down with it
            title, body = "cannot show this page", tag("div", str(exc), class_="box error")
        if not self.live:
            return page(title, body)
        return page(title, body, state_url="/_state/" + route, state=fingerprint(found.deps()))

    def state(self, route: str) -> str:
        routes = self.routes()
        return fingerprint(routes[route].deps()) if route in routes else "gone"

    def _back(self, depth: int) -> str:
        return relative_link(*[".."] * depth, self.root_name)

    def _run_page(self, path: Path, context: RunContext | None, deps: list[Path]) -> _Route:
        def render() -> tuple[str, Safe]:
            run = load_run(path)
            return run_title(run), run_body(run, context)

        # the run file, and its folder (whose time changes when a figure file is added beside it)
        return _Route(render, lambda: [path, path.parent, *deps])

    # -- one run -----------------------------------------------------------------------------

    def _run_routes(self) -> dict[str, _Route]:
        return {"": self._run_page(self.path, None, [])}

    # -- a folder of runs, or of figures ---------------------------------------------------

    def _runs_routes(self) -> dict[str, _Route]:
        runs, _ = run_files(self.path)
        if len(runs) == 1:
            return {"": self._run_page(runs[0], None, [self.path])}
        routes: dict[str, _Route] = {}
        links: list[tuple[Path, str]] = []
        for path in runs:
            route = f"{self.runs_dir}/{path.stem}.html"
            context = RunContext(back=self._back(1), back_label=f"runs in {self.path.name}")
            routes[route] = self._run_page(path, context, [])
            links.append((path, relative_link(self.runs_dir, f"{path.stem}.html")))

        def render() -> tuple[str, Safe]:
            loaded = [(load_run(p), href) for p, href in links]
            return f"runs in {self.path.name}", runs_body(self.path.name, loaded)

        routes[""] = _Route(render, lambda: folder_listing(self.path))
        return routes

    def _figures_routes(self) -> dict[str, _Route]:
        def render() -> tuple[str, Safe]:
            records = []
            for i, file in enumerate(figure_files(self.path), 1):
                record = AttachmentRecord(step=0, index=i, name=file.name, media_type="image/png",
                                          size=file.stat().st_size, file=file.name)
                record._base = self.path.resolve()
                records.append(record)
            note = ("No saved run here (yet): a run writes its JSON when it ends, these are the figures "
                    "written so far." if any(".figure-" in p.name for p in figure_files(self.path)) else None)
            return f"figures in {self.path.name}", figures_body(self.path.name, records, note)

        return {"": _Route(render, lambda: folder_listing(self.path))}

    # -- a batch -----------------------------------------------------------------------------

    def _batch_links(self, folder: Path, ids: list[str], prefix: list[str]) -> dict[str, tuple[str, Path]]:
        """task id -> (route, run file) for the tasks whose run file exists."""
        found = {}
        for task_id in ids:
            name = run_file_name(task_id)
            run = folder / RUNS / name
            if run.is_file():
                found[task_id] = ("/".join([self.runs_dir, *prefix, name[:-5] + ".html"]), run)
        return found

    def _batch_routes(self) -> dict[str, _Route]:
        folder = batch_dir(self.path)
        rows = read_results(folder)
        summary = BatchSummary.from_dir(folder)
        files = self._batch_links(folder, [r.id for r in summary.rows], [])
        by_id = {r.id: r for r in summary.rows}
        raw = {str(r.get("id")): r for r in rows}
        routes: dict[str, _Route] = {}
        for task_id, (route, run) in files.items():
            row = raw.get(task_id, {})
            context = RunContext(back=self._back(1), back_label=f"batch {folder.name}", task_id=task_id,
                                 expected=row.get("expected"), has_expected="expected" in row,
                                 correct=by_id[task_id].correct)
            routes[route] = self._run_page(run, context, [folder / RESULTS])
        links = {task_id: relative_link(*route.split("/")) for task_id, (route, _) in files.items()}

        def render() -> tuple[str, Safe]:
            return f"batch {folder.name}", batch_body(folder.name, summary, rows, links, last_session(folder))

        routes[""] = _Route(render, lambda: [folder / RESULTS, folder / META])
        return routes

    def _compare_routes(self) -> dict[str, _Route]:
        assert self.against is not None
        a, b = batch_dir(self.path), batch_dir(self.against)
        _, changes = compare(a, b)
        ids = [c["id"] for c in changes]
        routes: dict[str, _Route] = {}
        links: dict[tuple[str, str], str] = {}
        for side, folder in (("a", a), ("b", b)):
            for task_id, (route, run) in self._batch_links(folder, ids, [side]).items():
                context = RunContext(back=self._back(2), back_label="the comparison", task_id=f"{task_id} in {folder}")
                routes[route] = self._run_page(run, context, [])
                links[(side, task_id)] = relative_link(*route.split("/"))

        def render() -> tuple[str, Safe]:
            sums = (BatchSummary.from_dir(a), BatchSummary.from_dir(b))
            return f"{a.name} → {b.name}", compare_body((str(a), sums[0]), (str(b), sums[1]), changes, links)

        routes[""] = _Route(render, lambda: [a / RESULTS, b / RESULTS])
        return routes


def default_out(path: Path, against: Path | None = None) -> Path:
    """Where a page goes without --out: beside its source (RUN.html, DIR/view.html, B/compare.html)."""
    if against is not None:
        return batch_dir(against) / "compare.html"
    if path.is_file():
        return path.with_suffix(".html") if path.name != RESULTS else path.parent / "view.html"
    return path / "view.html"


def write_site(path: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *,
               against: str | os.PathLike[str] | None = None) -> list[Path]:
    """Write the pages of `path` (or the comparison with `against`): the root at `out`, its run
    pages in `<out stem>-runs/`. Returns the files written, the root first."""
    source = Path(path)
    target = Path(out) if out is not None else default_out(source, Path(against) if against else None)
    site = Site(source, against=against, runs_dir=f"{target.stem}-runs", root_name=target.name)
    written = []
    routes = site.routes()
    for route in sorted(routes, key=lambda r: (r != "", r)):
        file = target if route == "" else target.parent.joinpath(*route.split("/"))
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_name(f".{file.name}.tmp")
        tmp.write_text(site.render(route, routes), encoding="utf-8")
        os.replace(tmp, file)
        written.append(file)
    return written

