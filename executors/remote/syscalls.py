"""The worker's system-call allowlist, and the seccomp-bpf program built from it (libseccomp).

Measured, not guessed: `scripts/syscall-census` runs the suite's worker-heavy files and the
owned-worker corpus under strace and lists every call confined workers made (docs/kernel-
isolation.md has the run); the list below holds those plus what a Python runtime reaches on
other paths (its own stdlib: select, signals, timers, sockets on descriptors it already holds),
each with its reason. Everything else answers EPERM, so a library that probes gets a clean
error; clone3 answers ENOSYS so glibc falls back to clone(2), whose flags a filter can read.

Arguments checked: `socket` only for the families the grants allow (none with network=False;
AF_INET and AF_INET6 with network=True: never AF_UNIX, AF_NETLINK or AF_PACKET), `socketpair`
only AF_UNIX (an unnamed pair reaches nothing; asyncio's self-pipe needs it), `clone` only
without namespace flags, `prlimit64` only on this process (pid 0).

Never allowed, whatever the grants, and why (the threat model of docs/kernel-isolation.md):
ptrace, process_vm_readv/writev, kcmp, pidfd_open/getfd/send_signal (other processes' memory,
descriptors and signals); mount, umount2, pivot_root, chroot, open_tree, move_mount, fsopen,
fsconfig, fsmount, fspick, mount_setattr (the worker's own root); unshare, setns, clone with
CLONE_NEW* (new namespaces after set-up: a user namespace is a root of its own); bpf,
perf_event_open, userfaultfd, io_uring_setup/enter/register, keyctl, add_key, request_key
(kernel attack surface a worker does not need); execve, execveat (no grant asks for running a
program; Landlock refuses it too); init/finit/delete_module, kexec_*, reboot, swapon/off, acct,
quotactl, syslog, iopl, ioperm, modify_ldt, personality, name_to_handle_at, open_by_handle_at,
setuid and the other credential setters, seccomp (nothing to add), and every call not listed.

Why libseccomp through ctypes, on the host: the worker package is stdlib-only (it runs in
containers and bare interpreters where libseccomp may be absent), so the host builds the BPF
once per (network) setting and the worker loads the bytes with one prctl(2); libseccomp knows
each architecture's numbers, the architecture check and x32's bit (a hand-written program would
carry tables of its own). `pyseccomp` is the same ctypes calls behind a class; these eight
functions did not justify a dependency of the default executor.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

__all__ = ["ALLOWED", "NEVER", "Program", "program"]

ALLOWED: dict[str, str] = {}


def _allow(why: str, *names: str) -> None:
    for name in names:
        ALLOWED[name] = why


_allow("files inside the grants (Landlock and the worker's own root decide which)",
       "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2",
       "pwritev2", "open", "openat", "openat2", "creat", "close", "close_range", "stat", "fstat",
       "lstat", "newfstatat", "statx", "statfs", "fstatfs", "lseek", "access", "faccessat",
       "faccessat2", "readlink", "readlinkat", "getdents", "getdents64", "mkdir", "mkdirat",
       "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2", "link", "linkat",
       "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown",
       "lchown", "fchownat", "truncate", "ftruncate", "fsync", "fdatasync", "sync_file_range",
       "fallocate", "utime", "utimes", "utimensat", "futimesat", "getcwd", "chdir", "fchdir",
       "umask", "flock", "fadvise64", "readahead", "sendfile", "copy_file_range", "splice", "tee",
       "getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
       "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch", "mknod",
       "mknodat")
_allow("descriptors: duplicating, flags, pipes, in-memory files, polling",
       "dup", "dup2", "dup3", "fcntl", "ioctl", "pipe", "pipe2", "memfd_create", "poll", "ppoll",
       "select", "pselect6", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait",
       "epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "signalfd", "signalfd4",
       "timerfd_create", "timerfd_settime", "timerfd_gettime")
_allow("memory: the allocator, extension modules, JIT-compiled code (numba, pyarrow)",
       "mmap", "munmap", "mprotect", "mremap", "brk", "madvise", "msync", "mincore", "mbind",
       "get_mempolicy", "set_mempolicy", "membarrier", "mlock", "munlock", "mlock2")
_allow("threads and this process's own children (inside its PID namespace and pids cgroup)",
       "clone", "fork", "vfork", "exit", "exit_group", "wait4", "waitid", "set_tid_address",
       "set_robust_list", "get_robust_list", "rseq", "futex", "futex_waitv", "sched_yield",
       "sched_getaffinity", "sched_setaffinity", "sched_getparam", "sched_getscheduler",
       "sched_get_priority_max", "sched_get_priority_min", "sched_getattr", "getpriority",
       "setpriority", "arch_prctl", "prctl", "gettid", "getpid", "getppid", "getpgrp", "getpgid",
       "setpgid", "getsid", "setsid", "getrlimit", "setrlimit", "getrusage", "times")
_allow("who am I (answers only; every setter is refused)",
       "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups", "capget")
_allow("signals: delivered within the worker's PID namespace and Landlock domain only",
       "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigsuspend",
       "rt_sigtimedwait", "sigaltstack", "kill", "tgkill", "tkill", "pause", "alarm",
       "setitimer", "getitimer", "timer_create", "timer_settime", "timer_gettime",
       "timer_getoverrun", "timer_delete", "restart_syscall")
_allow("time and randomness", "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep",
       "gettimeofday", "time", "getrandom")
_allow("the machine's description", "uname", "sysinfo", "getcpu")
_allow("sockets the worker already holds, or may make (socket itself is checked)",
       "connect", "bind", "listen", "accept", "accept4", "sendto", "recvfrom", "sendmsg",
       "recvmsg", "sendmmsg", "recvmmsg", "shutdown", "getsockname", "getpeername", "getsockopt",
       "setsockopt")
_allow("Landlock: a process may only restrict itself further (the report reads the ABI)",
       "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self")

NEVER = ("ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_open", "pidfd_getfd",
         "pidfd_send_signal", "mount", "umount2", "pivot_root", "chroot", "open_tree",
         "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "unshare",
         "setns", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
         "io_uring_register", "keyctl", "add_key", "request_key", "execve", "execveat",
         "seccomp", "personality", "name_to_handle_at", "open_by_handle_at", "setuid", "setgid",
         "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid",
         "capset", "init_module", "finit_module", "delete_module", "kexec_load",
         "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "iopl",
         "ioperm", "modify_ldt", "process_madvise", "process_mrelease", "rt_sigqueueinfo",
         "rt_tgsigqueueinfo")

AF_UNIX, AF_INET, AF_INET6 = 1, 2, 10
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 \
    | 0x40000000

# libseccomp's constants (seccomp.h)
_ACT_ALLOW = 0x7FFF0000
_ACT_KILL_PROCESS = 0x80000000
_EPERM, _ENOSYS = 1, 38
_FLTATR_ACT_BADARCH = 2
_FLTATR_CTL_NNP = 3
_FLTATR_CTL_OPTIMIZE = 8
_CMP_EQ, _CMP_MASKED_EQ = 4, 7


def _errno(value: int) -> int:
    return 0x00050000 | value


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


class Program:
    """A built filter: `bpf` (bytes the worker loads), `allowed` (how many calls it allows),
    or `bpf` None and `why` when seccomp cannot be had here."""

    def __init__(self, bpf: bytes | None, allowed: int, why: str) -> None:
        self.bpf, self.allowed, self.why = bpf, allowed, why

    def to_wire(self) -> dict | None:
        import base64

        if self.bpf is None:
            return None
        return {"bpf": base64.b64encode(self.bpf).decode("ascii"), "allowed": self.allowed}


_cache: dict[bool, Program] = {}
_lock = threading.Lock()


def program(network: bool) -> Program:
    """The filter for a worker with (network=True) or without network, built once per process."""
    key = bool(network)
    with _lock:
        built = _cache.get(key)
        if built is None:
            built = _cache[key] = _build(key)
        return built


def _library():
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    lib = ctypes.CDLL(name, use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(_ArgCmp)]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return lib


def _build(network: bool) -> Program:
    if os.environ.get("CODEAGENT_SECCOMP") == "off":  # scripts/syscall-census: see everything
        return Program(None, 0, "CODEAGENT_SECCOMP=off in the host's environment")
    if not os.uname().sysname == "Linux":
        return Program(None, 0, f"not Linux ({os.uname().sysname})")
    try:
        lib = _library()
    except OSError as exc:
        return Program(None, 0, f"libseccomp is not installed ({exc}); Debian: libseccomp2")
    ctx = lib.seccomp_init(_errno(_EPERM))
    if not ctx:
        return Program(None, 0, "seccomp_init failed")
    try:
        for attr, value in ((_FLTATR_ACT_BADARCH, _ACT_KILL_PROCESS), (_FLTATR_CTL_NNP, 0),
                            (_FLTATR_CTL_OPTIMIZE, 2)):  # 2: a binary tree of the calls
            if lib.seccomp_attr_set(ctx, attr, value) != 0 and attr != _FLTATR_CTL_OPTIMIZE:
                return Program(None, 0, f"seccomp_attr_set({attr}) failed")
        allowed = _rules(lib, ctx, network)
        return Program(_export(lib, ctx), allowed, "")
    except OSError as exc:
        return Program(None, 0, f"libseccomp could not build the filter: {exc}")
    finally:
        lib.seccomp_release(ctx)


def _rule(lib, ctx, action: int, name: str, *args: tuple[int, int, int, int]) -> bool:
    number = lib.seccomp_syscall_resolve_name(name.encode())
    if number < 0:
        return False  # not a call of this architecture (open on aarch64, ...)
    array = (_ArgCmp * max(1, len(args)))(*(_ArgCmp(*a) for a in args))
    rc = lib.seccomp_rule_add_array(ctx, action, number, len(args), array)
    if rc != 0:
        raise OSError(-rc, f"seccomp_rule_add({name}): {os.strerror(-rc)}")
    return True


def _rules(lib, ctx, network: bool) -> int:
    allowed = sum(_rule(lib, ctx, _ACT_ALLOW, name) for name in ALLOWED if name != "clone")
    allowed += _rule(lib, ctx, _ACT_ALLOW, "clone", (0, _CMP_MASKED_EQ, CLONE_NAMESPACES, 0))
    _rule(lib, ctx, _errno(_ENOSYS), "clone3")  # flags behind a pointer: glibc falls back
    _rule(lib, ctx, _ACT_ALLOW, "prlimit64", (0, _CMP_EQ, 0, 0))
    _rule(lib, ctx, _ACT_ALLOW, "socketpair", (0, _CMP_EQ, AF_UNIX, 0))
    allowed += 2
    if network:
        for family in (AF_INET, AF_INET6):
            _rule(lib, ctx, _ACT_ALLOW, "socket", (0, _CMP_EQ, family, 0))
        allowed += 1
    return allowed


def _export(lib, ctx) -> bytes:
    fd = os.memfd_create("seccomp-bpf", os.MFD_CLOEXEC)
    try:
        if lib.seccomp_export_bpf(ctx, fd) != 0:
            raise OSError(5, "seccomp_export_bpf failed")
        return os.pread(fd, os.fstat(fd).st_size, 0)
    finally:
        os.close(fd)
