"""The one place the strategies import hypothesis, with an error that says how to get it.

Hypothesis is a development dependency: `import executors` never needs it, only the strategies
and campaigns of this package do.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the user's environment
    raise ImportError(
        "executors.fuzzing (and executors.strategies) needs hypothesis: pip install hypothesis "
        "hypothesmith (or the project's 'fuzz' extra)"
    ) from exc

__all__ = ["st", "private_storage"]


@contextlib.contextmanager
def private_storage() -> Iterator[None]:
    """Keep hypothesis's files out of the user's current directory during a campaign.

    Campaigns use no example database, but hypothesis still caches under `./.hypothesis` (the
    constants it extracts from local modules): `codeagent fuzz` run in a project would leave that
    folder behind. During the campaign its storage is a temporary folder, removed afterwards,
    unless the user chose a place (HYPOTHESIS_STORAGE_DIRECTORY).
    """
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        yield
        return
    from hypothesis import configuration

    # The module keeps the chosen home in a private global; None means "not chosen yet".
    previous = getattr(configuration, "__hypothesis_home_directory", None)
    from ..access import owned_tempdir  # lazily: fuzzing loads no place
    folder = owned_tempdir("codeagent-hypothesis-")
    configuration.set_hypothesis_home_dir(folder)
    try:
        yield
    finally:
        configuration.set_hypothesis_home_dir(previous)
        shutil.rmtree(folder, ignore_errors=True)
