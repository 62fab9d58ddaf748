"""`codeagent mcp-serve` as a real subprocess, driven by the official `mcp` client over stdio and
over streamable HTTP: state per session, figures as image blocks, refusals worded as `execute`
words them, limits that hold, sessions isolated and closed, the token."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from unavailable import IN_CI

if importlib.util.find_spec("mcp") is None and not IN_CI:  # bootstrap.sh installs the mcp extra; CI must have it
    pytest.skip("the mcp package is not installed: scripts/bootstrap.sh installs it", allow_module_level=True)
pytestmark = pytest.mark.timeout(180)

import anyio  # noqa: E402
from mcp import Client, MCPError, StdioServerParameters  # noqa: E402

from executors.process import SubprocessExecutor  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ESCAPE = "().__class__.__bases__[0].__subclasses__()"
BOMB = "x = [0] * 10**10"


def serve_command(*flags: str) -> list[str]:
    return [sys.executable, "-m", "codeagent", "mcp-serve", *flags]


def text(result: Any) -> str:
    return result.content[0].text


async def run(client: Client, code: str) -> Any:
    return await client.call_tool("run_python", {"code": code})


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory the sandbox user may read (pytest's tmp_path is private to root)."""
    base = Path(tempfile.mkdtemp(prefix="codeagent-mcp-", dir="/tmp"))
    base.chmod(0o755)
    (base / "data.csv").write_text("a,b\n1,2\n")
    (base / "data.csv").chmod(0o644)
    yield base
    shutil.rmtree(base)


def test_stdio_session_keeps_state_shows_figures_and_refuses_like_execute(shared_dir):
    tmp_path = shared_dir
    command = serve_command("--import", "matplotlib.*", "--read", str(tmp_path))
    with SubprocessExecutor(authorized_imports=["matplotlib.*"]) as direct:
        expected = {code: direct.execute(code).error for code in (ESCAPE, BOMB)}

    async def scenario() -> None:
        params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(ROOT))
        async with Client(params) as client:
            listing = {t.name: t for t in (await client.list_tools()).tools}
            assert set(listing) == {"run_python", "reset", "list_variables"}
            description = listing["run_python"].description
            assert "matplotlib.*" in description and str(tmp_path) in description and "read-only" in description
            assert set(listing["run_python"].output_schema["properties"]) == {"output", "logs", "error", "figures"}

            first = await run(client, "x = 21\nprint('half')\nx * 2")
            assert not first.is_error and text(first) == "Printed output:\nhalf\nLast value: 42"
            assert first.structured_content == {"output": 42, "logs": "half\n", "error": None, "figures": []}
            assert (await run(client, "x + 1")).structured_content["output"] == 22  # state persists

            drawn = await run(client, "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nNone")
            assert [b.type for b in drawn.content] == ["text", "image"] and drawn.content[1].mime_type == "image/png"
            assert drawn.structured_content["figures"][0]["width"] == 640
            assert "[figure 1: 640×480 PNG" in text(drawn)

            for code, error in expected.items():
                refused = await run(client, code)
                assert refused.is_error
                assert refused.structured_content["error"]["type"] == error.type
                assert refused.structured_content["error"]["message"] == error.message
            assert expected[BOMB].type == "MemoryError"

            variables = await client.call_tool("list_variables", {})
            assert variables.structured_content["variables"]["x"] == 21
            await client.call_tool("reset", {})
            gone = await run(client, "x")
            assert gone.is_error and "NameError" in text(gone)

    anyio.run(scenario)


@pytest.fixture(scope="module")
def http_server() -> Iterator[tuple[str, int]]:
    """`mcp-serve --transport http` on a free port: (url, pid)."""
    proc = subprocess.Popen(serve_command("--transport", "http", "--port", "0"), cwd=ROOT,
                            stderr=subprocess.PIPE, text=True)
    try:
        url = _listening(proc)
        yield url, proc.pid
    finally:
        proc.terminate()
        proc.wait(20)
        proc.stderr.close()


def _listening(proc: subprocess.Popen) -> str:
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "listening on" in line:
            return line.split("listening on ")[1].split()[0]
    raise AssertionError(f"mcp-serve did not start: {''.join(lines)}")


def leaf(exc: BaseException) -> BaseException:
    """The error inside anyio's exception groups."""
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def test_a_broken_sandbox_is_an_error_the_client_reads(tmp_path):
    """A --read grant the sandbox user cannot use: the call says so (and the next one retries)."""
    command = serve_command("--read", str(tmp_path))

    async def scenario() -> None:
        params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(ROOT))
        async with Client(params) as client:
            for _ in range(2):
                failed = await run(client, "1")
                assert failed.is_error and "the sandbox failed, not your code:" in text(failed)
                assert "cannot use these grants" in text(failed)

    anyio.run(scenario)


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            found.update(int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split())
        except FileNotFoundError:  # that thread ended meanwhile
            pass
    return found


def workers(pid: int) -> set[int]:
    """The worker processes under `pid`: its children, and for a zygote (kept for the host's life,
    executors/process/zygote.py) the workers it forked instead of itself."""
    found: set[int] = set()
    for child in children(pid):
        try:
            zygote = b"worker.zygote" in Path(f"/proc/{child}/cmdline").read_bytes()
            found |= children(child) if zygote else {child}
        except FileNotFoundError:  # it ended meanwhile
            pass
    return found


def test_two_http_sessions_run_at_once_and_never_see_each_other(http_server):
    url, _ = http_server

    async def scenario() -> None:
        async with Client(url) as a, Client(url) as b:
            await run(a, "secret = 'only a'")
            seen = await run(b, "secret")
            assert seen.is_error and "NameError" in text(seen)
            answers: dict[str, Any] = {}

            async def slow(client: Client, tag: str) -> None:
                answers[tag] = await run(client, f"import time\ntime.sleep(1)\n{tag!r}")

            t0 = time.monotonic()
            async with anyio.create_task_group() as group:
                group.start_soon(slow, a, "a")
                group.start_soon(slow, b, "b")
            assert time.monotonic() - t0 < 1.9  # side by side, not one after the other
            assert [answers[t].structured_content["output"] for t in "ab"] == ["a", "b"]
            assert (await run(a, "secret")).structured_content["output"] == "only a"

    anyio.run(scenario)


def test_an_ended_http_session_closes_its_executor(http_server):
    url, pid = http_server
    before = workers(pid)

    async def one_session() -> None:
        async with Client(url) as client:
            await run(client, "1 + 1")
            assert workers(pid) - before, "the session's worker process should be running"

    anyio.run(one_session)
    for _ in range(200):
        if not workers(pid) - before:
            return
        time.sleep(0.05)
    pytest.fail(f"the ended session's worker still runs: {workers(pid) - before}")


def test_a_stateless_client_is_told_to_use_the_handshake(http_server):
    url, _ = http_server

    async def pinned() -> None:
        async with Client(url, mode="2026-07-28") as client:
            await run(client, "1")

    with pytest.raises(BaseException) as caught:
        anyio.run(pinned)
    error = leaf(caught.value)
    assert isinstance(error, MCPError) and "keeps variables per session" in str(error)
    assert "connect with the initialize handshake" in str(error)


def test_beyond_loopback_a_token_is_required():
    refused = subprocess.run(serve_command("--transport", "http", "--host", "0.0.0.0"), cwd=ROOT,
                             capture_output=True, text=True, timeout=60, env={**os.environ, "CODEAGENT_MCP_TOKEN": ""})
    assert refused.returncode == 2 and "pass --token" in refused.stderr


def test_with_a_token_only_clients_that_send_it_get_in():
    proc = subprocess.Popen(serve_command("--transport", "http", "--port", "0", "--executor", "local", "--token", "s3cret"),
                            cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        url = _listening(proc)
        import httpx2

        async def with_headers(headers: dict[str, str]) -> Any:
            from mcp.client.streamable_http import streamable_http_client

            async with httpx2.AsyncClient(headers=headers) as http:
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    return await run(client, "6 * 7")

        assert anyio.run(with_headers, {"Authorization": "Bearer s3cret"}).structured_content["output"] == 42
        with pytest.raises(BaseException) as caught:
            anyio.run(with_headers, {"Authorization": "Bearer wrong"})
        assert isinstance(leaf(caught.value), MCPError) and "unauthorized" in str(leaf(caught.value))
    finally:
        proc.terminate()
        proc.wait(20)
        proc.stderr.close()


def test_the_server_keeps_an_idle_connection_longer_than_clients_do():
    """A client that sends on a pooled connection the server is closing at that moment gets a
    ReadError (a lost answer in the serving soak): the server must outwait the clients' pools."""
    import httpx2

    from codeagent.mcp.http import KEEP_ALIVE_S

    assert KEEP_ALIVE_S > httpx2.Limits().keepalive_expiry + 30


def test_the_server_keeps_its_heaps_few_and_trimmed():
    """The serving soak's resident size grew with the traffic through glibc's per-thread arenas;
    the server caps them and trims after reaping sessions (a no-op, False, off glibc)."""
    import platform

    from codeagent.mcp.http import trim_heap

    on_glibc = platform.libc_ver()[0] == "glibc"
    assert trim_heap() is on_glibc
    code = "from codeagent.mcp.http import fewer_heaps; print(fewer_heaps())"  # (a process of its own)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == str(on_glibc), out.stderr


def test_a_session_in_use_or_just_used_is_never_reaped_as_idle():
    """The serving soak lost answers to "SubprocessExecutor is closed": the reaper picked a session
    idle for long, a call took it at that moment, and the reaper closed it under the call. Idleness
    is decided again under the lock `get` takes, and a call in progress keeps its session."""
    from codeagent.mcp.serve import Sessions

    class Fake:
        closed = False

        def close(self) -> None:
            self.closed = True

    sessions = Sessions(Fake)
    s = sessions.get("a")
    sessions.begin(s)
    s.last_used -= 100  # (a step that has run for 100 s)
    assert sessions.close_idle(10) == 0 and not s.executor.closed
    sessions.done(s)
    s.last_used -= 100
    stale_then = s.last_used
    assert sessions.get("a") is s and s.last_used > stale_then  # a call arrives: fresh again
    assert sessions.close("a", idle_s=10) is False and not s.executor.closed
    s.last_used -= 100
    assert sessions.close_idle(10) == 1 and s.executor.closed and len(sessions) == 0
