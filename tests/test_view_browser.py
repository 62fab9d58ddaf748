"""The pages in a real browser: headless Chromium (Debian's, installed by scripts/chromium.sh when
CI=true) renders a scripted data run, filters and sorts a batch, keeps XSS payloads inert, and
reloads a served page while its batch grows. One browser for the module, one tab for the tests."""

from __future__ import annotations

import io
import json
import threading
import time

import pytest
from chromium import BrowserError, Chromium, find_chromium
from unavailable import unavailable
from view_runs import XSS, code, data_run, every_step_kind, scripted_run, write_batch, xss_run

from codeagent.view import write_site
from codeagent.view.html import Safe
from codeagent.view.page import page as make_page
from codeagent.view.server import make_server

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser():
    if find_chromium() is None:
        unavailable("the page tests need headless Chromium: run scripts/chromium.sh (or CODEAGENT_BROWSER=1 scripts/test)")
    try:
        with Chromium() as chromium:
            yield chromium
    except BrowserError as exc:
        unavailable(f"headless Chromium does not start here: {exc}")


@pytest.fixture(scope="module")
def tab(browser):
    tab = browser.page(1100, 800)
    yield tab
    tab.close()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("pages")
    run = data_run(root / "data")
    kinds, xss = every_step_kind(), xss_run()
    tasks = [("sine", run, 1.58), ("kinds", kinds, None), ("xss", xss, "no")]
    tasks += [(f"ok-{i}", scripted_run([code(f"final_answer({i})")]), i) for i in range(4)]
    batch = write_batch(root / "batch", tasks)
    write_site(batch)
    return {"run": write_site(root / "data")[0], "batch": batch / "view.html",
            "xss": batch / "view-runs" / "xss.html", "root": root}


def visible(tab, column: int) -> list[str]:
    return tab.evaluate(f"""Array.from(document.querySelectorAll('#tasks tbody tr'))
        .filter(r => getComputedStyle(r).display !== 'none').map(r => r.cells[{column}].textContent)""")


def test_the_data_run_renders_its_figure_and_highlighted_code(tab, pages):
    tab.goto(pages["run"].as_uri())
    figure = tab.evaluate("(() => { const i = document.querySelector('figure.fig img'); "
                          "return [i.complete, i.naturalWidth, i.naturalHeight, i.getBoundingClientRect().width]; })()")
    assert figure[0] and figure[1] == 500 and figure[2] == 250 and figure[3] > 0
    colours = tab.evaluate("""(() => {
        const kw = document.querySelector('pre.hl .kn'), pre = document.querySelector('pre.hl');
        return [document.querySelectorAll('pre.hl span').length, getComputedStyle(kw).color, getComputedStyle(pre).color,
                getComputedStyle(kw).fontWeight]; })()""")
    assert colours[0] > 10 and colours[1] != colours[2]  # keywords have their own colour


def test_the_screenshot_is_not_blank(tab, pages):
    from PIL import Image

    tab.goto(pages["run"].as_uri())
    shot = Image.open(io.BytesIO(tab.screenshot())).convert("L")
    assert shot.size == (1100, 800)
    histogram = shot.histogram()
    ink = sum(histogram[:200]) / (shot.size[0] * shot.size[1])  # pixels clearly darker than the page
    assert 0.01 < ink < 0.6, ink
    assert len([n for n in histogram if n]) > 20  # text, figure and colours, not one flat fill


def test_the_batch_table_filters_by_status_and_text_and_sorts(tab, pages):
    tab.goto(pages["batch"].as_uri())
    assert len(visible(tab, 0)) == 7
    tab.evaluate("document.querySelector('[data-filters=tasks] button[data-status=max_steps]').click()")
    assert visible(tab, 0) == ["kinds"]
    assert tab.evaluate("document.querySelector('[data-count]').textContent") == "1 of 7 shown"
    tab.evaluate("document.querySelector('[data-filters=tasks] button[data-status=wrong]').click()")
    assert visible(tab, 0) == ["xss"]
    tab.evaluate("document.querySelector('[data-filters=tasks] button[data-status=correct]').click()")
    assert sorted(visible(tab, 0)) == ["ok-0", "ok-1", "ok-2", "ok-3", "sine"]
    tab.evaluate("document.querySelector('[data-filters=tasks] button[data-status=\"\"]').click()")
    tab.evaluate("const s = document.querySelector('[data-filters=tasks] input'); s.value = 'ok-';"
                 "s.dispatchEvent(new Event('input'))")
    assert sorted(visible(tab, 0)) == ["ok-0", "ok-1", "ok-2", "ok-3"]
    tab.evaluate("document.querySelector('[data-filters=tasks] input').value = '';"
                 "document.querySelector('[data-filters=tasks] input').dispatchEvent(new Event('input'))")
    tokens = 7  # the tokens column
    tab.evaluate(f"document.querySelectorAll('#tasks th')[{tokens}].click()")
    ascending = [int(v.replace(",", "")) for v in visible(tab, tokens)]
    assert ascending == sorted(ascending)
    tab.evaluate(f"document.querySelectorAll('#tasks th')[{tokens}].click()")
    assert [int(v.replace(",", "")) for v in visible(tab, tokens)] == sorted(ascending, reverse=True)


def test_xss_payloads_leave_the_window_flag_unset(tab, pages):
    tab.goto(pages["xss"].as_uri())
    payload = json.dumps(XSS[0])
    state = tab.evaluate("(() => { document.querySelectorAll('a, img, svg, details > summary').forEach(e => {"
                         "  try { e.dispatchEvent(new MouseEvent('click', {bubbles: true})); } catch (err) {} });"
                         "return [typeof window.__xss, document.scripts.length,"
                         "  document.querySelectorAll('iframe, svg, textarea').length,"
                         f"  document.body.innerText.includes({payload})]; }})()")
    time.sleep(0.2)  # a javascript: link or onerror handler would have run by now
    assert state == ["undefined", 1, 0, True]
    assert tab.evaluate("typeof window.__xss") == "undefined"
    tab.goto(pages["batch"].as_uri())
    assert tab.evaluate("typeof window.__xss") == "undefined"


def test_the_policy_blocks_script_that_escaping_would_have_missed(tab, pages):
    """The second wall: markup pasted into the page unescaped (a bug) still cannot run."""
    hostile = pages["root"] / "hostile.html"
    hostile.write_text(make_page("hostile", Safe("<script>window.__xss = 1</script><img src=x onerror='window.__xss = 2'>"
                                                 "<p id=ok>rendered</p>")))
    tab.goto(hostile.as_uri())
    time.sleep(0.2)
    assert tab.evaluate("[typeof window.__xss, document.getElementById('ok').textContent]") == ["undefined", "rendered"]


def test_a_served_page_reloads_while_its_batch_grows_and_keeps_its_filter(tab, pages):
    batch = pages["root"] / "batch"
    server = make_server(batch, port=0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    results = batch / "results.jsonl"
    before = results.read_bytes()
    try:
        tab.goto(server.url)
        button = "document.querySelector('[data-filters=tasks] button[data-status=success]')"
        deadline = time.monotonic() + 15  # (a reload of the served page may be under way)
        while not tab.evaluate(f"{button} !== null") and time.monotonic() < deadline:
            time.sleep(0.05)
        tab.evaluate(f"{button}.click()")
        shown = len(visible(tab, 0))
        row = json.loads(before.splitlines()[-1])
        with results.open("a") as f:
            f.write(json.dumps({**row, "id": "arrived-live"}) + "\n")
        deadline = time.monotonic() + 15  # the page polls every second
        while time.monotonic() < deadline:
            try:
                if "arrived-live" in visible(tab, 0):
                    break
            except BrowserError:  # asked while the page was reloading
                pass
            time.sleep(0.2)
        assert "arrived-live" in visible(tab, 0)
        assert len(visible(tab, 0)) == shown + 1  # the success filter survived the reload
    finally:
        results.write_bytes(before)
        server.shutdown()
        server.server_close()
        thread.join(5)
