"""`codeagent docker`: what DockerExecutor needs, set up from the installed package alone.

    codeagent docker setup [--start-engine] [--packages DIST ...] [--docker-url URL]
    codeagent docker status [--docker-url URL]
    codeagent docker stop-engine

`setup` finds a Docker engine (--docker-url, else $DOCKER_HOST, else the private engine's socket
/run/codeagent-docker.sock, else /var/run/docker.sock) and builds the worker image offline from
this Python (its interpreter, standard library and shared libraries; with --packages, those
distributions too): no registry, no download, a few seconds. Without an engine it says how to
start one; --start-engine starts a private one (needs root or sudo: it installs Debian's
docker.io when dockerd is missing and runs dockerd with its own socket and data root, without
touching the host's firewall). Needs the docker extra: pip install 'codeagent[docker]'.

Exit status: 0 ready, 1 no engine (or the image could not be built), 2 usage errors.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["build_parser", "main"]

HOW_TO_START = (
    "Start one, then run this again:\n"
    "  codeagent docker setup --start-engine   a private engine (root or sudo: installs Debian's docker.io\n"
    "                                          if dockerd is missing, starts it at {socket},\n"
    "                                          which codeagent finds without DOCKER_HOST)\n"
    "  or your own Docker (sudo systemctl start docker, Docker Desktop), with DOCKER_HOST set\n"
    "  if its socket is not /var/run/docker.sock"
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="codeagent docker", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    setup = sub.add_parser("setup", help="find (or start) an engine and build the worker image offline",
                           description="Find a Docker engine (or start a private one) and build the worker "
                                       "image offline from this Python.")
    setup.add_argument("--start-engine", action="store_true",
                       help="no engine answers: start a private one (root or sudo; installs Debian's docker.io "
                            "when dockerd is missing)")
    setup.add_argument("--packages", nargs="+", metavar="DIST", default=[],
                       help="also build the image with these distributions, copied from this Python's "
                            "environment (e.g. numpy pandas matplotlib): DockerExecutor(packages=[...])")
    setup.add_argument("--docker-url", metavar="URL", help="the engine (default: $DOCKER_HOST, else the "
                                                           "private engine's socket, else /var/run/docker.sock)")
    status = sub.add_parser("status", help="which engine, does it answer, is the worker image there")
    status.add_argument("--docker-url", metavar="URL", help="the engine (default: as setup finds it)")
    sub.add_parser("stop-engine", help="stop the private engine that --start-engine started")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        import docker  # noqa: F401
    except ImportError:
        print("codeagent docker: the docker SDK is missing: pip install 'codeagent[docker]'", file=sys.stderr)
        return 2
    if args.action == "stop-engine":
        return _engine_script("--stop")
    if args.action == "status":
        return _status(args.docker_url)
    return _setup(args)


def _engine_script(*flags: str) -> int:
    from executors.docker import ENGINE_SCRIPT

    env = {**os.environ, "CODEAGENT_PYTHON": sys.executable}
    return subprocess.run(["bash", str(ENGINE_SCRIPT), *flags], env=env, stdin=subprocess.DEVNULL).returncode


def _where(docker_url: str | None) -> str:
    from executors.docker import engine_url

    return engine_url(docker_url) or "unix:///var/run/docker.sock"


def _setup(args: argparse.Namespace) -> int:
    from executors.docker import PROJECT_ENGINE_SOCKET, engine_problem, ensure_image

    url = args.docker_url
    problem = engine_problem(url)
    if problem is not None and args.start_engine:
        print(f"codeagent docker: no engine answers at {_where(url)}: starting a private one", file=sys.stderr)
        if _engine_script() != 0:
            print("codeagent docker: the private engine did not start (its messages are above)", file=sys.stderr)
            return 1
        socket = os.environ.get("CODEAGENT_DOCKER_SOCK", PROJECT_ENGINE_SOCKET)
        url = url or f"unix://{socket}"
        problem = engine_problem(url)
    if problem is not None:
        print(f"codeagent docker: no Docker engine answers at {_where(url)} ({problem}).\n"
              + HOW_TO_START.format(socket=PROJECT_ENGINE_SOCKET), file=sys.stderr)
        return 1
    for packages in ([], *([args.packages] if args.packages else [])):
        t0 = time.perf_counter()
        try:
            tag = ensure_image(docker_url=url, packages=packages or None)
        except Exception as exc:  # noqa: BLE001 - a build that failed: say why, in one line
            print(f"codeagent docker: the worker image could not be built: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
            return 1
        took = time.perf_counter() - t0
        print(f"codeagent docker: image {tag} ready ({took:.1f} s)", file=sys.stderr)
        print(tag)
    print(f"codeagent docker: DockerExecutor() and --executor docker run on the engine at {_where(url)}"
          + ("" if url is None or url == _where(None) else f" (pass docker_url={url!r} or set DOCKER_HOST)"),
          file=sys.stderr)
    return 0


def _status(docker_url: str | None) -> int:
    from executors.docker import PROJECT_ENGINE_SOCKET, default_image, engine_problem
    from executors.docker.image import connect

    where = _where(docker_url)
    problem = engine_problem(docker_url)
    print(f"engine: {where}: {'answers' if problem is None else problem}")
    if problem is not None:
        print(HOW_TO_START.format(socket=PROJECT_ENGINE_SOCKET))
        return 1
    client: Any = connect(docker_url, timeout=30)
    images = sorted(t for image in client.images.list() for t in image.tags if t.startswith("codeagent-python:"))
    wanted = default_image()
    print(f"worker image: {wanted} {'present' if wanted in images else 'missing: codeagent docker setup builds it'}")
    for tag in images:
        if tag != wanted:
            print(f"  also: {tag}")
    return 0 if wanted in images else 1
