"""The capability guard under the policy: what libraries may do on a step's thread.

    grants.py   Grants (what a step may touch), StepContext, CapabilityError
    table.py    which audit events a step may raise, and why (the rules, with reasons)
    guard.py    the PEP 578 audit hook, installed once per process; GUARD.step(grants)

Stdlib only: the subprocess/container worker uses it too.
"""

from .grants import CapabilityError, Grants, StepContext
from .guard import GUARD, CapabilityGuard

__all__ = ["CapabilityError", "CapabilityGuard", "GUARD", "Grants", "StepContext"]
