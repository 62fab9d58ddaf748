"""Failing examples saved as .py files whose header says what failed and how to rerun them."""

from __future__ import annotations

import ast
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from .outcome import Outcome

__all__ = ["save_failure", "read_failure", "META_PREFIX", "RERUN_COMMAND"]

META_PREFIX = "# fuzz-meta: "
# The command that replays a saved file (the `codeagent fuzz` subcommand's module).
RERUN_COMMAND = "python -m codeagent.fuzz"
_HEADER_PREFIXES = ("# codeagent fuzz:", "#   ", "# rerun:", META_PREFIX)


def save_failure(outcome: Outcome, save_dir: str, options: Any, marker: str | None = None) -> Path:
    """Write a failing example under `save_dir`; `options` (executor, timeout, authorized_imports,
    tools) go into the rerun line and the metadata."""
    digest = hashlib.sha1(outcome.code.encode()).hexdigest()[:10]
    path = Path(save_dir) / f"{outcome.status}-{outcome.category}-{digest}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    rerun = f"{RERUN_COMMAND} --replay {path} --executor {options.executor} --timeout {options.timeout}"
    if options.authorized_imports:
        rerun += " --authorized-imports " + " ".join(options.authorized_imports)
    if options.tools:
        rerun += " --tools " + " ".join(options.tools)
    if marker is None:  # escape attempts name their marker path in their first lines
        found = re.search(r"^MARKER = ('[^'\n]*')$", outcome.code, re.M)
        marker = ast.literal_eval(found.group(1)) if found else None
    meta = {"category": outcome.category, "label": outcome.label, "status": outcome.status,
            "executor": options.executor, "timeout": options.timeout, "marker": marker}
    detail = "\n".join("#   " + line for line in (outcome.detail or "").splitlines()[:12])
    header = (f"# codeagent fuzz: {outcome.status} — {outcome.category} [{outcome.label}] "
              f"on the {options.executor} executor\n{detail}\n# rerun: {rerun}\n"
              f"{META_PREFIX}{json.dumps(meta)}\n")
    path.write_text(header + outcome.code.rstrip("\n") + "\n", encoding="utf-8")
    return path


def read_failure(path: str | Path) -> tuple[str, dict[str, Any]]:
    """(code, metadata) of a saved example: the header lines dropped, the metadata parsed."""
    text = Path(path).read_text(encoding="utf-8")
    meta: dict[str, Any] = {}
    for line in text.splitlines():
        if line.startswith(META_PREFIX):
            meta = json.loads(line[len(META_PREFIX):])
    code = "\n".join(line for line in text.splitlines(keepends=False)
                     if not line.startswith(_HEADER_PREFIXES)) + "\n"
    return code, meta
