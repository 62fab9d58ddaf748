"""The in-process restricted runtime: policy check → instrument → compile → exec under guards.
(docs/architecture.md: where each rule of the policy lives, and the path of one step.)

Used by LocalExecutor, and by the worker process under the restricted policy. The modules, each
importing only from those above it:

    names           the names the instrumenter writes and the runtime binds (`_live`, `_for`, ...)
    policy          the whitelist as data: allowed syntax, dunders, hidden members, with reasons
    errors          PolicyError, LimitExceeded, ... (raised inside model code)
    output          the captured print() output
    watchdog        the thread that enforces deadlines (and the CPU-time backstop)
    caps            process-wide caps held during a run: address space, recursion limit
    checker         the policy walk over the AST
    guards          run-time checks: sizes of `**` / `<<`, attribute names, format fields
    budget          the run state: operation budget, deadline, metered iteration, final answer
    instrument      the AST rewrite that inserts the checks
    host_guard      keeps model code from changing host objects
    module_patches  sandbox-aware members of authorized modules
    sandbox_modules module proxies and the guarded `__import__`
    report          errors and values as the model reads them
    compiler        source → checked, instrumented code object (cached)
    namespace       the sandbox's builtins and the instrumenter's names, bound
    runtime         RestrictedRuntime: execute() under the limits, variables, reset
"""

from .errors import PolicyError
from .report import safe_repr
from .runtime import RestrictedRuntime

__all__ = ["RestrictedRuntime", "PolicyError", "safe_repr"]
