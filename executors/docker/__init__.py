"""DockerExecutor: the worker in a hardened container, and the image it runs, built offline.

executor.py is the executor (mounts, grants, the engine client); container.py one container (its
settings, its byte channel, its labels, the sweep); image.py and packages.py the offline image;
engine.sh a private engine (installed and started as root: `codeagent docker setup --start-engine`).
"""

from __future__ import annotations

from pathlib import Path

from .executor import (
    DockerExecutor,
    build_image,
    default_image,
    engine_problem,
    ensure_image,
    sweep,
)
from .image import PROJECT_ENGINE_SOCKET, engine_url

# The private engine's script, carried in the package (a wheel has no scripts/ folder).
ENGINE_SCRIPT = Path(__file__).with_name("engine.sh")

__all__ = ["DockerExecutor", "ENGINE_SCRIPT", "PROJECT_ENGINE_SOCKET", "build_image", "default_image", "engine_problem",
           "engine_url", "ensure_image", "sweep"]
