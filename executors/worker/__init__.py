"""What runs in a subprocess or a container: the worker. Standard library only.

  wire          framing and text limits, shared with the host (`executors.remote.protocol`)
  codec/        the value codec (text, encode, decode): plain data both ways, never pickle
  bounds/       what one value or message may hold (the table), checked on both sides: the
                encoder cuts, the host refuses before it parses or builds anything
  errors        FinalAnswer and ToolError: their one home (`executors.base` re-exports them)
  loop          the worker loop: requests in, replies out; one runtime holds the namespace
  open_runtime  the open policy's namespace and soft deadline (the restricted policy uses
                `executors.restricted.RestrictedRuntime`, imported only when configured so)
  display       tables and arrays as notebook-like text (output_repr), for both runtimes
  figures       pyplot figures and PIL images as PNG attachments, for both runtimes
  harden        what the worker does to itself before reading a frame (rlimits, death signal),
                and `confine()`: the kernel confinement to the host's grants at configure
  hardening/    seccomp, namespaces, its own root, Landlock, privilege drop, and which layers
                hold against native code (stdlib + _ctypes; the host imports it too: the
                Landlock ABI, `holds`)
  main          the entry point (`python -m executors.worker`, or the host's boot line)

This package imports nothing from the rest of `executors` (so it runs from a bare read-only
directory), and importing it imports nothing: the host pulls in `wire`, `errors` and `bounds`.
"""
