"""DockerExecutor overhead, measured side by side in one run.

    source <(scripts/docker-engine.sh --env) && .venv/bin/python benchmarks/docker_overhead.py

Measures, on the engine DOCKER_HOST points at:
  - container ready: a new DockerExecutor (engine client warm, image present) to its first result
  - warm round trip: execute("1 + 1") on a warm executor
  - tool call: execute("add(1, 2)") (one host tool call through the protocol), and the cost of
    one more call inside a step (a loop of 100 calls)
  - docker exec: the same action run with `docker exec <container> python3 -c ...`, the way an
    executor without a warm worker pays per step; docker run: a fresh container per action
Targets (issue 6): warm round trip <= 3 ms, tool call <= 3 ms, container ready <= 0.6 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from executors import DockerExecutor, Limits  # noqa: E402
from executors.docker.executor import _client, ensure_image  # noqa: E402


def add(a, b):
    return a + b


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def check(r) -> None:
    if r.error is not None:
        raise SystemExit(f"benchmark action failed: {r.error}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, default=300, help="warm repetitions (default 300)")
    p.add_argument("--starts", type=int, default=5, help="container starts to time (default 5)")
    p.add_argument("--execs", type=int, default=20, help="docker exec runs to time (default 20)")
    p.add_argument("--image", help="image (default: the offline-built default image)")
    a = p.parse_args()

    try:
        client = _client(None)
    except Exception as e:
        print(f"no Docker engine: {e}\nstart one: source <(scripts/docker-engine.sh --env)", file=sys.stderr)
        return 1
    image = a.image or ensure_image(client=client)
    limits = Limits(timeout_s=10)

    # Warm the engine client, the sweep and the page cache once, outside the measurements.
    with DockerExecutor(image=image, limits=limits) as ex:
        check(ex.execute("1 + 1"))

    # Start-to-first-result includes container create/attach/start, the worker's boot, configure
    # and the first execute; the removal at close() is timed separately.
    starts, removals = [], []
    for _ in range(a.starts):
        ex = DockerExecutor(image=image, limits=limits)
        t = time.perf_counter()
        check(ex.execute("1 + 1"))
        starts.append(time.perf_counter() - t)
        t = time.perf_counter()
        ex.close()
        removals.append(time.perf_counter() - t)

    with DockerExecutor(tools={"add": add}, image=image, limits=limits) as ex:
        check(ex.execute("1 + 1"))
        for _ in range(20):  # settle
            ex.execute("1 + 1")
        warm = timed(lambda: check(ex.execute("1 + 1")), a.n)
        tool = timed(lambda: check(ex.execute("add(1, 2)")), a.n)
        loop100 = timed(lambda: check(ex.execute("for i in range(100):\n    add(i, 1)")), max(10, a.n // 10))
        ping = timed(ex.ping, a.n)

        cid = ex.container_id

        def docker_exec() -> None:
            e = client.api.exec_create(cid, ["python3", "-c", "print(1 + 1)"], user="65534:65534")
            out = client.api.exec_start(e["Id"])
            if out.strip() != b"2":
                raise SystemExit(f"docker exec gave {out!r}")

        docker_exec()
        execs = timed(docker_exec, a.execs)

    def docker_run() -> None:
        out = client.containers.run(image, ["python3", "-c", "print(1 + 1)"], remove=True,
                                    network_mode="none", user="65534:65534")
        if out.strip() != b"2":
            raise SystemExit(f"docker run gave {out!r}")

    runs = timed(docker_run, a.starts)

    med = statistics.median
    per_call = (med(loop100) - med(warm)) / 100
    exec_ms, run_ms = med(execs) * 1e3, med(runs) * 1e3
    # (what, ms, target, the docker way it is compared with)
    rows = [
        ("container ready (new executor -> first result)", med(starts) * 1e3, 600.0, "run"),
        ("container removal at close()", med(removals) * 1e3, None, None),
        ("warm round trip: execute('1 + 1')", med(warm) * 1e3, 3.0, "exec"),
        ("protocol ping (no code run)", med(ping) * 1e3, None, "exec"),
        ("tool call: execute('add(1, 2)')", med(tool) * 1e3, 3.0, "exec"),
        ("one more tool call inside a step", per_call * 1e3, None, "exec"),
        ("docker exec python3 -c 'print(1 + 1)'", exec_ms, None, None),
        ("docker run --rm python3 -c 'print(1 + 1)'", run_ms, None, None),
    ]
    print(f"DockerExecutor overhead (image {image}; medians; n={a.n}, starts={a.starts}, "
          f"execs={a.execs})")
    print(f"{'what':50} {'ms':>9} {'target':>10}  {'docker way / ours':>18}")
    failed = []
    for name, ms, target, versus in rows:
        status = ""
        if target is not None:
            status = f"{target:g} {'ok' if ms <= target else 'MISS'}"
            if ms > target:
                failed.append(name)
        ratio = ""
        if versus is not None and ms > 0:
            ratio = f"{(exec_ms if versus == 'exec' else run_ms) / ms:.1f}x vs {versus}"
        print(f"{name:50} {ms:9.3f} {status:>10}  {ratio:>18}")
    print(f"p95: warm {sorted(warm)[int(0.95 * len(warm))] * 1e3:.3f} ms, "
          f"tool {sorted(tool)[int(0.95 * len(tool))] * 1e3:.3f} ms")
    if failed:
        print("missed targets: " + "; ".join(failed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
