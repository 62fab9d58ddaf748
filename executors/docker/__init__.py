"""DockerExecutor: the worker in a hardened container, and the image it runs, built offline.

executor.py is the executor (mounts, grants, the engine client); container.py one container (its
settings, its byte channel, its labels, the sweep); image.py and packages.py the offline image.
"""

from __future__ import annotations

from .executor import (
    DockerExecutor,
    build_image,
    default_image,
    engine_problem,
    ensure_image,
    sweep,
)

__all__ = ["DockerExecutor", "build_image", "default_image", "engine_problem", "ensure_image", "sweep"]
