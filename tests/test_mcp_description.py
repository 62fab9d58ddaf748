"""The MCP server's tool description is read from the executor it serves, and every claim it makes
holds when the client's model acts on it: the modules, open(), the files, what isolates the code."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeagent.mcp.serve import tool_description
from executors import Access, LocalExecutor, SubprocessExecutor


@pytest.fixture
def data() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="codeagent-desc-"))
    os.chmod(folder, 0o755)  # the worker reads it as `nobody`
    (folder / "a.csv").write_text("x\n1\n2\n", encoding="utf-8")
    os.chmod(folder / "a.csv", 0o644)
    yield folder
    (folder / "a.csv").unlink()
    folder.rmdir()


@pytest.mark.parametrize("make", [LocalExecutor, SubprocessExecutor], ids=["local", "subprocess"])
def test_a_restricted_sandbox_names_only_readers_it_may_import(make, data):
    with make(access=Access(read=[str(data)])) as ex:
        text = tool_description(ex, "x")
        assert "pathlib.Path" not in text and "pandas.read_csv" not in text  # it said both, and neither imports
        assert "none of the modules you may import reads or writes files" in text
        assert ex.execute("import pathlib").error.type == "ImportError"
    with make(authorized_imports=["pathlib"], access=Access(read=[str(data)])) as ex:
        text = tool_description(ex, "x")
        assert "pathlib.Path(...).read_text()" in text and "pandas" not in text
        assert ex.execute(f"import pathlib\npathlib.Path({str(data / 'a.csv')!r}).read_text()").output == "x\n1\n2\n"
        assert "open() is not available" in text and ex.execute("open").error is not None


def test_an_open_sandbox_is_described_as_full_python(data):
    with SubprocessExecutor(policy="open", access=Access(read=[str(data)])) as ex:
        text = tool_description(ex, "subprocess")
        assert "full Python" in text and "open() works" in text
        assert "underscore" not in text and "Modules it may import" not in text
        r = ex.execute(f"import _thread\nopen({str(data / 'a.csv')!r}).read()")
        assert r.error is None and r.output == "x\n1\n2\n"
        for concern in ("files", "network", "user"):  # what isolates it, from its own report
            assert f"{concern}: {ex.isolation.layers[concern]}" in text


def test_the_isolation_named_is_the_executors_own():
    with LocalExecutor() as ex:
        text = tool_description(ex, "local")
        assert "the host's user (same process)" in text  # not a container, not another process
    with SubprocessExecutor() as ex:
        text = tool_description(ex, "subprocess")
        assert f"user: {ex.isolation.layers['user']}" in text
