"""How many ~10 kB replies per second `parse_code` handles, for each tier.

    .venv/bin/python benchmarks/parser_throughput.py [--seconds 0.5] [--baseline OTHER_CHECKOUT]

Each row times parse_code on one realistic reply of about 10 kB, and, side by side in the same
run, `ast.parse` of the code it returns: the executor must compile that code anyway, so the
ratio says how the parser compares with work that happens regardless. Target: ≥ 2,000 replies/s.

--baseline: another checkout of this repository (`git worktree add /tmp/before main`); its
`codeagent/parsing` is loaded beside this one, and each row also times it, interleaved with this
parser in the same process, in CPU time (other processes on a shared machine matter less), and
prints after/before. A row the baseline reads differently (a dialect it did not know) shows "-".
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codeagent.parsing import CodeParseError, fix_final_answer, parse_code  # noqa: E402

TARGET = 2_000

_REASONING = (
    "Let me think about which tools to call. The user wants the average temperature over the "
    "last week for three cities, so I should call get_weather for each one, keep the results in a "
    "dictionary and compute the mean. I could also write `x = get_weather('Paris')` first to see "
    "what the result looks like. "
)
_PROSE = (
    "The weather service returns a dictionary with the keys 'temp', 'humidity' and 'wind'. "
    "Temperatures are in degrees Celsius. I will average them per city and report the warmest. "
)


def _code_block(lines: int) -> str:
    out = ["import statistics", "", "cities = ['Paris', 'Tokyo', 'São Paulo', '北京']", "temps = {}"]
    for i in range(lines):
        out.append(f"reading_{i} = get_weather(city=cities[{i} % 4], day={i % 7})")
        out.append(f"temps.setdefault(cities[{i} % 4], []).append(reading_{i}['temp'])")
        if i % 5 == 0:
            out.append(f"if reading_{i}['wind'] > 40:\n    print('windy day', {i})")
    out.append("means = {city: statistics.mean(v) for city, v in temps.items()}")
    out.append("print(means)")
    out.append("final_answer(max(means, key=means.get))")
    return "\n".join(out)


def _fit(make, size: int = 10_000) -> str:
    """Grow `make(n)` until the reply is about `size` characters."""
    n = 1
    while len(make(n)) < size:
        n += 1
    return make(n)


REPLIES = {
    "1 tags (+ <think>)": _fit(
        lambda n: f"<think>\n{_REASONING * n}\n</think>\nThought: {_PROSE}\n<code>\n{_code_block(20)}\n</code>"
    ),
    "2 fence ```python": _fit(lambda n: f"{_PROSE * n}\n```python\n{_code_block(20)}\n```\nThat should work."),
    "2 bare fence ```": _fit(lambda n: f"{_PROSE * n}\n```\n{_code_block(20)}\n```\n"),
    "3 whole reply (code only)": _fit(lambda n: _code_block(n)),
    "4 JSON tool calls": _fit(
        lambda n: "\n".join(
            "<tool_call>\n"
            + json.dumps({"name": "get_weather", "arguments": {"city": "São Paulo", "day": i, "note": _PROSE}})
            + "\n</tool_call>"
            for i in range(n)
        )
    ),
    "4 bare JSON {\"tool\": ...}": _fit(
        lambda n: "I will call the tool for each day.\n" + "\n".join(
            json.dumps({"tool": "get_weather", "arguments": {"city": "São Paulo", "day": i, "note": _PROSE}})
            for i in range(n)
        )
    ),
    "5 prose (refused)": _fit(lambda n: (_PROSE + "The final answer is Tokyo. ") * n),
}


def _rate(fn, seconds: float) -> float:
    calls, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(10):
            fn()
        calls += 10
        now = time.perf_counter()
        if now >= deadline:
            return calls / (now - start)


def _rates(fns, seconds: float, rounds: int = 3) -> list[float]:
    """Best rate of each function over interleaved rounds: a busy machine slows all alike."""
    best = [0.0] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            best[i] = max(best[i], _rate(fn, seconds / rounds))
    return best


def _parse_or_refuse(reply: str, parse=parse_code, error=CodeParseError):
    try:
        return parse(reply)
    except error:
        return None


def _baseline(checkout: str):
    """(parse_code, CodeParseError) of another checkout's parser, loaded as its own package."""
    root = Path(checkout).resolve() / "codeagent" / "parsing"
    spec = importlib.util.spec_from_file_location("baseline_parsing", root / "__init__.py",
                                                  submodule_search_locations=[str(root)])
    if spec is None or spec.loader is None:
        raise SystemExit(f"--baseline: no codeagent/parsing under {checkout}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["baseline_parsing"] = module
    spec.loader.exec_module(module)
    return module.parse_code, module.CodeParseError


def _cpu_rates(fns, reply: str, seconds: float, rounds: int = 30) -> list[float]:
    """Best rate of each function over short interleaved bursts, in CPU time."""
    best = [0.0] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            calls, start = 0, time.process_time()
            while (now := time.process_time()) - start < seconds / rounds:
                fn(reply)
                calls += 1
            best[i] = max(best[i], calls / (now - start))
    return best


def _compare(baseline: str, seconds: float) -> None:
    parse, error = _baseline(baseline)
    print(f"\nside by side with {baseline} (CPU time, interleaved)")
    print(f"{'tier':<28}{'before/s':>10}{'after/s':>10}{'after/before':>14}")
    for name, reply in REPLIES.items():
        old = _parse_or_refuse(reply, parse, error)
        new = _parse_or_refuse(reply)
        if old != new:
            print(f"{name:<28}{'-':>10}{'':>10}{'-':>14}  (the baseline reads it differently)")
            continue
        before, after = _cpu_rates([lambda r: _parse_or_refuse(r, parse, error), _parse_or_refuse], reply, seconds * 2)
        print(f"{name:<28}{before:>10,.0f}{after:>10,.0f}{after / before:>13.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="time spent per measurement")
    parser.add_argument("--baseline", metavar="CHECKOUT", help="another checkout whose parser to time beside this one")
    args = parser.parse_args()

    print(f"{'tier':<28}{'reply':>8}{'code':>8}{'parse_code/s':>14}{'ast.parse/s':>13}{'ratio':>8}")
    worst = float("inf")
    for name, reply in REPLIES.items():
        code = _parse_or_refuse(reply)
        if code:
            ours, theirs = _rates(
                [lambda r=reply: _parse_or_refuse(r), lambda c=code: ast.parse(c)], args.seconds
            )
            base, ratio = f"{theirs:>13,.0f}", f"{ours / theirs:>7.2f}x"
        else:
            (ours,) = _rates([lambda r=reply: _parse_or_refuse(r)], args.seconds)
            base, ratio = f"{'-':>13}", f"{'-':>8}"
        worst = min(worst, ours)
        print(f"{name:<28}{len(reply):>8,}{len(code or ''):>8,}{ours:>14,.0f}{base}{ratio}")

    shadowing = "final_answer = compute()\n" + REPLIES["3 whole reply (code only)"]
    clean = REPLIES["3 whole reply (code only)"].replace("final_answer(", "print(")
    print()
    print(f"{'fix_final_answer':<28}{'code':>8}{'calls/s':>14}")
    print(f"{'  no final_answer at all':<28}{len(clean):>8,}{_rate(lambda: fix_final_answer(clean), args.seconds):>14,.0f}")
    print(f"{'  calls final_answer only':<28}{len(shadowing) - 25:>8,}"
          f"{_rate(lambda: fix_final_answer(shadowing[25:]), args.seconds):>14,.0f}")
    print(f"{'  shadows it (renames)':<28}{len(shadowing):>8,}"
          f"{_rate(lambda: fix_final_answer(shadowing), args.seconds):>14,.0f}")
    print()
    print(f"slowest tier: {worst:,.0f} replies/s (target {TARGET:,})"
          " — ratio > 1 means parse_code costs less than compiling the code it returns")
    if args.baseline:
        _compare(args.baseline, args.seconds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
