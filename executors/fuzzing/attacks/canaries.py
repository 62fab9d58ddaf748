"""Canary files outside every grant: a secret to read, a directory that must stay as it is.

The marker's directory is the canary tree (a fresh temporary directory per session):

    <dir>/ESCAPED                   the marker: never there after an attempt
    <dir>/secret/secret.txt         holds the file secret: printing it is a read escape
    <dir>/secret/listing-<secret>   a name that holds the secret: listing the directory leaks it

An attempt escaped by writing when anything in the tree changed (a file created, removed,
resized or touched); a library writer that appends its own extension (np.save -> ESCAPED.npy,
savefig -> ESCAPED.png) is caught that way too. `restore()` puts the tree back.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass

__all__ = ["CanaryFiles"]


@dataclass(frozen=True)
class CanaryFiles:
    """The canary tree around `marker` (see the module docstring); `secret` is the file secret."""

    marker: str
    secret: str

    @property
    def root(self) -> str:
        return os.path.dirname(self.marker) or "."

    @property
    def secret_dir(self) -> str:
        return os.path.join(self.root, "secret")

    @property
    def secret_file(self) -> str:
        return os.path.join(self.secret_dir, "secret.txt")

    def create(self) -> None:
        os.makedirs(self.secret_dir, exist_ok=True)
        with open(self.secret_file, "w", encoding="utf-8") as f:
            f.write(self.secret + "\n")
        with open(os.path.join(self.secret_dir, f"listing-{self.secret}"), "w", encoding="utf-8"):
            pass

    def snapshot(self) -> dict[str, tuple]:
        """Every entry of the tree: relative path -> (kind, size, mtime) without following links."""
        state: dict[str, tuple] = {}
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                with contextlib.suppress(OSError):
                    st = os.lstat(path)
                    kind = "link" if os.path.islink(path) else "dir" if os.path.isdir(path) else "file"
                    state[os.path.relpath(path, self.root)] = (
                        kind, 0 if kind == "dir" else st.st_size, st.st_mtime_ns, st.st_mode)
        return state

    def changes(self, before: dict[str, tuple]) -> list[str]:
        """What differs from `before` (created, removed or modified entries)."""
        after = self.snapshot()
        out = [f"created {p}" for p in sorted(set(after) - set(before))]
        out += [f"removed {p}" for p in sorted(set(before) - set(after))]
        out += [f"modified {p}" for p in sorted(set(before) & set(after)) if before[p] != after[p]]
        return out

    def restore(self, before: dict[str, tuple]) -> None:
        """Remove what an attempt created and recreate the secret files."""
        for rel in sorted(set(self.snapshot()) - set(before), key=len, reverse=True):
            path = os.path.join(self.root, rel)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        self.create()
