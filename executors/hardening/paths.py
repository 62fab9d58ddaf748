"""The read-only set the Python runtime itself needs once it is confined.

Kept minimal, each entry with its reason. Nothing here is executable: extension modules and their
shared libraries are loaded with open(2) + mmap(2), and Landlock checks the open (READ_FILE), not
mmap(PROT_EXEC); tests/test_hardening.py imports C extensions under a ruleset with no EXECUTE.

Deliberately absent:
  /proc/self  exposes the environment, memory maps and magic links (/proc/self/root, /fd/N). The
              magic links are not a way out (Landlock checks the object they resolve to, so
              /proc/self/root/etc/passwd is refused unless /etc/passwd is granted; tested), but
              nothing in the runtime needs it, so it stays closed.
  /etc        only the few files named below; /etc/passwd, /etc/shadow, ... stay unreadable.
  the cwd     a relative sys.path entry ('' for `python -c`) means "the directory I was started
              in"; granting it implicitly would open whatever that is.
  /tmp        tempfile needs a writable directory: point TMPDIR at a write grant instead.
"""

import os
import sys

LIBRARY_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib")
_RUNTIME_FILES = (
    ("/etc/ld.so.cache", "how the dynamic loader finds extension modules' shared libraries"),
    ("/etc/localtime", "the local time zone (time.localtime, datetime.astimezone)"),
    ("/usr/share/zoneinfo", "zoneinfo.ZoneInfo and the TZ variable"),
    ("/dev/null", "os.devnull, read by libraries that silence output or input"),
    ("/dev/urandom", "randomness for libraries that read the device rather than getrandom(2)"),
)
_NETWORK_FILES = (
    ("/etc/ssl", "CA certificates for ssl.create_default_context() (with network only)"),
    ("/etc/resolv.conf", "DNS servers, for socket.getaddrinfo (with network only)"),
    ("/etc/hosts", "static host names, for socket.getaddrinfo (with network only)"),
    ("/etc/nsswitch.conf", "which name services getaddrinfo asks (with network only)"),
    ("/etc/gai.conf", "getaddrinfo address ordering (with network only)"),
    ("/etc/services", "socket.getservbyname (with network only)"),
)


def python_paths_explained(*, network: bool = False) -> list[tuple[str, str]]:
    """(path, why) for every path the runtime needs readable; only paths that exist, no repeats."""
    candidates = [
        (sys.prefix, "sys.prefix: the environment (site-packages, pyvenv.cfg)"),
        (sys.base_prefix, "sys.base_prefix: the installation (stdlib, lib-dynload)"),
        (sys.exec_prefix, "sys.exec_prefix: platform-specific modules"),
        (sys.base_exec_prefix, "sys.base_exec_prefix: platform-specific modules"),
    ]
    for entry in sys.path:
        if entry and os.path.isabs(entry):
            candidates.append((entry, "a sys.path entry: modules imported after confinement"))
    if sys.executable:
        candidates.append(
            (
                os.path.realpath(sys.executable),
                "the interpreter binary (platform.libc_ver() and sysconfig read it)",
            )
        )
    for directory in LIBRARY_DIRS:
        candidates.append((directory, "shared libraries that extension modules link against"))
    candidates.extend(_RUNTIME_FILES)
    if network:
        candidates.extend(_NETWORK_FILES)
    seen: set[str] = set()
    out = []
    for path, why in candidates:
        path = os.path.normpath(path)
        if path not in seen and os.path.exists(path):
            seen.add(path)
            out.append((path, why))
    return out


def python_paths(*, network: bool = False) -> list[str]:
    """The read-only paths the Python runtime needs after confinement (see the module doc)."""
    return [path for path, _why in python_paths_explained(network=network)]
