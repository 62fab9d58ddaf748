"""Raw memory through authorized native libraries, closed by class: every way a library turns
an object into an address, a view past its base or an unchecked index, and what the in-process
runtime does about each (refuse, check the arguments, or copy). `routes.ROUTES` is the table
(docs/library-capabilities.md shows it); the other modules are the checks, placed at the
libraries' entry points and installed once per process with the other hooks (hooks.py).
"""

from .install import install_raw_memory_checks
from .members import MEMBER_CHECKS
from .routes import ROUTES

__all__ = ["MEMBER_CHECKS", "ROUTES", "install_raw_memory_checks"]
