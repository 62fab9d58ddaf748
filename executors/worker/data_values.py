"""numpy arrays and pandas frames as typed payloads of the value codec: data, never pickle. Stdlib only.

A data task's values cross the boundary as data, in both directions and in every executor:
`ndarray` (dtype kinds b i u f c m M U S: raw bytes, dtype string and shape), numpy scalars (as
the Python scalar, or a 0-d array for dates), pandas `Series`, `DataFrame` and `Index` whose
columns are numeric, bool, datetime (naive or with a zone), timedelta, strings (object, `str` or
`string` dtype holding only exact `str` and missing values), categoricals of those, and the
nullable Int/Float/boolean dtypes. Anything else (object cells holding other things, a subclass,
a structured dtype) is not data: the caller sends its repr.

Encoding only looks at types of modules already loaded (`sys.modules`) and checks exact types;
what it reads from a model's value it reads inside the step. Decoding rebuilds fresh objects with
the library's public constructors, after checking every field: a dtype string from a worker is
hostile (`np.dtype("O")` over raw bytes would read pointers), so only the kinds above pass.
"""

from __future__ import annotations

import sys

from .bounds import BOUNDS

__all__ = ["DATA_TAGS", "LibraryMissing", "decode_data", "encode_data"]

TAG = "$t"
DATA_TAGS = frozenset({"ndarray", "series", "dataframe", "index", "range_index", "multi_index",
                       "timestamp", "timedelta64", "nat", "na"})
_KINDS = frozenset("biufcmMUS")
_STRING_DTYPES = ("object", "str", "string")
_MASKED = {"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64",
           "Float32", "Float64", "boolean"}


_TEXT = frozenset({str, type(None)})
_NAN = {TAG: "float", "v": "nan"}  # the missing values of a strings column besides None
_NA = {TAG: "na"}


class LibraryMissing(Exception):
    """The payload needs numpy/pandas, which this side does not have (or may not import)."""


class NotData(Exception):
    """Inside a payload: a part that is not data (the whole value then crosses as its repr)."""


# ---------------------------------------------------------------------------------------------
# Encoding (the sending side)


def encode_data(v, t, blob):
    """The payload of a numpy/pandas value of exact type `t`, or None when `v` is not one.
    `blob(bytes)` wraps raw bytes the way the codec sends them. Raises NotData for a value of a
    data type that holds something else (the caller falls back to the repr)."""
    mods = sys.modules
    np = mods.get("numpy")
    if np is None:
        return None
    if t is np.ndarray:
        return _array(v, np, blob)
    if t in _scalar_types(np):
        if v.dtype.kind in "mM":  # a 0-d array keeps the unit and NaT
            return _array(np.asarray(v), np, blob)
        item = v.item()
        return item if type(item) in (bool, int, float, complex, str, bytes) else None
    pd = mods.get("pandas")
    if pd is None:
        return None
    if t is pd.DataFrame:
        return {TAG: "dataframe", "columns": _index(v.columns, pd, np, blob),
                "index": _index(v.index, pd, np, blob),
                "data": [_column(v.iloc[:, i], pd, np, blob) for i in range(v.shape[1])]}
    if t is pd.Series:
        return {TAG: "series", "name": _label(v.name, np), "index": _index(v.index, pd, np, blob),
                "data": _column(v, pd, np, blob)}
    if t in (pd.Index, pd.RangeIndex, pd.MultiIndex, pd.DatetimeIndex, pd.TimedeltaIndex,
             pd.CategoricalIndex):
        return _index(v, pd, np, blob)
    if t is pd.Timestamp:
        return {TAG: "timestamp", "v": int(v.value), "unit": str(v.unit), "tz": _zone(v.tz)}
    if t is pd.Timedelta:
        return _array(np.asarray(v.to_timedelta64()), np, blob)
    if v is pd.NaT:
        return {TAG: "nat"}
    if v is pd.NA:
        return {TAG: "na"}
    return None


def _scalar_types(np) -> frozenset:
    cached = getattr(_scalar_types, "cache", None)
    if cached is None or cached[0] is not np:
        types = frozenset(t for t in np.sctypeDict.values() if t not in (np.object_, np.void))
        cached = _scalar_types.cache = (np, types)
    return cached[1]


def _array(a, np, blob) -> dict:
    dtype = a.dtype
    if type(dtype).__module__ != "numpy.dtypes" or dtype.kind not in _KINDS or dtype.hasobject:
        raise NotData
    if not _shape_within(a.shape, a.size):  # (what the host refuses: a lie about its size)
        raise NotData
    return {TAG: "ndarray", "dtype": dtype.str, "shape": [int(n) for n in a.shape],
            "v": blob(np.ascontiguousarray(a).tobytes())}


def _label(x, np):
    """A column or index name: a plain scalar (or a tuple of them); numpy scalars as Python's."""
    t = type(x)
    if x is None or t in (str, int, float, bool):
        return x
    if t in _scalar_types(np):
        return _label(x.item(), np)
    if t is tuple:
        return {TAG: "tuple", "v": [_label(p, np) for p in x]}
    raise NotData


def _zone(tz):
    if tz is None:
        return None
    import datetime

    if type(tz) is datetime.timezone:
        return {"offset": int(tz.utcoffset(None).total_seconds())}
    zoneinfo = sys.modules.get("zoneinfo")
    if zoneinfo is not None and type(tz) is zoneinfo.ZoneInfo and type(tz.key) is str:
        return {"zone": tz.key}
    raise NotData


def _column(s, pd, np, blob) -> dict:
    """One column's values (a Series or an Index), by dtype."""
    dtype = s.dtype
    if type(dtype).__module__ == "numpy.dtypes" and dtype.kind in _KINDS:
        return _array(s.to_numpy(), np, blob)
    name = str(dtype) if type(dtype).__module__.split(".")[0] == "pandas" else ""
    is_object = type(dtype).__module__ == "numpy.dtypes" and dtype.kind == "O"
    if is_object or type(dtype) is pd.StringDtype:
        values = s.tolist()
        kind = "object" if is_object else "str" if dtype.na_value is not pd.NA else "string"
        kinds = set(map(type, values))  # (exact types, found in C: a str subclass is not data)
        if kinds <= _TEXT:
            return {TAG: "strings", "dtype": kind, "v": values}
        if not kinds <= _TEXT | {float, type(pd.NA)}:
            raise NotData
        for i, x in enumerate(values):
            if type(x) is float:
                if x == x:
                    raise NotData
                values[i] = _NAN
            elif x is pd.NA:
                values[i] = _NA
            elif type(x) not in _TEXT:
                raise NotData
        return {TAG: "strings", "dtype": kind, "v": values}
    if type(dtype) is pd.CategoricalDtype:
        cats = pd.Index(dtype.categories)
        codes = s.cat.codes if type(s) is pd.Series else pd.Series(s.codes)
        return {TAG: "categorical", "categories": _column(cats, pd, np, blob),
                "codes": _array(codes.to_numpy(), np, blob), "ordered": bool(dtype.ordered)}
    if type(dtype) is pd.DatetimeTZDtype:
        naive = s.dt.tz_localize(None) if type(s) is pd.Series else s.tz_localize(None)
        return {TAG: "datetime_tz", "tz": _zone(dtype.tz),
                "v": _array(naive.to_numpy(), np, blob)}
    if name in _MASKED:
        mask = s.isna().to_numpy() if type(s) is pd.Series else s.isna()
        fill = False if name == "boolean" else 0
        values = s.to_numpy(dtype=dtype.numpy_dtype, na_value=fill)
        return {TAG: "masked", "dtype": name, "v": _array(values, np, blob),
                "mask": _array(np.asarray(mask, dtype=bool), np, blob)}
    raise NotData


def _index(ix, pd, np, blob) -> dict:
    t = type(ix)
    if t is pd.RangeIndex:
        return {TAG: "range_index", "start": int(ix.start), "stop": int(ix.stop),
                "step": int(ix.step), "name": _label(ix.name, np)}
    if t is pd.MultiIndex:
        return {TAG: "multi_index", "names": [_label(n, np) for n in ix.names],
                "levels": [_column(ix.get_level_values(i), pd, np, blob) for i in range(ix.nlevels)]}
    if t in (pd.Index, pd.DatetimeIndex, pd.TimedeltaIndex, pd.CategoricalIndex):
        return {TAG: "index", "name": _label(ix.name, np), "data": _column(ix, pd, np, blob)}
    raise NotData


# ---------------------------------------------------------------------------------------------
# Decoding (the receiving side): every field checked, fresh objects


def _library(name: str, may_import: bool):
    module = sys.modules.get(name)
    if module is None and may_import:
        try:
            import importlib

            module = importlib.import_module(name)
        except ImportError:
            module = None
    if module is None:
        raise LibraryMissing(name)
    return module


def decode_data(tag: str, data: dict, may_import: bool, bytes_of, label_of):
    """The value of a typed payload. `bytes_of(v)` turns a blob field into bytes (raising
    ValueError on a bad one), `label_of(v)` decodes a name/label; ValueError/TypeError/KeyError
    on a malformed payload, LibraryMissing when numpy/pandas is not available here."""
    np = _library("numpy", may_import)
    if tag == "ndarray":
        a = _decode_array(data, np, bytes_of)
        return a[()] if a.ndim == 0 else a
    if tag == "timedelta64":  # (reserved; 0-d arrays carry timedeltas)
        raise ValueError("unknown payload")
    pd = _library("pandas", may_import)
    if tag == "nat":
        return pd.NaT
    if tag == "na":
        return pd.NA
    if tag == "timestamp":
        value, unit = data["v"], data["unit"]
        if type(value) is not int or unit not in ("s", "ms", "us", "ns"):
            raise ValueError("timestamp needs an int and a unit")
        stamp = pd.Timestamp(value, unit="ns").as_unit(unit) if unit == "ns" else \
            pd.Timestamp(np.datetime64(value, unit))
        tz = _decode_zone(data.get("tz"))
        return stamp if tz is None else stamp.tz_localize("UTC").tz_convert(tz)
    if tag == "series":
        index = _decode_index(data["index"], pd, np, bytes_of, label_of)
        return _typed(_decode_column(data["data"], pd, np, bytes_of), pd.Series, index=index,
                      name=label_of(data.get("name")), copy=False)
    if tag == "dataframe":
        columns = _decode_index(data["columns"], pd, np, bytes_of, label_of)
        index = _decode_index(data["index"], pd, np, bytes_of, label_of)
        cols = data["data"]
        if type(cols) is not list or len(cols) != len(columns):
            raise ValueError("dataframe needs one column payload per column")
        # positional columns on a default index (Series of object columns align to it), then
        # the real labels: no alignment by label ever happens
        arrays = {i: _typed(_decode_column(c, pd, np, bytes_of), pd.Series, copy=False)
                  for i, c in enumerate(cols)}
        frame = pd.DataFrame(arrays, copy=False) if arrays else pd.DataFrame(index=range(len(index)))
        if len(frame) != len(index):
            raise ValueError("the columns and the index differ in length")
        frame.index = index
        frame.columns = columns
        return frame
    return _decode_index(data, pd, np, bytes_of, label_of)


def _decode_array(data, np, bytes_of):
    if type(data) is not dict or data.get(TAG) != "ndarray":
        raise ValueError("expected an ndarray payload")
    dtype = np.dtype(_dtype_string(data["dtype"]))
    if dtype.kind not in _KINDS or dtype.hasobject or dtype.fields is not None:
        raise ValueError(f"dtype {data['dtype']!r} is not plain data")
    shape = data["shape"]
    if type(shape) is not list or len(shape) > BOUNDS.array_dims or \
            not all(type(n) is int and 0 <= n < 2**62 for n in shape):
        raise ValueError(f"shape must be a list of at most {BOUNDS.array_dims} non-negative ints")
    raw = bytes_of(data["v"])
    count = 1
    for n in shape:
        count *= n
    if count * dtype.itemsize != len(raw) or not _shape_within(shape, count):
        raise ValueError(f"the shape {shape[:8]} does not match the {len(raw):,} bytes of {dtype.str}")
    return np.frombuffer(bytearray(raw), dtype=dtype).reshape(shape)


def _shape_within(shape, count: int) -> bool:
    """An array's shape is what its bytes hold: no more dimensions than the table allows, and
    no empty axis that multiplies what `tolist()` would build (shape (10**18, 0) holds no bytes
    and would make 10**18 lists)."""
    if len(shape) > BOUNDS.array_dims:
        return False
    cells = 1
    for n in shape:
        cells *= max(int(n), 1)
    return cells <= max(count, BOUNDS.values)


def _dtype_string(text) -> str:
    # '<f8', '|b1', '<M8[ns]', '<U12', '|S4': byte order, kind letter, size, an optional unit
    if type(text) is not str or not (2 <= len(text) <= 16) or text[0] not in "<>|=" or \
            not all(c.isalnum() or c in "[]" for c in text[1:]):
        raise ValueError(f"bad dtype {text!r}")
    return text


def _decode_zone(tz):
    if tz is None:
        return None
    import datetime

    if type(tz) is dict and type(tz.get("offset")) is int and abs(tz["offset"]) < 86400:
        return datetime.timezone(datetime.timedelta(seconds=tz["offset"]))
    if type(tz) is dict and type(tz.get("zone")) is str and len(tz["zone"]) <= 64:
        import zoneinfo

        return zoneinfo.ZoneInfo(tz["zone"])
    raise ValueError("bad time zone")


def _decode_column(data, pd, np, bytes_of):
    if type(data) is not dict:
        raise ValueError("column payload must be an object")
    tag = data.get(TAG)
    if tag == "ndarray":
        return _decode_array(data, np, bytes_of)
    if tag == "strings":
        values, kind = data["v"], data.get("dtype")
        if type(values) is not list or kind not in _STRING_DTYPES:
            raise ValueError("strings payload must be a list of str/null")
        if not set(map(type, values)) <= _TEXT:
            missing = {"nan": float("nan"), "na": pd.NA}
            values = list(values)
            for i, x in enumerate(values):
                if x is not None and type(x) is not str:
                    if type(x) is not dict or x.get(TAG) not in ("float", "na") or \
                            (x.get(TAG) == "float" and x.get("v") != "nan"):
                        raise ValueError("strings payload must hold str, null, NaN or NA")
                    values[i] = missing["nan" if x[TAG] == "float" else "na"]
        out = np.empty(len(values), dtype=object)
        out[:] = values
        if kind == "object":
            return _Objects(out)
        return pd.array(out, dtype="str" if kind == "str" else "string")
    if tag == "categorical":
        categories = _typed(_decode_column(data["categories"], pd, np, bytes_of), pd.Index)
        codes = _decode_array(data["codes"], np, bytes_of)
        if codes.dtype.kind != "i":
            raise ValueError("categorical codes must be integers")
        return pd.Categorical.from_codes(codes, categories=categories, ordered=bool(data.get("ordered")))
    if tag == "datetime_tz":
        naive = _decode_array(data["v"], np, bytes_of)
        if naive.dtype.kind != "M":
            raise ValueError("datetime_tz needs datetime64 values")
        return pd.DatetimeIndex(naive).tz_localize(_decode_zone(data["tz"])).array
    if tag == "masked":
        name = data["dtype"]
        if name not in _MASKED:
            raise ValueError(f"unknown masked dtype {name!r}")
        values = _decode_array(data["v"], np, bytes_of)
        mask = _decode_array(data["mask"], np, bytes_of)
        if mask.dtype != bool or mask.shape != values.shape or values.ndim != 1:
            raise ValueError("masked payload needs a bool mask of the values' shape")
        kind = pd.arrays.BooleanArray if name == "boolean" else \
            pd.arrays.FloatingArray if name.startswith("Float") else pd.arrays.IntegerArray
        return kind(values.astype(pd.api.types.pandas_dtype(name).numpy_dtype, copy=False), mask)
    raise ValueError(f"unknown column payload {tag!r}")


class _Objects:
    """An object column: constructors must be told (pandas would read an object array of str
    as its `str` dtype)."""

    __slots__ = ("values",)

    def __init__(self, values) -> None:
        self.values = values


def _typed(values, build, **kwargs):
    """`build(values, **kwargs)` with dtype=object for an object column."""
    if type(values) is _Objects:
        return build(values.values, dtype=object, **kwargs)
    return build(values, **kwargs)


def _decode_index(data, pd, np, bytes_of, label_of):
    if type(data) is not dict:
        raise ValueError("index payload must be an object")
    tag = data.get(TAG)
    if tag == "range_index":
        start, stop, step = data["start"], data["stop"], data["step"]
        if not all(type(x) is int for x in (start, stop, step)) or step == 0:
            raise ValueError("range_index needs int start/stop/step")
        return pd.RangeIndex(start, stop, step, name=label_of(data.get("name")))
    if tag == "multi_index":
        levels, names = data["levels"], data["names"]
        if type(levels) is not list or type(names) is not list or len(levels) != len(names) or not levels:
            raise ValueError("multi_index needs levels and names")
        arrays = [_typed(_decode_column(level, pd, np, bytes_of), pd.Index) for level in levels]
        return pd.MultiIndex.from_arrays(arrays, names=[label_of(n) for n in names])
    if tag == "index":
        return _typed(_decode_column(data["data"], pd, np, bytes_of), pd.Index,
                      name=label_of(data.get("name")), copy=False)
    raise ValueError(f"unknown index payload {tag!r}")
