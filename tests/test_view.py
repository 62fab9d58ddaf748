"""The pages of `codeagent view` as HTML: every step kind, figures, batches, comparisons, folders,
and hostile text that must stay text. Runs are real (CodeAgent + LocalExecutor, scripted replies);
the HTML is read back with html.parser, as a browser's tokenizer would split it."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import zlib
from html.parser import HTMLParser
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from view_runs import (
    XSS,
    code,
    data_run,
    every_step_kind,
    scripted_run,
    timeout_run,
    write_batch,
    xss_run,
)

from codeagent import RunResult
from codeagent.runs.record import StepRecord
from codeagent.tools.attachments import AttachmentRecord
from codeagent.view import Site, ViewError, render_run, write_site
from codeagent.view.figures import BadImage, check_png, figure_html
from codeagent.view.html import relative_link, tag


class Page(HTMLParser):
    """What a browser would build from the page: elements with their attributes, and the text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.feed(text)
        self.close()

    def handle_starttag(self, name, attrs):
        self.elements.append((name, dict(attrs)))
        self._in_script = name == "script"

    def handle_endtag(self, name):
        self._in_script = False

    def handle_data(self, data):
        (self.scripts if self._in_script else self.text).append(data)

    def all(self, name: str) -> list[dict[str, str | None]]:
        return [a for n, a in self.elements if n == name]

    @property
    def body_text(self) -> str:
        return "".join(self.text)


def assert_inert(html: str) -> Page:
    """The page runs only its own script, loads only embedded PNGs, links only to its own files."""
    page = Page(html)
    assert len(page.all("script")) == 1 and all(not a for a in page.all("script"))
    for name, attrs in page.elements:
        assert name not in ("iframe", "object", "embed", "svg", "form", "base", "textarea", "link"), name
        for attr, value in attrs.items():
            assert not attr.startswith("on") and attr not in ("style", "srcdoc"), (name, attr)
            if attr == "src":
                assert value.startswith("data:image/png;base64,"), value[:60]
            if attr == "href":
                assert not re.match(r"\s*[a-zA-Z][a-zA-Z0-9+.-]*:", value) and not value.startswith("/"), value
    metas = [a for a in page.all("meta") if a.get("http-equiv")]
    assert [m["http-equiv"] for m in metas] == ["Content-Security-Policy"]
    return page


@pytest.fixture(scope="module")
def kinds() -> RunResult:
    return every_step_kind()


@pytest.fixture(scope="module")
def kinds_page(kinds) -> str:
    return render_run(kinds)


def section(html: str, number: int) -> str:
    match = re.search(rf'<section class="[^"]*" id="step-{number}".*?</section>', html, re.S)
    assert match, f"no section for step {number}"
    return match.group(0)


# -- every step kind -----------------------------------------------------------------------------


def test_a_reply_without_code_shows_the_reply_and_the_lesson(kinds, kinds_page):
    step = section(kinds_page, 1)
    assert 'data-kind="parse"' in step and "no code found in the reply" in step
    assert "I think the answer is 4." in step  # the reply itself, as the thought
    assert "box warning" in step  # the model is taught, not failed


def test_code_refused_by_the_policy_is_named_so(kinds_page):
    step = section(kinds_page, 2)
    assert "refused by the policy (ImportError)" in step and "import of &#x27;os&#x27; is not allowed" in step
    assert 'class="hl"' in step and '<span class="kn">import</span>' in step  # the code, highlighted


def test_a_failing_tool_is_named_so(kinds_page):
    step = section(kinds_page, 3)
    assert "a tool call failed (ToolError)" in step and "no such key" in step


def test_a_timeout_is_a_limit_with_the_setting_to_change():
    step = section(render_run(timeout_run()), 1)
    assert "limit reached (TimeoutError)" in step and "Limits.timeout_s" in step


def test_a_repeated_action_is_refused_and_not_timed_as_executed(kinds_page):
    step = section(kinds_page, 4)
    assert "action refused: the same code already ran" in step and "execution " not in step.split("</h2>")[1][:300]


def test_a_figure_too_large_is_a_warning_not_printed_text(kinds_page):
    step = section(kinds_page, 5)
    assert "figure 1 not returned: </b>" in step and "Limits.max_attachment_bytes" in step
    printed = re.search(r'printed</div><pre>(.*?)</pre>', step, re.S).group(1)
    assert printed == "drawn"  # the note left the logs: it is shown once, as the warning


def test_no_answer_shows_the_status_and_why(kinds, kinds_page):
    outcome = re.search(r'<section class="outcome".*?</section>', kinds_page, re.S).group(0)
    assert "max_steps: " in outcome and "no final answer after 5 steps" in outcome
    assert kinds_page.count('<section class="step') == 5


def test_a_model_failure_ends_the_run_on_the_page():
    run = scripted_run([code("x = 1")], max_steps=3)  # the model has no second reply
    html = render_run(run)
    assert "the model endpoint failed" in section(html, 2) and "failed: " in html
    assert "ScriptedModel ran out of replies" in html


def test_the_run_header_shows_mode_model_executor_and_isolation(kinds_page):
    page = Page(kinds_page)
    text = page.body_text
    for shown in ("mode", "code", "scripted (scripted: no model was called)", "LocalExecutor", "lookup",
                  "5 of at most 5", "isolation: LocalExecutor", "audit hook"):
        assert shown in text, shown


def test_a_success_shows_the_final_answer_and_reasoning_is_collapsed(tmp_path):
    from codeagent.models.replies import ModelReply

    run = scripted_run([ModelReply(text=code("final_answer({'total': 42})"), reasoning="let me think <b>hard</b>")])
    html = render_run(run)
    assert '<details id="reasoning-1"><summary>reasoning (24 characters)' in html
    assert "let me think &lt;b&gt;hard&lt;/b&gt;" in html
    assert '&quot;total&quot;: 42' in html and "final answer" in html


def test_an_older_run_file_without_the_new_fields_still_renders():
    run = RunResult(run_id="old", task="t", status="failed", error="boom", steps=[StepRecord(step=1, model_output="hi")])
    text = Page(render_run(run)).body_text
    assert "(not recorded)" in text and "failed: boom" in text


# -- figures -------------------------------------------------------------------------------------


def png(width: int = 4, height: int = 3, *, claimed: tuple[int, int] | None = None) -> bytes:
    """A valid RGB PNG; `claimed`: the header says this size instead (the pixels stay small)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + b"\x20\x80\xc0" * width for _ in range(height))
    header = claimed or (width, height)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", *header, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def test_a_well_formed_png_is_accepted_with_its_size():
    assert check_png(png(4, 3)) == (4, 3)


def test_every_single_byte_change_to_a_png_is_caught():
    good = png()
    for i in range(len(good)):
        bad = bytearray(good)
        bad[i] ^= 0x41
        with pytest.raises(BadImage):
            check_png(bytes(bad))
    for cut in range(len(good)):
        with pytest.raises(BadImage):
            check_png(good[:cut])
    with pytest.raises(BadImage, match="after its end"):
        check_png(good + b"<script>")


def test_a_png_that_claims_too_many_pixels_is_not_shown():
    with pytest.raises(BadImage, match="too large to show"):
        check_png(png(claimed=(60_000, 60_000)))  # 100 bytes that a browser would decode to 14 GB
    record = AttachmentRecord(step=1, index=1, media_type="image/png", size=10)
    record._data = png(claimed=(20_000, 5_000))
    assert "too large to show" in figure_html(record)


def test_the_data_run_embeds_its_figure_at_its_size(tmp_path):
    run = data_run(tmp_path)
    html = render_run(RunResult.load(tmp_path / f"{run.run_id}.json"))
    [img] = assert_inert(html).all("img")
    data = base64.b64decode(img["src"].split(",", 1)[1])
    assert data == (tmp_path / run.attachments[0].file).read_bytes()
    assert (int(img["width"]), int(img["height"])) == check_png(data) == (500, 250)


def test_a_damaged_missing_or_unsaved_figure_says_why(tmp_path):
    run = data_run(tmp_path)
    path = tmp_path / f"{run.run_id}.json"
    figure = tmp_path / run.attachments[0].file
    figure.write_bytes(figure.read_bytes()[:-20] + b"<script>alert(1)</script>")
    damaged = render_run(RunResult.load(path))
    assert "not shown: bad checksum in its IDAT chunk" in damaged and "<script>alert" not in damaged
    figure.unlink()
    assert f"not shown: its file {figure.name} is missing" in render_run(RunResult.load(path))
    unsaved = RunResult.from_json(path.read_text())
    for a in unsaved.attachments:
        a.file = None
    assert "only its description was saved with the run" in render_run(unsaved)


def test_an_attachment_that_is_not_png_is_described_not_shown():
    record = AttachmentRecord(step=1, index=1, media_type="image/svg+xml", size=40)
    record._data = b"<svg onload='window.__xss=1'></svg>"
    html = figure_html(record)
    assert "<svg" not in html and "pages show PNG images only" in html


# -- hostile text --------------------------------------------------------------------------------


def test_xss_payloads_in_every_field_render_as_text():
    html = render_run(xss_run())
    page = assert_inert(html)
    for payload in XSS:
        assert payload in page.body_text  # shown, as the characters they are


PIECES = list("<>\"'&=/: ;()`\\x\u2028\u0000é\r\n") + ["<script>", "</pre>", "javascript:", "onerror=", "]]>",
                                                         "<!--", "</script>", "&lt;", "\U0001f600"]
fields = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(task=fields, reply=fields, logs=fields, error=fields, answer=fields, kind=fields)
def test_any_text_in_any_field_stays_text(task, reply, logs, error, answer, kind):
    step = StepRecord(step=1, model_output=reply, reasoning=reply or None, code=reply, logs=logs, output_repr=answer,
                      error=error or None, error_kind=kind or None, observation=logs)
    run = RunResult(run_id=kind or "r", task=task, status="success", output=answer, steps=[step], model=task,
                    mode=kind, executor=reply, tools=[task], isolation={"place": task, "layers": {kind: error},
                                                                        "missing": [answer]})
    page = assert_inert(render_run(run))
    assert task.replace("\r", "") in page.body_text.replace("\r", "") or not task.strip()


def test_tags_refuse_attributes_and_links_that_could_run_script():
    for attrs in ({"onclick": "x"}, {"style": "x"}, {"srcdoc": "x"}, {"href": "javascript:x"},
                  {"href": "JaVaScRiPt:x"}, {"href": " data:text/html,x"}, {"href": "//evil.example"},
                  {"src": "data:image/svg+xml;base64,PHN2Zz4="}):
        with pytest.raises(ValueError):
            tag("a", "x", **attrs)
    assert relative_link("runs", "a/../../etc", "javascript:x") == "runs/a%2F..%2F..%2Fetc/javascript%3Ax"


def test_the_policy_allows_exactly_the_pages_own_script_and_style(kinds_page):
    [meta] = [m for m in Page(kinds_page).all("meta") if m.get("http-equiv")]
    csp = meta["content"]
    script = re.search(r"<script>(.*?)</script>", kinds_page, re.S).group(1)
    style = re.search(r"<style>(.*?)</style>", kinds_page, re.S).group(1)

    def sha(text: str) -> str:
        return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert f"script-src 'sha256-{sha(script)}'" in csp and f"style-src 'sha256-{sha(style)}'" in csp
    assert "default-src 'none'" in csp and "img-src data:" in csp and "connect-src 'none'" in csp
    assert kinds_page.index("Content-Security-Policy") < kinds_page.index("<style>")  # before anything loads


# -- batches, comparisons, folders ---------------------------------------------------------------


@pytest.fixture(scope="module")
def batches(tmp_path_factory, kinds):
    root = tmp_path_factory.mktemp("batches")
    sine = data_run(root / "data")
    ok = scripted_run([code("final_answer(1.57)")])
    xss = xss_run()
    a = write_batch(root / "a", [("sine", sine, 1.57), ("kinds", kinds, None), (XSS[0], xss, "nope")])
    b = write_batch(root / "b", [("sine", ok, 1.57), ("kinds", kinds, None), (XSS[0], kinds, "nope")])
    return a, b


def test_the_batch_page_lists_every_task_and_links_each_run(batches):
    a, _ = batches
    written = write_site(a)
    assert written[0] == a / "view.html" and {p.parent for p in written[1:]} == {a / "view-runs"}
    page = assert_inert(written[0].read_text())
    rows = [attrs for name, attrs in page.elements if name == "tr" and "data-status" in attrs]
    # sine answered 1.58 for 1.57, the XSS task is not "nope"; kinds has no expected answer
    assert sorted(r["data-status"] for r in rows) == ["max_steps", "success wrong", "success wrong"]
    links = [unquote(link["href"]) for link in page.all("a")]
    assert len(links) == 3 and all((written[0].parent / link).is_file() for link in links), links
    assert "2/3 succeeded" in page.body_text and "0/2 correct" in page.body_text
    run_page = (a / "view-runs" / "kinds.html").read_text()
    assert 'href="../view.html"' in run_page and "task kinds" in run_page


def test_a_run_page_of_a_batch_shows_expected_and_verdict(batches):
    a, _ = batches
    write_site(a)
    sine = Page((a / "view-runs" / "sine.html").read_text()).body_text
    assert "expected: 1.57" in sine and "wrong" in sine  # it answered 1.58


def test_the_comparison_shows_only_the_tasks_that_changed(batches):
    a, b = batches
    written = write_site(a, against=b)
    assert written[0] == b / "compare.html"
    page = assert_inert(written[0].read_text())
    rows = {attrs["data-status"] for name, attrs in page.elements if name == "tr" and "data-status" in attrs}
    assert rows == {"now-correct", "broken"}  # sine now right, the XSS task now failing; kinds unchanged
    assert any(p.parent.name == "a" for p in written) and any(p.parent.name == "b" for p in written)


def test_a_damaged_run_file_gets_an_error_page_not_a_crash(batches, tmp_path):
    a, _ = batches
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(a, copy)
    (copy / "runs" / "kinds.json").write_text("{not json")
    written = write_site(copy)
    assert "is not a saved run" in (copy / "view-runs" / "kinds.html").read_text()
    assert "kinds" in written[0].read_text()


def test_folders_of_runs_of_one_run_and_of_figures(tmp_path):
    one = tmp_path / "one"
    run = data_run(one)
    [page] = write_site(one)
    assert f"Run {run.run_id}" in page.read_text()  # one run: its page, no index
    data_run(one)
    root, *runs = write_site(one)
    assert len(runs) == 2 and "Runs in one" in root.read_text()
    figs = tmp_path / "figs"
    figs.mkdir()
    (figs / "exec.figure-1.png").write_bytes(png())
    (figs / "exec.figure-2.png").write_bytes(b"\x89PNG not really")
    html = write_site(figs)[0].read_text()
    assert html.count("data:image/png;base64,") == 1 and "not shown: not a PNG" in html


def test_paths_that_hold_nothing_to_show_are_clear_errors(tmp_path):
    with pytest.raises(ViewError, match="does not exist"):
        Site(tmp_path / "nope")
    with pytest.raises(ViewError, match="holds no saved run"):
        Site(tmp_path)
    (tmp_path / "x.json").write_text(json.dumps({"hello": 1}))
    with pytest.raises(ViewError, match="is not a saved run"):
        Site(tmp_path / "x.json")
    with pytest.raises(ViewError, match="is not a saved run"):
        Site(tmp_path)
    with pytest.raises(ViewError, match="--compare takes two batch folders"):
        Site(tmp_path, against=tmp_path)


def test_the_same_run_renders_to_the_same_bytes(kinds):
    assert render_run(kinds) == render_run(kinds)


def test_the_pages_read_what_run_batch_really_writes(tmp_path):
    from codeagent.batch import run_batch
    from codeagent.batch.testing import scripted_tasks

    summary = run_batch("codeagent.batch.testing:scripted_agent", scripted_tasks(5), out=tmp_path / "b",
                        workers=1, progress=None)
    written = write_site(tmp_path / "b")
    assert len(written) == 1 + summary.total
    page = assert_inert(written[0].read_text())
    statuses = sorted(a["data-status"] for n, a in page.elements if n == "tr" and "data-status" in a)
    assert statuses == ["max_steps", *["success correct"] * 4]
    assert "codeagent.batch.testing:scripted_agent" in page.body_text  # how it ran, from batch.json
    failing_then_fixed = (tmp_path / "b" / "view-runs" / "t003.html").read_text()
    assert "the code failed (ZeroDivisionError)" in failing_then_fixed and "expected: " in failing_then_fixed
