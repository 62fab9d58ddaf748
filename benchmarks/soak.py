"""Serving soak: many concurrent sessions of mixed steps for minutes; nothing leaks, nothing crosses.

    .venv/bin/python benchmarks/soak.py [--target mcp|pool] [--sessions 200] [--seconds 600]
                                        [--pool 16] [--json]

  --target mcp   `codeagent mcp-serve --transport http --pool N` as a real subprocess, driven by
                 the official `mcp` client: --sessions clients at once, each opening a session,
                 running 3-8 steps and ending it, again and again until --seconds
  --target pool  what a batch runner does in process: --sessions threads sharing
                 `SubprocessExecutor.pool(N)`, one session per acquire(), with host tool calls

Steps, drawn per session from a seeded generator: data (a computation whose answer carries the
session's own token), state (a variable set in one step and read in the next: only this
session's value may come back), a tool call (pool target), an error (1/0), a timeout (the step
runs past the limit: the worker is killed and replaced), a kill (mcp: the client abandons its
session mid-step; pool: the worker is SIGKILLed from outside mid-step).

Checks (all printed; `--json` for the figures):
  lost      a step that got no answer, or one that was not the answer its kind must give
  crossed   an answer carrying another session's token
  RSS       the serving process's resident memory sampled every second: its growth from the
            first samples after warm-up (the first quarter) to the last ones (goal: <= 10%)
  leftovers after every session ended and the server (or pool) closed: worker processes still
            running, workdirs left in the server's TMPDIR
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KINDS = (("data", 40), ("state", 20), ("tool", 10), ("error", 12), ("timeout", 6), ("kill", 4),
         ("variables", 8))
TIMEOUT_S = 2.0
IDLE_S = 20.0  # mcp: a session whose client walked away is closed after this long


class Tally:
    """What the sessions saw, from any thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.problems: dict[str, int] = {}  # by category
        self.examples: list[str] = []

    def ok(self, kind: str) -> None:
        with self.lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1

    def bad(self, category: str, what: str) -> None:
        """category: "lost: <kind>" or "crossed: <kind>"; what: an example (three per category)."""
        with self.lock:
            self.problems[category] = self.problems.get(category, 0) + 1
            if self.problems[category] <= 3:
                self.examples.append(f"{category}: {what}")

    def lost(self) -> int:
        return sum(n for k, n in self.problems.items() if not k.startswith("crossed"))

    def crossed(self) -> int:
        return sum(n for k, n in self.problems.items() if k.startswith("crossed"))


def step_code(kind: str, token: str, rng: random.Random) -> tuple[str, str | None]:
    """(the code, the text its answer must contain; None: an error must come back instead)."""
    n = rng.randrange(1000, 50_000)
    if kind == "data":
        return (f"rows = [(i, i * i % 97) for i in range({n})]\n"
                f"f'{token}:' + str(sum(v for _, v in rows))",
                f"{token}:{sum(i * i % 97 for i in range(n))}")
    if kind == "state":
        return f"mine = '{token}'\nmine", token
    if kind == "tool":
        return f"echo('{token}')", f"echo:{token}"
    if kind == "error":
        return "1 / 0", None
    if kind in ("timeout", "kill"):
        return "while True:\n    pass", None
    return "sorted(k for k in ('a', 'b'))", "a"


def check(tally: Tally, kind: str, token: str, text: str, failed: bool, expected: str | None) -> None:
    if _foreign_token(text, token):
        tally.bad(f"crossed: {kind}", f"{kind} of {token} answered {text[:200]!r}")
    elif expected is None:
        want = {"error": "ZeroDivisionError", "timeout": "TimeoutError"}.get(kind, "")
        if failed and want in text:
            tally.ok(kind)
        elif kind == "error" and failed and "TimeoutError" in text:
            tally.ok(f"{kind} (timed out under load)")  # (as below: 1/0 that ran past the limit)
        else:
            tally.bad(f"lost: {kind}", f"{kind} of {token} answered {text[:200]!r}")
    elif not failed and expected in text:
        tally.ok(kind)
    elif failed and "TimeoutError" in text:
        # the limit is wall-clock time: on an overloaded machine an ordinary step can run past
        # it; the answer came, and it is this session's (the step is counted apart)
        tally.ok(f"{kind} (timed out under load)")
    else:
        tally.bad(f"lost: {kind}", f"{kind} of {token} answered {text[:200]!r}")


def _foreign_token(text: str, token: str) -> bool:
    """Another session's token (tokens are `sN-M-K`: session N) in an answer of `token`'s."""
    mine = token.split("-")[0]
    for word in text.replace(":", " ").replace("'", " ").replace('"', " ").split():
        if word.startswith("s") and word.count("-") == 2 and word.split("-")[0] != mine \
                and word.split("-")[0][1:].isdigit():
            return True
    return False


def draw(rng: random.Random, target: str) -> str:
    kinds = [(k, w) for k, w in KINDS if not (k == "tool" and target == "mcp")]
    return rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]


# -- sampling -------------------------------------------------------------------------------------
def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def descendants(pid: int) -> set[int]:
    found: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            kids = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        except OSError:
            continue
        for kid in map(int, kids):
            found |= {kid} | descendants(kid)
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.rss, self.seen = pid, [], set()
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(1.0):
            try:
                self.rss.append(rss_kib(self.pid))
                self.seen |= descendants(self.pid)
            except OSError:
                return


def rss_figures(samples: list[int]) -> dict[str, float]:
    if len(samples) < 8:
        return {"samples": len(samples)}
    after = samples[len(samples) // 4:]
    k = max(2, len(after) // 10)
    first, last = statistics.median(after[:k]), statistics.median(after[-k:])
    step = max(1, len(samples) // 40)
    return {"samples": len(samples), "after_warmup_mib": first / 1024, "end_mib": last / 1024,
            "growth": last / first - 1, "max_over_first": max(after) / first - 1,
            "series_mib": [round(v / 1024, 1) for v in samples[::step]]}


# -- the pool target (a batch runner's shape) ------------------------------------------------------
def soak_pool(sessions: int, seconds: float, pool_size: int, seed: int) -> dict:
    from executors import Limits, SubprocessExecutor

    tmp = Path(tempfile.mkdtemp(prefix="codeagent-soak-"))
    old_tmp = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(tmp)
    tempfile.tempdir = None  # workdirs are made under the new TMPDIR
    tally, sampler = Tally(), Sampler(os.getpid())
    sampler.start()
    deadline = time.monotonic() + seconds
    try:
        with SubprocessExecutor.pool(pool_size, tools={"echo": lambda s: f"echo:{s}"},
                                     limits=Limits(timeout_s=TIMEOUT_S)) as pool:
            threads = [threading.Thread(target=_pool_session_loop, args=(pool, i, seed, deadline, tally))
                       for i in range(sessions)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        sampler.stop.set()
        sampler.join()
        # the zygote is kept for the host's life by design (it dies with the host): not a leftover
        leftovers = _wait_gone({p for p in sampler.seen - {os.getpid()} if not _is_zygote(p)})
        files = sorted(str(p) for p in tmp.iterdir())
    finally:
        if old_tmp is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = old_tmp
        tempfile.tempdir = None
        shutil.rmtree(tmp, ignore_errors=True)
    return _report("pool", tally, sampler.rss, leftovers, files, len(sampler.seen))


def _pool_session_loop(pool, i: int, seed: int, deadline: float, tally: Tally) -> None:
    rng = random.Random(seed * 100_003 + i)
    number = 0
    while time.monotonic() < deadline:
        number += 1
        with pool.acquire() as ex:
            for j in range(rng.randrange(3, 9)):
                token = f"s{i}-{number}-{j}"
                kind = draw(rng, "pool")
                code, expected = step_code(kind, token, rng)
                killer = None
                if kind == "kill":
                    pid = ex._link.handle.proc.pid if ex._link.handle else None
                    killer = threading.Timer(0.3, _kill, args=(pid,))
                    killer.start()
                r = ex.execute(code)
                if killer is not None:
                    killer.join()
                text = r.logs + " " + (f"{r.error.type}: {r.error.message}" if r.error else repr(r.output))
                if kind == "kill":  # killed mid-step: an error, and the session goes on
                    if r.error is not None:
                        tally.ok("kill")
                    else:
                        tally.bad("lost: kill", f"kill of {token} answered {text[:200]!r}")
                    continue
                check(tally, kind, token, text, r.error is not None, expected)


def _is_zygote(pid: int) -> bool:
    try:
        return b"worker.zygote" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _kill(pid: int | None) -> None:
    if pid is not None:
        try:
            os.kill(pid, 9)
        except OSError:
            pass


def _wait_gone(pids: set[int], wait_s: float = 30.0) -> list[int]:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.2)
    return sorted(p for p in pids if alive(p))


def _report(target: str, tally: Tally, rss: list[int], leftovers: list[int], files: list[str],
            workers_seen: int) -> dict:
    return {"target": target, "steps": dict(sorted(tally.counts.items())),
            "answered": sum(tally.counts.values()), "lost": tally.lost(), "crossed": tally.crossed(),
            "problems": tally.problems, "examples": tally.examples, "rss": rss_figures(rss),
            "processes_seen": workers_seen, "left_running": leftovers, "left_files": files}


# -- the mcp target: `codeagent mcp-serve` over streamable HTTP ---------------------------------------
def soak_mcp(sessions: int, seconds: float, pool_size: int, seed: int, idle_s: float = IDLE_S) -> dict:
    import anyio

    tmp = Path(tempfile.mkdtemp(prefix="codeagent-soak-"))
    server = subprocess.Popen(
        [sys.executable, "-m", "codeagent", "mcp-serve", "--transport", "http", "--port", "0",
         "--pool", str(pool_size), "--timeout", str(TIMEOUT_S), "--idle-timeout", str(idle_s)],
        cwd=ROOT, env={**os.environ, "TMPDIR": str(tmp)}, stderr=subprocess.PIPE, text=True)
    tally, sampler = Tally(), Sampler(server.pid)
    try:
        url = _listening(server)
        sampler.start()
        deadline = time.monotonic() + seconds

        ramp = min(20.0, seconds / 10) / sessions  # clients arrive over the first seconds

        async def main() -> None:
            async with anyio.create_task_group() as group:
                for i in range(sessions):
                    group.start_soon(_mcp_session_loop, url, i, seed, deadline, tally)
                    await anyio.sleep(ramp)

        anyio.run(main)
        time.sleep(idle_s * 1.5 + 2)  # abandoned sessions reaped (idle, then the reaper's round)
        idle = len(descendants(server.pid))
    finally:
        sampler.stop.set()
        server.terminate()
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server.stderr.close()
    leftovers = _wait_gone(sampler.seen)
    files = sorted(str(p) for p in tmp.iterdir())
    shutil.rmtree(tmp, ignore_errors=True)
    report = _report("mcp", tally, sampler.rss, leftovers, files, len(sampler.seen))
    report["processes_when_idle"] = idle  # the zygote and the pool's ready workers (3 each)
    return report


def _listening(proc: subprocess.Popen) -> str:
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "listening on" in line:
            threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep it drained
            return line.split("listening on ")[1].split()[0]
    raise RuntimeError(f"mcp-serve did not start: {''.join(lines)}")


async def _mcp_session_loop(url: str, i: int, seed: int, deadline: float, tally: Tally) -> None:
    import anyio
    from mcp import Client

    rng = random.Random(seed * 100_003 + i)
    number = 0
    while time.monotonic() < deadline:
        number += 1
        walked_away = False
        try:
            async with Client(url) as client:
                for j in range(rng.randrange(3, 9)):
                    token = f"s{i}-{number}-{j}"
                    kind = draw(rng, "mcp")
                    code, expected = step_code(kind, token, rng)
                    if kind == "kill":  # the client walks away mid-step; the server cleans up
                        with anyio.move_on_after(0.3):
                            await client.call_tool("run_python", {"code": code})
                        tally.ok("kill")
                        walked_away = True
                        break
                    if kind == "variables":
                        result = await client.call_tool("list_variables", {})
                        expected = ""
                    else:
                        result = await client.call_tool("run_python", {"code": code})
                    text = " ".join(getattr(c, "text", "") for c in result.content)
                    check(tally, kind, token, text, bool(result.is_error), expected)
        except Exception as exc:  # noqa: BLE001 - a session that broke is a lost answer
            if walked_away:  # the client's own streams, cancelled mid-call, break as it leaves
                continue
            while getattr(exc, "exceptions", None):  # the error inside anyio's groups
                exc = exc.exceptions[0]
            tally.bad(f"lost: session broke ({type(exc).__name__})",
                      f"session {i}/{number}: {type(exc).__name__}: {str(exc)[:200]}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", choices=("mcp", "pool"), default="mcp")
    p.add_argument("--sessions", type=int, default=200)
    p.add_argument("--seconds", type=float, default=600)
    p.add_argument("--pool", type=int, default=16, help="ready workers kept by the pool")
    p.add_argument("--seed", type=int, default=48)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    run = soak_mcp if args.target == "mcp" else soak_pool
    report = run(args.sessions, args.seconds, args.pool, args.seed)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for key, value in report.items():
            print(f"{key:<20} {value}")
    ok = not (report["lost"] or report["crossed"] or report["left_running"] or report["left_files"])
    ok = ok and report["rss"].get("growth", 0) <= 0.10
    print("soak:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
