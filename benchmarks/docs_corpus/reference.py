"""What plain CPython prints for each documentation program: a fresh child per program.

`Reference(preload)` is one interpreter that imports the libraries once, then forks a child per
program: the child runs it in a fresh `__main__` namespace, in an empty directory of its own,
with stdout and stderr in one stream (as an executor's logs hold both, in order; what native code
writes to fds 1 and 2 itself included, as a terminal shows it) and the source
registered under the file name the executors show (`<code>`), so a warning reads as CPython
prints it. With `repeat=N` the child runs it N-1 times more, each in another fresh namespace,
and keeps the fastest of those runs: CPython with the library imported and the program's lazy modules loaded, the
ordinary case of a long-running host; only `exec` of the compiled program is timed (the
executors serve a repeated program from their code cache). The environment is the host's own (no thread-count
variables): CPython as a user runs it. Stdlib only.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

FILENAME = "<code>"

_SERVER = r"""
import contextlib, ctypes, importlib, io, json, linecache, os, shutil, signal, sys, tempfile, time
os.environ.setdefault("MPLBACKEND", "Agg")
channel = os.fdopen(os.dup(1), "w")
devnull = os.open(os.devnull, os.O_RDWR)
os.dup2(devnull, 1)
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
    except Exception:
        pass
FILENAME = sys.argv[2]

class Fd:
    # a text stream straight onto a file descriptor: the program's prints and what native code
    # writes to fds 1 and 2 itself (numpy's seterr(all='print'), Fortran solvers) in one order
    encoding, errors = "utf-8", "replace"

    def __init__(self, fd):
        self.fd = fd

    def write(self, text):
        os.write(self.fd, text.encode("utf-8", "replace"))
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False


def child(request, write):
    os.chdir(request["where"])
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    signal.alarm(int(request["timeout_s"]) + 1)
    code = request["code"]
    linecache.cache[FILENAME] = (len(code), None, code.splitlines(True), FILENAME)
    result = {"error": None, "seconds": None}
    try:
        compiled = compile(code, FILENAME, "exec", dont_inherit=True)
    except BaseException as exc:
        compiled = None
        result.update(out="", files=[], first_seconds=0.0, error=f"{type(exc).__name__}: {exc}")
    for run in range(request.get("repeat", 1) if compiled is not None else 0):
        # the first run prints onto fds 1 and 2 (a file outside the program's directory); the
        # timed runs into memory, as before
        captured = tempfile.TemporaryFile() if not run else None
        if captured is not None:
            os.dup2(captured.fileno(), 1)
            os.dup2(captured.fileno(), 2)
        out = Fd(1) if captured is not None else io.StringIO()
        start = time.perf_counter()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                exec(compiled, {"__name__": "__main__"})
        except BaseException as exc:
            if not run:
                result["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        seconds = time.perf_counter() - start
        if captured is not None:
            ctypes.CDLL(None).fflush(None)  # (C's stdout buffer: the child ends with _exit)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            captured.seek(0)
            result["out"] = captured.read(200000).decode("utf-8", "replace")
            captured.close()
        if not run:
            result["files"] = sorted(os.listdir("."))
            result["first_seconds"] = seconds
            if result["error"]:
                break
        else:
            result["seconds"] = min(seconds, result["seconds"] or seconds)
    if result["seconds"] is None:
        result["seconds"] = result["first_seconds"]
    os.write(write, json.dumps(result).encode())
    os._exit(0)

for line in sys.stdin:
    request = json.loads(line)
    request["where"] = where = tempfile.mkdtemp(prefix="docs-corpus-")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        child(request, write)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    shutil.rmtree(where, ignore_errors=True)
    if not chunks:
        answer = {"out": "", "error": "killed (time limit)", "files": [], "seconds": 0.0}
    else:
        answer = json.loads(b"".join(chunks))
    channel.write(json.dumps(answer) + "\n")
    channel.flush()
"""


class Reference:
    """A CPython process with `preload` imported that runs programs in forked children."""

    def __init__(self, preload: list[str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER, json.dumps(preload), FILENAME],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(self, code: str, *, timeout_s: float = 30, repeat: int = 1) -> dict[str, Any]:
        """{"out", "error", "files", "seconds"} (seconds: the fastest run after the first)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"code": code, "timeout_s": timeout_s, "repeat": repeat}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the CPython reference process ended")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> Reference:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_reference(programs: dict[str, str], library: str, timeout_s: float = 30,
                  preload: list[str] | None = None) -> dict[str, dict]:
    """{name: result} of each program in a fresh CPython child (see Reference.run)."""
    with Reference([library] if preload is None else preload) as ref:
        return {name: ref.run(code, timeout_s=timeout_s) for name, code in programs.items()}
