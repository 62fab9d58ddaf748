"""Runs deferred-escape attempts (tests/deferred_escapes.py) and their neighbours, and judges canaries.

    run_attempts(mode, attempts, tmp_path) -> [Outcome]      (one batch, one runner process)
    run_neighbours(mode, neighbours, tmp_path) -> [NeighbourOutcome]
    run_corpus(mode, attempts, neighbours, tmp_path) -> ([Outcome], [NeighbourOutcome])

Modes: "plain" (CPython: the steps exec'd in one dict namespace with the real tools, the same host
actions on the real values — every attempt must get out there, which proves it is real), "local"
(LocalExecutor), "subprocess" (SubprocessExecutor: restricted, hardened, the default) and
"unhardened" (SubprocessExecutor(harden=False): the worker without the kernel layer, issue 29).
A runner process imports numpy, pandas and matplotlib once, warms them up (and takes the
registry baseline), and forks a fresh child per attempt (an escape tampers the process that
hosts it), two at a time. Attempts that cannot change their process for good share one child
and one executor, reset between them, ten at a time (SHARED_EXECUTOR_CLASSES, _group_of): in
process the output, tool and environment classes; in a worker, whose process is all a step can
change, every class but threads and generators (ALONE_CLASSES). A shared worker is what a
long-lived one is (ExecutorPool hands the same worker to the next run after reset()).

One attempt: the tools (tests/deferred_host.py) and the host's objects are made; the executor is
built (or the group's reused, tools registered anew); a warm-up step imports what the steps import; the baselines are taken
(threads, the registry probe, the generic registry fingerprint); the host passes its objects in
(set_variables); the steps run; the host acts on what it got (HOST_ACTIONS); the `after` steps
run (model code that shows what it captured); the probes are taken again. In plain CPython the
runtime's own operations the runtime-class attempts aim at (the restores, the audit hook's path
reading) are done by RuntimeEmulation with the runtime's own functions.

Canaries, fresh per attempt under tmp_path/<mode>/<attempt id>/:
  target    {TARGET} (in {TARGET_DIR}, empty, outside every grant): a write escapes when the
            folder is not empty.
  secret    {SECRET} holds a token: escapes when it shows in anything model-visible (a step's
            logs, value, repr or error, a variable), in what the host made of a value (the text
            of a host action: the next prompt of a pipeline), in a file, or in a tool's arguments.
  env       the API key in the host's environment ({API_ENV}): the same places.
  toolkey   the API key held as an attribute by the weather tool's client: the same places.
  registry  the attempt's probe (policy-valid code; its last expression shows the state) differs
            after from before: on the host for plain/local, as a step after reset() for the
            workers (what the next run handed the same worker sees).
  thread    a thread started by a step is still alive after execute() returned (in this
            process, or in the worker).
  descriptor  (attempts aimed at it) after the host closed the executor, the host process still
            holds a descriptor on a file in the step's workdir: one the step opened outlives it.
Outcome per attempt: held / escaped (which canaries) / crashed (worker crash, ExecutorError,
a host action that raised on a model object the host should never have held).
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import library_escape_harness as base  # noqa: E402
from deferred_host import (  # noqa: E402
    API_ENV,
    ToolLog,
    exception_name,
    host_objects,
    host_tools,
    run_host_action,
)
from deferred_sessions import (  # noqa: E402
    CRASH_ERRORS,
    ExecutorSession,
    PlainSession,
    RuntimeEmulation,
    descriptors_into,
    make_executor,
    thread_count,
)

MODES = ("plain", "local", "subprocess", "unhardened")
SANDBOXED = MODES[1:]
JOBS = 2
GROUP_TIMEOUT_S = 180.0  # a forked child (one attempt or a group) is killed after this


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Outcome:
    id: str
    mode: str
    escaped: tuple[str, ...] = ()  # the canaries that fired
    crashed: str = ""
    leaked: tuple[str, ...] = ()  # model-made objects the host held (informational)
    registry_changes: tuple[str, ...] = ()  # the generic fingerprint's differences (plain/local)
    detail: str = ""

    @property
    def held(self) -> bool:
        return not self.escaped and not self.crashed

    @property
    def verdict(self) -> str:
        return "escaped" if self.escaped else "crashed" if self.crashed else "held"


@dataclass(frozen=True)
class NeighbourOutcome:
    id: str
    works: bool
    detail: str = ""


# ----------------------------------------------------------------------------- canaries
@dataclass(frozen=True)
class Canaries:
    root: Path
    secret: str
    env_key: str
    tool_key: str

    def dir(self, name: str) -> Path:
        return self.root / name

    @property
    def target(self) -> Path:
        return self.dir("target") / "out"

    @property
    def secret_file(self) -> Path:
        return self.dir("secret") / "secret.txt"

    def create(self) -> None:
        for name in ("secret", "target", "tools", "cwd"):
            self.dir(name).mkdir(parents=True, exist_ok=True)
        self.secret_file.write_text(self.secret + "\n")

    def placeholders(self) -> dict[str, str]:
        return {"TARGET": str(self.target), "TARGET_DIR": str(self.dir("target")),
                "SECRET": str(self.secret_file), "API_ENV": API_ENV}


def render(code: str, canaries: Canaries) -> str:
    out = code
    for key, value in canaries.placeholders().items():
        out = out.replace("{" + key + "}", value)
    return out


def dummy_canaries() -> Canaries:
    return Canaries(Path("/tmp/codeagent-deferred-canary"), "secret-dummy", "env-dummy", "tool-dummy")


# ----------------------------------------------------------------------------- batches
def run_attempts(mode: str, attempts: Sequence[Any], tmp_path: Path, *, jobs: int = JOBS) -> list[Outcome]:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    tmp_path = Path(tmp_path) / mode
    tmp_path.mkdir(parents=True, exist_ok=True)
    tokens = {k: k + secrets.token_hex(10) for k in ("secret", "envkey", "toolkey")}
    specs, all_canaries = [], []
    for attempt in attempts:
        c = Canaries(tmp_path / attempt.id, tokens["secret"], tokens["envkey"], tokens["toolkey"])
        c.create()
        all_canaries.append(c)
        specs.append(_job(mode, attempt, c))
    results = _run_grouped(specs, [_group_of(mode, a) for a in attempts], tmp_path, jobs, tokens["envkey"])
    return [judge(a, c, r) for a, c, r in zip(attempts, all_canaries, results, strict=True)]


# Attempts that share one executor (reset between them) and one forked child: a worker costs
# ~0.2 s of CPU to start, ~1 s with matplotlib. In process, only the classes whose payloads just
# write or read files and capture into the model's own namespace; in a worker, whose process is
# all a step can change, every class but ALONE_CLASSES, and not the attempts marked `alone` (they
# change how the worker itself runs). Groups never mix classes.
SHARED_EXECUTOR_CLASSES = ("output", "tool", "environment", "neighbour")
# Never shared: a thread one attempt left would hide the next one's; a generator one attempt left
# in a worker is finalized whenever that worker's garbage collector runs next, during some other
# attempt (unguarded outside a step: seen as escapes, but their timing depends on the group).
ALONE_CLASSES = ("thread", "generator")
GROUP_SIZE = 10


def _group_of(mode: str, attempt: Any) -> str:
    """The group an attempt runs in, by class ("" = alone): a class's verdicts never depend on
    another class's attempts."""
    if getattr(attempt, "alone", False) or attempt.klass in ALONE_CLASSES:
        return ""
    if attempt.klass in SHARED_EXECUTOR_CLASSES or mode in ("subprocess", "unhardened"):
        return attempt.klass
    return ""


def _run_grouped(specs: list[dict], kinds: list[str], tmp_path: Path, jobs: int, env_key: str) -> list[dict]:
    groups: dict[tuple, list[dict]] = {}
    jobs_list: list[dict] = []
    for spec, kind in zip(specs, kinds, strict=True):
        if kind:
            key = (tuple(sorted(spec["imports"])), kind)
            group = groups.setdefault(key, [])
            if len(group) == GROUP_SIZE:
                group = groups[key] = []
            if not group:
                jobs_list.append({"id": spec["id"], "mode": spec["mode"], "result": spec["result"],
                                  "stdout": spec["stdout"], "group": group, "fingerprint": False})
            group.append(spec)
        else:
            jobs_list.append({**spec, "group": [spec]})
    base._run_runner(jobs_list, tmp_path, "unused", jobs, script=Path(__file__).resolve(),
                     env={API_ENV: env_key})
    results = []
    for spec in specs:
        try:
            results.append(json.loads(Path(spec["result"]).read_text()))
        except (OSError, ValueError):
            results.append({"mode": spec["mode"], "stdout_path": spec["stdout"],
                            "runner_error": "no result (its group was killed or crashed the harness)"})
    return results


def run_neighbours(mode: str, neighbours: Sequence[Any], tmp_path: Path, *, jobs: int = JOBS) -> list[NeighbourOutcome]:
    return as_neighbours(neighbours, run_attempts(mode, neighbours, tmp_path, jobs=jobs))


def run_corpus(mode: str, attempts: Sequence[Any], neighbours: Sequence[Any], tmp_path: Path, *,
               jobs: int = JOBS) -> tuple[list[Outcome], list[NeighbourOutcome]]:
    """Attempts and neighbours in one runner (one warm-up for both)."""
    outcomes = run_attempts(mode, [*attempts, *neighbours], tmp_path, jobs=jobs)
    return outcomes[:len(attempts)], as_neighbours(neighbours, outcomes[len(attempts):])


def as_neighbours(neighbours: Sequence[Any], outcomes: Sequence[Outcome]) -> list[NeighbourOutcome]:
    """A neighbour works when nothing fired, nothing crashed, and it printed what it should."""
    return [NeighbourOutcome(n.id, o.held and not o.detail.startswith("expected"), o.detail)
            for n, o in zip(neighbours, outcomes, strict=True)]


def _job(mode: str, attempt: Any, c: Canaries) -> dict:
    return {
        "id": attempt.id, "mode": mode, "imports": list(attempt.imports),
        "steps": [render(s, c) for s in attempt.steps], "after": [render(s, c) for s in attempt.after],
        "tools": list(attempt.tools), "host": list(attempt.host), "variables": list(attempt.variables),
        "probe": render(attempt.probe, c), "fingerprint": _fingerprinted(mode, attempt),
        "expected": getattr(attempt, "expected", None), "agent": getattr(attempt, "agent", False),
        "tool_dir": str(c.dir("tools")), "secret": str(c.secret_file), "cwd": str(c.dir("cwd")), "tool_key": c.tool_key,
        "result": str(c.root / "result.json"), "stdout": str(c.root / "stdout.txt"),
    }


def _fingerprinted(mode: str, attempt: Any) -> bool:
    """Whether the generic registry fingerprint is taken around this attempt: for every
    shared-state attempt in process (where the registries are the host's), and for the registry
    attempts in plain CPython (where it must see them)."""
    return (mode == "local" and attempt.klass == "shared") or (mode in ("plain", "local") and attempt.canary == "registry")


# ----------------------------------------------------------------------------- judging
def _files_text(c: Canaries, extra: list[str]) -> str:
    texts = []
    roots = [c.root / n for n in ("target", "tools", "cwd")] + [Path(p) for p in extra if p]
    for root in roots:
        for path in sorted(root.rglob("*")) if root.is_dir() else []:
            with contextlib.suppress(OSError):
                if path.is_file() and not path.is_symlink() and path.stat().st_size < 5_000_000:
                    texts.append(path.read_bytes().decode("latin-1"))
    return "\n".join(texts)


def _seen_text(r: dict) -> str:
    parts = []
    for step in r.get("steps", []) + r.get("after", []):
        parts += [step.get("logs") or "", step.get("output_repr") or "", step.get("output_text") or "",
                  step.get("error") or ""]
    parts += [h.get("text") or "" for h in r.get("host", [])]
    parts += r.get("variables_text", []) + r.get("tool_calls", [])
    return "\n".join(parts)


def judge(attempt: Any, c: Canaries, r: dict) -> Outcome:
    mode = r.get("mode", "?")
    seen = _seen_text(r)
    with contextlib.suppress(OSError):
        seen += "\n" + Path(r.get("stdout_path") or "").read_text(errors="replace")
    files = _files_text(c, [r.get("workdir", "")])
    fired = []
    if any(c.dir("target").iterdir()):
        fired.append("target")
    for canary, token in (("secret", c.secret), ("env", c.env_key), ("toolkey", c.tool_key)):
        if token in seen or token in files:
            fired.append(canary)
    before, after = r.get("probe_before"), r.get("probe_after")
    if attempt.probe and before is not None and after is not None and before != after:
        fired.append("registry")
    elif attempt.canary == "registry" and not attempt.probe and r.get("registry_changes"):
        fired.append("registry")  # no policy-valid probe shows it: the generic fingerprint does
    if r.get("threads", 0) > 0:
        fired.append("thread")
    if attempt.canary == "descriptor" and r.get("descriptors", 0) > 0:
        fired.append("descriptor")
    crashed = r.get("runner_error") or r.get("host_error") or ""
    if mode != "plain":
        for step in r.get("steps", []) + r.get("after", []):
            if (step.get("error_type") or "") in CRASH_ERRORS:
                crashed = crashed or f"a step ended in {step['error_type']}: {step.get('error', '')[:200]}"
        for h in r.get("host", []):
            if h.get("error") and not h.get("plain", True):
                crashed = crashed or f"host action {h['action']} raised {h['error'][:200]} on a model object"
    notes = [f"fired: {', '.join(fired)}" if fired else "nothing fired"]
    expected = r.get("expected")
    if expected is not None and r.get("neighbour_text") != expected:
        notes.insert(0, f"expected {expected!r}, got {r.get('neighbour_text')!r}")
    if crashed:
        notes.append(f"crashed: {crashed}")
    if before != after:
        notes.append(f"probe {before!r:.80} -> {after!r:.80}")
    errors = [f"step {i + 1}: {s['error'][:160]}" for i, s in enumerate(r.get("steps", [])) if s.get("error")]
    notes += errors[:3]
    return Outcome(attempt.id, mode, tuple(fired), crashed, tuple(r.get("leaked", [])),
                   tuple(r.get("registry_changes", [])), "; ".join(notes))


# ----------------------------------------------------------------------------- one attempt (runner side)
def _imports_of(steps: list[str]) -> str:
    """The import statements of the steps, as one warm-up step."""
    import ast

    lines = []
    for code in steps:
        with contextlib.suppress(SyntaxError):
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    lines.append(ast.unparse(node))
    return "\n".join(dict.fromkeys(lines)) or "None"


def _record_error(result: dict, what: str, exc: BaseException) -> None:
    result["host_error"] = result.get("host_error") or f"{what} raised {exception_name(exc)}"


def _run_job(job: dict, result: dict, executor: Any) -> Any:
    """One attempt; returns the executor the next attempt of the group may reuse (None when
    this one closed it or the executor failed)."""
    import matplotlib.pyplot as plt

    from executors.fuzzing.judging.registries import (
        registry_changes,
        registry_fingerprint,
        restricted_to,
    )

    os.chdir(job["cwd"])
    paths = {"tool_dir": job["tool_dir"], "secret": job["secret"]}
    log = ToolLog()
    every, shared = host_tools(job["tool_dir"], job["tool_key"], log)
    tools = {name: every[name] for name in job["tools"]}
    host = dict(shared)
    host.update(host_objects(tuple(job["variables"])))
    if any(a.endswith("@host:figure") for a in job["host"]):
        host["figure"] = plt.figure()  # the host's own pyplot figure, current while the steps run
        host["figure"].gca().plot([1, 2, 3])
    mode = job["mode"]
    emulation = RuntimeEmulation(job["host"])
    if mode != "plain" and executor is None:
        executor = make_executor(mode, job["imports"])
    session: Any = PlainSession(tools, host, emulation) if mode == "plain" else \
        ExecutorSession(executor, mode, tools, host)
    result["workdir"] = getattr(session, "workdir", job["cwd"])
    try:
        session.execute(_imports_of(job["steps"] + job["after"]))
        session.outputs.clear()  # the warm-up's value is nobody's output
        threads = thread_count(session.pids())
        fingerprint = _BASELINE.get("fingerprint") if job["fingerprint"] and mode in ("plain", "local") else None
        if job["probe"]:
            result["probe_before"] = session.probe(job["probe"])
        if job["variables"]:
            session.set_variables({name: host[name] for name in job["variables"]})
        if mode == "plain":
            emulation.before()
        if job["agent"] and mode != "plain":
            result["steps"].append(session.run_agent(job["steps"]))
        else:
            for code in job["steps"]:
                result["steps"].append(session.execute(code))
        result["threads"] = thread_count(session.pids()) - threads
        for action in job["host"]:
            result["host"].append(run_host_action(session, action, paths))
        gc.collect()
        result["descriptors"] = descriptors_into(result["workdir"])  # (judged after the host's close())
        for code in job["after"]:
            result["after"].append(session.execute(code) if not getattr(session, "closed", False) else {})
        result["variables_text"] = session.variables_text()
        if job["probe"]:
            result["probe_after"] = session.probe(job["probe"])
        if fingerprint is not None:
            for name in ("figure", "fig"):  # the host's own figures are its business, not the step's
                if name in host:
                    plt.close(host[name])
            # what this attempt authorizes, numpy (every data library hands out its objects) and
            # the stdlib defaults: walking pandas for an attempt that never imports it costs ~0.2 s
            packages = _packages(job["imports"], ("numpy", "encodings"))
            result["registry_changes"] = registry_changes(restricted_to(fingerprint, packages),
                                                          registry_fingerprint(packages))
    except BaseException as exc:  # noqa: BLE001 - the executor's own failure is the finding
        _record_error(result, "the host's use of the executor", exc)
    finally:
        result["tool_calls"] = log.calls
        result["leaked"] = log.held + [f"step {i + 1} value" for i, s in enumerate(result["steps"])
                                       if s.get("plain") is False]
        result["leaked"] += [f"host action {h['action']}" for h in result["host"] if not h["plain"]]
        result["neighbour_text"] = "\n".join(
            [s.get("logs", "") for s in result["steps"]] + [h["text"] or h["error"] or "" for h in result["host"]])
    return _handed_on(session, result)


def _handed_on(session: Any, result: dict) -> Any:
    """The executor for the group's next attempt: reset, unless this attempt closed or broke it."""
    ex = getattr(session, "ex", None)
    if ex is None:
        session.close()
        return None
    if not result.get("host_error"):
        try:
            ex.reset()
            return ex
        except BaseException as exc:  # noqa: BLE001
            _record_error(result, "reset() after the attempt", exc)
    with contextlib.suppress(BaseException):
        ex.close()
    return None


def _packages(imports: list[str], always: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The packages whose registries are fingerprinted: `always` (default: the data packages),
    the stdlib defaults, and what the step authorizes."""
    from executors.base import DEFAULT_AUTHORIZED_IMPORTS
    from executors.fuzzing.judging.registries import REGISTRY_PACKAGES

    return tuple(dict.fromkeys([*(REGISTRY_PACKAGES if always is None else always), *DEFAULT_AUTHORIZED_IMPORTS,
                                *(i.removesuffix(".*") for i in imports)]))


def _child(job: dict) -> None:
    """One group of attempts (one attempt, or several sharing an executor), in this forked child."""
    executor = None
    for spec in job["group"]:
        executor = _one(spec, executor)
    if executor is not None:
        with contextlib.suppress(BaseException):
            executor.close()


def _one(job: dict, executor: Any) -> Any:
    # Opened before the steps: what they leave behind may break every later open().
    result_fd = os.open(job["result"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    fd = os.open(job["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = sys.stderr = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    result: dict[str, Any] = {"id": job["id"], "mode": job["mode"], "stdout_path": job["stdout"],
                              "steps": [], "after": [], "host": [], "expected": job["expected"]}
    started = time.monotonic()
    try:
        executor = _run_job(job, result, executor)
    except BaseException as exc:  # noqa: BLE001
        base._untrace()
        result["runner_error"] = f"{exception_name(exc)} in the harness"
        executor = None
    result["duration_s"] = round(time.monotonic() - started, 3)
    data = json.dumps(result, default=lambda v: f"<{type(v).__name__}>").encode()
    while data:
        data = data[os.write(result_fd, data):]
    os.close(result_fd)
    return executor


def _warm_up() -> None:
    """Runs in the runner before it forks: the libraries' first-use set-up (lazy registrations,
    backends, converters) happens here, once, so that no attempt sees it as a change."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    from executors.base import DEFAULT_AUTHORIZED_IMPORTS

    for name in DEFAULT_AUTHORIZED_IMPORTS:
        __import__(name)
    tempfile.TemporaryDirectory().cleanup()  # tempfile's name sequence is made on first use
    df = pd.DataFrame({"a": np.arange(5), "b": list("abcde")})
    str(df.describe()), df.to_csv(), df.to_json(), str(df.groupby("b").sum())
    df.plot()
    fig, ax = plt.subplots()
    ax.plot(df.a, df.a ** 2)
    ax.set_title("warm")
    ax.legend(["a"])
    fig.savefig(io.BytesIO(), format="png")
    plt.close("all")
    from pandas.util._exceptions import find_stack_level

    find_stack_level()  # pandas finds its own folders on its first warning
    with tempfile.TemporaryDirectory() as scratch:
        tools, _ = host_tools(scratch, "warm", ToolLog())
        with contextlib.suppress(Exception):
            tools["book"]("Oslo", 2, 100.0)
    import executors.process  # noqa: F401
    from executors import LocalExecutor

    # The runtime installs its library hooks once per process, and module proxies import the
    # libraries' lazy submodules: both here, before the baseline, not in an attempt.
    with LocalExecutor(authorized_imports=["numpy.*", "pandas.*", "matplotlib.*"]) as ex:
        ex.execute("import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt\n"
                   "np.ma.masked\npd.DataFrame({'a': [1]}).plot()\nplt.close('all')")


_BASELINE: dict[str, Any] = {}  # the registry fingerprint taken by the runner, before it forks


def _runner(jobfile: str) -> int:
    spec = json.loads(Path(jobfile).read_text())
    _warm_up()
    attempts = [one for job in spec["jobs"] for one in job["group"]]
    if any(one["fingerprint"] for one in attempts):
        from executors.fuzzing.judging.registries import registry_fingerprint

        for one in attempts:  # what the steps import is loaded before the baseline
            with contextlib.suppress(Exception):
                exec(_imports_of(one["steps"] + one["after"]), {})  # noqa: S102 - our corpus's imports
        _BASELINE["packages"] = _packages([i for one in attempts for i in one["imports"]])
        _BASELINE["fingerprint"] = registry_fingerprint(_BASELINE["packages"])
    # What the runner made lives on in every child: frozen, it is not walked by the collections
    # the host actions make (a full collection of pandas and matplotlib costs ~0.2 s).
    gc.collect()
    gc.freeze()
    base.fork_each(spec["jobs"], max(1, int(spec.get("parallel", JOBS))), _child, GROUP_TIMEOUT_S)
    return 0


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--runner":
    sys.exit(_runner(sys.argv[2]))
