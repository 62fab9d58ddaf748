"""The long fuzz of the host's decoder: a lying worker's frames against the real host side.

    .venv/bin/python benchmarks/fuzz_wire.py [--examples 5000] [--seed N] [--max-blob 4000000]
    scripts/fuzz-long wire [options]            # the same, via the wrapper

The property of tests/test_lying_worker.py (executors/fuzzing/attacks/frames.py draws a lie,
executors/fuzzing/judging/lying_worker.py plays it against a RemoteExecutor): every lie ends in a
clear error or a result within the bounds table, the liar killed, the host's memory within its
bound (tracemalloc), the executor usable afterwards. Frames reach the host's full 32 MB limit
here (the suite's run stops at 8 MB). Prints the outcomes, the largest peak of host memory and
the slowest example; exit code 1 on the first failing example (shrunk, printed).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from executors.fuzzing.attacks.frames import lies  # noqa: E402
from executors.fuzzing.judging.lying_worker import judge_lie, memory_bound  # noqa: E402
from executors.worker.bounds import BOUNDS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--examples", type=int, default=5_000)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--max-blob", type=int, default=4_000_000, help="pattern units of the largest frames")
    p.add_argument("--max-frame-bytes", type=int, default=BOUNDS.frame_bytes)
    p.add_argument("--json", action="store_true")
    opts = p.parse_args(argv)
    outcomes: collections.Counter[str] = collections.Counter()
    worst = {"peak_mb": 0.0, "touch_mb": 0.0, "seconds": 0.0}

    @settings(max_examples=opts.examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(lies(max_blob=opts.max_blob))
    def check(lie):
        verdict = judge_lie(lie, max_frame_bytes=opts.max_frame_bytes)
        outcomes[verdict.outcome or "raised"] += 1
        worst["peak_mb"] = max(worst["peak_mb"], verdict.peak_bytes / 2**20)
        worst["touch_mb"] = max(worst["touch_mb"], verdict.touch_bytes / 2**20)
        worst["seconds"] = max(worst["seconds"], verdict.seconds)
        assert verdict.problems == [], (verdict, lie)

    if opts.seed is not None:
        check = seed(opts.seed)(check)
    t0 = time.monotonic()
    failed = None
    try:
        check()
    except AssertionError as exc:
        failed = str(exc)[:2000]
    figures = {"examples": sum(outcomes.values()), "outcomes": dict(outcomes), **{k: round(v, 2) for k, v in worst.items()},
               "memory_bound_mb": round(memory_bound(opts.max_frame_bytes) / 2**20), "wall_s": round(time.monotonic() - t0),
               "failed": failed}
    if opts.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"{figures['examples']:,} lies in {figures['wall_s']} s: " +
              ", ".join(f"{k} {v:,}" for k, v in sorted(outcomes.items())))
        print(f"host memory: at most {worst['peak_mb']:.1f} MB while taking a lie, {worst['touch_mb']:.1f} MB "
              f"touching what it took (bound {figures['memory_bound_mb']} MB); slowest {worst['seconds']:.1f} s")
        if failed:
            print(f"FAILED: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
