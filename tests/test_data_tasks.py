"""The data-task suite's harness: the scripted run (what CI checks) and one run over HTTP."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest
from openai_stub import OpenAIStub

SUITE_DIR = Path(__file__).resolve().parents[1] / "benchmarks" / "data_tasks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(SUITE_DIR))
    try:
        yield importlib.import_module("run"), importlib.import_module("suite")
    finally:
        sys.path.remove(str(SUITE_DIR))


def test_the_scripted_suite_succeeds_in_every_mode(bench, tmp_path, capsys):
    run, suite = bench
    assert len(suite.TASKS) >= 8 and {t.kind for t in suite.TASKS} >= {"join", "aggregation", "filtering", "report", "loop"}
    out = tmp_path / "rows.json"
    assert run.main(["--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert len(rows) == 3 * len(suite.TASKS) and all(r["status"] == "success" for r in rows)
    assert all(r["model_calls"] >= 1 and r["tokens"] > 0 for r in rows)
    printed = capsys.readouterr().out
    assert "scripted replies" in printed and "code                 9/9" in printed
    # the deliberate slips in the scripts were recovered from
    assert {(r["task"], r["mode"]) for r in rows if r["recovered"]} == {
        ("order_city", "single_call"), ("order_total", "tool_calling")
    }


def test_checkers_accept_spellings_and_reject_wrong_answers(bench):
    _, suite = bench
    assert suite.number(22.4)("22.40 €") and suite.number(22.4)(22.400001) and not suite.number(22.4)("about 22")
    assert suite.text("Lyon")(" lyon.") and not suite.text("Lyon")("Paris")
    assert suite.unordered(["Ada", "Chloe"])("Chloe and Ada") and not suite.unordered(["Ada"])(["Ada", "Bob"])


def test_an_endpoint_run_checks_the_answer(bench):
    run, _ = bench
    wrong = "<code>\nfinal_answer('Paris')\n</code>"
    right = "<code>\nfinal_answer(get_customer(get_order(1003)['customer_id'])['city'])\n</code>"
    with OpenAIStub([wrong, right]) as stub:
        rows = run.run_suite(["code"], {"order_city"}, base_url=stub.base_url, model_id="stub", api_key="k")
        rows += run.run_suite(["code"], {"order_city"}, base_url=stub.base_url, model_id="stub", api_key="k")
    assert [r.status for r in rows] == ["wrong_answer", "success"] and rows[1].output == "'Lyon'"
    assert stub.requests[0]["model"] == "stub"
