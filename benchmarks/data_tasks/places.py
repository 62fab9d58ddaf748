"""Where the suite's actions run: one warm executor per (executor kind, suite), made on first use.

The shop suite's executors grant nothing; the data-file suite's grant `Access(read=[DATA_DIR])` and
authorize pandas, numpy, matplotlib, scipy, scikit-learn and statsmodels (the restricted executors
refuse other imports). Docker runs the data-file suite in an image that has those packages
(`DockerExecutor(packages=...)` builds it once per set of versions, offline, from the host's
copies); the shop suite needs only the default image. Each agent resets the executor it is handed,
so runs do not see each other's variables; the executors are closed with the `Places`.
(Not named executors.py: this directory is on sys.path, and that would shadow the package.)
"""

from __future__ import annotations

import functools
from typing import Any

from files_suite import DATA_DIR, IMPORTS, PACKAGES

from executors import Access, Limits

EXECUTORS = ("local", "subprocess", "docker")
FILE_LIMITS = Limits(timeout_s=60)  # a cold `import pandas` takes seconds in a one-CPU container


@functools.cache
def docker_problem() -> str | None:
    """None when a Docker engine answers, else why the docker column is skipped."""
    from executors.docker import engine_problem

    return engine_problem()


def make_executor(kind: str, suite: str) -> Any:
    files = suite == "files"
    options: dict[str, Any] = {"access": Access(read=[str(DATA_DIR)])} if files else {}
    if files:
        options["limits"] = FILE_LIMITS
    if kind == "local":
        from executors import LocalExecutor

        return LocalExecutor(authorized_imports=IMPORTS if files else None, **options)
    if kind == "subprocess":
        from executors import SubprocessExecutor

        return SubprocessExecutor(authorized_imports=IMPORTS if files else None, **options)
    if kind == "docker":
        from executors import DockerExecutor

        if files:
            options["packages"] = PACKAGES
        return DockerExecutor(**options)
    raise ValueError(f"unknown executor {kind!r}; executors: {', '.join(EXECUTORS)}")


class Places:
    """The suite's executors, made on first use and closed together."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, str], Any] = {}

    def get(self, kind: str, suite: str) -> Any:
        key = (kind, suite)
        if key not in self._made:
            self._made[key] = make_executor(kind, suite)
        return self._made[key]

    def drop(self, kind: str, suite: str) -> None:
        """Forget (and close) an executor that broke: the next run gets a fresh one."""
        ex = self._made.pop((kind, suite), None)
        if ex is not None:
            ex.close()

    def close(self) -> None:
        while self._made:
            _, ex = self._made.popitem()
            ex.close()

    def __enter__(self) -> Places:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
