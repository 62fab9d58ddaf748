"""Does constrained decoding make SmolLM2-135M write the right single call? Measured over HTTP.

Starts llama-cpp-python's OpenAI server on 127.0.0.1 (as benchmarks/weak_model_e2e.py does), then:

1. Spellings: which constraint spellings the server honours (codeagent.models.constrain.probe, one
   spelling at a time: json_schema, json_object + schema, grammar, guided_json, guided_grammar).
2. Single calls: for 8 tasks (weak_model_e2e's four, and four that need two or three tool calls),
   every step of the task is asked once with the conversation so far written as it should have
   gone (the right earlier calls and their results: teacher forcing, no agent loop), and the reply
   is scored: did it parse as one allowed call (`valid`), and was it the right call with the right
   arguments, or the right final answer (`right`)? A task counts as solved when every one of its
   steps is right. Configurations: the prompt (today's SingleCallAgent prompt: one Python call in
   <code> tags; or a JSON prompt), the constraint (none, json_object + a oneOf schema, GBNF
   grammar), and few-shot examples (none, as chat turns, as text in the system prompt).
   Greedy decoding (temperature 0), so each cell is one deterministic sample.

    .venv/bin/python benchmarks/constrained_probe.py --server-python .models/venv/bin/python \\
        --model-file .models/SmolLM2-135M-Instruct.Q4_1.gguf [--configs a,b] [--json out.json]

Measured (llama-cpp-python 0.3.36, SmolLM2-135M-Instruct Q4_1, greedy; steps right of 20, tasks
solved of 8, replies that were one allowed call of 20):
    agent (today's prompt, no constraint)          1/20   0/8    valid  7/20
    agent + few-shot turns                         6/20   0/8    valid 15/20
    agent + grammar (single_call_grammar)          9/20   1/8    valid 20/20
    agent + grammar + few-shot                    10/20   2/8    valid 20/20
    json + json_object schema + few-shot           6/20   1/8    valid 19/20
    json + grammar + few-shot                      8/20   2/8    valid 19/20
    json + grammar + few-shot + nudge              12/20  4/8    valid 20/20  (json_object: the same)
The first call of a task is right 7-8/8 with a constraint and few-shot (0/8 today); what stays
wrong is the step after an observation (repeat the call, call with the result, answer too early).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "data_tasks"), str(HERE.parent)]

from weak_model_e2e import (  # noqa: E402
    add,
    capital_of,
    free_port,
    get_weather,
    multiply,
    population,
    price_of,
    start_server,
    stop_server,
    temperature,
)

from codeagent import ScriptedModel, SingleCallAgent  # noqa: E402
from codeagent.agent.code_agent import ActionRefused  # noqa: E402
from codeagent.agent.single_call import check_single_call, render_tool_line  # noqa: E402
from codeagent.models.constrain import (  # noqa: E402
    fewshot_messages,
    fewshot_text,
    probe_constraint,
    request_fields,
    schema_to_gbnf,
    single_call_grammar,
    single_call_schema,
)
from codeagent.models.constrain.probe import sdk_sender  # noqa: E402
from codeagent.models.constrain.schemas import SCALAR_ANSWER_SCHEMA, python_literal  # noqa: E402
from codeagent.parsing import CodeParseError, fix_final_answer, parse_code  # noqa: E402

# -- the tools and tasks ------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """What the model should do at this step: call `tool` with `arguments`, or give the answer."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    result: Any = None  # what the call returns (the next observation)
    answer_ok: Callable[[Any], bool] | None = None  # for final_answer


def final(check: Callable[[Any], bool]) -> Step:
    return Step("final_answer", answer_ok=check)


def call(tool_: Any, **arguments: Any) -> Step:
    return Step(tool_.name, arguments, tool_(**arguments))


def _is(value: Any) -> Callable[[Any], bool]:
    return lambda v: str(v).strip().strip("'\"").lower() == str(value).lower()


def _has(word: str) -> Callable[[Any], bool]:
    return lambda v: word in str(v).lower()


TASKS: list[tuple[str, str, list[Any], list[Step]]] = [
    ("add", "What is 2 + 40? Use the add tool.", [add], [call(add, a=2, b=40), final(_is(42))]),
    ("weather", "What is the weather in Paris?", [get_weather],
     [call(get_weather, city="Paris"), final(_has("sunny"))]),
    ("capital", "What is the capital of Japan?", [capital_of], [call(capital_of, country="Japan"), final(_has("tokyo"))]),
    ("greet", "Reply with the word hello as your final answer.", [], [final(_has("hello"))]),
    ("cap_weather", "What is the weather in the capital of Italy?", [capital_of, get_weather],
     [call(capital_of, country="Italy"), call(get_weather, city="Rome"), final(_has("cloudy"))]),
    ("cap_pop", "How many people live in the capital of France?", [capital_of, population],
     [call(capital_of, country="France"), call(population, city="Paris"), final(_is(2102650))]),
    ("temp_sum", "What is the temperature in Paris plus the temperature in London?", [temperature, add],
     [call(temperature, city="Paris"), call(temperature, city="London"), call(add, a=21, b=14), final(_is(35))]),
    ("price", "How much do 3 apples cost? Look up the price of an apple, then multiply.", [price_of, multiply],
     [call(price_of, item="apple"), call(multiply, a=3, b=2), final(_is(6))]),
]

# -- prompts --------------------------------------------------------------------------------------

JSON_SYSTEM = """You solve tasks by calling tools, one call per reply. Each reply is one JSON object: {{"name": "<tool>", "arguments": {{...}}}}. You then see the call's result. When you know the answer, reply {{"name": "final_answer", "arguments": {{"answer": ...}}}}; that ends the task.

Tools:
{tools}
final_answer(answer)  # Give the final answer to the task and end it.

Rules: exactly one JSON object per reply; write the argument values themselves, copied from the task or from earlier results."""

JSON_SYSTEM_SHORT = """Call one tool per reply as JSON: {{"name": "<tool>", "arguments": {{...}}}}. Give the answer with {{"name": "final_answer", "arguments": {{"answer": ...}}}}.
Tools:
{tools}
final_answer(answer)"""


def agent_system_prompt(tools: Sequence[Any]) -> str:
    """Today's SingleCallAgent prompt, exactly as the agent builds it."""
    agent = SingleCallAgent(ScriptedModel([]), tools, bundleable=[t.name for t in tools])
    try:
        return agent.system_prompt()
    finally:
        agent.close()


def json_system_prompt(tools: Sequence[Any], short: bool = False) -> str:
    lines = "\n".join(render_tool_line(t) for t in tools) or "(none)"
    return (JSON_SYSTEM_SHORT if short else JSON_SYSTEM).format(tools=lines)


@dataclass(frozen=True)
class Config:
    name: str
    prompt: str  # "agent" (Python call in <code> tags) | "json" | "json_short"
    constrain: str | None  # None | "json_object" | "grammar"
    fewshot: str  # "none" | "turns" | "text"
    nudge: bool = False  # each observation ends with "if this answers the task, give the final answer"
    scalar_answer: bool = False  # the constraint allows only a string / number / boolean final answer
    norepeat: bool = False  # after the refusal of a repeated call, the grammar excludes that call
    restate: bool = False  # the nudge restates the task (with nudge=True)


CONFIGS = {c.name: c for c in [
    Config("agent", "agent", None, "none"),
    Config("agent+shots", "agent", None, "turns"),
    Config("agent/grammar", "agent", "grammar", "none"),
    Config("agent/grammar+shots", "agent", "grammar", "turns"),
    Config("json", "json", None, "none"),
    Config("json+shots", "json", None, "turns"),
    Config("json/json_object", "json", "json_object", "none"),
    Config("json/json_object+shots", "json", "json_object", "turns"),
    Config("json/grammar", "json", "grammar", "none"),
    Config("json/grammar+shots", "json", "grammar", "turns"),
    Config("json/grammar+textshots", "json", "grammar", "text"),
    Config("short/grammar+shots", "json_short", "grammar", "turns"),
    Config("agent/grammar+shots+nudge", "agent", "grammar", "turns", nudge=True),
    Config("json/grammar+shots+nudge", "json", "grammar", "turns", nudge=True),
    Config("json/json_object+shots+nudge", "json", "json_object", "turns", nudge=True),
    Config("agent/grammar+shots+nudge+scalar", "agent", "grammar", "turns", nudge=True, scalar_answer=True),
    Config("json/grammar+shots+nudge+scalar", "json", "grammar", "turns", nudge=True, scalar_answer=True),
    Config("json/json_object+shots+scalar", "json", "json_object", "turns", scalar_answer=True),
    Config("json/json_object+shots+nudge+scalar", "json", "json_object", "turns", nudge=True, scalar_answer=True),
    Config("json/grammar+shots+nudge-restating", "json", "grammar", "turns", nudge=True, restate=True),
    Config("agent/grammar+shots+norepeat", "agent", "grammar", "turns", norepeat=True),
    Config("agent/grammar+shots+nudge+scalar+norepeat", "agent", "grammar", "turns", nudge=True,
           scalar_answer=True, norepeat=True),
]}
NUDGE = {
    "agent": "If this answers the task, reply <code>final_answer(...)</code> with it; otherwise call the next tool.",
    "json": 'If this answers the task, reply {"name": "final_answer", "arguments": {"answer": ...}} with it; '
            "otherwise call the next tool.",
}
DEFAULT_CONFIGS = ",".join(CONFIGS)
TAGS = ("<code>", "</code>")


def render_step(prompt: str, step: Step) -> str:
    """How a right reply for `step` looks in this prompt's format (for the history)."""
    arguments = step.arguments if step.tool != "final_answer" else {"answer": step.result}
    if prompt == "agent":
        args = ", ".join(f"{k}={python_literal(v)}" for k, v in arguments.items())
        return f"{TAGS[0]}{step.tool}({args}){TAGS[1]}"
    return json.dumps({"name": step.tool, "arguments": arguments})


def messages_for(config: Config, task: str, tools: Sequence[Any], done: Sequence[Step]) -> list[dict[str, str]]:
    if config.prompt == "agent":
        system = agent_system_prompt(tools)
        style = "call"
    else:
        system = json_system_prompt(tools, short=config.prompt == "json_short")
        style = "json"
    tags = TAGS if style == "call" else None
    shots: list[dict[str, str]] = []
    if config.fewshot == "turns":
        shots = fewshot_messages(tools, style, tags)
        # the agent's own observation spelling, so the example looks like the real conversation
        shot_task = None
        for m in shots:
            if m["role"] == "user" and m["content"].startswith("Observation: "):
                m["content"] = observation(config, m["content"][len("Observation: "):], shot_task)
            elif m["role"] == "user":
                shot_task = m["content"].removeprefix("Task: ")
                m["content"] = m["content"].replace("Task: ", "Task:\n", 1)
    elif config.fewshot == "text":
        system += "\n\n" + fewshot_text(tools, style, tags)
    messages = [{"role": "system", "content": system}, *shots, {"role": "user", "content": f"Task:\n{task}"}]
    for step in done:
        messages.append({"role": "assistant", "content": render_step(config.prompt, step)})
        messages.append({"role": "user", "content": observation(config, repr(step.result), task)})
    return messages


def observation(config: Config, value_repr: str, task: str | None = None) -> str:
    """The agent's observation message (`Last value: ...`), with the nudge when the config asks."""
    text = f"Observation:\nLast value: {value_repr}"
    if config.nudge and config.restate and task:
        form = NUDGE["agent" if config.prompt == "agent" else "json"].split(" with it;")[0].split("reply ", 1)[1]
        text += (f'\nThe task is: "{task}" If {value_repr} is the answer to the whole task, reply {form}; '
                 "otherwise call the next tool.")
    elif config.nudge:
        text += "\n" + NUDGE["agent" if config.prompt == "agent" else "json"]
    return text


# -- scoring ----------------------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().lower() == b.strip().lower()
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    return a == b


def score(reply: str, step: Step, tools: Sequence[Any]) -> tuple[bool, bool, str]:
    """(valid: one allowed call, right: the expected call / a right answer, the call or the problem)."""
    by_name = {t.name: t for t in tools}
    try:
        code = fix_final_answer(parse_code(reply, tags=TAGS))
        calls = check_single_call(code, by_name)
    except (CodeParseError, ActionRefused) as exc:
        return False, False, type(exc).__name__
    if len(calls) != 1:
        return False, False, "several calls"
    got = calls[0]
    if got.name != step.tool:
        return True, False, got.source
    if got.name == "final_answer":
        value = got.args[0] if got.args else next(iter(dict(got.kwargs).values()), None)
        return True, bool(step.answer_ok and step.answer_ok(value)), got.source
    try:
        bound = by_name[got.name].signature.bind(*got.args, **dict(got.kwargs)).arguments
    except TypeError:
        return True, False, got.source
    right = set(bound) == set(step.arguments) and all(_same(bound[k], v) for k, v in step.arguments.items())
    return True, right, got.source


@dataclass
class Cell:
    config: str
    task: str
    step: int
    valid: bool
    right: bool
    got: str
    reply: str
    tokens: int
    seconds: float
    retried: bool = False  # the first reply repeated the previous call; this is the second try


def constraint_fields(config: Config, tools: Sequence[Any], refused: Step | None = None) -> dict[str, Any]:
    if config.constrain is None:
        return {}
    answer = SCALAR_ANSWER_SCHEMA if config.scalar_answer else None
    if config.prompt == "agent":  # the agent's own format: one Python call in <code> tags
        forbid = {refused.tool: refused.arguments} if refused is not None and config.norepeat else None
        return request_fields("grammar", grammar=single_call_grammar(tools, TAGS, answer_schema=answer,
                                                                      forbid=forbid))
    schema = single_call_schema(tools, answer_schema=answer)
    if config.constrain == "grammar":
        return request_fields("grammar", grammar=schema_to_gbnf(schema, use_llama_cpp=False))
    return request_fields(config.constrain, schema=schema)


REPEAT_LESSON = (  # SingleCallAgent's words when a call comes again unchanged
    "Observation:\nError: You made this exact call ({call}) in your previous step and its result is above; "
    "it was not run again. Try something different: another tool, other arguments, or final_answer(...) "
    "with what you know."
)


def ask(client: Any, config: Config, messages: list[dict[str, str]], fields: dict[str, Any],
        max_tokens: int) -> tuple[str, int, float]:
    known = {"response_format"}
    extra = {k: v for k, v in fields.items() if k not in known}
    t = time.perf_counter()
    response = client.chat.completions.create(
        model="smollm2", messages=messages, max_tokens=max_tokens, temperature=0, seed=7,
        stop=[TAGS[1], "\nObservation:", "\nTask:"],
        **{k: v for k, v in fields.items() if k in known}, **({"extra_body": extra} if extra else {}))
    seconds = time.perf_counter() - t
    reply = response.choices[0].message.content or ""
    if config.prompt == "agent" and TAGS[0] in reply and TAGS[1] not in reply:
        reply += TAGS[1]  # the stop sequence ate it, as in the agent
    return reply, (response.usage.total_tokens if response.usage else 0), seconds


def run_config(client: Any, config: Config, max_tokens: int, log: Callable[[str], None],
               retry_repeats: bool = False) -> list[Cell]:
    """Every step of every task once; with retry_repeats, a reply that repeats the previous call
    gets the agent's refusal and one more try (what the loop would do), scored separately."""
    cells = []
    for name, task, tools, steps in TASKS:
        fields = constraint_fields(config, tools)
        for i, step in enumerate(steps):
            messages = messages_for(config, task, tools, steps[:i])
            reply, tokens, seconds = ask(client, config, messages, fields, max_tokens)
            valid, right, got = score(reply, step, tools)
            retried = False
            previous = steps[i - 1] if i else None
            if retry_repeats and valid and previous is not None and _repeats(got, previous, tools):
                messages += [{"role": "assistant", "content": reply},
                             {"role": "user", "content": REPEAT_LESSON.format(call=got)}]
                retry_fields = constraint_fields(config, tools, refused=previous)
                reply, more, extra_s = ask(client, config, messages, retry_fields, max_tokens)
                tokens, seconds, retried = tokens + more, seconds + extra_s, True
                valid, right, got = score(reply, step, tools)
            cells.append(Cell(config.name, name, i, valid, right, got, reply, tokens, round(seconds, 2), retried))
            log(f"  {config.name:<24} {name:<12} step {i}: {'RIGHT' if right else ('valid' if valid else 'bad  ')} "
                f"{'(after refusal) ' if retried else ''}{got[:60]!r:<62} {seconds:.1f}s")
    return cells


def _repeats(got: str, previous: Step, tools: Sequence[Any]) -> bool:
    """True if the call `got` is the previous step's call again (same tool, same arguments)."""
    return score(f"{TAGS[0]}{got}{TAGS[1]}", previous, tools)[1]


# -- report ---------------------------------------------------------------------------------------


def table(cells: list[Cell], configs: list[str]) -> str:
    """Per task: right steps / steps. With --retry-repeats a step is right if its reply, or the reply
    after the agent refused a repeated call, was right; `1st try` counts only first replies."""
    tasks = [t[0] for t in TASKS]
    head = (f"{'config':<34}" + "".join(f"{t[:11]:>12}" for t in tasks)
            + f"{'solved':>8}{'steps ok':>10}{'1st try':>9}{'valid':>8}")
    lines = [head, "-" * len(head)]
    for c in configs:
        mine = [x for x in cells if x.config == c]
        if not mine:
            continue
        row = f"{c:<34}"
        solved = 0
        for t in tasks:
            steps = [x for x in mine if x.task == t]
            ok = sum(x.right for x in steps)
            solved += bool(steps) and ok == len(steps)
            row += f"{f'{ok}/{len(steps)}':>12}"
        right = sum(x.right for x in mine)
        first = sum(x.right and not x.retried for x in mine)
        valid = sum(x.valid for x in mine)
        row += (f"{f'{solved}/{len(tasks)}':>8}{f'{right}/{len(mine)}':>10}{f'{first}/{len(mine)}':>9}"
                f"{f'{valid}/{len(mine)}':>8}")
        lines.append(row)
    return "\n".join(lines)


def save(path: str | None, spellings: list[tuple[str, str]], cells: list[Cell]) -> None:
    if path:
        Path(path).write_text(json.dumps({"spellings": spellings, "cells": [asdict(c) for c in cells]},
                                         indent=1) + "\n")


def probe_spellings(client: Any) -> list[tuple[str, str]]:
    send = sdk_sender(client, "smollm2", max_tokens=40)
    out = []
    for spelling in ("json_schema", "json_object", "grammar", "guided_json", "guided_grammar"):
        result = probe_constraint(send, order=[spelling])
        out.append((spelling, "honoured" if result.spelling else result.rejected[0][1]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server-python", help="python of the venv with llama-cpp-python[server]")
    parser.add_argument("--model-file", help="the GGUF file")
    parser.add_argument("--configs", default=DEFAULT_CONFIGS, help=f"comma-separated, from: {DEFAULT_CONFIGS}")
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--json", dest="json_path")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--table-from", help="print the table of a saved --json file and exit")
    parser.add_argument("--retry-repeats", action="store_true",
                        help="a repeated call gets the agent's refusal and one more try")
    parser.add_argument("--skip-spellings", action="store_true")
    parser.add_argument("--log", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "constrained-probe-server.log"))
    args = parser.parse_args(argv)
    configs = [c for c in args.configs.split(",") if c]
    if args.table_from:
        saved = json.loads(Path(args.table_from).read_text())
        cells = [Cell(**c) for c in saved["cells"]]
        print(table(cells, list(dict.fromkeys(c.config for c in cells))))
        return 0
    if not (args.server_python and args.model_file):
        parser.error("--server-python and --model-file are required to measure")
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        parser.error(f"unknown configs {unknown}; known: {DEFAULT_CONFIGS}")

    import openai

    port = free_port()
    server = start_server(args.server_python, args.model_file, port, args.threads, args.n_ctx, Path(args.log))
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0, timeout=300)
    log = (lambda s: None) if args.quiet else (lambda s: print(s, flush=True))
    t0 = time.perf_counter()
    try:
        spellings = [] if args.skip_spellings else probe_spellings(client)
        for s, verdict in spellings:
            log(f"spelling {s:<15} {verdict}")
        cells: list[Cell] = []
        for c in configs:
            cells += run_config(client, CONFIGS[c], args.max_tokens, log, args.retry_repeats)
            save(args.json_path, spellings, cells)  # after each config: a long run keeps what it measured
    finally:
        stop_server(server)
    print(f"\nllama-cpp-python server, {Path(args.model_file).name}, {args.threads} threads, greedy, "
          f"{time.perf_counter() - t0:.0f}s")
    print("\nConstraint spellings:")
    for s, verdict in spellings:
        print(f"  {s:<15} {verdict}")
    print("\nRight steps per task (teacher-forced single calls); solved = every step right\n")
    print(table(cells, configs))
    save(args.json_path, spellings, cells)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
