"""Many runs at once: 100 concurrent CodeAgent runs in one event loop (`arun`), side by side with
the same 100 runs through the sync API on a thread pool (`run`), against a fake model server.

The server (a subprocess: an asyncio HTTP/1.1 server speaking the chat-completions protocol) answers
every request after 50 ms, as a fast model would, with the step's action: each run takes 3 steps
(a tool call, a computation, the final answer). The runs use `OpenAIModel` and execute on a pool
of warm `SubprocessExecutor` workers (the default executor: restricted, kernel-confined), one per
run for its whole run. Each phase runs in a process of its own, so its peak threads and RSS (the
host's: the workers are processes of their own) are its own:

  one run      a single run alone in the loop: the floor (3 x 50 ms of model latency + the rest)
  async        N runs at once in one event loop (`asyncio.gather(*(agent.arun(...)))`); the model's
               async requests take its light HTTP path (a plain http:// endpoint)
  one-sdk, async-sdk   the same through the `openai` SDK's async client (`model.light_http = False`)
  threads      the same N runs through the sync API (the SDK's client), each on a thread of a pool of N

    .venv/bin/python benchmarks/async_runs.py [--runs 100] [--latency-ms 50] [--reps 3] [--json]

Target (issue 45): the async wall time is at most 3x one run's. Reps are interleaved phase by phase;
medians are shown. This machine has 2 cores shared with other work: read the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STEPS = ["x = lookup('abc')\nprint(x)", "y = x * 14\nprint(y)", "final_answer(y)"]
ANSWER = 42


# -- the fake model server (its own process) ------------------------------------------------------


async def _serve(port_file: str, latency_s: float) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                if not await reader.readline():
                    break
                length = 0
                while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = line.decode("latin-1").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                body = json.loads(await reader.readexactly(length))
                step = sum(1 for m in body["messages"] if m.get("role") == "assistant")
                await asyncio.sleep(latency_s)
                text = f"Thought: step {step + 1}.\n<code>\n{STEPS[min(step, len(STEPS) - 1)]}\n</code>"
                data = json.dumps({
                    "id": "bench", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
                }).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(data)).encode() + b"\r\n\r\n" + data)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    Path(port_file).write_text(str(server.sockets[0].getsockname()[1]))
    async with server:
        await server.serve_forever()


# -- the phases (each its own process) ------------------------------------------------------------


class Peak:
    """The most threads this process had, sampled every 2 ms while a phase runs."""

    def __init__(self) -> None:
        self.threads = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.002):
            self.threads = max(self.threads, threading.active_count() - 1)  # (not this sampler)

    def cpu(self) -> float:
        """This sampler's own CPU so far (not to be counted as the runs')."""
        return time.clock_gettime(time.pthread_getcpuclockid(self._thread.ident))

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _setup(base_url: str, n: int, kind: str) -> tuple[Any, Any, Any]:
    """The model, the tool and a started pool. The tool is what each API calls natively: a
    coroutine function for the async runs (awaited on their loop), a plain one for the threads."""
    from codeagent import OpenAIModel, tool
    from executors.process import SubprocessExecutor

    if kind == "threads":
        def lookup(key: str) -> int:
            """A number for a key."""
            return len(key)
    else:
        async def lookup(key: str) -> int:  # type: ignore[misc]
            """A number for a key."""
            return len(key)

    model = OpenAIModel("bench", base_url=base_url, api_key="k", max_retries=0)
    model.light_http = not kind.endswith("sdk")
    pool = SubprocessExecutor.pool(n, tools={"lookup": lookup}).start()
    return model, tool(lookup), pool


def _agent(model: Any, lookup: Any, executor: Any) -> Any:
    from codeagent import CodeAgent

    return CodeAgent(model, tools=[lookup], executor=executor, max_steps=5)


def _refilled(pool: Any, n: int) -> None:
    """Wait until the warm-up run's worker has been replaced (fresh workers: the used one is
    destroyed and a new one started in the background), so no phase times that start."""
    end = time.monotonic() + 30
    while pool.ready < n and time.monotonic() < end:
        time.sleep(0.01)
    time.sleep(0.2)  # (the used worker's removal follows its replacement's start)


def phase(kind: str, base_url: str, n: int) -> dict[str, Any]:
    model, lookup, pool = _setup(base_url, n, kind)
    try:
        if kind == "threads":
            def one(i: int) -> Any:
                with pool.acquire() as ex:
                    return _agent(model, lookup, ex).run(f"task {i}")

            with Peak() as peak, ThreadPoolExecutor(max_workers=n) as threads:
                one(-1)  # warm: the client's connection
                _refilled(pool, n)
                t0, c0 = time.perf_counter(), time.process_time() - peak.cpu()
                results = list(threads.map(one, range(n)))
                wall, cpu = time.perf_counter() - t0, time.process_time() - peak.cpu() - c0
        else:
            async def one_async(i: int) -> Any:
                async with pool.aacquire() as ex:
                    return await _agent(model, lookup, ex).arun(f"task {i}")

            async def main() -> list[Any]:
                await one_async(-1)  # warm: the loop's async client and connection
                end = time.monotonic() + 30  # (as _refilled, without a thread)
                while pool.ready < n and time.monotonic() < end:
                    await asyncio.sleep(0.01)
                await asyncio.sleep(0.2)
                t0, c0 = time.perf_counter(), time.process_time() - peak.cpu()
                out = await asyncio.gather(*(one_async(i) for i in range(n)))
                return [time.perf_counter() - t0, time.process_time() - peak.cpu() - c0, *out]

            with Peak() as peak:
                wall, cpu, *results = asyncio.run(main())
    finally:
        pool.close()
    ok = sum(r.status == "success" and r.output == ANSWER for r in results)
    return {"wall_s": wall, "cpu_ms_per_run": cpu * 1000 / n, "ok": ok, "runs": n, "peak_threads": peak.threads,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _run_phase(kind: str, base_url: str, n: int) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--phase", kind, "--base-url", base_url, "--runs", str(n)],
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"phase {kind} failed: {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(_serve(args.serve, args.latency_ms / 1000))
        return 0
    if args.phase:
        n = 1 if args.phase.startswith("one") else args.runs
        print(json.dumps(phase(args.phase.replace("one", "async"), args.base_url, n)))
        return 0
    port_file = Path(f"/tmp/codeagent-async-bench-{os.getpid()}.port")
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port_file), "--latency-ms", str(args.latency_ms)])
    try:
        while not port_file.exists() or not port_file.read_text():
            time.sleep(0.05)
        base_url = f"http://127.0.0.1:{port_file.read_text()}/v1"
        rows: dict[str, list[dict[str, Any]]] = {kind: [] for kind in ("one", "async", "one-sdk", "async-sdk", "threads")}
        for _ in range(args.reps):
            for kind in rows:
                rows[kind].append(_run_phase(kind, base_url, args.runs))
    finally:
        server.kill()
        server.wait()
        port_file.unlink(missing_ok=True)
    med = {kind: {key: statistics.median(r[key] for r in runs) for key in runs[0]} for kind, runs in rows.items()}
    if args.json:
        print(json.dumps({"median": med, "reps": rows}))
        return 0
    print(f"{args.runs} runs x 3 steps, model latency {args.latency_ms:g} ms, SubprocessExecutor pool; "
          f"medians of {args.reps} (interleaved)")
    print(f"{'phase':<32}{'wall':>9}{'vs one run':>12}{'CPU/run':>10}{'answered':>10}{'peak threads':>14}"
          f"{'peak RSS':>11}")
    for kind, label in (("one", "one run alone (arun)"), ("async", f"{args.runs} x arun, one loop"),
                        ("one-sdk", "one run alone, SDK"), ("async-sdk", f"{args.runs} x arun, one loop, SDK"),
                        ("threads", f"{args.runs} x run, {args.runs} threads")):
        m = med[kind]
        floor = med["one-sdk" if kind == "async-sdk" else "one"]["wall_s"]
        print(f"{label:<32}{m['wall_s'] * 1000:>7.0f}ms{m['wall_s'] / floor:>11.2f}x{m['cpu_ms_per_run']:>8.1f}ms"
              f"{int(m['ok']):>6}/{int(m['runs']):<3}"
              f"{int(m['peak_threads']):>14}{m['peak_rss_mb']:>8.0f} MB")
    print(f"async vs threads: wall {med['async']['wall_s'] / med['threads']['wall_s']:.2f}x, "
          f"threads {med['async']['peak_threads']:.0f} vs {med['threads']['peak_threads']:.0f}; "
          f"light HTTP vs SDK (async): wall {med['async']['wall_s'] / med['async-sdk']['wall_s']:.2f}x, "
          f"CPU {med['async']['cpu_ms_per_run'] / med['async-sdk']['cpu_ms_per_run']:.2f}x. "
          "Target: async wall <= 3x one run's (vs one run: the one-run row of the same client).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
