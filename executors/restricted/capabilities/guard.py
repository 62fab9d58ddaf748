"""The capability guard under the policy: a PEP 578 audit hook that holds what libraries can do.

The restricted policy governs what model code *says*; the libraries it may import can still *do*
anything the process can (open files, unpickle, load native code, start processes, open sockets).
CPython reports those actions as audit events (`sys.audit`) before it performs them, on the thread
that performs them. This module installs one audit hook per process that judges events only on a
thread that is running a step, against that step's grants (`Grants`); every other thread, and the
same thread outside a step, pays one global check.

What each event means and the rule applied to it is a table (`capability_table.py`), so a user can
read what is enforced. Refusals raise `CapabilityError`, a `PermissionError`, which the model sees
as a clear error naming the capability and the setting that grants it. The hook cannot be removed
(CPython has no API for that) and its state is out of the model's reach (nothing here is in the
step's namespace; the policy refuses the frame and underscore attributes that could lead here).

Stdlib only: the subprocess/container worker uses it too.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .grants import (
    SYSTEM_READ_ROOTS,
    CapabilityError,
    Grants,
    StepContext,
    _resolve,
    python_roots,
)
from .import_rules import LIBRARY_PREFIX_RULES, LIBRARY_RULES
from .primitives import install_primitives
from .table import PREFIX_RULES, RULES

__all__ = ["CapabilityError", "CapabilityGuard", "Grants", "GUARD", "python_roots"]


class _Local(threading.local):
    step: StepContext | None = None


class CapabilityGuard:
    """One per process. `install()` adds the audit hook once; `step(grants)` governs a step."""

    def __init__(self) -> None:
        self._installed = False
        self._lock = threading.Lock()
        self._local = _Local()
        self._active = 0  # steps running on any thread: the hook's fast exit when 0
        self._roots: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    @property
    def installed(self) -> bool:
        return self._installed

    def install(self) -> None:
        with self._lock:
            if self._installed:
                return
            local = self._local
            rules, prefix_rules = RULES, PREFIX_RULES
            library_rules, library_prefix_rules = LIBRARY_RULES, LIBRARY_PREFIX_RULES
            guard = self
            # Events no rule of either table judges (builtins.id above all: matplotlib raises
            # thousands a step), learnt as they come: one dict lookup instead of the walk below.
            # Bounded: sys.audit() takes any name.
            unjudged: dict[str, bool] = {}

            def audit(event: str, args: tuple) -> None:
                if not guard._active or event in unjudged:
                    return
                if len(unjudged) < 4096:
                    prefix = event.partition(".")[0]
                    if event not in rules and event not in library_rules and \
                            prefix not in prefix_rules and prefix not in library_prefix_rules:
                        unjudged[event] = True
                        return
                step = local.step
                if step is None or step.suspended or step.busy:
                    return
                if step.library:  # a trusted import: the library's own rules
                    rule = library_rules.get(event)
                    if rule is None:
                        rule = library_prefix_rules.get(event.partition(".")[0])
                        if rule is None:
                            return
                else:
                    rule = rules.get(event)
                    if rule is None:
                        rule = prefix_rules.get(event.partition(".")[0])
                        if rule is None:
                            return
                step.busy = True
                try:
                    rule(step, event, args)
                finally:
                    step.busy = False

            full, code_only = python_roots()
            system = tuple(_resolve(p) for p in SYSTEM_READ_ROOTS if os.path.exists(p))
            self._roots = ((*full, *system), code_only)
            sys.addaudithook(audit)
            install_primitives(self.in_step)
            self._installed = True

    def enter(self, grants: Grants, caller: Any = None, run: Any = None) -> StepContext:
        """Govern the current thread from now until `leave(ctx)`. `caller`: the frame that runs
        the step (default: the caller's); it and the frames below it are the host's. `run`: the
        step's run state (a trusted import defers its deadline)."""
        if not self._installed:
            self.install()
        full, code_only = self._roots or ((), ())
        ctx = StepContext(
            grants=grants,
            read_roots=full,
            code_roots=code_only,
            caller=caller or sys._getframe(1),
            run=run,
        )
        local = self._local
        ctx.outer = local.step
        local.step = ctx
        with self._lock:
            self._active += 1
        return ctx

    def leave(self, ctx: StepContext) -> None:
        with self._lock:
            self._active -= 1
        self._local.step = ctx.outer
        ctx.outer = ctx.caller = None

    @contextmanager
    def step(self, grants: Grants) -> Iterator[StepContext]:
        """Govern the current thread for the duration of a `with` block."""
        ctx = self.enter(grants, sys._getframe(2))
        try:
            yield ctx
        finally:
            self.leave(ctx)

    @contextmanager
    def suspended(self) -> Iterator[None]:
        """Host code called from a step (a tool) runs with the host's own capabilities."""
        step = self._local.step
        if step is None:
            yield
            return
        step.suspended += 1
        try:
            yield
        finally:
            step.suspended -= 1

    def current(self) -> StepContext | None:
        return self._local.step

    @contextmanager
    def library(self, step: StepContext) -> Iterator[None]:
        """A trusted import on this thread (see restricted/trusted_imports.py): the library's
        own rules (table.LIBRARY_RULES); the thread and environment primitives stand aside (its
        helper threads start, it reads the process environment as at the host's own import)."""
        step.library += 1
        try:
            yield
        finally:
            step.library -= 1

    def in_step(self) -> bool:
        """This thread runs a step with its guard on (not suspended for host code, not inside
        a trusted import)."""
        if not self._active:
            return False
        step = self._local.step
        return step is not None and not step.suspended and not step.library


GUARD = CapabilityGuard()
