"""The exceptions the restricted runtime raises inside model code."""

from __future__ import annotations


class PolicyError(Exception):
    """Model code tried something the sandbox does not allow (raised at run time)."""


class ImportPolicyError(PolicyError, ImportError):
    """An import the sandbox does not allow (also an ImportError, as for a missing module)."""


class SandboxFinished(RuntimeError):
    """Model code was called after its step ended (by the host, or through a kept object)."""


class LimitExceeded(BaseException):
    """A resource limit was hit; a BaseException so `except Exception` cannot hide it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
