"""The names the instrumenter writes into model code and the runtime binds in its namespace.

One module for both sides, so a rename cannot leave one side behind. Every name starts with
`_`, which the policy refuses in model code: the code can neither read nor rebind them.
"""

from __future__ import annotations

LIVE = "_live"  # True while a step runs; the watchdog flips it at the deadline
DEAD = "_dead"  # raises whatever stops the code (`LIVE or DEAD()` at function and loop heads)
FOR = "_for"  # `for x in _for(it)`: charges the operation budget per loop, not per iteration
FOREVER = "_forever"  # the endless iterable `while` loops are metered over
LOOP_TARGET = "_loop"  # the target of those rewritten `while` loops
TICK = "_tick"  # one metered iteration (while/else loops)
POW = "_pow"  # `a ** b` with a size check
LSHIFT = "_lshift"  # `a << b` with a size check
IPOW = "_ipow"  # `a **= b`: the size check, then the in-place operator (`__ipow__`)
ILSHIFT = "_ilshift"  # `a <<= b`: the size check, then the in-place operator (`__ilshift__`)
FMT_ATTR = "_fmt_attr"  # `x.format` / `x.format_map`: the template's fields are checked
ATTR = "_attr"  # guarded attribute loads (`__class__`, `__init__`, `__dict__`, `mro`, `register`)
PRIVATE_ATTR = "_pattr"  # `obj._x`: only on the model's own objects
WRITABLE = "_w"  # `obj.attr = v` -> `_w(obj).attr = v`: no writes into host objects
PRIVATE_WRITABLE = "_wp"  # `obj._x = v`: only on the model's own objects
MATCH_CHECK = "_match_check"  # before a match statement: its classes' __match_args__
KWARGS = "_kwargs"  # `f(**m)` -> `f(**_kwargs(m))`: the names checked as written keywords are
GEN = "_gen"  # the innermost decorator of every generator function: its generators are tracked
RESULT = "_result_"  # the value of the step's last expression statement
AUG_TARGET = "_aug_target"  # `obj.a **= v` / `obj[k] **= v`: obj (and k), evaluated once
AUG_KEY = "_aug_key"

# `sum(x for x in xs)` without a budget: `(_c_sum if sum is _g_sum else sum)(...)` calls C's own
# reducer while `sum` is still the sandbox's (instrument.py, visit_Call; the sandbox's reducer
# would hand a generator over unguarded anyway, at the cost of a Python call per use).
DIRECT_REDUCERS = ("sum", "any", "all")
SANDBOX_REDUCER = {name: f"_g_{name}" for name in DIRECT_REDUCERS}  # the sandbox's builtin
C_REDUCER = {name: f"_c_{name}" for name in DIRECT_REDUCERS}  # CPython's builtin

# Everything above that the runtime binds in the namespace (the rest are targets the code stores).
BOUND = (LIVE, DEAD, FOR, FOREVER, TICK, POW, LSHIFT, IPOW, ILSHIFT, FMT_ATTR, ATTR, PRIVATE_ATTR,
         WRITABLE, PRIVATE_WRITABLE, MATCH_CHECK, KWARGS, GEN, RESULT,
         *SANDBOX_REDUCER.values(), *C_REDUCER.values())

# The file name of each step's code starts so: tracebacks map back to the model's lines by it,
# and the host guard recognises functions the model defined by it.
STEP_FILE_PREFIX = "<step-"
