"""Arrow data as typed payloads of the value codec: raw buffers with a typed header. Stdlib only
at module level (pyarrow is looked up in `sys.modules` to encode, imported to decode).

Crossing whole: `pyarrow.Array` (and a `ChunkedArray`, combined), `Table` and `RecordBatch` of
flat types (ints, floats, bool, strings, binary, dates, timestamps, durations), and the strings
columns of pandas (its `str` and `string[pyarrow]` dtypes keep their values in Arrow): their
buffers cross as blobs, no value is converted one by one on either side.

Not Arrow IPC: an IPC stream may carry compressed buffers, and a few kilobytes would then
decompress into gigabytes on the host before anything could be checked. Here each array is
its type (from the allowlist below: no extension, dictionary or nested type), its length and
offset and its buffers, rebuilt by `Array.from_buffers` and checked whole by
`validate(full=True)` (buffer sizes, offsets in order and in range, UTF-8) before it is used:
the bytes are hostile.
"""

from __future__ import annotations

import sys

__all__ = ["decode_arrow", "encode_arrow", "strings_column", "ARROW_TAGS"]

TAG = "$t"
ARROW_TAGS = frozenset({"arrow_array", "arrow_table"})
_NAMES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
          "float32", "float64", "bool_", "string", "large_string", "binary", "large_binary",
          "date32", "date64")
_UNITS = ("s", "ms", "us", "ns")


class NotArrowData(Exception):
    """A type outside the allowlist: the value crosses as its repr."""


def _spec(typ, pa):
    """The allowlisted description of an Arrow type."""
    types = pa.types
    if types.is_timestamp(typ):
        return {"ts": typ.unit, "tz": typ.tz}
    if types.is_duration(typ):
        return {"dur": typ.unit}
    for name in _NAMES:
        if typ == getattr(pa, name)():
            return name
    raise NotArrowData


def _type(spec, pa):
    if type(spec) is str and spec in _NAMES:
        return getattr(pa, spec)()
    if type(spec) is dict and spec.get("ts") in _UNITS and len(spec) == 2:
        tz = spec.get("tz")
        if tz is not None and (type(tz) is not str or len(tz) > 64):
            raise ValueError("bad time zone")
        return pa.timestamp(spec["ts"], tz)
    if type(spec) is dict and spec.get("dur") in _UNITS and len(spec) == 1:
        return pa.duration(spec["dur"])
    raise ValueError(f"the Arrow type {str(spec)[:60]} is not plain data")


def array_payload(arr, pa, blob) -> dict:
    """One Arrow array (a chunked one combined) as its type, length, offset and buffers."""
    if type(arr) is pa.ChunkedArray:  # (one chunk as it is: combining copies even that one)
        arr = arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    if not isinstance(arr, pa.Array):
        raise NotArrowData
    # copied like any raw memory, in process too: Arrow's own buffers say they are mutable, and
    # a numpy view of one (np.frombuffer) writes it, so a shared view would be the model's to change
    def wrap(b):
        return blob(memoryview(b))

    return {TAG: "arrow_array", "type": _spec(arr.type, pa), "length": len(arr),
            "offset": arr.offset, "buffers": [None if b is None else wrap(b) for b in arr.buffers()]}


def encode_arrow(v, t, blob):
    """The payload of a pyarrow value of exact type `t`, or None when it is not one."""
    pa = sys.modules.get("pyarrow")
    if pa is None or not t.__module__.startswith("pyarrow"):
        return None
    if t is pa.Table or t is pa.RecordBatch:
        return {TAG: "arrow_table", "kind": "table" if t is pa.Table else "batch",
                "names": [str(n) for n in v.schema.names],
                "columns": [array_payload(c, pa, blob) for c in v.columns]}
    if t is pa.ChunkedArray or isinstance(v, pa.Array):
        return array_payload(v, pa, blob)
    return None


def strings_column(s, pd, blob):
    """A pandas strings column held in Arrow (`str`, `string[pyarrow]`) as its Arrow array,
    or None for any other column."""
    dtype = s.dtype
    pa = sys.modules.get("pyarrow")
    if pa is None or type(dtype) is not pd.StringDtype or dtype.storage != "pyarrow":
        return None
    kind = "str" if dtype.na_value is not pd.NA else "string"
    return {TAG: "arrow_strings", "dtype": kind, "v": array_payload(s.array.__arrow_array__(), pa, blob)}


def decode_array(data, pa, bytes_of):
    """An Arrow array from its payload, checked whole (ValueError on anything wrong)."""
    if type(data) is not dict or data.get(TAG) != "arrow_array":
        raise ValueError("expected an Arrow array payload")
    typ = _type(data["type"], pa)
    length, offset, buffers = data["length"], data["offset"], data["buffers"]
    if type(length) is not int or type(offset) is not int or not 0 <= length < 2**62 \
            or not 0 <= offset < 2**62 or type(buffers) is not list or len(buffers) != typ.num_buffers:
        raise ValueError("an Arrow array needs its length, offset and one entry per buffer")
    bufs = [None if b is None else pa.py_buffer(bytes_of(b)) for b in buffers]
    arr = pa.Array.from_buffers(typ, length, bufs, offset=offset)
    # checked whole, in process too: an array the model built from buffers may lie about its
    # offsets, and reading it would read past them (pyarrow's ArrowInvalid is a ValueError)
    if not _valid_ascii_strings(arr, pa):
        arr.validate(full=True)
    return arr


def _valid_ascii_strings(arr, pa) -> bool:
    """True only when `arr` is a string array that full validation would pass, found in two
    numpy passes: its buffers sized for its length (the light validation), its offsets rising
    from >= 0 to within the data, and those bytes all ASCII (so every value is UTF-8). Full
    validation checks UTF-8 value by value, at as much as a copy of the frame costs; anything
    this does not show (other types, any non-ASCII byte, any doubt) is left to it."""
    np = sys.modules.get("numpy")
    typ = arr.type
    if np is None or not len(arr) or not (pa.types.is_string(typ) or pa.types.is_large_string(typ)):
        return False
    try:
        arr.validate()
        _, offsets, data = arr.buffers()
        if offsets is None or data is None:
            return False
        width = np.int32 if pa.types.is_string(typ) else np.int64
        off = np.frombuffer(offsets, dtype=width, count=arr.offset + len(arr) + 1)[arr.offset:]
        first, last = int(off[0]), int(off[-1])
        if not (0 <= first <= last <= data.size) or not bool((off[1:] >= off[:-1]).all()):
            return False
        return first == last or int(np.frombuffer(data, dtype=np.uint8)[first:last].max()) < 0x80
    except Exception:  # noqa: BLE001 - any doubt: the full validation decides, and says why
        return False


def decode_arrow(tag: str, data: dict, may_import: bool, bytes_of, library):
    pa = library("pyarrow", may_import)
    if tag == "arrow_array":
        return decode_array(data, pa, bytes_of)
    names, columns, kind = data["names"], data["columns"], data.get("kind")
    if type(names) is not list or type(columns) is not list or len(names) != len(columns) \
            or not all(type(n) is str for n in names) or kind not in ("table", "batch"):
        raise ValueError("an Arrow table needs one name (str) per column")
    arrays = [decode_array(c, pa, bytes_of) for c in columns]
    if len({len(a) for a in arrays}) > 1:
        raise ValueError("the columns of an Arrow table differ in length")
    build = pa.table if kind == "table" else pa.record_batch
    return build(arrays, names=names)


def decode_strings(data, pd, pa_library, bytes_of):
    """A pandas strings column (ArrowStringArray) from its Arrow payload."""
    kind = data.get("dtype")
    if kind not in ("str", "string"):
        raise ValueError("an Arrow strings column is 'str' or 'string'")
    try:
        pa = pa_library()
    except Exception as exc:  # (LibraryMissing) a side without pyarrow reads the buffers itself
        if type(exc).__name__ != "LibraryMissing":
            raise
        values = _strings_without_pyarrow(data["v"], bytes_of)
        return pd.array(values, dtype="str" if kind == "str" else "string")
    arr = decode_array(data["v"], pa, bytes_of)
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        raise ValueError("an Arrow strings column holds strings")
    dtype = pd.StringDtype("pyarrow", na_value=float("nan") if kind == "str" else pd.NA)
    return pd.arrays.ArrowStringArray(pa.chunked_array([arr]), dtype=dtype)


def _strings_without_pyarrow(data, bytes_of) -> list:
    """An Arrow (large) string array's values from its three buffers, checked as pyarrow's full
    validation would: offsets rising within the data, valid UTF-8 (ValueError otherwise)."""
    np = sys.modules["numpy"]  # (loaded: pandas is, to hold the column; the package stays stdlib-only)
    if type(data) is not dict or data.get(TAG) != "arrow_array" or data.get("type") not in ("string", "large_string"):
        raise ValueError("expected an Arrow string array payload")
    length, offset, buffers = data["length"], data["offset"], data["buffers"]
    if type(length) is not int or type(offset) is not int or not 0 <= length < 2**62 \
            or not 0 <= offset < 2**62 or type(buffers) is not list or len(buffers) != 3 or buffers[1] is None:
        raise ValueError("an Arrow string array needs its length, offset and three buffers")
    width = np.dtype("<i4" if data["type"] == "string" else "<i8")
    raw = bytes_of(buffers[1])
    if len(raw) < (offset + length + 1) * width.itemsize:
        raise ValueError("an Arrow string array's offsets are shorter than its length")
    offsets = np.frombuffer(raw, dtype=width, count=offset + length + 1)[offset:].astype(np.int64)
    text = bytes_of(buffers[2]) if buffers[2] is not None else b""
    if (offsets[0] < 0 or offsets[-1] > len(text) or np.any(np.diff(offsets) < 0)) if length else False:
        raise ValueError("an Arrow string array's offsets leave its data")
    valid = None
    if buffers[0] is not None:
        bits = np.frombuffer(bytes_of(buffers[0]), dtype=np.uint8)
        if len(bits) * 8 < offset + length:
            raise ValueError("an Arrow string array's validity is shorter than its length")
        valid = np.unpackbits(bits, bitorder="little")[offset:offset + length].astype(bool)
    text = bytes(text)
    out = [text[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(length)]  # (UnicodeDecodeError is a ValueError)
    if valid is not None:
        out = [v if ok else None for v, ok in zip(out, valid.tolist(), strict=True)]
    return out
