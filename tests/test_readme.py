"""The README and the docs run: every ```python block of README.md and of each page in docs/, as
it is, in a fresh interpreter, and every ```bash block that does not say why it cannot run here.

Each Python block runs as a script in an empty folder, then every `test_*` function it defines is
called (the pages show pytest tests too). A block that talks to a model endpoint gets the bundled
OpenAI-compatible stub through OPENAI_BASE_URL (the blocks read it like a user's environment);
a block that starts a DockerExecutor runs where Docker tests run (CI=true or CODEAGENT_DOCKER=1).
A bash block runs with `bash -eu` in an empty folder, the project's `codeagent` first on PATH,
unless its first line is `# not run: <why>` (it needs root, a model server, a cluster). Nothing
is skipped otherwise, so the pages cannot drift from the code. docs/cli.md is checked against
the parsers it is written from.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from openai_stub import OpenAIStub
from unavailable import IN_CI, unavailable

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
SHELL = re.compile(r"^```bash[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
NOT_RUN = "# not run:"

# Runs a block, then the test functions it defines, as pytest would.
RUNNER = """\
import runpy, sys
namespace = runpy.run_path(sys.argv[1], run_name="__main__")
for name, value in list(namespace.items()):
    if name.startswith("test_") and callable(value):
        value()
        print(f"{name}: passed")
"""

# What some blocks must print (found by a line of the block): the README's comments say so.
EXPECTED_OUTPUT = {
    'final_answer(add(2, 40))': "42 success 1 ",
    'agent.run("What is 17 * 23?")': "success 391",
    'exporter.get_finished_spans()': "['chat scripted', 'execute_code', 'execute_tool add', 'invoke_agent CodeAgent', 'step 1']",
    'agent.stream("Sum 0..9.")': '"type":"run_end"',
    "def test_my_sandbox_holds": "test_my_sandbox_holds: passed",
    'args=["-m", "codeagent", "mcp-serve"]': "20! IS 2432902008176640000",
    "print(convert.signature_text())": "convert(amount: float, rate: float = 1.1) -> float\n210.0",
    "summary = run_batch(": "4 4",
}
STUB_REPLY = "Thought: compute it.\n<code>\nfinal_answer(17 * 23)\n</code>"


def blocks(fence: re.Pattern[str]) -> list[tuple[str, str]]:
    """("PAGE:line N", code) of every block of this kind in the README and the docs pages."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        name = page.relative_to(ROOT).as_posix()
        found += [(f"{name}:line{text.count(chr(10), 0, m.start()) + 2}", m.group(1)) for m in fence.finditer(text)]
    return found


BLOCKS = blocks(FENCE)
SHELL_BLOCKS = [(where, code) for where, code in blocks(SHELL) if not code.startswith(NOT_RUN)]


def test_the_readme_has_python_blocks_and_each_expectation_names_one():
    assert len(BLOCKS) >= 5
    for marker in EXPECTED_OUTPUT:
        assert any(marker in code for _, code in BLOCKS), f"no README block contains {marker!r} any more"


def needs_docker(code: str) -> bool:
    return "DockerExecutor(" in code


def needs_endpoint(code: str) -> bool:
    return "OpenAIModel(" in code


@pytest.mark.parametrize("line,code", BLOCKS, ids=[where for where, _ in BLOCKS])
def test_readme_block_runs(line: str, code: str, tmp_path: Path) -> None:
    if needs_docker(code) and not (IN_CI or os.environ.get("CODEAGENT_DOCKER") == "1"):
        unavailable(f"{line} starts a DockerExecutor: it runs with the Docker tests")
    script = tmp_path / "block.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "CODEAGENT_MODEL", "HYPOTHESIS_STORAGE_DIRECTORY")}
    work = tmp_path / "work"
    work.mkdir()
    with OpenAIStub([STUB_REPLY], repeat_last=True) as stub:
        if needs_endpoint(code):
            env["OPENAI_BASE_URL"] = stub.base_url
        proc = subprocess.run([sys.executable, "-c", RUNNER, str(script)], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"the block at {line} failed:\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    for marker, expected in EXPECTED_OUTPUT.items():
        if marker in code:
            assert expected in proc.stdout, f"{line}: expected {expected!r} in:\n{proc.stdout[-2000:]}"
    if needs_endpoint(code):
        assert stub.requests, "the block did not use the endpoint it was given"


@pytest.mark.parametrize("line,code", SHELL_BLOCKS, ids=[where for where, _ in SHELL_BLOCKS])
def test_shell_block_runs(line: str, code: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "CODEAGENT_MODEL")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # The project's own scripts run from the checkout; `scripts/test` is this very suite, run by CI.
    where = ROOT if "scripts/" in code else tmp_path
    code = "\n".join(row for row in code.splitlines() if not row.startswith("scripts/test"))
    with OpenAIStub([STUB_REPLY], repeat_last=True) as stub:
        if "codeagent run" in code or "--model" in code:  # (the demo without one uses its scripted reply)
            env["OPENAI_BASE_URL"] = stub.base_url
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=where, env=env,
                              capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"the shell block at {line} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"


def test_every_shell_block_runs_or_says_why_not():
    for where, code in blocks(SHELL):
        if code.startswith(NOT_RUN):
            assert len(code.splitlines()[0]) > len(NOT_RUN) + 5, f"{where}: say why it is not run"


def test_the_cli_page_is_what_the_parsers_say():
    from codeagent.cli.reference import render

    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == render(), (
        "docs/cli.md is out of date: run scripts/cli-reference")


def test_every_page_is_linked_from_the_readme():
    text = README.read_text(encoding="utf-8")
    for page in PAGES[1:]:
        if page.suffix == ".md":
            assert f"docs/{page.name}" in text, f"README.md does not link docs/{page.name}"


EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_the_examples_the_readme_points_to_run_offline(example: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "CODEAGENT_MODEL")}
    proc = subprocess.run([sys.executable, str(example)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "success" in proc.stdout or "True" in proc.stdout, proc.stdout[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == []
