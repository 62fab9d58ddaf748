"""The list pages: a batch's table of tasks, a comparison of two batches, a folder of runs, a
folder of figures. Rows are plain HTML (readable without script); view.js sorts and filters them
by the `data-status` tags and `data-v` sort keys written here."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from .figures import figure_html
from .html import Safe, tag
from .run_page import answer_text

__all__ = ["Column", "rows_table", "filter_bar", "batch_body", "compare_body", "runs_body", "figures_body",
           "short"]

ANSWER_CHARS = 240


def short(text: str, width: int = ANSWER_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


class Column:
    """A table column: its heading, whether it sorts as a number, its css class."""

    def __init__(self, title: str, numeric: bool = False, css: str | None = None) -> None:
        self.title, self.numeric, self.css = title, numeric, css or ("num" if numeric else None)


def rows_table(table_id: str, columns: Sequence[Column], rows: Iterable[tuple[str, Sequence[Safe]]]) -> Safe:
    """A sortable table: rows are (space-separated filter tags, cells)."""
    head = tag("thead", tag("tr", [tag("th", c.title, class_=c.css, title="sort") for c in columns]))
    body = tag("tbody", [tag("tr", cells, data_status=tags) for tags, cells in rows])
    return tag("table", head, body, class_="rows", id=table_id)


def filter_bar(table_id: str, counts: Counter[str], total: int, *, placeholder: str = "filter by text") -> Safe:
    buttons = [tag("button", f"all ({total})", data_status="", type="button")]
    buttons += [tag("button", f"{name.replace('-', ' ')} ({n})", data_status=name, type="button")
                for name, n in counts.items()]
    return tag("div", buttons, tag("input", type="search", placeholder=placeholder, aria_label=placeholder),
               tag("span", f"{total} of {total} shown", class_="muted", data_count=True),
               class_="bar", data_filters=table_id)


def _num(value: float, text: str | None = None) -> Safe:
    return tag("td", text if text is not None else f"{value:,}", class_="num", data_v=value)


def _link_or_text(text: str, href: str | None) -> Safe:
    return tag("a", text, href=href) if href else tag("span", text)


def _status(status: str) -> Safe:
    return tag("span", status, class_=f"badge s-{status}")


def _answer_cell(row: Any) -> Safe:
    """A task's answer, or the reason it has none (muted)."""
    if row.status == "success":
        text = answer_text(row.output, row.output_repr)
        return tag("td", short(text), class_="ans mono", title=text[:2000] if len(text) > ANSWER_CHARS else None)
    text = row.error or ""
    return tag("td", short(text), class_="ans muted", title=text[:2000] if len(text) > ANSWER_CHARS else None)


def _verdict(correct: bool | None) -> Safe:
    return tag("td", {True: "✓", False: "✗", None: ""}[correct], data_v={True: 2, False: 1, None: 0}[correct],
               class_={True: "s-success", False: "s-failed", None: None}[correct])


def batch_body(name: str, summary: Any, rows: Sequence[dict[str, Any]], links: dict[str, str],
               session: dict[str, Any] | None) -> Safe:
    """The batch page. rows: results.jsonl lines (for `expected`); links: task id -> run page."""
    expected = {str(r.get("id")): r for r in rows}
    checked = summary.checked > 0
    columns = [Column("id"), Column("status"), Column("answer"), Column("expected"), Column("correct"),
               Column("steps", True), Column("model calls", True), Column("tokens", True), Column("time s", True)]
    if not checked:
        columns = [c for c in columns if c.title not in ("expected", "correct")]
    counts: Counter[str] = Counter()
    body_rows = []
    for row in summary.rows:
        tags = [row.status] + ({True: ["correct"], False: ["wrong"], None: []}[row.correct] if checked else [])
        counts.update(tags)
        cells = [tag("td", _link_or_text(row.id, links.get(row.id)), class_="mono"), tag("td", _status(row.status),
                 data_v=row.status), _answer_cell(row)]
        if checked:
            raw = expected.get(row.id, {})
            cells += [tag("td", short(answer_text(raw.get("expected"), None)) if "expected" in raw else "", class_="ans mono"),
                      _verdict(row.correct)]
        cells += [_num(row.steps), _num(row.model_calls), _num(row.tokens), _num(row.wall_s, f"{row.wall_s:.2f}")]
        body_rows.append((" ".join(tags), cells))
    head = tag("div", tag("h1", f"Batch {name}"), tag("span", f"{summary.total} tasks", class_="badge"), class_="head")
    return Safe(head + _session(session) + tag("p", summary.totals_line(), class_="task")
                + filter_bar("tasks", counts, summary.total) + rows_table("tasks", columns, body_rows))


def _session(session: dict[str, Any] | None) -> Safe:
    """How the batch was run, from batch.json's last session."""
    if not session:
        return Safe("")
    options = session.get("options") if isinstance(session.get("options"), dict) else {}
    facts = [("model", options.get("model")), ("mode", options.get("mode")), ("executor", session.get("executor")),
             ("backend", session.get("backend")), ("workers", session.get("workers")),
             ("factory", session.get("factory")), ("ended", session.get("ended_at"))]
    cells = [tag("tr", tag("td", k), tag("td", str(v))) for k, v in facts if v not in (None, "", {})]
    return tag("table", cells, class_="meta")


def compare_body(a: tuple[str, Any], b: tuple[str, Any], changes: Sequence[dict[str, Any]],
                 links: dict[tuple[str, str], str]) -> Safe:
    """What changed between batch a and batch b (codeagent.batch.summary.compare's rows).
    links: ("a"|"b", task id) -> that side's run page."""
    (name_a, sum_a), (name_b, sum_b) = a, b
    compared = len({r.id for r in sum_a.rows} | {r.id for r in sum_b.rows})
    head = tag("div", tag("h1", f"{name_a} → {name_b}"),
               tag("span", f"{len(changes)} of {compared} tasks changed", class_="badge"), class_="head")
    totals = tag("table", tag("tr", tag("td", f"a: {name_a}"), tag("td", sum_a.totals_line())),
                 tag("tr", tag("td", f"b: {name_b}"), tag("td", sum_b.totals_line())), class_="meta")
    if not changes:
        return Safe(head + totals + tag("p", f"No task changed ({compared} compared).", class_="task"))
    counts: Counter[str] = Counter()
    rows = []
    for change in changes:
        kind = change["change"].replace(" ", "-")
        counts[kind] += 1
        cells = [tag("td", change["id"], class_="mono"),
                 tag("td", tag("span", change["change"], class_=f"badge c-{kind}"), data_v=kind)]
        for side in ("a", "b"):
            row = change[side]
            if row is None:
                cells.append(tag("td", "(absent)", class_="muted"))
                continue
            text = answer_text(row.get("output"), row.get("output_repr")) if row["status"] == "success" else row.get("error") or ""
            href = links.get((side, change["id"]))
            cells.append(tag("td", _status(row["status"]), " ", short(text, 160), " ",
                             tag("a", "run", href=href) if href else None, class_="ans"))
        rows.append((kind, cells))
    columns = [Column("id"), Column("change"), Column(f"a: {name_a}"), Column(f"b: {name_b}")]
    return Safe(head + totals + filter_bar("changes", counts, len(changes)) + rows_table("changes", columns, rows))


def runs_body(name: str, runs: Sequence[tuple[Any, str | None]]) -> Safe:
    """A folder of saved runs (`run --out DIR`): one row per run, linking to its page."""
    counts: Counter[str] = Counter(r.status for r, _ in runs)
    columns = [Column("run"), Column("status"), Column("task"), Column("answer"), Column("steps", True),
               Column("tokens", True), Column("time s", True)]
    rows = []
    for run, href in runs:
        answer = answer_text(run.output, run.output_repr) if run.status == "success" else run.error or ""
        rows.append((run.status, [tag("td", _link_or_text(run.run_id, href), class_="mono"),
                                  tag("td", _status(run.status), data_v=run.status), tag("td", short(run.task, 160)),
                                  tag("td", short(answer), class_="ans"), _num(len(run.steps)),
                                  _num(run.usage.total_tokens), _num(run.duration_s, f"{run.duration_s:.2f}")]))
    head = tag("div", tag("h1", f"Runs in {name}"), tag("span", f"{len(runs)} runs", class_="badge"), class_="head")
    return Safe(head + filter_bar("runs", counts, len(runs)) + rows_table("runs", columns, rows))


def figures_body(name: str, records: Sequence[Any], note: str | None = None) -> Safe:
    """A folder with figures and no run (`exec --out DIR`)."""
    head = tag("div", tag("h1", f"Figures in {name}"), tag("span", f"{len(records)} figures", class_="badge"),
               class_="head")
    return Safe(head + (tag("p", note, class_="muted") if note else "") + Safe("".join(figure_html(r) for r in records)))

