"""Run-time guards that instrumented model code calls: the exceptions raised inside it,
guarded operations (sizes of `**` and `<<`, attribute names, format fields), generators
closed within the step, and strings libraries evaluate checked by the policy.
"""
