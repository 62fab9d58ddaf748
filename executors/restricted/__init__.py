"""The in-process restricted runtime: policy → instrument → compile → exec under guards.

Used by LocalExecutor, and by the worker process under the restricted policy.
"""

from .runtime import PolicyError, RestrictedRuntime, safe_repr

__all__ = ["RestrictedRuntime", "PolicyError", "safe_repr"]
