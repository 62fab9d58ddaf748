"""`Session`: one executor configuration under test, ready to evaluate examples one by one."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Callable, Mapping
from typing import Any

from ...base import Limits
from ..attacks.canaries import CanaryFiles
from ..judging.evaluate import RunContext, is_in_process
from ..judging.outcome import Outcome
from ..judging.probes import probe_tools
from .runners import ForkRunner, InlineRunner, describe_in_child, make_executor

__all__ = ["Session", "CANARY_ENV"]

# The environment variable escape attempts try to print; its value is a fresh secret.
CANARY_ENV = "CODEAGENT_FUZZ_CANARY"


class Session:
    """One executor configuration under test: the canary planted, a marker path, the executor
    built by `factory` (in a forked child when isolated). `run()` evaluates one example.

        with Session(LocalExecutor) as s:
            s.run("escape", "import os\\nprint(os.environ)")
    """

    def __init__(
        self,
        factory: Callable[[], Any],
        *,
        tools: Mapping[str, Callable[..., Any]] | None = None,
        register_tools: bool = True,
        margin_s: float = 1.0,
        host_memory_margin_mb: float = 500.0,
        isolate: bool | None = None,
        open_policy: bool | None = None,
        marker: str | None = None,
    ) -> None:
        self.tools = probe_tools() if tools is None else dict(tools)
        self.secret = os.environ.get(CANARY_ENV) or "canary-" + secrets.token_hex(12)
        self._had_env = CANARY_ENV in os.environ
        os.environ[CANARY_ENV] = self.secret  # before any executor exists: workers inherit it
        self._marker_dir = None
        if marker is None:
            from ...access import owned_tempdir  # lazily: fuzzing loads no place
            self._marker_dir = owned_tempdir("codeagent-fuzz-marker-")
            marker = os.path.join(self._marker_dir, "ESCAPED")
        else:
            # A replayed example names the marker path of the campaign that saved it, whose folder
            # is long gone: what is made for it here is removed again at close.
            self._marker_dir = _first_missing(os.path.dirname(os.path.abspath(marker)))
            os.makedirs(os.path.dirname(marker) or ".", exist_ok=True)
        self.marker = marker
        # a secret file beside the marker, for reads outside the grants (attacks/canaries.py)
        self.canaries = CanaryFiles(marker, "fuzz-secret-" + secrets.token_hex(12))
        self.canaries.create()
        self.margin_s = margin_s
        ctx = RunContext(self.tools, register_tools, marker, self.secret, margin_s,
                         host_memory_margin_mb, open_policy, self.canaries)
        try:
            self._start(factory, ctx, isolate)
        except BaseException:
            self._cleanup()
            raise
        # Beyond this the executor is stuck: the runner gives up on it (and kills an isolated one).
        self.budget = self.limits.timeout_s + margin_s + 5.0

    def _start(self, factory: Callable[[], Any], ctx: RunContext, isolate: bool | None) -> None:
        """Build the executor once to learn its configuration, then place it in its runner."""
        if isolate is not False and hasattr(os, "fork"):
            info = describe_in_child(factory, ctx)  # (nothing of the executor's loads here)
            self.executor_name, self.in_process = info["name"], info["in_process"]
            self.limits = Limits(**info["limits"])
            self.authorized_imports = info["authorized_imports"] or None
            self.isolated = self.in_process if isolate is None else isolate
            self.runner: Any = ForkRunner(factory, ctx) if self.isolated else InlineRunner(factory, ctx)
            return
        probe = make_executor(factory, ctx)
        self.executor_name = type(probe).__name__
        self.limits: Limits = getattr(probe, "limits", None) or Limits()
        self.authorized_imports = getattr(probe, "authorized_imports", None)
        self.in_process = is_in_process(probe)
        self.isolated = (self.in_process if isolate is None else isolate) and hasattr(os, "fork")
        if self.isolated:
            with contextlib.suppress(Exception):
                probe.close()
            self.runner = ForkRunner(factory, ctx)
        else:
            self.runner = InlineRunner(factory, ctx, probe)

    def run(self, category: str, code: str, label: str = "") -> Outcome:
        """Evaluate one example: category is "program", "escape" or "bomb" (label: "kind/name")."""
        if category not in ("program", "escape", "bomb", "native"):
            raise ValueError(f"category must be program, escape, bomb or native, got {category!r}")
        return self.runner.run({"category": category, "code": code, "label": label or category}, self.budget)

    def _cleanup(self) -> None:
        if self._marker_dir:
            shutil.rmtree(self._marker_dir, ignore_errors=True)
        elif getattr(self, "canaries", None) is not None:
            shutil.rmtree(self.canaries.secret_dir, ignore_errors=True)
        if not self._had_env:
            os.environ.pop(CANARY_ENV, None)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.runner.close()
        self._cleanup()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _first_missing(path: str) -> str | None:
    """The outermost folder of `path` that does not exist yet (None when `path` exists)."""
    missing = None
    while path and not os.path.exists(path):
        missing = path
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return missing
