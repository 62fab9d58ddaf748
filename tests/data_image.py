"""The data image (numpy, pandas, matplotlib added offline) for the Docker data tests, built once.

`data_docker(**kwargs)` makes a DockerExecutor on that image (open policy) or calls
`unavailable(...)` (skip here, fail under CI=true) when Docker cannot run. The image is built on
first use and then found by its tag (a digest of the package versions), so later sessions reuse it.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

from unavailable import unavailable

DATA_PACKAGES = ["numpy", "pandas", "matplotlib"]
DATA_IMPORTS = ["numpy.*", "pandas.*", "matplotlib.*", "PIL.*", "io"]
BUILD_SECONDS: list[float] = []  # how long this session's ensure took (for the report)


def docker_enabled() -> None:
    if os.environ.get("CI") != "true" and os.environ.get("CODEAGENT_DOCKER") != "1":
        unavailable("Docker data tests need CI=true or CODEAGENT_DOCKER=1")
    from conftest import docker_engine_problem

    problem = docker_engine_problem()
    if problem is not None:
        unavailable(f"the docker data tests need a Docker engine: {problem}")


@functools.lru_cache(maxsize=1)
def data_image_tag() -> str:
    from executors.docker.image import ensure_image

    started = time.perf_counter()
    tag = ensure_image(packages=DATA_PACKAGES)
    BUILD_SECONDS.append(time.perf_counter() - started)
    return tag


def data_docker(**kwargs: Any) -> Any:
    docker_enabled()
    from executors import DockerExecutor

    data_image_tag()
    kwargs.setdefault("authorized_imports", DATA_IMPORTS)
    return DockerExecutor(packages=DATA_PACKAGES, **kwargs)


# -- the PyData stack (issue 22): one image with every library of tests/pydata_programs.py -------
PYDATA_PACKAGES = ["numpy", "pandas", "matplotlib", "scipy", "scikit-learn", "statsmodels", "seaborn",
                   "polars", "pyarrow", "sympy", "networkx"]


@functools.lru_cache(maxsize=1)
def pydata_image_tag() -> str:
    from executors.docker.image import ensure_image

    return ensure_image(packages=PYDATA_PACKAGES)


def pydata_docker(**kwargs: Any) -> Any:
    """A DockerExecutor on the PyData image (built on first use, then found by its tag)."""
    docker_enabled()
    from executors import DockerExecutor

    pydata_image_tag()
    return DockerExecutor(packages=PYDATA_PACKAGES, **kwargs)
