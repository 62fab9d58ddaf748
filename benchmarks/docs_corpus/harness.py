"""Run documentation programs in the executors and in CPython, and judge each one.

`run_corpus(programs, kinds)` takes corpus entries (corpus.json), runs each in plain CPython
(reference.py: a fresh child per program) and in each executor kind, side by side, and returns
one `Outcome` per (program, kind): agree (the same printed text, no error, as CPython), refused
(the sandbox said no, with its reason), or differs. Each executor authorizes exactly what the
program imports (its library, numpy for scipy's examples, ...), as a user who adds those
packages would; programs with the same imports share one executor, `reset()` between them.

With `timed=True` every program runs 1 + TIMED_RUNS times on each side and the fastest of the
later runs counts: CPython's `exec` of the compiled program in a fresh namespace (the library
imported and the program's lazy modules loaded), against the executor's `reset()` + `execute()`
(its code cache and proxies warm): "an example after a reset".
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reference import Reference

CORPUS = Path(__file__).resolve().parent / "corpus.json"
KINDS = ("local", "worker")
TIMED_RUNS = 3  # each side keeps its fastest (a loaded machine's pauses are not the program's)
_LINE = re.compile(r" \(line \d+: .*\)$", re.DOTALL)
_AUTHORIZED = re.compile(r"Authorized modules: .*?\. ")


def load_corpus() -> dict[str, Any]:
    return json.loads(CORPUS.read_text())


@dataclass
class Outcome:
    name: str
    library: str
    kind: str
    verdict: str  # "agree" | "refused" | "differs"
    reason: str = ""  # a refusal's reason, or what differs
    cpython_s: float | None = None  # the timed run (timed=True)
    executor_s: float | None = None


def make_executor(kind: str, imports: list[str]) -> Any:
    from executors import Limits, LocalExecutor, SubprocessExecutor

    limits = Limits(timeout_s=60, max_output_chars=400_000)
    cls = {"local": LocalExecutor, "worker": SubprocessExecutor}[kind]
    return cls(authorized_imports=imports, limits=limits)


def refusal_reason(error: Any) -> str | None:
    """The sandbox's reason when `error` is a refusal (policy, import, a hidden member), else None."""
    message = _AUTHORIZED.sub("", _LINE.sub("", error.message or ""))
    if error.type == "PolicyError" or "sandbox" in message or "not allowed" in message:
        return f"{error.type}: {message}"
    return None


def judge(entry: dict, kind: str, ref: dict, result: Any) -> Outcome:
    name, library = entry["name"], entry["library"]
    if result.error is not None:
        reason = refusal_reason(result.error)
        if reason is not None:
            return Outcome(name, library, kind, "refused", reason)
        return Outcome(name, library, kind, "differs", f"error {result.error.type}: "
                       f"{(result.error.message or '')[:300]}")
    if ref["error"]:
        return Outcome(name, library, kind, "differs", f"CPython failed: {ref['error'][:300]}")
    if result.logs != ref["out"]:
        return Outcome(name, library, kind, "differs", _first_difference(ref["out"], result.logs))
    return Outcome(name, library, kind, "agree")


def _first_difference(want: str, got: str) -> str:
    for i, (a, b) in enumerate(zip(want.splitlines(), got.splitlines(), strict=False)):
        if a != b:
            return f"line {i + 1}: CPython {a[:150]!r}, executor {b[:150]!r}"
    return f"CPython printed {len(want)} characters, the executor {len(got)}"


def run_corpus(programs: Iterable[dict], kinds: Iterable[str] = KINDS, *, timed: bool = False,
               by_library: bool = False,
               progress: Callable[[str], None] | None = None) -> list[Outcome]:
    """Every program in CPython and in each executor kind (see the module docstring).
    by_library: one executor per library, authorized for what its programs import together
    (fewer workers to start: the CI sample)."""
    kinds = list(kinds)
    programs = list(programs)
    groups: dict[tuple[str, ...], list[dict]] = {}
    if by_library:
        union: dict[str, set[str]] = {}
        for entry in programs:
            union.setdefault(entry["library"], set()).update(entry["imports"])
        for entry in programs:
            groups.setdefault(tuple(sorted(union[entry["library"]])), []).append(entry)
    else:
        for entry in programs:
            groups.setdefault(tuple(entry["imports"]), []).append(entry)
    outcomes: list[Outcome] = []
    for imports, entries in sorted(groups.items()):
        with Reference(list(imports)) as reference:
            executors = {kind: make_executor(kind, list(imports)) for kind in kinds}
            try:
                for entry in entries:
                    outcomes.extend(_run_one(entry, reference, executors, timed))
                    if progress is not None:
                        progress(entry["name"])
            finally:
                for executor in executors.values():
                    executor.close()
    return outcomes


def _run_one(entry: dict, reference: Reference, executors: dict[str, Any],
             timed: bool) -> list[Outcome]:
    code = entry["code"]
    ref = reference.run(code, repeat=1 + TIMED_RUNS if timed else 1)
    found = []
    for kind, executor in executors.items():
        executor.reset()
        result = executor.execute(code)
        outcome = judge(entry, kind, ref, result)
        if timed and outcome.verdict == "agree":
            runs = []
            for _ in range(TIMED_RUNS):
                start = time.perf_counter()
                executor.reset()
                executor.execute(code)
                runs.append(time.perf_counter() - start)
            outcome.executor_s = min(runs)
            outcome.cpython_s = ref["seconds"]
        found.append(outcome)
    return found


def sample(programs: list[dict], per_library: int) -> list[dict]:
    """A fixed sample: `per_library` programs of each library, the first in the order of a hash
    of their names (no library's first module dominates)."""
    taken: dict[str, int] = {}
    chosen = []
    for entry in sorted(programs, key=lambda e: hashlib.sha256(e["name"].encode()).hexdigest()):
        if taken.get(entry["library"], 0) < per_library:
            taken[entry["library"]] = taken.get(entry["library"], 0) + 1
            chosen.append(entry)
    return chosen
