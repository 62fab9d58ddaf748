"""Writing a file so that a reader sees the old text or the new, never a torn one.

Write a temporary file in the same directory, fsync it, rename it over the target (atomic on
POSIX), then fsync the directory so the rename itself survives a power cut. A process killed at
any point leaves the previous file whole; the temporary file it may leave is named
`.<name>.<pid>.tmp` and ignored by every reader.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_atomic", "sync_path"]


def write_atomic(path: str | os.PathLike[str], text: str, *, sync: bool = True) -> Path:
    """Replace `path` with `text` (UTF-8) atomically. sync=False skips the fsyncs: still whole
    after a killed process (the rename is atomic), not after a power cut."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    data = text.encode("utf-8")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if sync:
        _sync_dir(path.parent)
    return path


def sync_path(path: Path) -> None:
    """fsync a file already written (and its directory): it survives a power cut."""
    _sync(path, os.O_RDONLY)
    _sync_dir(path.parent)


def _sync_dir(directory: Path) -> None:
    _sync(directory, os.O_RDONLY | os.O_DIRECTORY)


def _sync(path: Path, flags: int) -> None:
    try:
        fd = os.open(path, flags)
    except OSError:
        return  # (gone, or a platform without directory descriptors: nothing to make durable)
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
