"""Between the step and the host: host objects kept read-only, the host's tracers stood
aside, tool calls as plain data, and the step's working directory.
"""
