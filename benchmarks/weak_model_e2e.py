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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "data_tasks"), str(HERE.parent)]

from modes import MODES, make_agent  # noqa: E402

from codeagent import OpenAIModel, tool  # noqa: E402
from codeagent.agent.auto import choose_mode  # noqa: E402

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


@tool
def population(city: str) -> int:
    """The number of people living in a city."""
    return {"paris": 2102650, "rome": 2748109, "tokyo": 13960000}.get(city.strip().lower(), 100000)


@tool
def temperature(city: str) -> int:
    """The temperature in a city now, in degrees Celsius."""
    return {"paris": 21, "london": 14, "rome": 25}.get(city.strip().lower(), 18)


@tool
def price_of(item: str) -> int:
    """The price of one item, in euros."""
    return {"apple": 2, "bread": 3}.get(item.strip().lower().rstrip("s"), 5)


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers and return the product."""
    return a * b


def _is(value: object):
    return lambda v: str(v).strip().strip("'\"").lower() == str(value).lower()


def _has(word: str):
    return lambda v: word in str(v).lower()


# The first four need at most one tool call; the last four chain two or three calls.
TASKS = [
    ("add", "What is 2 + 40? Use the add tool.", [add], _is(42)),
    ("weather", "What is the weather in Paris?", [get_weather], _has("sunny")),
    ("capital", "What is the capital of Japan?", [capital_of], _has("tokyo")),
    ("greet", "Reply with the word hello as your final answer.", [], _has("hello")),
    ("cap_weather", "What is the weather in the capital of Italy?", [capital_of, get_weather], _has("cloudy")),
    ("cap_pop", "How many people live in the capital of France?", [capital_of, population], _is(2102650)),
    ("temp_sum", "What is the temperature in Paris plus the temperature in London?", [temperature, add], _is(35)),
    ("price", "How much do 3 apples cost? Look up the price of an apple, then multiply.", [price_of, multiply],
     _is(6)),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# `python -m llama_cpp.server` with llama.cpp's extra buffer types off (weights repacked at load for
# the AMX and other CPU kernels: "AMX model buffer" in the log): on a VM whose CPU reports AMX, a
# native build's repacked weights segfault the server (measured: killed by SIGSEGV on its first chat
# request; without repacking it answers). The server has no setting for it, so the model's default
# parameters are patched before the server starts.
_SERVER_NO_REPACK = """
import runpy, sys, llama_cpp.llama_cpp as C
default = C.llama_model_default_params
def params():
    p = default()
    p.use_extra_bufts = False
    return p
C.llama_model_default_params = params
sys.argv[0] = "llama_cpp.server"
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def start_server(python: str, model_file: str, port: int, threads: int, n_ctx: int, log: Path,
                 repack: bool = False) -> subprocess.Popen:
    launch = ["-m", "llama_cpp.server"] if repack else ["-c", _SERVER_NO_REPACK]
    cmd = [python, *launch, "--model", model_file, "--model_alias", "smollm2",
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


@dataclass
class E2ERow:
    """One run: task x mode x constraint (the spelling actually used, "-" for none)."""

    task: str
    mode: str
    constrained: str
    status: str  # success | max_steps | failed | CRASHED
    steps: int
    calls: int
    tokens: int
    correct: bool
    wall_s: float
    output: str | None
    error: str | None
    replies: list[str] = field(default_factory=list)  # the model's reply at each step
    notices: list[str] = field(default_factory=list)  # what the model adapted to (constraint fallbacks, ...)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class CountingModel(OpenAIModel):
    """OpenAIModel that counts its chat requests (the agent's; the constraint probe is not one)."""

    calls = 0

    def complete(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return super().complete(*args, **kwargs)


def make_model(base_url: str, constrain: str | None, max_tokens: int, temperature: float) -> CountingModel:
    options: dict[str, Any] = {"constrain": constrain} if constrain else {}
    return CountingModel("smollm2", base_url=base_url, api_key="none", max_retries=1, timeout=300,
                         request_options={"max_tokens": max_tokens, "temperature": temperature, "seed": 7},
                         **options)


def run_task(task: tuple, mode: str, model: CountingModel, max_steps: int) -> E2ERow:
    name, prompt, tools, check = task
    t = time.perf_counter()
    # a 135M model's context is small: keep the conversation well inside --n_ctx
    with make_agent(mode, model, tools, max_steps, max_context_tokens=3000) as agent:
        result = agent.run(prompt)
    spelling = getattr(model, "constraint_spelling", lambda: None)() if getattr(model, "constrain", None) else None
    shown = result.output_repr if result.output_repr is not None else (repr(result.output) if result.success else None)
    return E2ERow(name, mode, spelling or "-", result.status, len(result.steps), model.calls,
                  result.usage.total_tokens, bool(result.success and check(result.output)),
                  round(time.perf_counter() - t, 2), shown, result.error,
                  [s.model_output for s in result.steps], list(getattr(model, "adaptations", [])))


def run_matrix(base_url: str, modes: list[str], constrains: list[str | None], tasks: list[tuple], max_steps: int,
               max_tokens: int, temperature: float) -> tuple[list[E2ERow], list[str]]:
    rows: list[E2ERow] = []
    problems: list[str] = []
    for task in tasks:
        for mode in modes:
            for constrain in constrains:
                model = make_model(base_url, constrain, max_tokens, temperature)
                label = f"{task[0]} [{mode}, constrain={constrain}]"
                try:
                    row = run_task(task, mode, model, max_steps)
                except Exception:  # the point of this command: this must never happen
                    problems.append(f"{label}: unhandled exception\n{traceback.format_exc()}")
                    rows.append(E2ERow(task[0], mode, str(constrain), "CRASHED", 0, model.calls, 0, False, 0.0,
                                       None, "exception"))
                    continue
                rows.append(row)
                print(f"  {row.task:<12} {mode:<13} {row.constrained:<12} {row.status:<10} steps={row.steps} "
                      f"calls={row.calls} tokens={row.tokens} correct={'yes' if row.correct else 'no'} "
                      f"{row.wall_s:.1f}s", flush=True)
                if row.status == "failed" and row.error and row.error.startswith(("model error", "executor failed")):
                    problems.append(f"{label}: ended on a model/protocol or executor error: {row.error}")
    return rows, problems


def e2e_table(rows: list[E2ERow]) -> str:
    """One line per run: task x mode x constrained -> status, steps, calls, tokens, answer correct?"""
    head = f"{'task':<12} {'mode':<13} {'constrained':<12} {'status':<10} {'steps':>5} {'calls':>5} {'tokens':>7}  correct"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r.task:<12} {r.mode:<13} {r.constrained:<12} {r.status:<10} {r.steps:>5} {r.calls:>5} "
                     f"{r.tokens:>7}  {'yes' if r.correct else 'no'}")
    return "\n".join(lines)


def e2e_summary(rows: list[E2ERow]) -> str:
    """Per mode x constraint: answers correct, runs ended with an answer, calls, tokens, wall time."""
    head = f"{'mode':<13} {'constrained':<12} {'correct':>8} {'answered':>9} {'calls':>6} {'tokens':>7} {'wall s':>7}"
    lines = [head]
    for key in dict.fromkeys((r.mode, r.constrained) for r in rows):
        mine = [r for r in rows if (r.mode, r.constrained) == key]
        correct = f"{sum(r.correct for r in mine)}/{len(mine)}"
        answered = f"{sum(r.status == 'success' for r in mine)}/{len(mine)}"
        lines.append(f"{key[0]:<13} {key[1]:<12} {correct:>8} {answered:>9} {sum(r.calls for r in mine):>6} "
                     f"{sum(r.tokens for r in mine):>7} {sum(r.wall_s for r in mine):>7.0f}")
    return "\n".join(lines)


def failures(rows: list[E2ERow], limit: int = 200) -> str:
    """The model's replies, step by step, for every run that did not end with the right answer."""
    out = []
    for r in rows:
        if r.correct:
            continue
        out.append(f"{r.task} [{r.mode}, {r.constrained}] {r.status}: output={r.output} error={r.error}")
        for i, reply in enumerate(r.replies, 1):
            text = " ".join(reply.split())
            out.append(f"    {i}: {text[:limit]}{'...' if len(text) > limit else ''}")
        out.extend(f"    note: {n}" for n in r.notices)
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server-python", required=True, help="python of the venv with llama-cpp-python[server]")
    parser.add_argument("--model-file", required=True, help="the GGUF file")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--constrain", default="none,auto",
                        help="comma-separated OpenAIModel(constrain=...) settings to run; none = no constraint")
    parser.add_argument("--tasks", default=",".join(t[0] for t in TASKS))
    parser.add_argument("--max-steps", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--temperature", type=float, default=0.0)
    # one thread: on a busy 2-core machine two llama.cpp threads wait on each other (measured 1 vs 20+ tokens/s)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--repack", action="store_true",
                        help="let llama.cpp repack the weights for its AMX / CPU kernels (off: they crash on some VMs)")
    parser.add_argument("--json", dest="json_path")
    parser.add_argument("--no-auto-probe", action="store_true", help="skip the auto_agent line")
    parser.add_argument("--log", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "weak-model-server.log"))
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    constrains = [None if c in ("none", "None", "") else c for c in args.constrain.split(",")]
    wanted = [t for t in args.tasks.split(",") if t]
    unknown = sorted(set(wanted) - {t[0] for t in TASKS})
    if unknown:
        parser.error(f"unknown tasks {unknown}; known: {', '.join(t[0] for t in TASKS)}")
    tasks = [t for t in TASKS if t[0] in wanted]

    port = free_port()
    t0 = time.perf_counter()
    server = start_server(args.server_python, args.model_file, port, args.threads, args.n_ctx, Path(args.log),
                          args.repack)
    print(f"llama_cpp.server up on 127.0.0.1:{port} in {time.perf_counter() - t0:.1f}s "
          f"(model {Path(args.model_file).name}, log {args.log})", flush=True)
    base_url = f"http://127.0.0.1:{port}/v1"
    auto_line = "auto_agent probe skipped"
    try:
        if not args.no_auto_probe:
            probe_model = make_model(base_url, "auto" if "auto" in constrains else None, args.max_tokens,
                                     args.temperature)
            try:
                choice = choose_mode(probe_model)
                auto_line = f"auto_agent would choose: {choice.mode} ({choice.reason})"
            except Exception as exc:  # reported, not fatal: the probe is informational here
                auto_line = f"auto_agent probe failed: {exc}"
            print(auto_line, flush=True)
        t1 = time.perf_counter()
        rows, problems = run_matrix(base_url, modes, constrains, tasks, args.max_steps, args.max_tokens,
                                    args.temperature)
        elapsed = time.perf_counter() - t1
    finally:
        stop_server(server)
        print("llama_cpp.server stopped", flush=True)

    print(f"\nSmolLM2-135M-Instruct (Q4_1 GGUF, llama-cpp-python, {args.threads} threads), "
          f"max_steps={args.max_steps}, temperature={args.temperature:g}, {elapsed:.0f}s for {len(rows)} runs\n")
    print(e2e_table(rows))
    print()
    print(e2e_summary(rows))
    print(auto_line)
    if any(not r.correct for r in rows):
        print("\nThe model's replies where the answer was not right:")
        print(failures(rows))
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
