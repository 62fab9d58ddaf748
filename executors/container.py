"""The old home of DockerExecutor and its image helpers: a re-export kept for one release.

Import from `executors` (DockerExecutor) or `executors.docker` (build_image, ensure_image, ...).
"""

from __future__ import annotations

from .docker.executor import (  # noqa: F401 - the names this module exported before the move
    DockerExecutor,
    build_image,
    default_image,
    engine_problem,
    ensure_image,
    sweep,
)

__all__ = ["DockerExecutor", "build_image", "default_image", "engine_problem", "ensure_image", "sweep"]
