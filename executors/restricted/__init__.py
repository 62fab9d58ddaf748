"""The in-process restricted runtime: policy check → instrument → compile → exec under guards.
(docs/architecture.md: the rooms, where each rule of the policy lives, and the path of one step.)

Used by LocalExecutor, and by the worker process under the restricted policy. One folder per
concern; a room imports only from the rooms listed before it (tests/test_layout.py):

    compiler/      what the code may say: policy tables, the AST check, the instrumentation
    guards/        what instrumented code calls at run time: guarded operations, errors,
                   generators closed in the step, evaluated strings checked by the policy
    capabilities/  the audit-hook guard: what libraries may do on a step's thread
    limits/        operation budget, deadline (watchdog), Ctrl-C, output bound, process caps
    host/          between the step and the host: host objects read-only, host tracers,
                   tool calls as data, the working directory
    libraries/     authorized imports and their proxies, trusted imports, members never
                   handed over, hooks and patches, library settings put back
    execution/     the step itself: compile_step, RestrictedRuntime, namespace, report, served
"""

from .execution.report import safe_repr
from .execution.runtime import RestrictedRuntime
from .guards.errors import PolicyError

__all__ = ["RestrictedRuntime", "PolicyError", "safe_repr"]
