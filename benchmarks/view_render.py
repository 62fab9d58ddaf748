"""What a page of `codeagent view` weighs and costs to render, in headless Chromium.

Three pages, made from real runs (CodeAgent + LocalExecutor, scripted replies, real matplotlib
figures), loaded in one browser, interleaved rep by rep:

- baseline: a one-step run (the fixed cost of any page: the shell, its style and script);
- a 30-step run with 10 figures (640×480 line plots, embedded);
- a 1,000-task batch page (the table, its filters and sort keys).

For each: the file size, the time to write it (Python), and in Chromium the time from navigation
to the first frame painted after the load event (parse, style, layout, paint, image decode),
as a median and as a ratio to the baseline; for the batch also the time to filter and to sort
its 1,000 rows in the page.

    .venv/bin/python benchmarks/view_render.py [--reps 7] [--tasks 1000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from chromium import Chromium  # noqa: E402
from view_runs import code, scripted_run  # noqa: E402

from codeagent.batch.store import ResultStore  # noqa: E402
from codeagent.view import write_site  # noqa: E402

PLOT = ("import numpy as np\nimport matplotlib.pyplot as plt\nx = np.linspace(0, 10, 500)\n"
        "fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)\nax.plot(x, np.sin(x * {k}))\nax.set_title('run {k}')\n"
        "print('plotted', {k})")
WORK = "values = [i * {k} for i in range(200)]\nprint(sum(values), max(values))\nsum(values) / len(values)"
# what the page measures: from navigation to the first frame painted after the load event
PAINTED = """new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() =>
    done(performance.now()))))"""


def big_run(out: Path):
    replies = [code(PLOT.format(k=k) if k % 3 == 1 else WORK.format(k=k), f"Thought: step {k}, a figure every third.")
               for k in range(1, 30)]
    replies.append(code("final_answer('done')"))
    result = scripted_run(replies, task="Thirty steps, ten figures.", imports=["numpy", "matplotlib.*"], out=out)
    return result.save(out / "big.json"), result


def batch(folder: Path, tasks: int) -> Path:
    """`tasks` rows as run_batch writes them, from a few real runs (their run files copied)."""
    kinds = [scripted_run([code("print(2 + 40)"), code("final_answer(42)")]),
             scripted_run(["the answer is 42", code("final_answer(41)")]),
             scripted_run([code("x = 1")], max_steps=1)]
    with ResultStore(folder) as store:
        finished = []
        for i in range(tasks):
            run = kinds[i % len(kinds)]
            record = json.loads(run.to_json())
            row = {"id": f"task-{i:04d}", "status": run.status, "output": record["output"], "output_repr": run.output_repr,
                   "error": run.error, "steps": len(run.steps), "model_calls": len(run.steps),
                   "tokens": run.usage.total_tokens + i, "wall_s": round(0.01 * (i % 97), 4), "attempts": 1,
                   "expected": 42, "correct": record["output"] == 42}
            finished.append((row, record))
        store.record_many(finished)
    return folder


def timed_write(source: Path) -> tuple[Path, float, int]:
    t0 = time.perf_counter()
    written = write_site(source)
    return written[0], time.perf_counter() - t0, len(written)


def render_ms(tab, url: str) -> float:
    tab.browser.call("Page.navigate", {"url": "about:blank"}, tab.session)
    tab.browser.wait_event("Page.loadEventFired", tab.session)
    tab.goto(url)
    return float(tab.evaluate(PAINTED))  # performance.now() counts from this navigation's start


def in_page_ms(tab, script: str) -> float:
    return float(tab.evaluate(f"(() => {{ const t = performance.now(); {script}; document.body.offsetHeight;"
                              " return performance.now() - t; })()"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--tasks", type=int, default=1000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="codeagent-view-bench-"))
    try:
        t0 = time.perf_counter()
        small = scripted_run([code("final_answer(1)")])
        small.save(work / "small.json")
        big_json, big = big_run(work / "big")
        figures = len(big.attachments)
        batch(work / "batch", args.tasks)
        print(f"made the runs in {time.perf_counter() - t0:.1f} s "
              f"(the big run: {len(big.steps)} steps, {figures} figures)")
        write_site(work / "small.json")  # warm: imports, Pygments' lexer and style
        pages = {"baseline: 1-step run": timed_write(work / "small.json"),
                 f"{len(big.steps)}-step run, {figures} figures": timed_write(big_json),
                 f"{args.tasks:,}-task batch": timed_write(work / "batch")}
        with Chromium() as browser:
            tab = browser.page(1200, 900)
            for _, (path, _, _) in pages.items():
                render_ms(tab, path.as_uri())  # warm: fonts, the image decoder, the code cache
            times: dict[str, list[float]] = {name: [] for name in pages}
            for _ in range(args.reps):
                for name, (path, _, _) in pages.items():
                    times[name].append(render_ms(tab, path.as_uri()))
            batch_page = pages[f"{args.tasks:,}-task batch"][0]
            tab.goto(batch_page.as_uri())
            filters = [in_page_ms(tab, "document.querySelector('button[data-status=max_steps]').click()")
                       for _ in range(args.reps)]
            sorts = [in_page_ms(tab, "document.querySelectorAll('#tasks th')[7].click()") for _ in range(args.reps)]
            print(f"\nChromium {browser.version}, median of {args.reps} loads each, interleaved\n")
            base = statistics.median(times["baseline: 1-step run"])
            print(f"{'page':<28} {'size':>9} {'write':>9} {'files':>6} {'render':>9} {'× baseline':>11}")
            for name, (path, write_s, files) in pages.items():
                median = statistics.median(times[name])
                print(f"{name:<28} {path.stat().st_size / 1000:>7.0f} kB {write_s * 1000:>7.0f} ms {files:>6} "
                      f"{median:>7.0f} ms {median / base:>10.1f}×")
            print(f"\nbatch page, in the page: filter by status {statistics.median(filters):.0f} ms, "
                  f"sort by tokens {statistics.median(sorts):.0f} ms ({args.tasks:,} rows)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
