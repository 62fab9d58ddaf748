"""The restricted runtime as the worker serves it: one `configure` message in, a runtime out.

The worker (`executors.worker`, stdlib only, the lowest floor) loads this module by name from the
package paths the host sends, so it never imports the floors above it; everything that knows
`Limits`, `Grants` and `RestrictedRuntime`'s constructor stays on this floor.
"""

from __future__ import annotations

from ...base import Limits, ToolError
from ..capabilities import Grants
from ..limits.output import OutputBuffer
from .runtime import RestrictedRuntime

__all__ = ["ToolError", "build", "grants", "read_native_output"]


def read_native_output(read) -> None:
    """`read()`: what native code wrote to the worker's fds 1/2 since the last call; the step's
    prints take it in first (CPython's order in the logs)."""
    OutputBuffer.native = staticmethod(read)


def build(*, tools: dict, authorized_imports: list, limits: dict, grants: Grants,
          workdir: str) -> RestrictedRuntime:
    """The runtime for one worker. `limits` is the worker's dict of limit fields (unknown keys are
    dropped). The authorized packages are not imported yet: libraries start threads as they
    load (pyarrow's, OpenMP's), and the kernel layer needs a single thread; the worker calls
    `runtime.warm_up()` once it is confined."""
    fields = set(Limits.__dataclass_fields__)
    return RestrictedRuntime(tools=tools, authorized_imports=list(authorized_imports),
                             limits=Limits(**{k: v for k, v in limits.items() if k in fields}),
                             grants=grants, workdir=workdir, warm=False)


def grants(value) -> Grants:
    """The capability guard's grants from Configure.grants (paths as the worker sees them); a bad
    value raises ValueError with the reason."""
    if value is None:
        return Grants()
    if type(value) is not dict:
        raise ValueError("grants must be an object")
    paths = {}
    for key in ("read", "write"):
        paths_of = value.get(key) or []
        if type(paths_of) is not list or not all(type(p) is str and p.startswith("/") for p in paths_of):
            raise ValueError(f"grants.{key} must be a list of absolute paths")
        paths[key] = paths_of
    network = value.get("network", False)
    if type(network) is not bool:
        raise ValueError("grants.network must be true or false")
    return Grants.of(read=paths["read"], write=paths["write"], network=network)
