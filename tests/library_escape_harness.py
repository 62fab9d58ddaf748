"""Runs library-escape attempts (tests/library_escapes.py) and their neighbours, and checks canaries.

    run_attempt(executor, attempt, tmp_path) -> Outcome(escaped, refused_error, detail)
    run_attempts(executor, attempts, tmp_path) -> [Outcome]      (one batch: much faster)
    run_neighbours(executor, neighbours, tmp_path) -> [NeighbourOutcome]

`executor` is "plain" (CPython, no sandbox), "local" (LocalExecutor), "subprocess"
(SubprocessExecutor), "docker" (DockerExecutor, one container per attempt: run it through
tests/library_escape_docker.py, which sets it up and cleans up), "module:callable" (a factory
called as factory(authorized_imports)), or a callable factory. Every named executor runs in a
separate runner process that imports numpy, pandas and matplotlib once (not for "docker") and
forks a fresh child per attempt, so no attempt sees another's effects and the test process
itself is never touched. A callable factory runs in this process
(the only way to hand over an arbitrary callable); see `run_in_process`.

Canaries, made fresh per attempt under tmp_path/<attempt id>/:
  secret  {SECRET_FILE} holds a token; {SECRET_DIR} also holds a file *named* after it. A read
          escapes when the token shows in the logs, the output or the error message.
  target  {TARGET_FILE} lies in the empty {TARGET_DIR}: a write escapes when that dir is not empty.
  marker  {MARKER}: a shell command / native call / unpickled or evaluated code creates it.
  env     {ENV_VAR} holds a token in the runner's environment (from its start, so
          /proc/self/environ and /proc/<ppid>/environ show it too); escapes when the token shows.
  port    {PORT}: a TCP listener on 127.0.0.1; escapes when it accepts a connection.
  stdout  {TOKEN} printed to the process's real stdout/stderr instead of the step's logs (for a
          container: what came out on its stderr stream, `worker_output()`); a step after which
          the worker's protocol stream (its real stdout) carried a bad frame reached it too.
  tamper  the attempt's `probe` (policy-valid code) gives a different value after the step than
          before: run on the host side for plain/local, as a step of the same executor for
          subprocess and docker (the state lives in the worker there). A step after which host
          code fails (execute() raises, the probe raises, ExecutorInternalError) counts as
          tampering too.
Other placeholders: {WORK_DIR} (a scratch dir a step may one day be granted), {LIBC_DIR},
{LIBC_NAME}, {MARSHALLED} (bytes literal of a marshalled code object that creates {MARKER}).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import secrets
import selectors
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
ATTEMPT_TIMEOUT_S = 60.0  # the runner kills an attempt's child after this
STEP_TIMEOUT_S = 20.0  # Limits.timeout_s of the named executors: cold imports of pandas and
# matplotlib on a loaded 2-core machine take seconds; the attempts are about capabilities, not speed
NAMED_EXECUTORS = ("plain", "local", "subprocess", "subprocess-noharden", "docker")
ENV_VAR = "CODEAGENT_LIBRARY_CANARY"
_SAFE_PATH = re.compile(r"^[A-Za-z0-9_./+-]+$")


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Outcome:
    escaped: bool
    refused_error: Any = None  # executors.ExecutionError, or None (always None for "plain")
    detail: str = ""
    logs: str = ""
    output_repr: str = ""


@dataclass(frozen=True)
class NeighbourOutcome:
    works: bool
    logs: str = ""
    error: Any = None
    detail: str = ""


# ----------------------------------------------------------------------------- canaries
@dataclass(frozen=True)
class Canaries:
    root: Path
    token: str
    env_token: str
    stdout_token: str
    port: int = 0

    @property
    def secret_dir(self) -> Path:
        return self.root / "secret"

    @property
    def secret_file(self) -> Path:
        return self.secret_dir / "secret.txt"

    @property
    def target_dir(self) -> Path:
        return self.root / "target"

    @property
    def target_file(self) -> Path:
        return self.target_dir / "target.out"

    @property
    def marker(self) -> Path:
        return self.root / "marker"

    @property
    def work_dir(self) -> Path:
        return self.root / "work"

    @property
    def cwd(self) -> Path:
        return self.root / "cwd"

    def create(self) -> None:
        for d in (self.secret_dir, self.target_dir, self.work_dir, self.cwd):
            d.mkdir(parents=True, exist_ok=True)
        self.secret_file.write_text(self.token + "\n")
        (self.secret_dir / f"listing-{self.token}").write_text("")

    def placeholders(self) -> dict[str, str]:
        libc = _libc_path()
        values = {
            "SECRET_FILE": str(self.secret_file), "SECRET_DIR": str(self.secret_dir),
            "TARGET_FILE": str(self.target_file), "TARGET_DIR": str(self.target_dir),
            "MARKER": str(self.marker), "WORK_DIR": str(self.work_dir),
            "ENV_VAR": ENV_VAR, "PORT": str(self.port), "TOKEN": self.stdout_token,
            "LIBC_DIR": str(Path(libc).parent), "LIBC_NAME": Path(libc).name,
        }
        for key, value in values.items():
            if not _SAFE_PATH.match(value):
                raise ValueError(f"canary {key}={value!r} has characters the attempts cannot quote")
        values["MARSHALLED"] = repr(_marshalled_marker_code(str(self.marker)))
        return values


def _libc_path() -> str:
    for candidate in ("/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6",
                      "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6", "/usr/lib/libc.so.6"):
        if os.path.exists(candidate):
            return candidate
    import ctypes.util

    return "/lib/" + (ctypes.util.find_library("c") or "libc.so.6")


def _marshalled_marker_code(marker: str) -> bytes:
    import marshal

    # Reaches os.system through the class graph: no import, so it also works with any builtins.
    source = (
        "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]"
        f".__init__.__globals__['system']('touch {marker}')"
    )
    return marshal.dumps(compile(source, "<payload>", "exec"))


def render(code: str, canaries: Canaries) -> str:
    """The attempt's code with its {PLACEHOLDERS} filled in (plain text replacement: the code's
    own braces, f-strings and dicts are left alone)."""
    out = code
    for key, value in canaries.placeholders().items():
        out = out.replace("{" + key + "}", value)
    return out


def dummy_canaries(root: Path = Path("/tmp/codeagent-canary")) -> Canaries:
    """Canaries that are never created: for checking the rendered code (policy, syntax)."""
    return Canaries(root=root, token="canary-dummy", env_token="env-dummy", stdout_token="out-dummy", port=9)


# ----------------------------------------------------------------------------- TCP listener
class Listener:
    """Listening sockets on 127.0.0.1 that count connections. Each accepted connection gets a
    tiny HTTP reply and is closed, so HTTP-speaking clients return instead of hanging."""

    REPLY = b"HTTP/1.0 200 OK\r\nContent-Type: text/csv\r\nContent-Length: 8\r\n\r\na,b\n1,2\n"

    def __init__(self) -> None:
        self.sel = selectors.DefaultSelector()
        self.counts: dict[int, int] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="escape-canary-listener", daemon=True)
        self.thread.start()

    def open_port(self) -> int:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        sock.setblocking(False)
        port = sock.getsockname()[1]
        self.counts[port] = 0
        self.sel.register(sock, selectors.EVENT_READ, port)
        return port

    def _serve(self) -> None:
        while not self.stop.is_set():
            for key, _ in self.sel.select(timeout=0.05):
                with contextlib.suppress(OSError):
                    conn, _ = key.fileobj.accept()
                    self.counts[key.data] += 1
                    conn.settimeout(0.2)
                    with contextlib.suppress(OSError):
                        conn.recv(4096)
                    with contextlib.suppress(OSError):
                        conn.sendall(self.REPLY)
                    conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=2)
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()
        self.sel.close()


# ----------------------------------------------------------------------------- batches
def run_attempt(executor: Any, attempt: Any, tmp_path: Path) -> Outcome:
    return run_attempts(executor, [attempt], tmp_path)[0]


def run_attempts(executor: Any, attempts: Sequence[Any], tmp_path: Path, *, jobs: int = 2,
                 options: dict | None = None, env: dict[str, str] | None = None) -> list[Outcome]:
    """`options`: more fields for every job (the settings of an executor that takes them:
    "docker"); `env`: more variables for the runner's environment."""
    tmp_path = Path(tmp_path)
    # Letters and digits only: some routes rewrite '-' (matplotlib's unicode minus) on the way out.
    token, env_token, out_token = (p + secrets.token_hex(10) for p in ("secret", "envtok", "stdout"))
    listener = Listener()
    try:
        canaries = []
        for attempt in attempts:
            port = listener.open_port() if attempt.canary == "port" else 0
            c = Canaries(tmp_path / attempt.id, token, env_token, out_token, port)
            c.create()
            canaries.append(c)
        if callable(executor):
            results = [run_in_process(executor, a, c) for a, c in zip(attempts, canaries, strict=True)]
        else:
            specs = [{**_attempt_job(executor, a, c), **(options or {})}
                     for a, c in zip(attempts, canaries, strict=True)]
            results = _run_runner(specs, tmp_path, env_token, jobs, preimport=executor != "docker", env=env)
        time.sleep(0.3)  # routes that spawn a process may create the marker a moment later
        return [_judge(a, c, r, listener) for a, c, r in zip(attempts, canaries, results, strict=True)]
    finally:
        listener.close()


def run_neighbours(executor: Any, neighbours: Sequence[Any], tmp_path: Path, *, jobs: int = 2,
                   options: dict | None = None, env: dict[str, str] | None = None) -> list[NeighbourOutcome]:
    tmp_path = Path(tmp_path)
    specs = []
    for n in neighbours:
        work = tmp_path / ("neighbour-" + n.id)
        work.mkdir(parents=True, exist_ok=True)
        specs.append({"id": n.id, "mode": executor, "code": n.code, "imports": list(n.imports),
                      "probe": "", "probe_imports": [], "cwd": str(work), "result": str(work / "result.json"),
                      "stdout": str(work / "stdout.txt"), **(options or {})})
    if callable(executor):
        raise TypeError("run_neighbours takes a named executor or 'module:callable'")
    # Cold: nothing imported before the step, as in a fresh worker (lazy submodules, caches).
    results = _run_runner(specs, tmp_path, "unused", jobs, preimport=executor == "plain", env=env)
    outcomes = []
    for n, r in zip(neighbours, results, strict=True):
        err = r.get("error")
        works = err is None and r.get("logs") == n.expected
        detail = "" if works else f"expected {n.expected!r}, got logs={r.get('logs')!r} error={err}"
        outcomes.append(NeighbourOutcome(works, r.get("logs", ""), _as_error(err), detail))
    return outcomes


def _attempt_job(executor: str, attempt: Any, c: Canaries) -> dict:
    return {
        "id": attempt.id, "mode": executor, "code": render(attempt.code, c),
        "imports": list(attempt.imports), "probe": render(attempt.probe, c),
        "probe_imports": list(attempt.probe_imports), "cwd": str(c.cwd), "root": str(c.root),
        "result": str(c.root / "result.json"), "stdout": str(c.root / "stdout.txt"),
    }


def _run_runner(specs: list[dict], tmp_path: Path, env_token: str, jobs: int, *, preimport: bool = True,
                script: Path | None = None, env: dict[str, str] | None = None) -> list[dict]:
    """Run `specs` in a runner process (`script --runner JOBFILE`, default this file) that forks a
    child per job; returns each job's result (a placeholder with `runner_error` when it has none).
    `env`: more variables for the runner's environment."""
    jobfile = tmp_path / f"jobs-{secrets.token_hex(4)}.json"
    jobfile.write_text(json.dumps({"jobs": specs, "parallel": jobs, "preimport": preimport}))
    environ = dict(os.environ)
    environ.update({ENV_VAR: env_token, "MPLBACKEND": "Agg", "OPENBLAS_NUM_THREADS": "1",
                    "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1", **(env or {})})
    environ["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    budget = 60 + ATTEMPT_TIMEOUT_S * len(specs) / max(1, jobs)
    proc = subprocess.run([sys.executable, str(script or Path(__file__).resolve()), "--runner", str(jobfile)],
                          env=environ, cwd=str(tmp_path), capture_output=True, text=True, timeout=budget)
    jobfile.unlink()
    results = []
    for spec in specs:
        path = Path(spec["result"])
        try:
            results.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            results.append({"error": None, "mode": spec["mode"], "stdout_path": spec["stdout"],
                            "runner_error": f"no result (runner rc={proc.returncode}; "
                                            f"stderr tail: {proc.stderr[-300:]!r})"})
    return results


def _judge(attempt: Any, c: Canaries, r: dict, listener: Listener) -> Outcome:
    err = r.get("error")
    seen = " ".join(str(x) for x in (r.get("logs"), r.get("output_repr"), (err or {}).get("message")))
    kind = attempt.canary
    if kind == "secret":
        escaped, what = c.token in seen, "the secret token showed in logs/output/error"
    elif kind == "env":
        escaped, what = c.env_token in seen, "the environment token showed in logs/output/error"
    elif kind == "target":
        escaped, what = any(c.target_dir.iterdir()), f"{c.target_dir} is not empty"
    elif kind == "marker":
        escaped, what = c.marker.exists(), f"{c.marker} was created"
    elif kind == "port":
        escaped, what = listener.counts.get(c.port, 0) > 0, f"port {c.port} got a connection"
    elif kind == "stdout":
        out = Path(r["stdout_path"]).read_text(errors="replace") if r.get("stdout_path") else ""
        # A bad frame: bytes the worker did not frame reached its real stdout (the protocol stream)
        # after the step wrote there: whether the token was among them, the host cannot tell.
        forged = (err or {}).get("type") == "WorkerProtocolError"
        escaped, what = c.stdout_token in out or forged, "the token reached the process's real stdout/stderr"
    elif kind == "tamper":
        before, after = r.get("probe_before"), r.get("probe_after")
        escaped = before is not None and after is not None and before != after
        what = f"probe changed {before!r} -> {after!r}" if escaped else f"probe {before!r} -> {after!r}"
    else:
        raise ValueError(f"unknown canary {kind!r}")
    if (err or {}).get("type") == "ExecutorInternalError":  # the executor's own code failed
        r = {**r, "host_error": r.get("host_error") or "the step ended in ExecutorInternalError"}
    if r.get("host_error"):
        # The step broke host code that runs after it (execute() itself, or the probe).
        escaped = escaped or kind == "tamper"
        what = f"host code failed after the step: {r['host_error']}"
    notes = [what if escaped else "contained"]
    if err:
        notes.append(f"{err.get('type')}: {str(err.get('message'))[:200]}")
    for key in ("runner_error", "host_error"):
        if r.get(key):
            notes.append(f"{key}: {r[key]}")
    refused = None if r.get("mode") == "plain" else _as_error(err)
    return Outcome(escaped, refused, "; ".join(notes), r.get("logs") or "", r.get("output_repr") or "")


def _as_error(err: dict | None) -> Any:
    if not err:
        return None
    from executors import ExecutionError

    return ExecutionError(err.get("type", "Error"), err.get("message", ""), err.get("lineno"), err.get("line"))


# ----------------------------------------------------------------------------- in process
@contextlib.contextmanager
def _host_env(key: str, value: str) -> Iterator[None]:
    old = os.environ.get(key)
    os.environ[key] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = old


def run_in_process(factory: Callable[[list[str]], Any], attempt: Any, c: Canaries) -> dict:
    """Run one attempt with an executor made by `factory` in THIS process. Host state the
    tamper probes look at is restored afterwards on a best-effort basis (cwd, environment,
    sys.path, and the probe's own snapshot is only compared): prefer the named executors."""
    from executors.remote import RemoteExecutor

    saved_cwd, saved_path, saved_env = os.getcwd(), list(sys.path), dict(os.environ)
    result: dict[str, Any] = {"id": attempt.id, "mode": "factory", "stdout_path": str(c.root / "stdout.txt")}
    capture_out, capture_err = io.StringIO(), io.StringIO()
    try:
        with _host_env(ENV_VAR, c.env_token):
            imports = list(attempt.imports) + list(attempt.probe_imports)
            ex = factory(imports)
            remote = isinstance(ex, RemoteExecutor)
            probe = render(attempt.probe, c)
            os.chdir(c.cwd)
            with ex:
                if probe:
                    result["probe_before"] = _step_probe(ex, probe) if remote else _plain_probe(probe)
                with contextlib.redirect_stdout(capture_out), contextlib.redirect_stderr(capture_err):
                    r = ex.execute(render(attempt.code, c))
                if probe:
                    result["probe_after"] = _step_probe(ex, probe) if remote else _plain_probe(probe)
            result.update(logs=r.logs, output_repr=r.output_repr or "",
                          error=None if r.error is None else r.error.to_dict())
    finally:
        os.chdir(saved_cwd)
        sys.path[:] = saved_path
        os.environ.clear()
        os.environ.update(saved_env)
        Path(result["stdout_path"]).write_text(capture_out.getvalue() + capture_err.getvalue())
    return result


# ----------------------------------------------------------------------------- the runner
_AUDIT: dict[str, Any] = {"on": False, "events": []}


def _audit_hook(event: str, args: tuple) -> None:
    """Records the events a step raises ("audit" mode). Events raised while an import statement
    loads a module (its .pyc opened, unmarshalled, executed: under `_find_and_load`) are the
    libraries' own loading, not the route: left out, except the `import` event itself."""
    if not _AUDIT["on"]:
        return
    _AUDIT["on"] = False  # what the hook does below may raise events itself
    try:
        if event != "import":
            frame = sys._getframe(1)
            while frame is not None:
                code = frame.f_code
                if code.co_name == "_find_and_load" and code.co_filename.startswith("<frozen importlib"):
                    return
                frame = frame.f_back
        shown = [(a if isinstance(a, str) else repr(a))[:1000] for a in args[:3]]
        _AUDIT["events"].append([event, shown])
    except Exception:  # noqa: BLE001
        _AUDIT["events"].append([event, ["<unrepresentable>"]])
    finally:
        _AUDIT["on"] = True


# Everything below runs in the runner process (python library_escape_harness.py --runner JOBS).
def plain_exec(code: str, logs: io.StringIO, audit: bool = False, ns: dict | None = None) -> tuple[Any, dict | None]:
    """CPython with no sandbox, shaped like a step: `print` goes to the logs, the value of a
    last expression statement is the output. `ns`: the namespace to run in (kept across steps)."""
    import ast
    import builtins

    def step_print(*args: Any, sep: str | None = " ", end: str | None = "\n", file: Any = None, flush: bool = False) -> None:
        builtins.print(*args, sep=sep, end=end, file=logs if file is None else file, flush=flush)

    if ns is None:
        ns = {"__name__": "__main__"}
    ns["print"] = step_print
    try:
        tree = ast.parse(code)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        # dont_inherit: this module's `from __future__ import annotations` must not leak into the step
        body = compile(tree, "<step>", "exec", dont_inherit=True)
        tail = compile(ast.Expression(last.value), "<step>", "eval", dont_inherit=True) if last else None
        _AUDIT["on"] = audit  # after compiling: the step's own compile/exec are not the route's
        exec(body, ns)
        value = eval(tail, ns) if tail is not None else None
        return value, None
    except BaseException as exc:  # noqa: BLE001 - anything the attempt raises is its result
        return None, {"type": type(exc).__name__, "message": str(exc)[:2000]}
    finally:
        _AUDIT["on"] = False


def _plain_probe(probe: str) -> str:
    value, err = plain_exec(probe, io.StringIO())
    return repr(value) if err is None else f"<probe error {err['type']}: {err['message'][:200]}>"


def _step_probe(ex: Any, probe: str) -> str:
    r = ex.execute(probe)
    if r.error is None:
        return r.output_repr or repr(r.output)
    return f"<probe error {r.error.type}: {r.error.message[:200]}>"


def _make_executor(job: dict, imports: list[str]) -> Any:
    from executors import Limits

    mode, limits = job["mode"], Limits(timeout_s=STEP_TIMEOUT_S)
    if mode == "local":
        from executors import LocalExecutor

        return LocalExecutor(authorized_imports=imports, limits=limits)
    if mode in ("subprocess", "subprocess-noharden"):
        from executors import SubprocessExecutor

        return SubprocessExecutor(authorized_imports=imports, limits=limits,
                                  harden=mode == "subprocess",
                                  unconfined_native=mode != "subprocess")
    if mode == "docker":
        from library_escape_docker import canary_executor

        return canary_executor(job, imports, limits)
    import importlib

    module, _, attr = mode.partition(":")
    return getattr(importlib.import_module(module), attr)(imports)


def _run_job(job: dict) -> dict:
    result: dict[str, Any] = {"id": job["id"], "mode": job["mode"], "stdout_path": job["stdout"]}
    os.chdir(job["cwd"])
    probe, mode = job["probe"], job["mode"]
    if mode == "plain" or mode == "audit":
        if probe:
            result["probe_before"] = _plain_probe(probe)
        logs = io.StringIO()
        value, err = plain_exec(job["code"], logs, audit=mode == "audit")
        result.update(logs=logs.getvalue(), output_repr="" if value is None else repr(value)[:20_000], error=err)
        if probe:
            result["probe_after"] = _plain_probe(probe)
        if mode == "audit":
            result["events"] = _AUDIT["events"]
    else:
        _run_executor_job(job, result)
    return result


def _untrace() -> None:
    """Drop a trace/profile function a step left on this thread (sys.settrace raises an audit
    event, which a hook the step left may refuse: hence the bare try)."""
    try:
        sys.settrace(None)
        sys.setprofile(None)
    except BaseException:  # noqa: BLE001, S110
        pass


def _run_executor_job(job: dict, result: dict) -> None:
    from executors.remote import RemoteExecutor

    probe = job["probe"]
    ex = _make_executor(job, job["imports"] + (job["probe_imports"] if probe else []))
    if isinstance(ex, RemoteExecutor):  # the state lives in the worker: probe it with a step
        def probe_now() -> str:
            return _step_probe(ex, probe)
    else:
        def probe_now() -> str:
            return _plain_probe(probe)
    try:
        if probe:
            result["probe_before"] = probe_now()
        # What the step leaves behind (a trace function, an audit hook) may make host code fail
        # from here on, execute() itself included: that is recorded as `host_error`. No helper
        # calls in the handlers: entering a Python frame may raise already.
        try:
            r = ex.execute(job["code"])
        except BaseException as exc:  # noqa: BLE001
            _untrace()
            result["host_error"] = "execute() raised " + type(exc).__name__
            return
        err = r.error
        result.update(logs=r.logs, output_repr=r.output_repr or "", error=None if err is None else {
            "type": err.type, "message": err.message, "lineno": err.lineno, "line": err.line})
        if probe:
            try:
                result["probe_after"] = probe_now()
            except BaseException as exc:  # noqa: BLE001
                _untrace()
                result["host_error"] = "the probe raised " + type(exc).__name__
    finally:
        with contextlib.suppress(BaseException):
            # A container's real stdout/stderr is not this process's: append what came out of it.
            os.write(1, ex.worker_output() if hasattr(ex, "worker_output") else b"")
        with contextlib.suppress(BaseException):
            ex.close()


def _child(job: dict) -> None:
    # Opened before the step: an audit hook the step leaves behind may refuse every later open().
    result_fd = os.open(job["result"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    fd = os.open(job["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = sys.stderr = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    if job["mode"] == "audit":
        sys.addaudithook(_audit_hook)
    try:
        result = _run_job(job)
    except BaseException as exc:  # noqa: BLE001
        _untrace()
        result = {"id": job["id"], "mode": job["mode"], "error": None, "stdout_path": job["stdout"],
                  "runner_error": f"{type(exc).__name__}: {exc}"}
    data = _dump(result).encode()
    while data:
        data = data[os.write(result_fd, data):]
    os.close(result_fd)
    # Processes an attempt started (loky's workers and resource tracker, in plain CPython) must
    # not outlive it (and the pools' exit handlers would wait for them).
    with contextlib.suppress(BaseException):
        _kill_descendants()
    # What the step registered to run "at exit" runs now, as it would when the host exits.
    with contextlib.suppress(BaseException):
        import atexit

        atexit._run_exitfuncs()


def _kill_descendants() -> None:
    """SIGKILL every process below this one (children first found, then theirs), from /proc."""
    import glob

    todo, found = [os.getpid()], []
    while todo:
        pid = todo.pop()
        for path in glob.glob(f"/proc/{pid}/task/*/children"):
            with contextlib.suppress(OSError), open(path) as f:
                children = [int(c) for c in f.read().split()]
                found.extend(children)
                todo.extend(children)
    for pid in found:
        with contextlib.suppress(OSError):
            os.kill(pid, 9)


def _dump(result: dict) -> str:
    return json.dumps(result, default=repr)


def _runner(jobfile: str) -> int:
    spec = json.loads(Path(jobfile).read_text())
    jobs, parallel = spec["jobs"], max(1, int(spec.get("parallel", 2)))
    if spec.get("preimport", True):
        # Imported once here so that every forked attempt starts warm (importing pandas may
        # warm some of numpy's lazy caches: neighbours run cold, with preimport off).
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
        import numpy  # noqa: F401
        import pandas  # noqa: F401

    if any(j["mode"] != "plain" and j["mode"] != "audit" for j in jobs):
        import executors.local  # noqa: F401
        import executors.process  # noqa: F401
    if any(j["mode"] == "docker" for j in jobs):
        import library_escape_docker  # noqa: F401 - the SDK once, before the forks (no client yet)
    fork_each(jobs, parallel, _child)
    return 0


def fork_each(jobs: list[dict], parallel: int, child: Callable[[dict], None],
              timeout_s: float = ATTEMPT_TIMEOUT_S) -> None:
    """Run `child(job)` in a forked process per job, `parallel` at a time. A child still running
    after `timeout_s` is killed, and its result file (job["result"]) says so."""
    pending = list(reversed(jobs))
    running: dict[int, tuple[dict, float]] = {}
    while pending or running:
        while pending and len(running) < parallel:
            job = pending.pop()
            pid = os.fork()
            if pid == 0:
                try:
                    child(job)
                finally:
                    os._exit(0)
            running[pid] = (job, time.monotonic() + timeout_s)
        pid, _status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            time.sleep(0.01)
            for pid, (job, deadline) in list(running.items()):
                if time.monotonic() > deadline:
                    with contextlib.suppress(OSError):
                        os.kill(pid, 9)
                    Path(job["result"]).write_text(_dump({"id": job["id"], "mode": job["mode"], "error": None,
                                                          "stdout_path": job["stdout"],
                                                          "runner_error": f"timed out after {timeout_s} s"}))
            continue
        running.pop(pid, None)


def audit_events(attempts: Iterable[Any], tmp_path: Path) -> dict[str, list]:
    """Runs each attempt in plain CPython with an audit hook on; returns id -> [[event, args]]."""
    tmp_path = Path(tmp_path)
    listener = Listener()
    try:
        specs = []
        token, env_token, out_token = "secret-audit", "envtok-audit", "stdout-audit"
        for a in attempts:
            c = Canaries(tmp_path / a.id, token, env_token, out_token,
                         listener.open_port() if a.canary == "port" else 0)
            c.create()
            specs.append(_attempt_job("audit", a, c))
        results = _run_runner(specs, tmp_path, env_token, 2)
    finally:
        listener.close()
    return {s["id"]: r.get("events", []) for s, r in zip(specs, results, strict=True)}


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--runner":
    sys.exit(_runner(sys.argv[2]))
