"""What a figure costs to come back, per executor, and what the data image costs to build.

1. Round trip: the same step (a 640×480 line plot of 1,000 points) with the figure closed at the
   end vs left open (rendered to PNG, sent across the boundary, closed), interleaved rep by rep in
   each executor; medians side by side, their ratio and difference.
2. The data image (numpy + pandas + matplotlib added offline): build time from nothing (a fresh
   tag) and size, next to the default image's size.

    .venv/bin/python benchmarks/figure_roundtrip.py [--reps 15] [--no-docker] [--no-build]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from executors import Limits  # noqa: E402

IMPORTS = ["numpy.*", "pandas.*", "matplotlib.*"]
PACKAGES = ["numpy", "pandas", "matplotlib"]
SETUP = "import numpy as np\nimport matplotlib.pyplot as plt\nx = np.linspace(0, 10, 1000)\ny = np.sin(x)\n"
PLOT = "fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)\nax.plot(x, y)\nax.set_title('sin')\n"
WITHOUT = PLOT + "plt.close(fig)\n"
WITH = PLOT


def executors(docker: bool) -> dict:
    from executors import LocalExecutor, SubprocessExecutor

    limits = Limits(timeout_s=30)
    made = {
        "CPython (baseline)": _CPython,
        "LocalExecutor": lambda: LocalExecutor(authorized_imports=IMPORTS, limits=limits),
        "Subprocess restricted": lambda: SubprocessExecutor(authorized_imports=IMPORTS, limits=limits),
        "Subprocess open": lambda: SubprocessExecutor(policy="open", limits=limits),
    }
    if docker:
        from executors import DockerExecutor

        made["Docker open"] = lambda: DockerExecutor(packages=PACKAGES, authorized_imports=IMPORTS,
                                                     limits=limits)
    return made


def round_trips(makes: dict, reps: int) -> dict[str, tuple[float, float, int]]:
    """Every executor open at once, measured rep by rep in turn (interleaved: on a noisy machine
    a burst of load then hits all of them, not one)."""
    from contextlib import ExitStack

    with ExitStack() as stack:
        opened = {name: stack.enter_context(make()) for name, make in makes.items()}
        for ex in opened.values():
            for code in (SETUP, WITH, WITHOUT):  # imports, font cache, first draw
                result = ex.execute(code)
                assert result.error is None, result.error
        times = {name: ([], [], 0) for name in opened}
        for _ in range(reps):
            for name, ex in opened.items():
                without, with_, _size = times[name]
                t = time.perf_counter()
                ex.execute(WITHOUT)
                without.append(time.perf_counter() - t)
                t = time.perf_counter()
                result = ex.execute(WITH)
                with_.append(time.perf_counter() - t)
                assert len(result.attachments) == 1 and result.attachments[0].width == 640
                times[name] = (without, with_, result.attachments[0].size)
    return {name: (statistics.median(w), statistics.median(r), size)
            for name, (w, r, size) in times.items()}


class _CPython:
    """The baseline: plain exec in this process; "returned" is the same savefig into memory."""

    def __init__(self) -> None:
        import os

        os.environ.setdefault("MPLBACKEND", "Agg")
        self.ns: dict = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, code: str):
        from types import SimpleNamespace

        exec(code, self.ns)
        attachments = []
        if code == WITH:
            import io

            buffer = io.BytesIO()
            self.ns["fig"].savefig(buffer, format="png")
            self.ns["plt"].close(self.ns["fig"])
            attachments = [SimpleNamespace(width=640, size=len(buffer.getvalue()))]
        return SimpleNamespace(error=None, attachments=attachments)


def build_figures() -> None:
    from executors.docker.executor import _client
    from executors.docker.image import build_image, plan_image

    client = _client(None)
    plan = plan_image(PACKAGES)
    tag = f"codeagent-bench:{int(time.time())}"
    started = time.perf_counter()
    build_image(tag, plan=plan, client=client)
    seconds = time.perf_counter() - started
    size = client.images.get(tag).attrs["Size"]
    try:
        base = client.images.get(plan_image().tag).attrs["Size"]
    except Exception:  # noqa: BLE001 - the default image is not built here
        base = None
    client.images.remove(tag)
    print(f"\ndata image ({plan.versions}):")
    print(f"  build from nothing: {seconds:.1f} s, size {size / 1e6:.0f} MB"
          + (f" (default image {base / 1e6:.0f} MB, +{(size - base) / 1e6:.0f} MB)" if base else ""))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--no-docker", action="store_true")
    p.add_argument("--no-build", action="store_true")
    a = p.parse_args(argv)
    print(f"a 640×480 line plot returned as a PNG vs the same step closing it (median of {a.reps}, "
          "executors interleaved rep by rep):")
    print(f"  {'executor':24} {'closed':>9} {'returned':>9} {'ratio':>6} {'cost':>8} {'PNG':>7}")
    for name, (without, with_, size) in round_trips(executors(not a.no_docker), a.reps).items():
        print(f"  {name:24} {without * 1e3:7.1f}ms {with_ * 1e3:7.1f}ms {with_ / without:5.2f}x "
              f"{(with_ - without) * 1e3:6.1f}ms {size / 1e3:5.1f}kB")
    if not a.no_docker and not a.no_build:
        build_figures()
    return 0


if __name__ == "__main__":
    sys.exit(main())
