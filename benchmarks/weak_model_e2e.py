"""A real weak model end to end: SmolLM2-135M-Instruct behind llama-cpp-python's OpenAI server.

Starts `python -m llama_cpp.server` on 127.0.0.1 (a free port), runs the agent in all three modes
(code, single_call, tool_calling) on a handful of simple tasks, prints a table
task × mode → status, steps, model calls, tokens, parse failures recovered, and stops the server.

Every run must end cleanly: a final answer, or a clean max_steps / no-answer status. An exception
escaping an agent, or a step that ended on a model/protocol or executor error, fails the command
(exit 1). Whether a 135M model gets the answers right is reported, not required.

Normally run through `scripts/weak-model-e2e`, which installs the server and the model once:

    .venv/bin/python benchmarks/weak_model_e2e.py --server-python .models/venv/bin/python \\
        --model-file .models/SmolLM2-135M-Instruct.Q4_1.gguf [--modes ...] [--max-steps 4] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import traceback
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "data_tasks"), str(HERE.parent)]

from modes import MODES, RunRow, run_one, summary, table  # noqa: E402

from codeagent import OpenAIModel, tool  # noqa: E402
from codeagent.auto import choose_mode  # noqa: E402

UNCLEAN_KINDS = frozenset({"model", "executor"})


@tool
def add(a: int, b: int) -> int:
    """Add two integers and return the sum."""
    return a + b


@tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return {"paris": "sunny, 21 C", "london": "rain, 14 C"}.get(city.strip().lower(), "cloudy, 18 C")


@tool
def capital_of(country: str) -> str:
    """The capital city of a country."""
    return {"france": "Paris", "italy": "Rome", "japan": "Tokyo"}.get(country.strip().lower(), "unknown")


TASKS = [
    ("add", "What is 2 + 40? Use the add tool.", [add], lambda v: str(v).strip() == "42"),
    ("weather", "What is the weather in Paris?", [get_weather], lambda v: "sunny" in str(v).lower()),
    ("capital", "What is the capital of Japan?", [capital_of], lambda v: "tokyo" in str(v).lower()),
    ("greet", "Reply with the word hello as your final answer.", [], lambda v: "hello" in str(v).lower()),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(python: str, model_file: str, port: int, threads: int, n_ctx: int, log: Path) -> subprocess.Popen:
    cmd = [python, "-m", "llama_cpp.server", "--model", model_file, "--model_alias", "smollm2",
           "--host", "127.0.0.1", "--port", str(port), "--n_threads", str(threads), "--n_ctx", str(n_ctx)]
    handle = log.open("wb")
    proc = subprocess.Popen(cmd, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1/models"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama_cpp.server exited with status {proc.returncode}; see {log}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"llama_cpp.server did not answer on {url} within 180 s; see {log}")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_matrix(base_url: str, modes: list[str], max_steps: int, max_tokens: int) -> tuple[list[RunRow], list[str]]:
    rows: list[RunRow] = []
    problems: list[str] = []
    for name, prompt, tools, check in TASKS:
        for mode in modes:
            model = OpenAIModel("smollm2", base_url=base_url, api_key="none", max_retries=1, timeout=300,
                                request_options={"max_tokens": max_tokens, "temperature": 0.2, "seed": 7})
            try:
                # a 135M model's context is small: keep the conversation well inside --n_ctx
                row = run_one(name, prompt, mode, model, tools, max_steps=max_steps, check=check,
                              max_context_tokens=3000)
            except Exception:  # the point of this command: this must never happen
                problems.append(f"{name} [{mode}]: unhandled exception\n{traceback.format_exc()}")
                rows.append(RunRow(name, mode, "CRASHED", 0, 0, 0, 0, 0.0, None, "exception"))
                continue
            rows.append(row)
            print(f"  {name:<8} {mode:<13} {row.status:<13} steps={row.steps} calls={row.model_calls} "
                  f"tokens={row.tokens} recovered={row.recovered} {row.wall_s:.1f}s", flush=True)
            if row.status == "failed" and row.error and row.error.startswith(("model error", "executor failed")):
                problems.append(f"{name} [{mode}]: ended on a model/protocol or executor error: {row.error}")
    return rows, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server-python", required=True, help="python of the venv with llama-cpp-python[server]")
    parser.add_argument("--model-file", required=True, help="the GGUF file")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--max-steps", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--json", dest="json_path")
    parser.add_argument("--log", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "weak-model-server.log"))
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]

    port = free_port()
    t0 = time.perf_counter()
    server = start_server(args.server_python, args.model_file, port, args.threads, args.n_ctx, Path(args.log))
    print(f"llama_cpp.server up on 127.0.0.1:{port} in {time.perf_counter() - t0:.1f}s "
          f"(model {Path(args.model_file).name}, log {args.log})", flush=True)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        probe_model = OpenAIModel("smollm2", base_url=base_url, api_key="none", max_retries=1,
                                  request_options={"max_tokens": args.max_tokens, "temperature": 0.2, "seed": 7})
        try:
            choice = choose_mode(probe_model)
            auto_line = f"auto_agent would choose: {choice.mode} ({choice.reason})"
        except Exception as exc:  # reported, not fatal: the probe is informational here
            auto_line = f"auto_agent probe failed: {exc}"
        print(auto_line, flush=True)
        t1 = time.perf_counter()
        rows, problems = run_matrix(base_url, modes, args.max_steps, args.max_tokens)
        elapsed = time.perf_counter() - t1
    finally:
        stop_server(server)
        print("llama_cpp.server stopped", flush=True)

    print(f"\nSmolLM2-135M-Instruct (Q4_1 GGUF, llama-cpp-python, {args.threads} threads), "
          f"max_steps={args.max_steps}, {elapsed:.0f}s for {len(rows)} runs")
    print("cell: status / steps / model calls / tokens / parse failures recovered\n")
    print(table(rows))
    print()
    print(summary(rows))
    print(auto_line)
    if args.json_path:
        Path(args.json_path).write_text(json.dumps([r.as_dict() for r in rows], indent=2) + "\n")
    if problems:
        print("\nNOT CLEAN:")
        for p in problems:
            print("  " + p)
        return 1
    print("\nEvery run ended cleanly (final answer, or a clean max_steps / no-answer status).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
