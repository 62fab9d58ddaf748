"""The README's screenshot of a run's page: a data run (pandas + matplotlib in the default
SubprocessExecutor, scripted replies with one mistake the model fixes), rendered by `codeagent
view` and photographed in headless Chromium.

    .venv/bin/python benchmarks/view_screenshot.py [--out docs/view-run.png] [--keep DIR]
"""

from __future__ import annotations

import argparse
import io
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from chromium import Chromium  # noqa: E402
from view_runs import code, scripted_run  # noqa: E402

from codeagent.view import write_site  # noqa: E402

LOAD = ("import pandas as pd\nsales = pd.DataFrame({\n"
        "    'region': ['north', 'south', 'east', 'west', 'north', 'south', 'east', 'west'],\n"
        "    'month': ['jan', 'jan', 'jan', 'jan', 'feb', 'feb', 'feb', 'feb'],\n"
        "    'revenue': [120, 95, 143, 88, 131, 102, 150, 91]})\n")
REPLIES = [
    code(LOAD + "print(sales.groupby('region')['revnue'].sum())",
         "Thought: load the sales and add up the revenue of each region."),
    code("by_region = sales.groupby('region')['revenue'].sum().sort_values()\nprint(by_region)\n"
         "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(5, 2.4))\n"
         "ax.barh(by_region.index, by_region.values, color='#4c72b0')\nax.set_xlabel('revenue')\n"
         "fig.tight_layout()", "Thought: the column is 'revenue', not 'revnue'. Total it and plot it."),
    code("final_answer({'region': by_region.idxmax(), 'revenue': int(by_region.max())})",
         "Thought: east has the most revenue."),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "docs" / "view-run.png"))
    parser.add_argument("--keep", metavar="DIR", help="also keep the run and its page in DIR")
    args = parser.parse_args()
    from PIL import Image

    from executors import SubprocessExecutor

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="codeagent-view-shot-"))
    try:
        with SubprocessExecutor(authorized_imports=["pandas", "matplotlib.*"]) as executor:
            run = scripted_run(REPLIES, task="Which region sold the most over January and February? "
                               "Plot the revenue of each region.", out=work, executor=executor)
        page = write_site(run.save(work / "run.json"))[0]
        with Chromium() as browser:
            tab = browser.page(1000, 1500)
            tab.goto(page.as_uri())
            shot = Image.open(io.BytesIO(tab.screenshot()))
        # a palette PNG at 80% scale: small in the repository, still readable
        small = shot.resize((shot.width * 4 // 5, shot.height * 4 // 5), Image.LANCZOS).convert("RGB")
        small.quantize(colors=256, method=Image.Quantize.MAXCOVERAGE).save(args.out, optimize=True)
        print(f"{args.out}: {Path(args.out).stat().st_size / 1000:.0f} kB ({run.status}, {len(run.steps)} steps)")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
