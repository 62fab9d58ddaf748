"""What a PATH given to `codeagent view` holds, read as hostile files: a saved run, a batch folder,
a folder of runs (`run --out DIR`), or a folder of figures (`exec --out DIR`, or a run still going).

Also the fingerprint of the files a page was built from, which the live server compares to
decide when a page must reload.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..batch.store import META, RESULTS
from ..batch.summary import natural_key
from ..runs.record import RunResult
from ..runs.record_file import load_record

__all__ = ["ViewError", "kind_of", "load_run", "run_files", "figure_files", "fingerprint", "last_session",
           "natural_key", "batch_dir", "folder_listing"]

MAX_RUN_BYTES = 200_000_000  # a run file larger than this is not a run anyone saved


class ViewError(Exception):
    """PATH cannot be shown: the message names the file and what to pass instead."""


def load_run(path: Path) -> RunResult:
    """A saved RunResult, its attachments found beside it; ViewError says why not."""
    try:
        if path.stat().st_size > MAX_RUN_BYTES:
            raise ViewError(f"{path}: {path.stat().st_size:,} bytes is too large for a saved run")
        return load_record(path)
    except OSError as exc:
        raise ViewError(f"cannot read {path}: {exc.strerror or exc}")
    except UnicodeDecodeError:
        raise ViewError(f"{path} is not a saved run: it is not UTF-8 text")
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        first = str(exc).strip().splitlines()
        why = first[1].strip() if len(first) > 1 else (first[0] if first else "")
        raise ViewError(f"{path} is not a saved run (RunResult JSON): {why[:200]}")


def run_files(folder: Path) -> tuple[list[Path], list[ViewError]]:
    """The saved runs in a folder (oldest first), and why each other .json file is not one."""
    found, bad = [], []
    for path in sorted(folder.glob("*.json"), key=_mtime):
        if not path.is_file():
            continue
        try:
            load_run(path)
        except ViewError as exc:
            bad.append(exc)
            continue
        found.append(path)
    return found, bad


def _mtime(path: Path) -> tuple[float, str]:
    try:
        return path.stat().st_mtime, path.name
    except OSError:
        return 0.0, path.name


def figure_files(folder: Path) -> list[Path]:
    # figure-2 before figure-10
    return sorted((p for p in folder.glob("*.png") if p.is_file()), key=lambda p: natural_key(p.name))


def kind_of(path: Path) -> str:
    """"run", "batch", "runs" or "figures"; ViewError for anything else."""
    if not path.exists():
        raise ViewError(f"{path} does not exist: pass a saved run (.json), a batch folder or a run's --out folder")
    if path.is_file():
        if path.name == RESULTS:
            return "batch"
        load_run(path)  # the error now, naming the file, rather than a page that says it
        return "run"
    if (path / RESULTS).is_file():
        return "batch"
    runs, bad = run_files(path)
    if runs:
        return "runs"
    if figure_files(path):
        return "figures"
    if bad:
        raise ViewError(str(bad[0]))
    raise ViewError(f"{path} holds no saved run, batch ({RESULTS}) or figure: "
                    "pass the --out folder of `codeagent run`, `exec` or `batch`, or a run's .json")


def batch_dir(path: Path) -> Path:
    return path.parent if path.is_file() else path


def last_session(folder: Path) -> dict[str, Any] | None:
    """The last session of batch.json (how the batch was run), or None."""
    try:
        meta = json.loads((folder / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    sessions = meta.get("sessions") if isinstance(meta, dict) else None
    return sessions[-1] if isinstance(sessions, list) and sessions and isinstance(sessions[-1], dict) else None


def fingerprint(paths: Iterable[Path]) -> str:
    """Changes when any of the files changes, appears or goes (size and modification time)."""
    digest = hashlib.sha256()
    for path in paths:
        try:
            st = os.stat(path)
            digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
        except OSError:
            digest.update(f"{path}\0-\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:16]


def folder_listing(folder: Path) -> list[Path]:
    """The folder itself (its mtime changes when a file is added or renamed into it) and its files."""
    try:
        return [folder, *sorted(p for p in folder.iterdir() if p.suffix in (".json", ".png", ".jsonl"))]
    except OSError:
        return [folder]

