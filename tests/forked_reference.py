"""What plain CPython prints for each program, each in a fresh process: the differential tests' reference.

`cpython_prints(programs)` starts one interpreter that imports the modules the programs import
(so that each program does not pay for them) and forks a child per program; a
child runs its program in a fresh `__main__` namespace with stdout and stderr captured. Every
program must be clean there (no error, nothing on stderr): a program that fails in CPython proves
nothing about an executor. A process pool a program starts (scikit-learn's n_jobs=-1 starts loky
workers) is shut down before its child exits, so nothing outlives the reference.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from typing import Any

_RUNNER = r"""
import contextlib, importlib, io, json, os, sys
os.environ["MPLBACKEND"] = "Agg"
request = json.loads(sys.stdin.read())
for name in request["preload"]:
    importlib.import_module(name)
results = {}
for name, code in request["programs"].items():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # helpers a program starts (loky workers) must not hold our pipes
            os.dup2(devnull, fd)
        out, err = io.StringIO(), io.StringIO()
        error = None
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                exec(compile(code, "<program>", "exec"), {"__name__": "__main__"})
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"
        if "joblib.externals.loky" in sys.modules:  # n_jobs=-1 started a process pool: stop it
            sys.modules["joblib.externals.loky"].get_reusable_executor().shutdown(wait=True)
        os.write(write, json.dumps({"out": out.getvalue(), "err": err.getvalue(), "error": error}).encode())
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    results[name] = json.loads(b"".join(chunks))
print(json.dumps(results))
"""


def imported_modules(programs: dict[str, str]) -> list[str]:
    """Every module the programs import (what the reference loads once before it forks)."""
    names: set[str] = set()
    for code in programs.values():
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
    return sorted(names)


def cpython_prints(programs: dict[str, str], preload: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """{name: {"out", "err", "error"}} of each program in a fresh CPython child; all must be clean.
    `preload`: the modules to import before forking (default: every module the programs import)."""
    preload = imported_modules(programs) if preload is None else preload
    proc = subprocess.run([sys.executable, "-c", _RUNNER], capture_output=True, text=True, timeout=300,
                          input=json.dumps({"programs": programs, "preload": preload}),
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(proc.stdout)
    for name, result in results.items():
        assert result["error"] is None and result["err"] == "", (name, result)
    return results
