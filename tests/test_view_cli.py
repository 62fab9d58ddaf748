"""`codeagent view` on the command line, and its live server over real HTTP on 127.0.0.1."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from view_runs import code, data_run, scripted_run, write_batch

from codeagent.cli.view import main
from codeagent.view.server import make_server

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    run = data_run(root / "data")
    return write_batch(root / "batch", [("sine", run, 1.58), ("two", scripted_run([code("final_answer(2)")]), 2)])


def test_the_command_writes_the_page_beside_its_source(batch, capsys):
    assert main([str(batch)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"wrote {batch / 'view.html'} (+ 2 run page(s) in {batch / 'view-runs'})")
    assert (batch / "view-runs" / "sine.html").is_file()


def test_out_names_the_file_and_its_run_pages_go_beside_it(batch, tmp_path, capsys):
    target = tmp_path / "pages" / "report.html"
    assert main([str(batch), "--out", str(target)]) == 0
    assert target.is_file() and (tmp_path / "pages" / "report-runs" / "two.html").is_file()
    assert 'href="report-runs/two.html"' in target.read_text()
    assert 'href="../report.html"' in (tmp_path / "pages" / "report-runs" / "two.html").read_text()


def test_usage_mistakes_exit_2_with_one_line(batch, tmp_path, capsys):
    assert main([str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    for argv in ([], [str(batch), "--compare", str(batch), str(batch)], [str(batch), "--serve", "--out", "x.html"],
                 [str(batch), "--serve", "--port", "70000"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
    unwritable = tmp_path / "file"
    unwritable.write_text("")
    assert main([str(batch), "--out", str(unwritable / "x.html")]) == 2
    assert "cannot write the page" in capsys.readouterr().err


def test_the_codeagent_command_dispatches_view(batch, tmp_path):
    target = tmp_path / "cmp.html"
    proc = subprocess.run([sys.executable, "-m", "codeagent", "view", "--compare", str(batch), str(batch),
                           "--out", str(target)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "No task changed (2 compared)." in target.read_text()


# -- the live server ----------------------------------------------------------------------------


@pytest.fixture
def served(batch):
    server = make_server(batch, port=0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)


def get(server, path: str, host: str | None = None, method: str = "GET") -> tuple[int, dict[str, str], str]:
    port = server.server_address[1]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest(method, path, skip_host=True)
    conn.putheader("Host", host or f"127.0.0.1:{port}")
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read().decode()
    conn.close()
    return resp.status, dict(resp.getheaders()), body


def test_the_server_binds_loopback_and_serves_pages_with_the_policy_header(served):
    assert served.server_address[0] == "127.0.0.1"
    status, headers, body = get(served, "/")
    assert status == 200 and "Batch batch" in body and 'data-state-url="/_state/"' in body
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert "connect-src 'self'" in headers["Content-Security-Policy"] and headers["X-Content-Type-Options"] == "nosniff"
    status, _, run_page = get(served, "/runs/sine.html")
    assert status == 200 and "data:image/png;base64," in run_page and 'href=".."' in run_page


def test_the_state_changes_when_the_batch_writes_a_line(served, batch):
    first = get(served, "/_state/")[2]
    assert get(served, "/_state/")[2] == first
    row = json.loads((batch / "results.jsonl").read_text().splitlines()[0])
    with (batch / "results.jsonl").open("a") as f:
        f.write(json.dumps({**row, "id": "late"}) + "\n")
    try:
        assert get(served, "/_state/")[2] != first
        assert "late" in get(served, "/")[2]
    finally:
        lines = (batch / "results.jsonl").read_text().splitlines()[:-1]
        (batch / "results.jsonl").write_text("\n".join(lines) + "\n")


def test_the_server_refuses_other_hosts_paths_and_methods(served):
    assert get(served, "/", host="evil.example:80")[0] == 421  # DNS rebinding
    assert get(served, "/nope.html")[0] == 404
    assert get(served, "/../../etc/passwd")[0] == 404
    assert get(served, "/", method="POST")[0] == 501


def test_a_served_empty_folder_waits_for_files(tmp_path):
    server = make_server(tmp_path, port=0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        status, _, body = get(server, "/")
        assert status == 200 and "Nothing to show yet" in body
        before = get(server, "/_state/")[2]
        data_run(tmp_path)
        assert get(server, "/_state/")[2] != before and "Run " in get(server, "/")[2]
    finally:
        server.shutdown()
        server.server_close()


def test_a_port_in_use_names_the_flag(served):
    from codeagent.view import ViewError

    with pytest.raises(ViewError, match="pass --port N"):
        make_server(served.site.path, port=served.server_address[1])
