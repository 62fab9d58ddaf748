"""What MCP costs, both ways, measured side by side in one run (medians of interleaved reps).

1. A tool call from model code: the same `add(i, 1)` loop calling a local `@tool` vs the same tool
   of an MCP server over stdio (tests/mcp_servers/toy_server.py), per executor; per-call time and
   the ratio MCP / local.
2. `run_python` over MCP stdio (the official client against `codeagent mcp-serve`, subprocess
   executor) vs a direct `execute` of the same code in a SubprocessExecutor: per call, and ratio.

    .venv/bin/python benchmarks/mcp_roundtrip.py [--reps 7] [--calls 50]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from codeagent import tool  # noqa: E402
from codeagent.mcp import MCPTools  # noqa: E402
from executors import LocalExecutor, SubprocessExecutor  # noqa: E402

TOY = str(ROOT / "tests" / "mcp_servers" / "toy_server.py")
CODE = "x = sum(i * i for i in range(1000))\nprint(x)\nx"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def per_call(executor, calls: int) -> float:
    t0 = time.perf_counter()
    result = executor.execute(f"for i in range({calls}):\n    add(i, 1)")
    assert result.error is None, result.error
    return (time.perf_counter() - t0) / calls


def tool_calls(reps: int, calls: int) -> None:
    print(f"1. a tool call from model code ({calls} calls a rep, median of {reps} reps)")
    print(f"   {'executor':<24}{'local tool':>12}{'MCP tool':>12}{'MCP / local':>13}")
    with MCPTools(command=sys.executable, args=[TOY]) as toolset:
        remote = {t.name: t for t in toolset.tools}["add"]
        for label, make in (("LocalExecutor", LocalExecutor), ("SubprocessExecutor", SubprocessExecutor)):
            with make(tools={"add": add}) as local, make(tools={"add": remote}) as mcp:
                per_call(local, 5), per_call(mcp, 5)  # warm both
                times: dict[str, list[float]] = {"local": [], "mcp": []}
                for _ in range(reps):
                    times["local"].append(per_call(local, calls))
                    times["mcp"].append(per_call(mcp, calls))
            a, b = statistics.median(times["local"]), statistics.median(times["mcp"])
            print(f"   {label:<24}{a * 1e3:>9.3f} ms{b * 1e3:>9.3f} ms{b / a:>12.1f}×")


def run_python(reps: int, calls: int) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    print(f"\n2. run_python over MCP stdio vs a direct execute ({calls} calls a rep, median of {reps} reps)")
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeagent", "mcp-serve"], cwd=str(ROOT))
    direct_times: list[float] = []
    mcp_times: list[float] = []

    async def main() -> None:
        async with Client(params) as client:
            with SubprocessExecutor() as direct:
                direct.execute(CODE)
                await client.call_tool("run_python", {"code": CODE})  # the session's executor starts
                for _ in range(reps):
                    t0 = time.perf_counter()
                    for _ in range(calls):
                        direct.execute(CODE)
                    direct_times.append((time.perf_counter() - t0) / calls)
                    t0 = time.perf_counter()
                    for _ in range(calls):
                        result = await client.call_tool("run_python", {"code": CODE})
                        assert not result.is_error, result
                    mcp_times.append((time.perf_counter() - t0) / calls)

    anyio.run(main)
    a, b = statistics.median(direct_times), statistics.median(mcp_times)
    print(f"   direct execute {a * 1e3:.2f} ms · run_python over MCP {b * 1e3:.2f} ms · "
          f"MCP / direct {b / a:.1f}× (+{(b - a) * 1e3:.2f} ms a call)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    tool_calls(args.reps, args.calls)
    run_python(args.reps, args.calls)


if __name__ == "__main__":
    main()
