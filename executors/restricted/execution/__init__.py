"""Running a step, the top room: source to a cached code object (compile_step), the
RestrictedRuntime under its limits, the sandbox's namespace and builtins, what the model reads
about its step (report), and the worker's entry (served).
"""
