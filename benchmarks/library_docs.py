"""The libraries' documentation examples in every executor, against CPython (issue 44).

The corpus (benchmarks/docs_corpus/corpus.json, built by docs_corpus/build.py from the installed
libraries' docstrings, each program naming its source) runs in plain CPython and in each
executor, side by side (docs_corpus/harness.py): each program authorized for exactly what it
imports, one executor per import set, reset() between programs. Printed:

  agreement   per library and executor: programs whose printed text (stdout and stderr, warnings
              included, in order) is CPython's, the refused ones and the ones that differ
  refusals    grouped by the sandbox's reason, with an example each
  speed       an example after a reset: the executor's reset() + execute() over CPython's exec
              of the compiled program in a fresh namespace, both warm (the library imported and
              the program run once before); median and p90 of the per-program ratios, per
              library and executor (agreeing programs only)

    .venv/bin/python benchmarks/library_docs.py                      # everything (~15 min idle)
    .venv/bin/python benchmarks/library_docs.py --per-library 20     # a quick look
    .venv/bin/python benchmarks/library_docs.py --json out.json      # every outcome as JSON
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "docs_corpus"))

from harness import KINDS, Outcome, load_corpus, run_corpus, sample  # noqa: E402


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


def report(outcomes: list[Outcome], kinds: list[str]) -> str:
    lines = []
    libraries = sorted({o.library for o in outcomes})
    by = defaultdict(list)
    for o in outcomes:
        by[(o.library, o.kind)].append(o)
        by[("all", o.kind)].append(o)
    lines.append("agreement with CPython (agree / refused / differs of programs)")
    lines.append(f"{'library':<12}" + "".join(f"{k:>34}" for k in kinds))
    for library in [*libraries, "all"]:
        row = f"{library:<12}"
        for kind in kinds:
            got = Counter(o.verdict for o in by[(library, kind)])
            total = sum(got.values())
            share = 100 * got["agree"] / total if total else 0.0
            row += f"{got['agree']:>8}/{got['refused']:>4}/{got['differs']:>4} of {total:>5} ({share:5.1f}%)"
        lines.append(row)
    lines.append("")
    lines.append("refusals and differences by reason (count per executor, one program each)")
    reasons: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for o in outcomes:
        if o.verdict != "agree":
            reasons[f"{o.verdict}: {o.reason[:160]}"][o.kind].append(o.name)
    for reason, per_kind in sorted(reasons.items(), key=lambda r: -sum(map(len, r[1].values()))):
        counts = ", ".join(f"{k} {len(v)}" for k, v in sorted(per_kind.items()))
        example = next(iter(per_kind.values()))[0]
        lines.append(f"  [{counts}] {reason}  (e.g. {example})")
    timed = [o for o in outcomes if o.cpython_s and o.executor_s]
    if timed:
        lines.append("")
        lines.append("an example after reset(): executor / CPython, median and p90 of per-program ratios")
        lines.append(f"{'library':<12}" + "".join(f"{k:>24}" for k in kinds))
        for library in [*libraries, "all"]:
            row = f"{library:<12}"
            for kind in kinds:
                ratios = [o.executor_s / o.cpython_s for o in by[(library, kind)]
                          if o.cpython_s and o.executor_s]
                row += f"{statistics.median(ratios):>11.2f}x {_p90(ratios):>9.2f}x" if ratios \
                    else f"{'-':>24}"
            lines.append(row)
        ms = [o.cpython_s * 1000 for o in timed if o.kind == kinds[0]]
        lines.append(f"(CPython's run of an example: median {statistics.median(ms):.2f} ms)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", default=",".join(KINDS), help="local,worker")
    parser.add_argument("--library", action="append", help="only these libraries")
    parser.add_argument("--per-library", type=int, help="a fixed sample of each library")
    parser.add_argument("--no-timing", action="store_true", help="agreement only (one run each)")
    parser.add_argument("--json", help="write every outcome here")
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    corpus = load_corpus()
    programs = corpus["programs"]
    if args.library:
        programs = [p for p in programs if p["library"] in args.library]
    if args.per_library:
        programs = sample(programs, args.per_library)
    print(f"{len(programs)} programs from the documentation of "
          f"{', '.join(f'{k} {v}' for k, v in corpus['versions'].items())}", file=sys.stderr)
    done = [0]

    def progress(_name: str) -> None:
        done[0] += 1
        if done[0] % 50 == 0:
            print(f"  {done[0]}/{len(programs)}", file=sys.stderr, flush=True)

    outcomes = run_corpus(programs, kinds, timed=not args.no_timing, progress=progress)
    print(report(outcomes, kinds))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(o) for o in outcomes], indent=1))


if __name__ == "__main__":
    main()
