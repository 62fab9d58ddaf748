"""Compatibility re-export: module proxies and the guarded import now live in
`executors.restricted.sandbox_modules`. Import from there; this module stays only while tests
still import the old path."""

from .restricted.sandbox_modules import Authorization, ModuleProxy, SandboxImporter

__all__ = ["Authorization", "ModuleProxy", "SandboxImporter"]
