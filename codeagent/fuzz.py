"""`codeagent fuzz`: run the executor properties as a campaign against one configuration.

    codeagent fuzz --executor local --examples 2000
    codeagent fuzz --executor docker --seconds 300 --tools mypkg.tools:TOOLS
    python -m codeagent.fuzz --executor subprocess --authorized-imports numpy pandas
    python -m codeagent.fuzz --replay fuzz-failures/escape-*.py --executor local

Prints a progress line on stderr and a summary table on stdout, saves every failing example as
a .py file that says how to rerun it, and exits 1 on any escape, internal error, hang or
uncontained bomb (mismatches with CPython and divergent errors too with --strict), else 0.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["add_fuzz_arguments", "run_fuzz", "main"]

SAFETY_FAILURES = ("escape", "internal-error", "hang", "uncontained")
META_PREFIX = "# fuzz-meta: "


def add_fuzz_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of `codeagent fuzz` on `parser`."""
    parser.add_argument("--executor", choices=("local", "subprocess", "docker"), default="local",
                        help="which executor to fuzz (default: local)")
    parser.add_argument("--policy", choices=("restricted", "open"), default=None,
                        help="policy of the subprocess/docker executor (default: the executor's own)")
    parser.add_argument("--examples", type=int, default=1000, help="number of generated examples (default: 1000)")
    parser.add_argument("--seconds", type=float, default=None, help="time budget; stops at whichever comes first")
    parser.add_argument("--authorized-imports", nargs="*", default=None, metavar="MODULE",
                        help="modules to authorize on top of the safe defaults")
    parser.add_argument("--tools", nargs="*", default=None, metavar="MODULE:ATTR",
                        help="tools to register: a callable, Tool, or dict/list of them (default: "
                             "the probe tools of executors.testing)")
    parser.add_argument("--mode", choices=("data", "grammar", "all"), default="data",
                        help="program generator: model-like data programs, hypothesmith grammar, or both")
    parser.add_argument("--properties", nargs="*", choices=("cpython", "escapes", "bombs"),
                        default=["cpython", "escapes", "bombs"], help="which properties to run")
    parser.add_argument("--timeout", type=float, default=2.0, help="Limits.timeout_s for the campaign (default: 2)")
    parser.add_argument("--margin", type=float, default=1.0,
                        help="seconds a bomb may overrun its timeout (default: 1)")
    parser.add_argument("--save-dir", default="fuzz-failures", help="where failing examples are saved")
    parser.add_argument("--seed", type=int, default=None, help="hypothesis seed, for a reproducible campaign")
    parser.add_argument("--strict", action="store_true",
                        help="also fail on CPython mismatches and divergent errors")
    parser.add_argument("--no-isolate", action="store_true",
                        help="run an in-process executor in this process (default: a forked child)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the summary as JSON")
    parser.add_argument("--replay", nargs="*", default=None, metavar="FILE",
                        help="rerun saved failing examples instead of generating new ones")


def _load_tools(specs: list[str] | None) -> dict[str, Callable[..., Any]] | None:
    if specs is None:
        return None
    from executors.base import normalize_tools

    tools: dict[str, Callable[..., Any]] = {}
    for spec in specs:
        module_name, _, attr = spec.partition(":")
        if not module_name or not attr:
            raise SystemExit(f"codeagent fuzz: --tools wants MODULE:ATTR, got {spec!r}")
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
        if isinstance(obj, dict) or isinstance(obj, (list, tuple)):
            tools.update(normalize_tools(obj))
        else:
            tools.update(normalize_tools([obj]))
    return tools


def make_factory(args: argparse.Namespace) -> Callable[..., Any]:
    """The executor factory described by the command-line options."""
    from executors import Limits

    limits = Limits(timeout_s=args.timeout)
    imports = args.authorized_imports
    if args.executor == "local":
        from executors.local import LocalExecutor

        def factory() -> Any:
            return LocalExecutor(authorized_imports=imports, limits=limits)
    elif args.executor == "subprocess":
        from executors.process import SubprocessExecutor

        extra = {"policy": args.policy} if args.policy else {}

        def factory() -> Any:
            return SubprocessExecutor(authorized_imports=imports, limits=limits, **extra)
    else:
        from executors.container import DockerExecutor

        extra = {"policy": args.policy} if args.policy else {}

        def factory() -> Any:
            return DockerExecutor(authorized_imports=imports, limits=limits, **extra)
    return factory


class Progress:
    """One self-rewriting line on stderr (a line every 10 s when stderr is not a terminal)."""

    def __init__(self, executor: str, planned: int) -> None:
        self.executor, self.planned = executor, planned
        self.tty = sys.stderr.isatty()
        self.t0 = time.monotonic()
        self.last = 0.0
        self.n = 0
        self.counts: dict[str, int] = {}

    def __call__(self, outcome: Any) -> None:
        self.n += 1
        self.counts[outcome.status] = self.counts.get(outcome.status, 0) + 1
        now = time.monotonic()
        if now - self.last >= (0.2 if self.tty else 10.0):
            self.last = now
            self.show()

    def show(self, end: str = "") -> None:
        c = self.counts
        bad = sum(c.get(s, 0) for s in SAFETY_FAILURES)
        line = (f"fuzz {self.executor}: {self.n}/{self.planned}  equal {c.get('equal', 0)}  "
                f"refused {c.get('refused', 0)}  held {c.get('held', 0)}  contained {c.get('contained', 0)}  "
                f"divergent {c.get('divergent', 0)}  mismatch {c.get('mismatch', 0)}  FAILURES {bad}  "
                f"{time.monotonic() - self.t0:.0f}s")
        if self.tty:
            sys.stderr.write("\r" + line.ljust(120) + end)
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def save_failure(outcome: Any, save_dir: str, args: argparse.Namespace, marker: str | None = None) -> Path:
    """Write a failing example as a .py file whose header says what failed and how to rerun."""
    digest = hashlib.sha1(outcome.code.encode()).hexdigest()[:10]
    path = Path(save_dir) / f"{outcome.status}-{outcome.category}-{digest}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    rerun = f"python -m codeagent.fuzz --replay {path} --executor {args.executor} --timeout {args.timeout}"
    if args.authorized_imports:
        rerun += " --authorized-imports " + " ".join(args.authorized_imports)
    if args.tools:
        rerun += " --tools " + " ".join(args.tools)
    if marker is None:  # escape attempts name their marker path in their first lines
        found = re.search(r"^MARKER = ('[^'\n]*')$", outcome.code, re.M)
        marker = ast.literal_eval(found.group(1)) if found else None
    meta = {"category": outcome.category, "label": outcome.label, "status": outcome.status,
            "executor": args.executor, "timeout": args.timeout, "marker": marker}
    detail = "\n".join("#   " + line for line in (outcome.detail or "").splitlines()[:12])
    header = (f"# codeagent fuzz: {outcome.status} — {outcome.category} [{outcome.label}] "
              f"on the {args.executor} executor\n{detail}\n# rerun: {rerun}\n"
              f"{META_PREFIX}{json.dumps(meta)}\n")
    path.write_text(header + outcome.code.rstrip("\n") + "\n", encoding="utf-8")
    return path


def _table(report: Any) -> str:
    cats = [("program", "programs"), ("escape", "escapes"), ("bomb", "bombs")]
    cols = ["examples", "refusals", "CPython-equal", "divergent", "mismatches", "contained", "escapes",
            "internal", "hangs"]
    rows = []
    for cat, name in cats:
        n = report.total(cat)
        if not n:
            continue
        refused = report.total(cat, "refused") if cat == "program" else report.total(cat, "held")
        rows.append([name, n, refused, report.total(cat, "equal"), report.total(cat, "divergent"),
                     report.total(cat, "mismatch"),
                     report.total(cat, "contained") if cat == "bomb" else "-",
                     report.total(cat, "escape"), report.total(cat, "internal-error"),
                     report.total(cat, "hang") + report.total(cat, "uncontained")])
    totals = ["total", report.total(), report.total("program", "refused") + report.total("escape", "held"),
              report.total(None, "equal"), report.total(None, "divergent"), report.total(None, "mismatch"),
              report.total("bomb", "contained"),
              report.total(None, "escape"), report.total(None, "internal-error"),
              report.total(None, "hang") + report.total(None, "uncontained")]
    rows.append(totals)
    head = ["", *cols]
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(str(v).rjust(w) if i else str(v).ljust(w) for i, (v, w) in enumerate(zip(r, widths, strict=True)))
             for r in [head, *rows]]
    lines.insert(1, "-" * len(lines[0]))
    lines.insert(len(lines) - 1, "-" * len(lines[0]))
    return "\n".join(lines) + "\n  (escapes row: 'refusals' = attempts held; bombs: 'hangs' = uncontained)"


def summary_dict(report: Any, args: argparse.Namespace) -> dict[str, Any]:
    return {
        "executor": args.executor, "mode": args.mode, "duration_s": round(report.duration_s, 1),
        "examples": report.total(),
        "programs": report.total("program"), "refusals": report.total("program", "refused"),
        "cpython_equal": report.total("program", "equal"), "divergent": report.total("program", "divergent"),
        "mismatches": report.total("program", "mismatch"),
        "escape_attempts": report.total("escape"), "escapes": report.total(None, "escape"),
        "bombs": report.total("bomb"), "bombs_contained": report.total("bomb", "contained"),
        "bombs_uncontained": report.total("bomb", "uncontained"),
        "internal_errors": report.total(None, "internal-error"), "hangs": report.total(None, "hang"),
        "error_types": {f"{c}:{t}": n for (c, t), n in report.error_types.most_common()},
    }


def _replay(args: argparse.Namespace, factory: Callable[..., Any], tools: Any) -> int:
    from executors.testing import Session

    failed = 0
    for name in args.replay:
        text = Path(name).read_text(encoding="utf-8")
        meta: dict[str, Any] = {}
        for line in text.splitlines():
            if line.startswith(META_PREFIX):
                meta = json.loads(line[len(META_PREFIX):])
        code = "\n".join(line for line in text.splitlines(keepends=False)
                         if not (line.startswith("# codeagent fuzz:") or line.startswith("#   ")
                                 or line.startswith("# rerun:") or line.startswith(META_PREFIX))) + "\n"
        category = meta.get("category", "program")
        with Session(factory, tools=tools, margin_s=args.margin, isolate=not args.no_isolate and None,
                     marker=meta.get("marker")) as session:
            outcome = session.run(category, code, meta.get("label", category))
        bad = outcome.status in SAFETY_FAILURES or (args.strict and outcome.status == "mismatch")
        failed += bad
        print(f"{name}: {outcome.status} ({outcome.duration_s:.2f} s) {outcome.detail[:400]}")
    return 1 if failed else 0


def run_fuzz(args: argparse.Namespace) -> int:
    """Run the campaign described by `args` (from add_fuzz_arguments); returns the exit code."""
    from executors.testing import fuzz

    tools = _load_tools(args.tools)
    factory = make_factory(args)
    if args.replay is not None:
        return _replay(args, factory, tools)
    progress = Progress(args.executor, args.examples)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    report = fuzz(factory, examples=args.examples, seconds=args.seconds, properties=args.properties,
                  mode=args.mode, tools=tools, authorized_imports=None, margin_s=args.margin,
                  isolate=False if args.no_isolate else None, seed=args.seed, on_outcome=progress)
    progress.show(end="\n")
    print(f"codeagent fuzz — {report.executor} ({args.executor}), mode {args.mode}, "
          f"timeout {args.timeout} s, started {started}, {report.duration_s:.1f} s")
    print(_table(report))
    slow = report.top_slowest(5)
    if slow:
        print("slowest examples:")
        for o in slow:
            first = o.code.strip().splitlines()[-1][:70] if o.code.strip() else ""
            print(f"  {o.duration_s:6.2f} s  {o.category:7} {o.status:12} {o.label:40.40}  {first}")
    if report.error_types:
        shown = ", ".join(f"{c}:{t} {n}" for (c, t), n in report.error_types.most_common(12))
        print(f"refusals by error type: {shown}")
    failing = [o for o in report.failures if o.status in SAFETY_FAILURES or o.status in ("mismatch", "divergent")]
    if failing:
        print(f"failing examples saved in {args.save_dir}/:")
        seen = set()
        for o in failing:
            path = save_failure(o, args.save_dir, args)
            if path not in seen:
                seen.add(path)
                if len(seen) <= 20:
                    print(f"  {o.status:14} {path}  {o.detail.splitlines()[0][:100] if o.detail else ''}")
        if len(seen) > 20:
            print(f"  … and {len(seen) - 20} more")
    if args.json:
        Path(args.json).write_text(json.dumps(summary_dict(report, args), indent=2) + "\n", encoding="utf-8")
    bad = sum(report.total(None, s) for s in SAFETY_FAILURES)
    if args.strict:
        bad += report.total(None, "mismatch") + report.total(None, "divergent")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="codeagent fuzz", description=__doc__.splitlines()[0])
    add_fuzz_arguments(parser)
    return run_fuzz(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
