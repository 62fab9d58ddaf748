"""Which audit events a step may raise, and why: the capability guard's table.

Each row is (event, capability, rule, reason). `rule` is one of the judges below:
  refuse            the action is never allowed in a step (no grant enables it)
  network           allowed only with Access(network=True)
  path_read/write   allowed inside the grants (and, for reads, the Python installation)
  compile_check     a library compiling a string: known code generators pass, any other source
                    must pass the restricted policy (a library evaluator is no way around it)
  ...
A trusted import (an authorized package loading its own modules during a step, see
restricted/trusted_imports.py) is judged by import_rules.LIBRARY_RULES: the same rows minus those
in its `LIBRARY_ALLOWED`, each with the reason the library may do it while it imports. Code that
libraries build themselves and compile is listed in generators.py.

Events not in the table (import, exec, builtins.id, object.__setattr__, array.__new__, ...) are
allowed: they are either harmless or followed by an event that is judged here (shutil.copyfile
is followed by the `open` of both files). Prefix rows catch whole families (every ctypes.* event).

Stdlib only (the worker imports it).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

from .generators import builds_its_own, rebinds_annotations
from .grants import CODE_SUFFIXES, SYSTEM_WRITE_ROOTS, StepContext, text_of, under
from .primitives import step_settable

Rule = Callable[[StepContext, str, tuple], None]

# How each capability can be granted: the advice that ends a refusal message.
GRANT_ADVICE = {
    "files.read": "only files under the executor's grants can be read "
                  "(Access(read=[...]) / --read DIR); the code's own working directory (a private "
                  "scratch folder unless one is granted with --workdir) is always readable",
    "files.write": "only the working directory and Access(write=[...]) / --write DIR can be written",
    "network": "the network is off; the host can allow it with Access(network=True) / --network",
    "process": "model code may not start processes or send signals: compute in Python instead",
    "native": "model code may not load native code or touch raw memory (ctypes)",
    "unpickle": "unpickling can run arbitrary code; read data as CSV/JSON/NPY (allow_pickle=False)",
    "interpreter": "model code may not change the interpreter (tracing, audit hooks, frames, "
                   "code objects, garbage-collector walks)",
    "environment": "model code may not change the process environment or working directory",
    "evaluator": "this library call would evaluate a string as Python; write the computation "
                 "as ordinary code instead",
}


def _refuse_message(capability: str, what: str) -> str:
    return f"{what} is not allowed in the sandbox ({capability}): {GRANT_ADVICE[capability]}"


# -- judges ---------------------------------------------------------------------------------------

def refuse(capability: str, what: str) -> Rule:
    message = _refuse_message(capability, what)

    def judge(step: StepContext, event: str, args: tuple) -> None:
        step.refuse(capability, event, message)

    return judge


_ENVIRONMENT = _refuse_message("environment", "changing environment variables")


def judge_environment(step: StepContext, event: str, args: tuple) -> None:
    """os.putenv / os.unsetenv: only a library's display variables (primitives.step_settable),
    which libraries/state.py puts back after the step."""
    if not (args and step_settable(args[0])):
        step.refuse("environment", event, _ENVIRONMENT)


def network(what: str) -> Rule:
    message = _refuse_message("network", what)

    def judge(step: StepContext, event: str, args: tuple) -> None:
        if not step.grants.network:
            step.refuse("network", event, message)

    return judge


# The hook never calls a method of an argument: a str subclass's `__contains__`, `startswith` or
# `__eq__`, a path-like's `__fspath__` (which could answer differently from the call CPython made),
# a `__repr__` for the message. Text is read with str's and bytes' own C code, the few path types
# of the standard library are asked for their path, and anything else is no path.

def _stdlib_path(value: Any) -> str | bytes | None:
    """The path of an exact pathlib path or os.DirEntry (their own, host, code), else None."""
    pathlib = sys.modules.get("pathlib")
    kinds = (os.DirEntry,) + ((pathlib.PurePosixPath, pathlib.PosixPath, pathlib.Path,
                               pathlib.PurePath) if pathlib is not None else ())
    if type(value) in kinds:
        return os.fspath(value)
    return None


def _fd_of(value: Any) -> int | None:
    return int.__index__(value) if issubclass(type(value), int) else None


def describe_arg(value: Any) -> str:
    """An argument for a message, without running any of its code."""
    text = text_of(value)
    if text is not None:
        return repr(text)
    fd = _fd_of(value)
    return repr(fd) if fd is not None else f"a {type(value).__name__} object"


def _path_of(value: Any) -> str | None:
    """An absolute, resolved path; None for what is not a path (an fd number, an object)."""
    if value is None or _fd_of(value) is not None:
        return None
    path = text_of(value)
    if path is None:
        path = _stdlib_path(value)
        if path is None:
            return None
    if type(path) is bytes:
        path = os.fsdecode(path)
    if "\x00" in path:
        return None
    return os.path.realpath(os.path.join(os.getcwd(), path))


def check_path(step: StepContext, event: str, value: Any, write: bool, opening: bool = False) -> None:
    path = _path_of(value)
    grants = step.grants
    if path is None:
        fd = _fd_of(value)
        what = f"using file descriptor {fd!r} directly" if fd is not None else \
            f"this path ({describe_arg(value)}: only str, bytes and pathlib paths are judged)"
        step.refuse("files.write" if write else "files.read", event,
                    _refuse_message("files.write" if write else "files.read", what))
    if write:
        # /dev/null may be opened for writing; removing, renaming or chmod-ing it may not
        if under(path, grants.write) or (opening and path in SYSTEM_WRITE_ROOTS):
            return
        step.refuse("files.write", event, _refuse_message("files.write", f"writing {path}"))
    if under(path, grants.read) or under(path, grants.write) or under(path, step.read_roots):
        return
    if under(path, step.code_roots) and (path.endswith(CODE_SUFFIXES) or _is_dir(path)):
        return
    step.refuse("files.read", event, _refuse_message("files.read", f"reading {path}"))


def _is_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | getattr(os, "O_TMPFILE", 0)


def judge_open(step: StepContext, event: str, args: tuple) -> None:
    path, mode, flags = (tuple(args) + (None, None, None))[:3]
    mode, flags = text_of(mode), _fd_of(flags)
    write = bool(type(mode) is str and any(c in mode for c in "wax+")) or bool(
        flags is not None and flags & _WRITE_FLAGS)
    check_path(step, event, path, write, opening=True)


def path_read(index: int = 0) -> Rule:
    def judge(step: StepContext, event: str, args: tuple) -> None:
        check_path(step, event, args[index] if len(args) > index else None, write=False)
    return judge


def path_write(*indexes: int) -> Rule:
    def judge(step: StepContext, event: str, args: tuple) -> None:
        for i in indexes or (0,):
            check_path(step, event, args[i] if len(args) > i else None, write=True)
    return judge


def path_entry(*indexes: int) -> Rule:
    """Removing or renaming changes a name in its directory: the directory must be writable (its
    last component is not followed: a link in the workdir may go, a link elsewhere may not), and
    a granted tree's own root is a name in the directory above it, which is not granted."""
    def judge(step: StepContext, event: str, args: tuple) -> None:
        for i in indexes or (0,):
            value = args[i] if len(args) > i else None
            path = _path_of(value)
            if path is not None:
                given = text_of(value)
                given = _stdlib_path(value) if given is None else given
                raw = os.path.join(os.getcwd(), os.fsdecode(given)) if given is not None else path
                name = os.path.basename(raw.rstrip(os.sep))
                if name not in ("", ".", ".."):
                    path = os.path.join(os.path.realpath(os.path.dirname(raw.rstrip(os.sep))), name)
                if path in step.grants.write:
                    step.refuse("files.write", event, _refuse_message(
                        "files.write", f"removing or renaming {path}, a granted directory or file itself"))
            check_path(step, event, path if path is not None else value, write=True)
    return judge


_MAPPED = ("mapping a file into memory (np.memmap, np.load(mmap_mode=...), mmap.mmap of a file) "
           "is not allowed in the sandbox (native): a file shortened while it is mapped kills the "
           "whole process at the next read of the map; read the file instead (np.load, "
           "np.fromfile, pd.read_csv without memory_map)")


def judge_mmap(step: StepContext, event: str, args: tuple) -> None:
    """A map of a file (not an anonymous one, fileno -1): the host process dies by SIGBUS when
    any code shortens the file and the map is read (raw memory, issue 42)."""
    fileno = _fd_of(args[0]) if args else None
    if fileno is None or fileno != -1:
        step.refuse("native", event, _MAPPED)


def judge_link(step: StepContext, event: str, args: tuple) -> None:
    # A hard link is a second name for the same inode: its source must be writable too, or a
    # link from the workdir would open a read-only (or ungranted) file for writing.
    check_path(step, event, args[0], write=True)
    check_path(step, event, args[1], write=True)


def judge_symlink(step: StepContext, event: str, args: tuple) -> None:
    # The target of a symlink is only text; every open through it is judged on what it resolves to.
    check_path(step, event, args[1], write=True)


def judge_socket_address(step: StepContext, event: str, args: tuple) -> None:
    address = args[1] if len(args) > 1 else None
    text = text_of(address)
    if text:
        if text[:1] in (b"\x00", "\x00"):
            step.refuse("network", event, _refuse_message("network", "an abstract Unix socket"))
        check_path(step, event, text, write=True)  # a Unix socket: a file you can talk to
        return
    if not step.grants.network:
        shown = repr(address) if type(address) is tuple and all(
            type(part) in (str, int) for part in address) else describe_arg(address)
        step.refuse("network", event, _refuse_message("network", f"connecting to {shown}"))


def judge_socket_new(step: StepContext, event: str, args: tuple) -> None:
    import socket

    family = args[1] if len(args) > 1 else None
    if family == getattr(socket, "AF_UNIX", None):
        return  # judged at connect/bind by its path
    if family not in (socket.AF_INET, socket.AF_INET6) or not step.grants.network:
        step.refuse("network", event, _refuse_message("network", f"opening a socket ({family!r})"))


def judge_sqlite(step: StepContext, event: str, args: tuple) -> None:
    database = args[0] if args else None
    if text_of(database) in (":memory:", b":memory:", ""):
        return
    check_path(step, event, database, write=True)


def judge_marshal(step: StepContext, event: str, args: tuple) -> None:
    # The import system unmarshals .pyc files; anything else unmarshalling is model data.
    caller = sys._getframe(2)
    if caller is not None and caller.f_code.co_filename.startswith("<frozen importlib"):
        return
    step.refuse("unpickle", event, _refuse_message("unpickle", "unmarshalling data"))


def judge_compile(step: StepContext, event: str, args: tuple) -> None:
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.endswith(("ast.py",)):
        frame = frame.f_back  # ast.parse(...) is compile(...): judge its caller
    source = args[0] if args else None
    if frame is not None and builds_its_own(frame.f_code, source):
        return
    check = step.grants.check_source
    text = text_of(source)
    source = text if text is not None else source  # (an AST: the check reads it as text)
    problem = "no policy to check it with" if check is None else check(source)
    if problem:
        step.refuse("evaluator", event,
                    f"a library call would evaluate a string as Python, and the sandbox's policy "
                    f"refuses that string (evaluator): {problem}; {GRANT_ADVICE['evaluator']}")


_BUILDING_FUNCTIONS = refuse("interpreter", "building functions")


def judge_function_new(step: StepContext, event: str, args: tuple) -> None:
    # Refused, but for annotationlib reading deferred annotations (3.14): generators.py says why.
    if not (args and rebinds_annotations(sys._getframe(2).f_code, args[0])):
        _BUILDING_FUNCTIONS(step, event, args)


def judge_getframe(step: StepContext, event: str, args: tuple) -> None:
    # Libraries ask for their caller's frame (namedtuple, enum, typing for a module name; pandas
    # for warning levels): model and library frames inside the step are fine. The host's frames
    # below the step are never handed out.
    frame = args[0] if args else None
    if frame is not None and id(frame) in step.host_frames:
        step.refuse("interpreter", event, _refuse_message("interpreter", "reaching the host's frames"))


class Row(NamedTuple):
    event: str
    capability: str
    rule: Rule
    reason: str


_P = "process"
ROWS: list[Row] = [
    # files
    Row("open", "files", judge_open, "every file open (builtin open, io, os.open, pathlib, "
      "libraries' readers and writers) — resolved, symlinks followed"),
    Row("os.listdir", "files.read", path_read(), "listing a directory reveals names"),
    Row("os.scandir", "files.read", path_read(), "listing a directory reveals names"),
    Row("os.getxattr", "files.read", path_read(), "extended attributes of a file"),
    Row("os.listxattr", "files.read", path_read(), "extended attributes of a file"),
    Row("os.mkdir", "files.write", path_write(), "creates a directory"),
    Row("os.rmdir", "files.write", path_entry(), "removes a directory: a name in its parent, "
      "not followed; a grant's own root is refused"),
    Row("os.remove", "files.write", path_entry(), "deletes a name (a link itself, not its target)"),
    Row("os.rename", "files.write", path_entry(0, 1), "moves a name: both ends are writes; a "
      "grant's own root is refused (its name belongs to the directory above)"),
    Row("mmap.__new__", "native", judge_mmap, "a file mapped into memory: shortened under the "
        "map, it kills the process (SIGBUS); anonymous maps (fileno -1) are memory like any other"),
    Row("os.truncate", "files.write", path_write(), "truncates a file"),
    Row("os.chmod", "files.write", path_write(), "changes permissions"),
    Row("os.chown", "files.write", path_write(), "changes ownership"),
    Row("os.utime", "files.write", path_write(), "changes timestamps"),
    Row("os.setxattr", "files.write", path_write(), "changes extended attributes"),
    Row("os.removexattr", "files.write", path_write(), "changes extended attributes"),
    Row("os.chflags", "files.write", path_write(), "changes file flags"),
    Row("os.lchflags", "files.write", path_write(), "changes file flags"),
    Row("os.link", "files.write", judge_link, "a hard link shares the inode: source must be writable"),
    Row("os.symlink", "files.write", judge_symlink, "creates a name; opens through it are judged "
      "on their target"),
    Row("os.lockf", "files.write", refuse("files.write", "locking a file descriptor"), "fd-based"),
    Row("tempfile.mkstemp", "files.write", path_write(), "creates a file (in the workdir if granted)"),
    Row("tempfile.mkdtemp", "files.write", path_write(), "creates a directory"),
    Row("sqlite3.connect", "files.write", judge_sqlite, "a database file is read and written; "
      ":memory: is fine"),
    Row("sqlite3.enable_load_extension", "native", refuse("native", "loading SQLite extensions"),
      "native code"),
    Row("sqlite3.load_extension", "native", refuse("native", "loading SQLite extensions"),
      "native code"),
    Row("os.chdir", "environment", refuse("environment", "changing the working directory"),
      "process-wide: would move every host thread"),
    Row("os.putenv", "environment", judge_environment, "process-wide, inherited by the host's "
      "children; a library's display variables (pl.Config's POLARS_FMT_*) are put back after "
      "the step"),
    Row("os.unsetenv", "environment", judge_environment, "process-wide (the same exception)"),
    # processes and signals
    Row("os.system", _P, refuse(_P, "running a shell command"), "runs anything as the host"),
    Row("os.exec", _P, refuse(_P, "replacing the process"), "replaces the host"),
    Row("os.posix_spawn", _P, refuse(_P, "starting a process"), "runs anything"),
    Row("os.spawn", _P, refuse(_P, "starting a process"), "runs anything"),
    Row("os.fork", _P, refuse(_P, "forking"), "a copy of the host outside every limit"),
    Row("os.forkpty", _P, refuse(_P, "forking"), "a copy of the host"),
    Row("subprocess.Popen", _P, refuse(_P, "starting a process"), "runs anything"),
    Row("pty.spawn", _P, refuse(_P, "starting a process"), "runs anything"),
    Row("os.startfile", _P, refuse(_P, "starting a program"), "runs anything (Windows)"),
    Row("webbrowser.open", _P, refuse(_P, "opening a browser"), "starts a program"),
    Row("ensurepip.bootstrap", _P, refuse(_P, "installing packages"), "runs pip"),
    Row("os.kill", _P, refuse(_P, "sending a signal"), "can stop the host or its peers"),
    Row("os.killpg", _P, refuse(_P, "sending a signal"), "can stop the host's group"),
    Row("signal.pthread_kill", _P, refuse(_P, "sending a signal"), "can stop host threads"),
    Row("resource.setrlimit", _P, refuse(_P, "changing resource limits"), "process-wide"),
    Row("resource.prlimit", _P, refuse(_P, "changing resource limits"), "any process"),
    Row("os.add_dll_directory", "native", refuse("native", "adding a DLL directory"), "Windows"),
    # unpickling and code objects
    Row("pickle.find_class", "unpickle", refuse("unpickle", "unpickling objects"),
      "a pickle names any callable and calls it"),
    Row("marshal.loads", "unpickle", judge_marshal, "code objects from bytes; the import system's "
      "own .pyc loads pass"),
    Row("marshal.load", "unpickle", judge_marshal, "code objects from a file"),
    Row("code.__new__", "interpreter", refuse("interpreter", "building code objects"),
      "hand-made bytecode bypasses the policy"),
    Row("function.__new__", "interpreter", judge_function_new, "binds code to any globals "
      "(annotationlib's reading of deferred annotations excepted, 3.14)"),
    Row("compile", "evaluator", judge_compile, "a library evaluating a string: the string must "
      "pass the policy (pandas eval/query, numexpr, typing forward references)"),
    # the interpreter itself
    Row("sys.addaudithook", "interpreter", refuse("interpreter", "adding an audit hook"),
      "could watch or disturb the host"),
    Row("sys.settrace", "interpreter", refuse("interpreter", "tracing"), "sees every frame"),
    Row("sys.setprofile", "interpreter", refuse("interpreter", "profiling"), "sees every frame"),
    Row("sys._current_frames", "interpreter", refuse("interpreter", "reading other threads' "
      "frames"), "host frames and their globals"),
    Row("sys._current_exceptions", "interpreter", refuse("interpreter", "reading other threads' "
      "exceptions"), "host tracebacks"),
    Row("sys._getframe", "interpreter", judge_getframe, "libraries read their caller's frame; "
      "host frames below the step are refused"),
    Row("gc.get_objects", "interpreter", refuse("interpreter", "walking the object graph"),
      "reaches every host object"),
    Row("gc.get_referrers", "interpreter", refuse("interpreter", "walking the object graph"),
      "reaches host objects"),
    Row("gc.get_referents", "interpreter", refuse("interpreter", "walking the object graph"),
      "reaches host objects"),
    Row("builtins.input", "interpreter", refuse("interpreter", "reading the host's stdin"),
      "the host's terminal"),
    Row("builtins.breakpoint", "interpreter", refuse("interpreter", "starting a debugger"),
      "a debugger is a full shell"),
    Row("pdb.Pdb", "interpreter", refuse("interpreter", "starting a debugger"), "a full shell"),
    Row("fcntl.fcntl", "native", refuse("native", "fcntl on a file descriptor"),
      "acts on host descriptors"),
    Row("fcntl.ioctl", "native", refuse("native", "ioctl on a file descriptor"),
      "TIOCSTI types into the host's terminal"),
    Row("fcntl.flock", "files.write", refuse("files.write", "locking a file descriptor"),
      "host descriptors"),
    Row("fcntl.lockf", "files.write", refuse("files.write", "locking a file descriptor"),
      "host descriptors"),
    Row("syslog.openlog", "network", refuse("network", "writing to syslog"), "a socket to the host"),
    Row("syslog.syslog", "network", refuse("network", "writing to syslog"), "a socket to the host"),
    # network
    Row("socket.__new__", "network", judge_socket_new, "TCP/UDP with the network grant; Unix "
      "sockets judged by path; raw and netlink sockets never"),
    Row("socket.connect", "network", judge_socket_address, "Unix sockets are files (the Docker "
      "socket means root)"),
    Row("socket.bind", "network", judge_socket_address, "listening"),
    Row("socket.sendto", "network", judge_socket_address, "datagrams"),
    Row("socket.sendmsg", "network", judge_socket_address, "datagrams"),
    Row("socket.getaddrinfo", "network", network("resolving host names"), "DNS leaks data"),
    Row("socket.gethostbyname", "network", network("resolving host names"), "DNS"),
    Row("socket.gethostbyaddr", "network", network("resolving addresses"), "DNS"),
    Row("socket.getnameinfo", "network", network("resolving addresses"), "DNS"),
    Row("socket.gethostname", "network", network("reading the host name"), "identifies the host"),
    Row("socket.sethostname", "environment", refuse("environment", "setting the host name"),
      "the host's"),
    Row("urllib.Request", "network", network("opening a URL"), "http(s)/ftp; file: URLs are "
      "judged as opens"),
    Row("http.client.connect", "network", network("an HTTP connection"), ""),
    Row("ftplib.connect", "network", network("an FTP connection"), ""),
    Row("smtplib.connect", "network", network("an SMTP connection"), ""),
    Row("poplib.connect", "network", network("a POP connection"), ""),
    Row("imaplib.open", "network", network("an IMAP connection"), ""),
    Row("nntplib.connect", "network", network("an NNTP connection"), ""),
    Row("telnetlib.Telnet.open", "network", network("a telnet connection"), ""),
]


RULES: dict[str, Rule] = {row.event: row.rule for row in ROWS}
# Whole families: every ctypes event is raw memory or native code; Windows-only modules.
PREFIX_RULES: dict[str, Rule] = {
    "ctypes": refuse("native", "native code and raw memory (ctypes)"),
    "_winapi": refuse("process", "Windows process APIs"),
    "winreg": refuse("environment", "the Windows registry"),
    "msvcrt": refuse("native", "Windows console APIs"),
}
PREFIX_REASONS = {
    "ctypes": "loads libraries, calls C functions and reads/writes any address",
    "_winapi": "Windows-only", "winreg": "Windows-only", "msvcrt": "Windows-only",
}
# Events allowed on purpose, with the reason (the table test checks every event is classified).
ALLOWED = {
    "import": "library imports; which modules model code may import is the policy's job",
    "exec": "runs a code object compiled before (our own step, or a checked library compile)",
    "builtins.id": "harmless",
    "object.__getattr__": "libraries read __code__/f_code/tb_frame for signatures and warnings; "
                          "model code cannot name these attributes (policy)",
    "object.__setattr__": "host objects are read-only through the policy's host guard",
    "object.__delattr__": "same",
    "array.__new__": "harmless",
    "glob.glob": "followed by judged os.scandir/listdir events",
    "glob.glob/2": "same",
    "os.walk": "followed by judged os.scandir events",
    "os.fwalk": "followed by judged opens",
    "pathlib.Path.glob": "followed by judged scandir events",
    "pathlib.Path.rglob": "same",
    "pathlib.Path.walk": "os.walk (3.14), followed by judged scandir events",
    "shutil.copyfile": "followed by judged opens", "shutil.copymode": "followed by judged chmod",
    "shutil.copystat": "followed by judged utime/chmod", "shutil.copytree": "judged per file",
    "shutil.chown": "followed by judged chown", "shutil.make_archive": "judged per file",
    "shutil.move": "followed by judged rename/opens", "shutil.rmtree": "judged per file",
    "shutil.unpack_archive": "judged per file",
    "sqlite3.connect/handle": "after a judged connect",
    "sys.excepthook": "the host's hook reporting", "sys.unraisablehook": "reporting",
    "http.client.send": "after a judged connect", "ftplib.sendcmd": "after a judged connect",
    "smtplib.send": "after a judged connect", "poplib.putline": "after a judged connect",
    "imaplib.send": "after a judged connect", "nntplib.putline": "after a judged connect",
    "telnetlib.Telnet.write": "after a judged connect",
    "builtins.input/result": "after a refused input",
    "marshal.dumps": "serializing is harmless",
    "syslog.closelog": "harmless", "syslog.setlogmask": "harmless",
    "cpython.run_command": "interpreter start-up only", "cpython.run_file": "start-up only",
    "cpython.run_module": "start-up only", "cpython.run_startup": "start-up only",
    "cpython.run_stdin": "start-up only", "cpython.run_interactivehook": "start-up only",
    "cpython.PyInterpreterState_New": "embedding only", "cpython.PyInterpreterState_Clear":
        "embedding only", "cpython._PySys_ClearAuditHooks": "interpreter shutdown",
    "signal.itimer_error": "not an event (an exception name)",
}
