"""Crash-finding programs: authorized native-library calls fed hostile shapes, strides, dtypes,
offsets, sizes and indices (the "crashes" property of a campaign).

Each example is ordinary model code (the policy accepts it) that builds arrays, buffers, sparse
arrays or frames with numbers drawn from the edges (0, -1, the itemsize, 2**31, 2**62, ...),
hands them to numpy, pandas, pyarrow, scipy.sparse or polars, and then reads the result (a sum,
a copy, to_pylist). A library may refuse the numbers (any exception is fine) or compute; what must
never happen is the host process dying by a signal (a read or write out of bounds, an abort on a
broken invariant). The campaign runs in-process executors in a forked child, so a death is seen
and reported as "crashed" with the program that caused it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._hypothesis import st

__all__ = ["NativeCall", "native_calls", "NATIVE_IMPORTS", "NATIVE_FAMILIES"]

# What the programs import (a campaign authorizes these when it runs the property).
NATIVE_IMPORTS = ("numpy.*", "pandas.*", "pyarrow.*", "scipy.*", "polars.*")


@dataclass(frozen=True)
class NativeCall:
    code: str
    family: str
    route: str

    @property
    def label(self) -> str:
        return f"native/{self.family}/{self.route}"


_EDGE = (0, 1, 2, 3, 7, 8, 15, 16, 255, 4096, 2**31 - 1, 2**31, 2**32, 2**62, -1, -2, -8, -(2**31),
         -(2**62))
_SMALL = st.integers(0, 12)


def _edge(lo: int | None = None, hi: int | None = None) -> st.SearchStrategy[int]:
    values = [v for v in _EDGE if (lo is None or v >= lo) and (hi is None or v <= hi)]
    bounded = st.integers(-64 if lo is None else max(lo, -64), 64 if hi is None else min(hi, 64))
    return st.one_of(st.sampled_from(values), bounded)


_DTYPES = ("np.uint8", "np.int16", "np.int32", "np.int64", "np.float32", "np.float64",
           "np.complex128", "object", "'U3'", "'S5'", "'M8[s]'", "[('a', 'i4'), ('b', 'f8')]")
_READ = ("v.sum()", "v.copy()", "v.tolist()", "repr(v)", "v[-1]", "v.T.copy()", "v.ravel()",
         "np.sort(v, axis=None)", "v.astype(np.float64)")


@st.composite
def _list(draw: st.DrawFn, element: st.SearchStrategy[int], min_size: int = 0, max_size: int = 4) -> str:
    return repr(draw(st.lists(element, min_size=min_size, max_size=max_size)))


@st.composite
def _numpy_strided(draw: st.DrawFn) -> NativeCall:
    dtype = draw(st.sampled_from(_DTYPES))
    n = draw(_SMALL)
    ndim = draw(st.integers(1, 3))
    dims = draw(st.lists(_edge(0, 2**31), min_size=ndim, max_size=ndim))
    shape = repr(dims)
    strides = draw(_list(_edge(), ndim, ndim))
    start = draw(st.integers(0, 4))
    size = 1
    for n in dims:
        size *= n
    # a legal view of 2**31 elements (stride 0) is a CPU bomb, not a crash: read its edges only
    huge = size > 2**22
    read = draw(st.sampled_from(("v[-1]", "repr(v)", "v.shape") if huge else _READ))
    write = draw(st.booleans()) and not huge
    body = (f"a = np.zeros({n}, dtype={dtype})[{start}:]\n"
            f"v = np.lib.stride_tricks.as_strided(a, shape={shape}, strides={strides})\n"
            + ("v[...] = 1\n" if write else "") + f"r = {read}\n")
    return NativeCall(body, "numpy", "as_strided")


@st.composite
def _numpy_buffer(draw: st.DrawFn) -> NativeCall:
    dtype = draw(st.sampled_from(_DTYPES))
    size = draw(_SMALL)
    how = draw(st.sampled_from(("ndarray", "frombuffer", "view", "strides")))
    if how == "ndarray":
        call = (f"np.ndarray({draw(_list(_edge(0), 1, 3))}, dtype={dtype}, buffer=bytearray({size}), "
                f"offset={draw(_edge(0))}, strides={draw(_list(_edge(), 1, 3))})")
    elif how == "frombuffer":
        call = (f"np.frombuffer(bytes({size}), dtype={dtype}, count={draw(_edge(-1))}, "
                f"offset={draw(_edge(0))})")
    elif how == "view":
        fields = draw(st.lists(st.tuples(st.sampled_from(("'i8'", "'f4'", "'O'", "'u1'")), _edge(0, 64)),
                               min_size=1, max_size=3))
        names = [f"'f{i}'" for i in range(len(fields))]
        formats = [f for f, _ in fields]
        offsets = [o for _, o in fields]
        call = (f"np.zeros({size}, dtype=np.uint8).view(np.dtype({{'names': [{', '.join(names)}], "
                f"'formats': [{', '.join(formats)}], 'offsets': {offsets}, "
                f"'itemsize': {draw(_edge(0, 256))}}}))")
    else:
        call = f"np.zeros({size}, dtype={dtype})\nv.shape = {draw(_list(_edge(0), 1, 2))}"
    return NativeCall(f"v = {call}\nr = {draw(st.sampled_from(_READ))}\n", "numpy", how)


@st.composite
def _numpy_indices(draw: st.DrawFn) -> NativeCall:
    n = draw(st.integers(0, 6))
    idx = draw(_list(_edge(), 0, 4))
    how = draw(st.sampled_from(("take", "put", "choose", "a.take", "a.put", "a.choose", "ufunc.at",
                                "reduceat", "delete", "insert", "fancy", "setfield", "repeat",
                                "partition")))
    # (numpy takes the mode as a name or as its number: 1 is "wrap")
    mode = draw(st.sampled_from(("'raise'", "'wrap'", "'clip'", "0", "1", "2", "np.int64(1)")))
    calls = {
        "take": f"np.take(a, {idx}, mode={mode})",
        "put": f"np.put(a, {idx}, 1, mode={mode})",
        "choose": f"np.choose({idx}, [a, a], mode={mode})",
        "a.take": f"a.take({idx}, mode={mode})",
        "a.put": f"a.put({idx}, 1, mode={mode})",
        "a.choose": f"np.array({idx}, dtype=np.int64).choose([a, a], mode={mode})",
        "ufunc.at": f"np.add.at(a, {idx}, 1)",
        "reduceat": f"np.add.reduceat(a, {idx})",
        "delete": f"np.delete(a, {idx})",
        "insert": f"np.insert(a, {idx}, 7)",
        "fancy": f"a[{idx}]",
        "setfield": f"a.setfield(3, np.int8, offset={draw(_edge())})",
        "repeat": f"np.repeat(a, {idx})",
        "partition": f"np.partition(a, {idx})",
    }
    code = f"a = np.arange({n}, dtype=np.int64)\nv = np.asarray({calls[how]})\nr = v.sum()\n"
    return NativeCall(code, "numpy", how)


@st.composite
def _pandas_calls(draw: st.DrawFn) -> NativeCall:
    n = draw(st.integers(0, 6))
    how = draw(st.sampled_from(("indexer", "codes", "take", "iloc", "shift")))
    if how == "indexer":
        starts, ends = draw(_list(_edge(), n, n)), draw(_list(_edge(), n, n))
        code = ("from pandas.api.indexers import BaseIndexer\n"
                "class Bounds(BaseIndexer):\n"
                "    def get_window_bounds(self, num_values=0, min_periods=None, center=None, "
                "closed=None, step=None):\n"
                f"        return np.array({starts}, dtype=np.int64), np.array({ends}, dtype=np.int64)\n"
                f"s = pd.Series(np.arange({n}, dtype=float))\n"
                f"r = s.rolling(Bounds(window_size=1)).{draw(st.sampled_from(('sum()', 'max()', 'var()', 'median()', 'apply(len, raw=True)')))}\n")
    elif how == "codes":
        code = f"r = pd.Categorical.from_codes({draw(_list(_edge(), 0, 4))}, ['a', 'b']).tolist()\n"
    elif how == "take":
        code = (f"r = pd.api.extensions.take(np.arange({n}), {draw(_list(_edge(), 0, 4))}, "
                f"allow_fill={draw(st.booleans())}, fill_value=0)\n")
    elif how == "iloc":
        code = f"r = pd.DataFrame({{'a': range({n})}}).iloc[{draw(_list(_edge(), 0, 4))}]\n"
    else:
        code = f"r = pd.Series(range({n})).shift({draw(_edge())}).sum()\n"
    return NativeCall(code, "pandas", how)


_ARROW_TYPES = ("pa.int8()", "pa.int64()", "pa.float64()", "pa.string()", "pa.large_string()",
                "pa.binary()", "pa.bool_()", "pa.list_(pa.int32())", "pa.binary_view()",
                "pa.string_view()", "pa.dictionary(pa.int32(), pa.string())")


@st.composite
def _arrow_calls(draw: st.DrawFn) -> NativeCall:
    how = draw(st.sampled_from(("from_buffers", "list_offsets", "list_view", "dictionary", "take",
                                "slice", "ipc", "union")))
    offsets = draw(st.lists(_edge(-(2**31), 2**31 - 1), min_size=1, max_size=4))
    offs = repr(offsets)
    buffer = f"pa.py_buffer(bytes(range({draw(st.integers(0, 64))})))"
    if how == "from_buffers":
        code = (f"v = pa.Array.from_buffers({draw(st.sampled_from(_ARROW_TYPES[:7]))}, {draw(_edge(0))}, "
                f"[None, {buffer}, {buffer}][:{draw(st.integers(1, 3))}], offset={draw(_edge(0))})\n")
    elif how == "list_offsets":
        code = f"v = pa.ListArray.from_arrays(pa.array({offs}, pa.int32()), pa.array([1, 2, 3]))\n"
    elif how == "list_view":
        sizes = draw(_list(_edge(-(2**31), 2**31 - 1), len(offsets), len(offsets)))
        code = (f"v = pa.ListViewArray.from_arrays(pa.array({offs}, pa.int32()), "
                f"pa.array({sizes}, pa.int32()), pa.array([1, 2, 3]))\n")
    elif how == "dictionary":
        code = (f"v = pa.DictionaryArray.from_arrays(pa.array({offs}, pa.int32()), "
                f"pa.array(['x', 'y']), safe={draw(st.booleans())})\n")
    elif how == "take":
        code = f"v = pa.array([1, 2, 3]).take(pa.array({offs}, pa.int64()))\n"
    elif how == "slice":
        code = f"v = {buffer}.slice({draw(_edge())}, {draw(_edge())})\nv = pa.py_buffer(v)\n"
    elif how == "ipc":
        data = draw(st.binary(max_size=64))
        code = f"v = pa.ipc.open_stream(pa.py_buffer({data!r})).read_all()\n"
    else:
        code = (f"v = pa.UnionArray.from_dense(pa.array({offs}, pa.int8()), pa.array({offs}, pa.int32()), "
                "[pa.array([1, 2]), pa.array(['a'])])\n")
    read = draw(st.sampled_from(("v.to_pylist()", "len(v)", "repr(v)", "pa.chunked_array([v]).to_pylist()",
                                 "v.validate(full=True)", "pl.from_arrow(pa.table({'c': v})) if hasattr(v, 'type') else 0")))
    return NativeCall(code + f"r = {read}\n", "pyarrow", how)


@st.composite
def _sparse_calls(draw: st.DrawFn) -> NativeCall:
    fmt = draw(st.sampled_from(("csr", "csc", "bsr", "coo")))
    n = draw(st.integers(1, 4))
    index_list = draw(st.lists(_edge(-(2**31), 2**31 - 1), min_size=1, max_size=4))
    indices, nnz = repr(index_list), len(index_list)
    indptr = draw(_list(_edge(-(2**31), 2**31 - 1), n + 1, n + 1))
    mutate = draw(st.sampled_from(("", "indices", "indptr", "data")))
    use = draw(st.sampled_from(("A.toarray()", "A @ np.ones(A.shape[1])", "(A + A).toarray()",
                                "A.T.tocsr().toarray()", "A.sum(axis=0)", "A.tocoo().toarray()",
                                "A.nonzero()",
                                "A.max()", "A[0:1].toarray()")))
    if fmt == "coo":
        build = f"A = sps.coo_array((np.ones({nnz}), ({indices}, {indices})), shape=({n}, {n}))\n"
    else:
        kind = f"sps.{fmt}_array"
        build = (f"A = {kind}((np.ones({nnz}), np.array({indices}), np.array({indptr})), "
                 f"shape=({n}, {n}))\n" if fmt != "bsr" else
                 f"A = {kind}(np.eye({2 * n}), blocksize=(2, 2))\n")
    if mutate and fmt != "coo":
        attr = {"indices": "A.indices", "indptr": "A.indptr", "data": "A.data"}[mutate]
        build = (f"A = sps.{fmt}_array(np.eye({2 * n}))\n" if fmt != "bsr" else build)
        build += f"{attr}[{draw(st.integers(0, 1))}] = {draw(_edge(-(2**31), 2**31 - 1))}\n"
    return NativeCall(build + f"r = {use}\n", "scipy", f"{fmt}/{mutate or 'built'}")


@st.composite
def _polars_calls(draw: st.DrawFn) -> NativeCall:
    n = draw(st.integers(0, 6))
    how = draw(st.sampled_from(("gather", "slice", "from_numpy", "shift", "head")))
    calls = {
        "gather": f"pl.Series(range({n})).gather({draw(_list(_edge(-(2**31), 2**31 - 1), 0, 4))})",
        "slice": f"pl.Series(range({n})).slice({draw(_edge())}, {draw(_edge(0))})",
        "from_numpy": f"pl.from_numpy(np.arange({n * 2})[::{draw(st.sampled_from((1, 2, -1, -2)))}])",
        "shift": f"pl.Series(range({n})).shift({draw(_edge(-(2**31), 2**31 - 1))})",
        "head": f"pl.DataFrame({{'a': range({n})}}).head({draw(_edge())})",
    }
    read = draw(st.sampled_from(("v.to_list() if hasattr(v, 'to_list') else v.to_dicts()", "v.to_numpy()",
                                 "v.to_arrow()", "repr(v)")))
    return NativeCall(f"v = {calls[how]}\nr = {read}\n", "polars", how)


NATIVE_FAMILIES = {"numpy-strided": _numpy_strided, "numpy-buffer": _numpy_buffer,
                   "numpy-indices": _numpy_indices, "pandas": _pandas_calls,
                   "pyarrow": _arrow_calls, "scipy": _sparse_calls, "polars": _polars_calls}
_PREAMBLE = ("import numpy as np\nimport pandas as pd\nimport pyarrow as pa\n"
             "import scipy.sparse as sps\nimport polars as pl\n")


def native_calls(families: tuple[str, ...] = tuple(NATIVE_FAMILIES)) -> st.SearchStrategy[NativeCall]:
    """Programs that call authorized native libraries with hostile numbers (see the module doc).
    Each example is one program; the libraries in NATIVE_IMPORTS must be authorized."""
    chosen = [NATIVE_FAMILIES[f]() for f in families]
    return st.one_of(chosen).map(lambda c: NativeCall(_PREAMBLE + c.code, c.family, c.route))
