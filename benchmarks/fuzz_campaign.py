"""The long fuzz campaign: ≥ 20,000 programs per executor, plus escapes, bombs, grammar and
≥ 10,000 native-library calls with hostile numbers (crashes).

    .venv/bin/python benchmarks/fuzz_campaign.py --executor local
    .venv/bin/python benchmarks/fuzz_campaign.py --executor subprocess --programs 5000
    scripts/fuzz-long local            # the same, via the wrapper

Runs one campaign (`executors.fuzzing`, as `codeagent fuzz` does) per phase (data programs vs CPython, hypothesmith grammar
programs vs CPython, escape attempts, resource bombs, native calls with numpy, pandas, pyarrow,
scipy and polars authorized) in this process, prints one combined table, saves failing examples
under --save-dir and the figures as JSON (--json). Exit code 1 on any escape, internal error,
hang, uncontained bomb or host crash.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from executors import fuzzing  # noqa: E402

PHASES = [
    # (name, --properties, --mode, option holding the count)
    ("data programs", "cpython", "data", "programs"),
    ("escape attempts", "escapes", "data", "escapes"),
    ("resource bombs", "bombs", "data", "bombs"),
    ("grammar programs", "cpython", "grammar", "grammar"),
    ("native calls", "crashes", "data", "crashes"),
]


def native_imports() -> list[str]:
    import importlib.util

    from executors.fuzzing.attacks.native_calls import NATIVE_IMPORTS

    return [m for m in NATIVE_IMPORTS if importlib.util.find_spec(m.split(".")[0]) is not None]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--executor", choices=("local", "subprocess", "docker"), default="local")
    p.add_argument("--policy", choices=("restricted", "open"), default=None)
    p.add_argument("--programs", type=int, default=20_000)
    p.add_argument("--grammar", type=int, default=300, help="hypothesmith programs (slow: ~1 s each)")
    p.add_argument("--grammar-seconds", type=float, default=600)
    p.add_argument("--escapes", type=int, default=5_000)
    p.add_argument("--bombs", type=int, default=300)
    p.add_argument("--crashes", type=int, default=10_000,
                   help="native-library calls with hostile shapes, strides, offsets and indices")
    p.add_argument("--timeout", type=float, default=1.0)
    p.add_argument("--save-dir", default=str(ROOT / "fuzz-failures"))
    p.add_argument("--json", default=None, help="write the figures here (default: fuzz-<executor>.json in --save-dir)")
    p.add_argument("--seed", type=int, default=None)
    opts = p.parse_args(argv)

    figures: dict[str, dict] = {}
    worst = 0
    t0 = time.monotonic()
    for name, prop, mode, count_opt in PHASES:
        n = getattr(opts, count_opt)
        if n <= 0:
            continue
        options = fuzzing.CommandOptions(executor=opts.executor, policy=opts.policy, examples=n,
                                         properties=[prop], mode=mode, timeout=opts.timeout,
                                         save_dir=opts.save_dir, seed=opts.seed)
        imports = native_imports() if prop == "crashes" else None
        # (native calls: a sparse conversion or an import-heavy first step takes ~1 s under load)
        timeout = max(opts.timeout, 5.0) if prop == "crashes" else opts.timeout
        factory = fuzzing.executor_factory(opts.executor, timeout_s=timeout, policy=opts.policy,
                                           authorized_imports=imports)
        progress = fuzzing.Progress(f"{opts.executor} {name}", n)
        report = fuzzing.fuzz(factory, examples=n, seconds=opts.grammar_seconds if mode == "grammar" else None,
                              properties=[prop], mode=mode, margin_s=options.margin, seed=opts.seed,
                              on_outcome=progress)
        progress.show(end="\n")
        for o in report.failures:
            if o.status in fuzzing.SAFETY_FAILURES or o.status in ("mismatch", "divergent"):
                fuzzing.save_failure(o, opts.save_dir, options)
        figures[name] = fuzzing.summary_dict(report, options)
        figures[name]["failures"] = [
            {"status": o.status, "label": o.label, "detail": o.detail[:300], "code": o.code[-1500:]}
            for o in report.failures[:50]
        ]
        worst |= any(report.total(None, s) for s in fuzzing.SAFETY_FAILURES)

    print(f"\nfuzz campaign — executor {opts.executor}, timeout {opts.timeout} s, {time.monotonic() - t0:.0f} s")
    cols = ["phase", "examples", "refusals", "CPython-equal", "divergent", "mismatches", "escapes",
            "contained", "uncontained", "internal", "hangs", "host crashes", "seconds"]
    rows = [cols]
    for name, f in figures.items():
        n = f["examples"]
        held = f["escape_attempts"] - f["escapes"] if f["escape_attempts"] else 0
        rows.append([name, n, f["refusals"] or held or 0, f["cpython_equal"], f.get("divergent", 0),
                     f["mismatches"], f["escapes"],
                     f["bombs_contained"] or f["native_survived"], f["bombs_uncontained"],
                     f["internal_errors"], f["hangs"], f["host_crashes"], f["duration_s"]])
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(cols))]
    for i, r in enumerate(rows):
        print("  ".join(str(v).ljust(w) if j == 0 else str(v).rjust(w) for j, (v, w) in enumerate(zip(r, widths, strict=True))))
        if i == 0:
            print("-" * (sum(widths) + 2 * len(widths)))
    out = Path(opts.json or Path(opts.save_dir) / f"fuzz-{opts.executor}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(f"figures: {out}")
    return 1 if worst else 0


if __name__ == "__main__":
    raise SystemExit(main())
