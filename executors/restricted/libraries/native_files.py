"""Checks at the entry points of libraries that open files in native code, where the audit hook
cannot see: polars (Rust) and pyarrow (C++) read and write paths without Python's `open`.

On a thread running a step, every path such an entry point is given is judged like an `open` by
the capability guard (capabilities/table.py `check_path`): reads inside the grants and the
Python installation, writes inside the workdir and write grants. A glob is expanded and each
match judged, a directory (a partitioned dataset) is walked and every entry judged where it
really is (symlinks followed), `file://` URIs are paths, other URIs (s3://, https://) are the
network. File objects (io.BytesIO, a file the code opened) go through Python and need nothing.
Entry points that hand out a native file system or a reader that opens any path later
(`pyarrow.fs`, `pyarrow.dataset`, `ParquetFile.reader`) are hidden instead (rules.py).

In a worker the kernel layer (Landlock) holds the same grants for native code too; these checks
make the in-process executor hold them and give the model the same error everywhere. Installed
whenever the library is loaded (hooks.py); the host's own calls are unchanged.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Iterator
from typing import Any

from ..capabilities import GUARD
from ..capabilities.grants import text_of
from ..capabilities.table import GRANT_ADVICE, check_path

__all__ = ["ENTRY_POINTS", "install_native_file_checks"]

READ, WRITE, MODE = "read", "write", "mode"  # MODE: a `mode` argument says ("r": read)
REFUSE = "refuse"  # never in a step (the clipboard: the host's desktop)

_POLARS_READ = ("read_avro", "read_csv", "read_delta", "read_excel", "read_ipc", "read_ipc_schema",
                "read_ipc_stream", "read_json", "read_lines", "read_ndjson", "read_ods",
                "read_parquet", "read_parquet_metadata", "read_parquet_schema", "scan_csv",
                "scan_delta", "scan_iceberg", "scan_ipc", "scan_lines", "scan_ndjson",
                "scan_parquet")
_POLARS_WRITE = ("write_avro", "write_csv", "write_delta", "write_excel", "write_iceberg",
                 "write_ipc", "write_ipc_stream", "write_json", "write_ndjson", "write_parquet")
_POLARS_SINK = ("sink_csv", "sink_delta", "sink_iceberg", "sink_ipc", "sink_ndjson",
                "sink_parquet")
_PATH_PARAMETERS = ("source", "file", "path", "target", "where", "dest", "sink", "input_file",
                    "output_file", "root_path")

# module (or "module:Class" for methods) -> {entry point: how it uses its path arguments}
ENTRY_POINTS: dict[str, dict[str, str]] = {
    "polars": {name: READ for name in _POLARS_READ},
    "polars:DataFrame": {**{name: WRITE for name in _POLARS_WRITE}, "deserialize": READ,
                         "write_clipboard": REFUSE},
    "polars:LazyFrame": {**{name: WRITE for name in _POLARS_SINK}, "deserialize": READ},
    # (functions only: a class replaced by a checking function would break the host's isinstance;
    # the classes that open paths, OSFile, MemoryMappedFile, CSVWriter, are hidden instead)
    "pyarrow": {"memory_map": MODE, "create_memory_map": WRITE, "input_stream": READ,
                "output_stream": WRITE},
    "pyarrow.lib": {"memory_map": MODE, "create_memory_map": WRITE, "input_stream": READ,
                    "output_stream": WRITE},  # (pyarrow's own, re-exported: a public module)
    "pyarrow.csv": {"read_csv": READ, "open_csv": READ, "write_csv": WRITE},
    "pyarrow.json": {"read_json": READ, "open_json": READ},
    "pyarrow.parquet": {"read_table": READ, "read_pandas": READ, "read_metadata": READ,
                        "read_schema": READ, "write_table": WRITE, "write_metadata": WRITE},
    "pyarrow.feather": {"read_table": READ, "read_feather": READ, "write_feather": WRITE},
    "pyarrow.orc": {"read_table": READ, "write_table": WRITE},
    "pyarrow.ipc": {"open_file": READ, "open_stream": READ, "new_file": WRITE,
                    "new_stream": WRITE},
}
_PATCHED: set[tuple[str, str]] = set()


def install_native_file_checks() -> None:
    """Wrap the entry points of the loaded modules listed in ENTRY_POINTS (once each)."""
    for where, entries in ENTRY_POINTS.items():
        module_name, _, class_name = where.partition(":")
        module = sys.modules.get(module_name)
        if module is None:
            continue
        owner = getattr(module, class_name, None) if class_name else module
        if owner is None:
            continue
        for name, kind in entries.items():
            if (where, name) in _PATCHED:
                continue
            original = (owner.__dict__ if class_name else vars(owner)).get(name)
            if original is None or isinstance(original, type):  # (not there yet; never a class)
                continue
            try:
                setattr(owner, name, _checked(original, kind, f"{module_name}.{name}"))
            except (AttributeError, TypeError):  # a frozen namespace: the table still documents it
                continue
            _PATCHED.add((where, name))


def _checked(original: Any, kind: str, event: str) -> Any:
    """`original` (a function or a classmethod), judging its path arguments on a step's thread
    first."""
    if isinstance(original, classmethod):
        return classmethod(_checked(original.__func__, kind, event))
    call = original
    try:
        signature = inspect.signature(original)
    except (TypeError, ValueError):
        signature = None

    def checked(*args: Any, **kwargs: Any) -> Any:
        step = GUARD.current()
        if step is not None and not step.suspended:
            if kind == REFUSE:
                step.refuse("process", event, f"{event} is not allowed in the sandbox: it "
                                              "reaches the host's desktop (the clipboard)")
            bound = _arguments(signature, args, kwargs)
            write = kind == WRITE or (kind == MODE and _writing_mode(bound))
            for value in _paths(bound):
                _judge(step, event, value, write)
        return call(*args, **kwargs)

    try:
        functools.update_wrapper(checked, original, updated=())
    except (AttributeError, TypeError):
        checked.__name__ = checked.__qualname__ = getattr(original, "__name__", "checked")
    return checked


def _arguments(signature: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    if signature is None:
        return {"source": args[0]} if args else dict(kwargs)
    try:
        return signature.bind_partial(*args, **kwargs).arguments
    except TypeError:
        return {}  # the call itself will fail and say why


def _paths(bound: dict[str, Any]) -> Iterator[Any]:
    for name in _PATH_PARAMETERS:
        if name in bound:
            value = bound[name]
            if type(value) in (list, tuple):
                yield from value
            else:
                yield value


def _writing_mode(bound: dict[str, Any]) -> bool:
    mode = text_of(bound.get("mode", "r"))
    return not (type(mode) is str and mode in ("r", "rb"))


_GLOB = frozenset("*?[")


def _judge(step: Any, event: str, value: Any, write: bool) -> None:
    text = text_of(value)
    if type(text) is bytes:
        text = os.fsdecode(text)
    if text is None:
        if isinstance(value, os.PathLike) and type(value).__module__.startswith("pathlib"):
            text = os.fspath(value)
        else:
            return  # a file object, a buffer: Python code reads it (judged if it opens files)
    scheme, sep, rest = text.partition("://")
    if sep and scheme.isidentifier():
        if scheme.lower() != "file":
            if not step.grants.network:
                step.refuse("network", event,
                            f"opening {text!r} is not allowed in the sandbox (network): "
                            f"{GRANT_ADVICE['network']}")
            return
        text = rest
    if _GLOB & set(text):
        import glob

        for match in glob.glob(text, recursive=True):
            _judge_tree(step, event, match, write)
        check_path(step, event, os.path.dirname(text.split("*")[0]) or ".", write=False)
        return
    _judge_tree(step, event, text, write)


def _judge_tree(step: Any, event: str, path: str, write: bool) -> None:
    check_path(step, event, path, write)
    if not os.path.isdir(path):
        return
    for root, dirs, files in os.walk(path):  # (scandir: judged by the guard as it lists)
        for name in (*dirs, *files):
            check_path(step, event, os.path.join(root, name), write)
