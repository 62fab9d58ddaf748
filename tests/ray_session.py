"""A local Ray instance for tests, whose session folder lives in a temp dir of its own, removed
after shutdown (by default Ray leaves /tmp/ray/session_* behind)."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from typing import Any

from codeagent.batch.backends.ray_actors import ray_session_root


@contextlib.contextmanager
def local_ray() -> Iterator[Any]:
    import ray

    root = ray_session_root()
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=root)
        try:
            yield ray
        finally:
            ray.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)
