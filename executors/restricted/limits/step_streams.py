"""What a step's thread writes to sys.stdout and sys.stderr, and the warnings it raises: the step's
output, in order with the model's prints, in every executor.

Library code prints through the process's streams (scipy's convergence messages, `sympy.pprint`,
a `print` inside a callback, a warning's text), which the host shares in process. While steps
run, `sys.stdout` and `sys.stderr` are `StepStream`s: what a step's thread writes goes to that
step's output buffer, and every other thread's writes go to the stream the step found there
(the host's threads keep theirs; a worker's helper threads reach its captured descriptors).

Warnings raised on a step's thread are decided by CPython's default filters (a script's: shown
once per place, a DeprecationWarning only when the model's code triggers it directly), whatever
the host's filters say (pytest's, `-W error`), and shown in the output as CPython shows them:
`<code>:LINE: Category: message` and the model's line. Each step starts with no warning seen
(as a fresh program does). The step's filters are entries that match on a step's thread only;
a library's own `catch_warnings` inside the step still comes first and still records.

A tool is host code: while it runs, its thread prints as the host (set_aside). Native code that
writes to file descriptor 1 or 2 itself (printf in C or Fortran) is not seen
here: in a worker it lands in the captured descriptors (appended to the logs), in process on
the host's terminal.
"""

from __future__ import annotations

import sys
import threading
import warnings
from typing import Any

__all__ = ["CODE_FILENAME", "StepStream", "enter", "leave", "set_aside", "take_back"]

CODE_FILENAME = "<code>"  # what a warning in the model's code names as its file

_get_ident = threading.get_ident
_TARGETS: dict[int, Any] = {}  # thread id -> the output buffer of the step it runs
_lock = threading.Lock()
_installed: dict[str, Any] = {}  # what was in place before the first step entered


class StepStream:
    """`sys.stdout`/`sys.stderr` while steps run: a step's thread writes into its step's output
    (as into a StringIO: no descriptor, not a terminal); other threads use the host's stream."""

    __slots__ = ("_host",)

    def __init__(self, host: Any) -> None:
        self._host = host

    def write(self, text: Any) -> int:
        target = _TARGETS.get(_get_ident())
        if target is None:
            return 0 if self._host is None else self._host.write(text)
        if type(text) is not str:
            if not isinstance(text, str):
                raise TypeError(f"write() argument must be str, not {type(text).__name__}")
            text = str.__str__(text)
        return target.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if _get_ident() not in _TARGETS and self._host is not None:
            self._host.flush()

    def isatty(self) -> bool:
        return False if _get_ident() in _TARGETS or self._host is None else self._host.isatty()

    def fileno(self) -> int:
        if _get_ident() in _TARGETS or self._host is None:
            import io

            raise io.UnsupportedOperation("fileno")
        return self._host.fileno()

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return False if _get_ident() in _TARGETS or self._host is None else self._host.closed

    @property
    def encoding(self) -> str:
        return "utf-8" if _get_ident() in _TARGETS or self._host is None else self._host.encoding

    @property
    def errors(self) -> str:
        return "strict" if _get_ident() in _TARGETS or self._host is None else self._host.errors

    def __getattr__(self, name: str) -> Any:
        # (only for names not above: the host's stream has them for host threads; a step's
        # stream is text only, like a StringIO)
        if _get_ident() in _TARGETS or self._host is None or name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._host, name)

    def __repr__(self) -> str:
        return "<step output>"


class _StepThreadOnly:
    """The message pattern of the step's filters: matches any text, on a step's thread only (C
    and Python's warnings call `.match(text)` on a filter's message pattern)."""

    __slots__ = ()
    pattern = ""  # (what code that copies the filters reads: scikit-learn's for joblib's workers)
    flags = 0

    def match(self, text: Any) -> bool:
        return _get_ident() in _TARGETS

    def __repr__(self) -> str:
        return "<a sandbox step's thread>"


_ON_STEP = _StepThreadOnly()
# CPython's default filters (a script run without -W), then "default" for everything else.
STEP_FILTERS = (
    ("default", _ON_STEP, DeprecationWarning, "__main__", 0),
    ("ignore", _ON_STEP, DeprecationWarning, None, 0),
    ("ignore", _ON_STEP, PendingDeprecationWarning, None, 0),
    ("ignore", _ON_STEP, ImportWarning, None, 0),
    ("ignore", _ON_STEP, ResourceWarning, None, 0),
    ("default", _ON_STEP, Warning, None, 0),
)
_STEP_LIST, _COUNT = list(STEP_FILTERS), len(STEP_FILTERS)


def _showwarnmsg(msg: Any) -> None:
    """`warnings._showwarnmsg` while steps run. Host threads: the host's. A step's thread: what
    a library set up inside the step (its own showwarning, catch_warnings(record=True)) still
    gets the warning; otherwise it is written into the step's output as CPython formats it."""
    target = _TARGETS.get(_get_ident())
    if target is None:
        return _installed["_showwarnmsg"](msg)
    shown = warnings.showwarning
    if shown is not _installed["showwarning"] and shown is not warnings._showwarning_orig:
        shown(msg.message, msg.category, msg.filename, msg.lineno, msg.file, msg.line)
        return None
    impl = warnings._showwarnmsg_impl
    if impl is not _installed["_showwarnmsg_impl"]:
        impl(msg)
        return None
    target.write(format_warning(msg))
    return None


def format_warning(msg: Any) -> str:
    """CPython's text for a warning; one raised by the model's code names `<code>` and shows
    its line (the source the step compiled)."""
    filename = msg.filename
    if type(filename) is str and filename in _SOURCES:
        lines = _SOURCES.get(filename) or []
        lineno = msg.lineno
        line = lines[lineno - 1] if type(lineno) is int and 0 < lineno <= len(lines) else ""
        msg = warnings.WarningMessage(msg.message, msg.category, CODE_FILENAME, lineno,
                                      msg.file, line, msg.source)
    return warnings._formatwarnmsg_impl(msg)


_SOURCES: dict[str, list[str]] = {}  # the compiled steps' sources (compile_step.SOURCES)


def enter(buffer: Any, sources: dict[str, list[str]]) -> None:
    """This thread's step writes into `buffer` from now on (until leave())."""
    global _SOURCES
    with _lock:
        _SOURCES = sources
        if not _TARGETS:
            _install()
        _TARGETS[_get_ident()] = buffer
        _bump_filters()  # every step starts with no warning seen, like a fresh program


def leave() -> None:
    with _lock:
        _TARGETS.pop(_get_ident(), None)
        if not _TARGETS:
            _uninstall()


def set_aside() -> Any:
    """Host code called from the step (a tool) prints as the host: this thread's writes go to
    the host's streams until take_back(). Returns what take_back needs."""
    return _TARGETS.pop(_get_ident(), None)


def take_back(target: Any) -> None:
    if target is not None:
        _TARGETS[_get_ident()] = target


def _install() -> None:
    out, err = sys.stdout, sys.stderr
    if type(out) is not StepStream:
        sys.stdout = StepStream(out)
    if type(err) is not StepStream:
        sys.stderr = StepStream(err)
    _installed["showwarning"] = warnings.showwarning
    _installed["_showwarnmsg_impl"] = warnings._showwarnmsg_impl
    _installed["_showwarnmsg"] = warnings._showwarnmsg
    warnings._showwarnmsg = _showwarnmsg
    filters = warnings.filters
    if not filters or filters[0] is not STEP_FILTERS[0]:
        filters[0:0] = STEP_FILTERS


def _uninstall() -> None:
    out, err = sys.stdout, sys.stderr
    if type(out) is StepStream:  # (one the host put in its place meanwhile stays)
        sys.stdout = out._host
    if type(err) is StepStream:
        sys.stderr = err._host
    if warnings._showwarnmsg is _showwarnmsg:  # (kept in _installed: a host thread may be in it)
        warnings._showwarnmsg = _installed["_showwarnmsg"]
    filters = warnings.filters
    if filters[:_COUNT] == _STEP_LIST:  # (where _install put them: the usual case)
        del filters[:_COUNT]
    else:
        filters[:] = [f for f in filters if type(f) is not tuple or len(f) != 5 or f[1] is not _ON_STEP]
    _bump_filters()


def _bump_filters() -> None:
    """The filters changed: every module's record of the warnings it showed is void."""
    bump = getattr(warnings, "_filters_mutated", None)
    if bump is not None:
        bump()
        return
    bump = getattr(warnings, "_filters_mutated_lock_held", None)  # (3.14)
    lock = getattr(warnings, "_lock", None)
    if bump is not None and lock is not None:
        with lock:
            bump()
