"""Compatibility re-export: the policy now lives in `executors.restricted` (tables in
`restricted/policy.py`, the AST walk in `restricted/checker.py`). Import from there; this module
stays only while tests still import the old path."""

from .restricted.checker import PolicyChecker, Violation, inspect_tree
from .restricted.policy import (
    ALLOWED_NODES,
    DEFINABLE_DUNDERS,
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_BUILTINS,
    FORMAT_ATTRIBUTES,
    GUARDED_LOADS,
    HIDDEN_MODULE_MEMBERS,
    IO_ALLOWED,
    PUBLIC_UNDERSCORE_NAMES,
    READABLE_DUNDERS,
    REFUSED_NODE_ADVICE,
    is_private_name,
)

__all__ = [
    "ALLOWED_NODES", "DEFINABLE_DUNDERS", "FORBIDDEN_ATTRIBUTES", "FORBIDDEN_BUILTINS",
    "FORMAT_ATTRIBUTES", "GUARDED_LOADS", "HIDDEN_MODULE_MEMBERS", "IO_ALLOWED",
    "PUBLIC_UNDERSCORE_NAMES", "READABLE_DUNDERS", "REFUSED_NODE_ADVICE", "PolicyChecker",
    "Violation", "inspect_tree", "is_private_name",
]
