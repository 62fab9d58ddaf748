"""Runs the raw-memory and registry corpus (tests/raw_memory_escapes.py) and judges each case.

    run_cases(mode, cases) -> [Verdict]

`mode` is "plain" (CPython, no sandbox: proves each case really escapes or crashes), "local"
(LocalExecutor) or "subprocess" (SubprocessExecutor). A runner process (this file, --runner)
imports the libraries once, then forks a child per case, two at a time. The child is the host:
it holds a secret (a bytes object), a target (another bytes object) and math.pi at known
addresses, fills them into the case's {PLACEHOLDERS}, evaluates the case's probe (plain host
code) before and after the step, and reports. The runner records how the child ended: a child
killed by a signal is a crashed host. Verdicts:
  crashed   the host died by a signal (SIGSEGV, SIGABRT, ...)
  read      the secret showed in the step's logs, output or error
  wrote     the target or math.pi changed
  tampered  the probe gave a different value after the step (a registry or hook outlived it,
            or host code failed after it)
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CASE_TIMEOUT_S = 90.0
STEP_TIMEOUT_S = 30.0
PI = math.pi


@dataclass(frozen=True)
class Verdict:
    id: str
    escaped: bool
    how: str  # crashed / read / wrote / tampered / "" (held)
    error: str = ""  # the step's error (type: message), when it had one
    detail: str = ""


def run_cases(mode: str, cases: list[Any], *, jobs: int = 2) -> list[Verdict]:
    specs = [{"id": c.id, "code": c.code, "imports": list(c.imports), "probe": c.probe,
              "mode": mode} for c in cases]
    env = dict(os.environ, MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONDONTWRITEBYTECODE="1", POLARS_MAX_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(HERE)] + [
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--runner", str(jobs)],
                          input=json.dumps(specs), env=env, capture_output=True, text=True,
                          timeout=60 + CASE_TIMEOUT_S * len(specs) / jobs)
    results = {r["id"]: r for r in map(json.loads, proc.stdout.splitlines()) if r.get("id")}
    return [_judge(c, results.get(c.id), proc.stderr) for c in cases]


def _judge(case: Any, r: dict | None, stderr: str) -> Verdict:
    if r is None:
        return Verdict(case.id, True, "crashed", detail=f"no result; runner stderr: {stderr[-300:]}")
    error = r.get("error") or ""
    if r.get("signal"):
        return Verdict(case.id, True, "crashed", error, f"host killed by signal {r['signal']}")
    if r.get("timeout"):
        return Verdict(case.id, True, "crashed", error, "host hung past the case's time limit")
    seen = " ".join(str(r.get(k) or "") for k in ("logs", "output", "error"))
    if r["token"] in seen:
        return Verdict(case.id, True, "read", error, "the host's secret showed in the step")
    if r.get("target") != r.get("target_expected") or r.get("pi") != PI:
        return Verdict(case.id, True, "wrote", error,
                       f"host memory changed: target={r.get('target')!r} pi={r.get('pi')!r}")
    if r.get("host_error") or r.get("probe_before") != r.get("probe_after"):
        return Verdict(case.id, True, "tampered", error,
                       f"probe {r.get('probe_before')!r} -> {r.get('probe_after')!r}; "
                       f"{r.get('host_error') or ''}")
    return Verdict(case.id, False, "", error, "held")


# --------------------------------------------------------------------------- the runner side
def _probe(probe: str) -> str:
    if not probe:
        return ""
    try:
        return repr(eval(probe, {"__name__": "probe"}))  # noqa: S307 - the corpus's own host code
    except BaseException as exc:  # noqa: BLE001 - a probe that fails is a changed host
        return f"<probe raised {type(exc).__name__}: {str(exc)[:200]}>"


def _plain(code: str) -> dict:
    """CPython with no sandbox: the value of a last expression statement is the output."""
    import ast
    import contextlib
    import io

    logs = io.StringIO()
    ns: dict[str, Any] = {"__name__": "__main__"}
    try:
        tree = ast.parse(code)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        with contextlib.redirect_stdout(logs):
            exec(compile(tree, "<case>", "exec", dont_inherit=True), ns)  # noqa: S102
            value = eval(compile(ast.Expression(last.value), "<case>", "eval",  # noqa: S307
                                 dont_inherit=True), ns) if last else None
        return {"logs": logs.getvalue(), "output": repr(value)[:5000]}
    except BaseException as exc:  # noqa: BLE001 - what the case raised is its result
        return {"logs": logs.getvalue(), "error": f"{type(exc).__name__}: {str(exc)[:2000]}"}


def _step(mode: str, code: str, imports: list[str]) -> dict:
    from executors import Limits, LocalExecutor, SubprocessExecutor

    limits = Limits(timeout_s=STEP_TIMEOUT_S)
    make = LocalExecutor if mode == "local" else SubprocessExecutor
    with make(authorized_imports=imports, limits=limits) as ex:
        r = ex.execute(code)
    error = "" if r.error is None else f"{r.error.type}: {r.error.message}"
    return {"logs": r.logs, "output": r.output_repr or "", "error": error}


def _case(spec: dict, out: int) -> None:
    token = "hostsecret" + secrets.token_hex(8)
    secret = token.encode()  # (bytes: the data sits 32 bytes into the object)
    target = ("TARGET" + secrets.token_hex(8)).encode()
    expected = target.decode()
    code = spec["code"]
    for key, value in {"SECRET_ADDR": id(secret) + 32, "SECRET_LEN": len(secret),
                       "TARGET_ADDR": id(target) + 32, "TARGET_LEN": len(target),
                       "PI_ADDR": id(math.pi) + 16}.items():
        code = code.replace("{" + key + "}", str(value))
    result: dict[str, Any] = {"id": spec["id"], "token": token, "target_expected": expected}
    os.chdir(spec["dir"])  # (the runner removes it, whatever became of this process)
    try:
        result["probe_before"] = _probe(spec["probe"])
        if spec["mode"] == "plain":
            result.update(_plain(code))
        else:
            result.update(_step(spec["mode"], code, spec["imports"]))
    except BaseException as exc:  # noqa: BLE001 - execute() itself failed: host code broke
        result["host_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    result["probe_after"] = _probe(spec["probe"])
    result["target"] = target.decode(errors="replace")
    result["pi"] = math.pi
    os.write(out, (json.dumps(result, default=repr) + "\n").encode())


def _runner(jobs: int) -> int:
    specs = json.loads(sys.stdin.read())
    import numpy  # noqa: F401 - once, before the forks
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401

    import executors.local  # noqa: F401
    import executors.process  # noqa: F401

    pending, running = list(reversed(specs)), {}
    while pending or running:
        while pending and len(running) < jobs:
            spec = {**pending.pop(), "dir": tempfile.mkdtemp(prefix="raw-memory-case-")}
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read)
                try:
                    _case(spec, write)
                finally:
                    os._exit(0)
            os.close(write)
            running[pid] = (spec, read, time.monotonic() + CASE_TIMEOUT_S, [])
        _collect(running)
    return 0


def _collect(running: dict) -> None:
    for pid, (spec, read, deadline, chunks) in list(running.items()):
        os.set_blocking(read, False)
        try:
            while chunk := os.read(read, 1 << 16):
                chunks.append(chunk)
        except BlockingIOError:
            pass
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == 0 and time.monotonic() < deadline:
            continue
        extra: dict[str, Any] = {}
        if done == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            extra["timeout"] = True
        elif os.WIFSIGNALED(status):
            extra["signal"] = signal.Signals(os.WTERMSIG(status)).name
        os.close(read)
        shutil.rmtree(spec["dir"], ignore_errors=True)
        del running[pid]
        lines = b"".join(chunks).decode(errors="replace").splitlines()
        result = json.loads(lines[-1]) if lines else {"id": spec["id"], "token": "-"}
        print(json.dumps({**result, **extra, "id": spec["id"]}), flush=True)
    time.sleep(0.01)


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--runner":
    sys.exit(_runner(int(sys.argv[2])))
