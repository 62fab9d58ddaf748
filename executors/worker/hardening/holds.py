"""Does the worker hold when the code owns it? Which layers are missing, and the import gate.

numpy, pyarrow, polars (and everything on them: pandas, scipy, scikit-learn, matplotlib, ...)
hand raw memory to whoever holds an array, and with raw memory the code can switch the in-process
guard off. So native code of that kind runs only where the kernel holds by itself:

  seccomp      the allowlist: no ptrace, no process_vm_*, no new namespaces, no execve, no
               socket families the grants do not allow (so no UNIX or netlink socket at all)
  files        Landlock, or the worker's own root (a mount namespace with only the runtime,
               read-only, and the grants)
  user         not root: dropped to nobody, or an ordinary user's own uid
  signals      a PID namespace, or Landlock's signal scope, or a uid the host's is not

`missing(report)` lists what is not covered, in words, from a HardeningReport (as a dict; None
when the worker did not harden). `gate(why)` refuses, from then on, the import of those packages
with an ImportError that says which layer is missing and how the user opts in; pure-Python work
keeps running. The host asks the same function (it imports this module) to refuse, at start, an
open policy or an authorized native package in a worker that does not hold.
"""

import sys

__all__ = ["OPT_IN", "RAW_MEMORY", "gate", "missing"]

# Native packages that expose raw memory; whatever imports them (pandas, scipy, sklearn,
# statsmodels, seaborn, ...) fails with them, the more common ones are named for a clearer error.
RAW_MEMORY = frozenset({
    "numpy", "pyarrow", "polars", "PIL", "torch", "tensorflow", "jax", "jaxlib", "cupy", "numba",
    "cffi", "h5py", "tables", "pandas", "scipy", "sklearn", "matplotlib", "statsmodels",
    "seaborn", "xarray", "duckdb", "cv2", "skimage",
})
OPT_IN = "SubprocessExecutor(unconfined_native=True)"
GUARD_ALONE = "the guard alone does not hold against native code"


def _get(report, *keys, default=None):
    for key in keys:
        if not isinstance(report, dict):
            return default
        report = report.get(key, default)
    return report


def missing(report) -> list[str]:
    """What an owned worker could still reach with this report, one line per concern."""
    if not isinstance(report, dict):
        return ["kernel: the worker did not harden itself (harden=False): no seccomp, namespaces, "
                "Landlock or drop"]
    out = []
    seccomp = _get(report, "seccomp", "state")
    if seccomp != "on":
        out.append(f"seccomp: {seccomp or 'unknown'} ({_get(report, 'seccomp', 'why') or '?'})")
    landlock_fs = bool(_get(report, "landlock", "restricted") and _get(report, "landlock", "fs"))
    own_root = _get(report, "mounts", "namespace") == "on"
    if not (landlock_fs or own_root):
        out.append("files: neither Landlock nor a mount namespace of the worker's own "
                   f"(mount namespace: {_get(report, 'mounts', 'why') or 'off'})")
    privileges = _get(report, "privileges", default={})
    if _get(privileges, "was_root") and not _get(privileges, "dropped"):
        out.append("user: the worker runs as root")
    if not (_get(privileges, "no_new_privs") is True or _get(report, "landlock", "no_new_privs")):
        out.append("no_new_privs: not set")
    pid = _get(report, "namespaces", "pid") == "on"
    scoped = "SIGNAL" in (_get(report, "landlock", "scopes") or ())
    if not (pid or scoped or _get(privileges, "dropped")):
        out.append("signals: no PID namespace and no Landlock signal scope (the host's processes "
                   "of the same user can be signalled)")
    return out


class _Gate:
    """A meta-path finder that refuses the raw-memory packages (first on sys.meta_path)."""

    def __init__(self, why: str) -> None:
        self.why = why

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in RAW_MEMORY:
            raise ImportError(
                f"import of {top!r} refused: native code that can hand the code raw memory runs "
                f"only behind the kernel's layers, and this worker lacks them ({self.why}); "
                f"{GUARD_ALONE}. Use pure Python here, or ask the user to run where those layers "
                f"exist or to opt in with {OPT_IN}.", name=name)
        return None

    def invalidate_caches(self) -> None:
        pass


def gate(why: str) -> list[str]:
    """Refuse the raw-memory packages from now on; returns those already loaded (none, unless
    the runtime itself imported one: then the gate cannot take it back and says so)."""
    sys.meta_path.insert(0, _Gate(why))
    return sorted(name for name in RAW_MEMORY if name in sys.modules)
