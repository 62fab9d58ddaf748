"""Files mapped into memory: a map of a file that something shortens kills the process (SIGBUS)
at the next read of the map, and in process that process is the host.

Python-level maps (np.memmap, np.load(mmap_mode=...), open_memmap, the mmap module) raise the
`mmap.__new__` audit event, which the capability guard refuses for a file in a step (table.py).
Native maps raise none: in a step `pyarrow.memory_map(path)` (mode "r") gives the file's bytes
read into memory (a BufferReader: the same reading methods) and its writable modes and
`create_memory_map` are refused; readers with a `memory_map` option (polars.read_parquet, whose
default is True, pyarrow's parquet and feather readers, pandas.read_csv) read without one. The
results are the same; only the map is gone.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

from .checks import in_step, refusal

# module -> functions that take a `memory_map` option
MAPPING_READERS: dict[str, tuple[str, ...]] = {
    "polars": ("read_parquet", "scan_parquet", "read_ipc", "scan_ipc"),
    "pyarrow.parquet": ("read_table", "read_pandas", "read_metadata", "read_schema"),
    "pyarrow.feather": ("read_table", "read_feather"),
    "pandas": ("read_csv", "read_table"),
}
_WHY = "a file shortened while it is mapped kills the whole process at the next read of the map"


def _unmapped(reader: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(reader)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if in_step():
            kwargs["memory_map"] = False
        return reader(*args, **kwargs)

    wrapper.codeagent_unmapped = True  # type: ignore[attr-defined]
    return wrapper


def _memory_map(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def memory_map(path: Any, mode: str = "r") -> Any:
        if not in_step():
            return original(path, mode)
        if mode != "r":
            raise refusal(f"pyarrow.memory_map(mode={mode!r})", _WHY,
                          "write with pa.output_stream(path)")
        pa = sys.modules["pyarrow"]
        with pa.input_stream(path) as source:  # (its path is judged like any read)
            return pa.BufferReader(source.read_buffer())

    memory_map.codeagent_unmapped = True  # type: ignore[attr-defined]
    return memory_map


def _refused_create(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def create_memory_map(*args: Any, **kwargs: Any) -> Any:
        if in_step():
            raise refusal("pyarrow.create_memory_map", _WHY, "write with pa.output_stream(path)")
        return original(*args, **kwargs)

    create_memory_map.codeagent_unmapped = True  # type: ignore[attr-defined]
    return create_memory_map


def _replace(module: Any, name: str, make: Callable[[Any], Any]) -> None:
    original = getattr(module, name, None)
    if callable(original) and not getattr(original, "codeagent_unmapped", False):
        setattr(module, name, make(original))


def _takes_memory_map(function: Any) -> bool:
    try:
        return "memory_map" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def install_mapped_files() -> None:
    for module_name, names in MAPPING_READERS.items():
        module = sys.modules.get(module_name)
        for name in names if module is not None else ():
            if _takes_memory_map(getattr(module, name, None)):
                _replace(module, name, _unmapped)
    for module_name in ("pyarrow", "pyarrow.lib", "pyarrow.io"):
        module = sys.modules.get(module_name)
        if module is not None:
            _replace(module, "memory_map", _memory_map)
            _replace(module, "create_memory_map", _refused_create)
