"""Programs the crash fuzzer (executors/fuzzing/attacks/native_calls.py, `--properties crashes`)
found killing plain CPython, kept as regressions: each kills a plain host with a signal every
time (tests/test_raw_memory.py proves it every run) and must not kill LocalExecutor's host or the
worker's. Found by drawing 400 and 1,500 programs from the strategy (seeds 1 and 7), each run with
exec in a forked plain CPython: 15 and 75 deaths, one program kept per route (a heap corruption
that kills only sometimes is not kept). The LocalExecutor campaigns found none in the executor.
"""

from __future__ import annotations

from raw_memory_escapes import Case, _case

_PREAMBLE = "import numpy as np\nimport pandas as pd\nimport pyarrow as pa\nimport scipy.sparse as sps\n"
IMPORTS = "numpy.* pandas.* pyarrow.* scipy.*"


def _found(id: str, route: str, code: str) -> Case:
    case = _case(id, route, "crashed", IMPORTS, code)
    return Case(case.id, case.library, case.route, case.expect, case.imports, _PREAMBLE + case.code)


REGRESSIONS: list[Case] = [
    # the long LocalExecutor campaign (seed 20261207) found these kill the host before the fix:
    # numpy takes an empty buffer's length from the requested shape (array_class.py)
    _found("numpy-fuzz-ndarray-empty-buffer", "array constructors over buffers", """
        v = np.ndarray([51, 51, 4096], dtype=np.complex128, buffer=bytearray(0), offset=4096, strides=[51, 51, 4096])
        r = v.ravel()
    """),
    _found("numpy-fuzz-ndarray-empty-objects", "array constructors over buffers", """
        v = np.ndarray([2, 15, 15], dtype=object, buffer=bytearray(0), offset=56, strides=[4, 0, 34])
        r = np.sort(v, axis=None)
    """),
    _found("numpy-fuzz-as_strided-unicode", "strided views", """
        a = np.zeros(4, dtype='U3')[1:]
        v = np.lib.stride_tricks.as_strided(a, shape=[13, 58, 15], strides=[4, 2147483647, 2147483647])
        r = v.ravel()
    """),
    _found("numpy-fuzz-as_strided-write", "strided views", """
        a = np.zeros(10, dtype=np.int32)[2:]
        v = np.lib.stride_tricks.as_strided(a, shape=[39, 29], strides=[4611686018427387904, -47])
        v[...] = 1
        r = v.tolist()
    """),
    _found("numpy-fuzz-as_strided-objects", "strided views", """
        a = np.zeros(11, dtype=object)[4:]
        v = np.lib.stride_tricks.as_strided(a, shape=[16, 42, 16], strides=[64, 42, 7])
        r = v.tolist()
    """),
    _found("scipy-fuzz-csc-built", "sparse arrays with unchecked indices", """
        A = sps.csc_array((np.ones(2), np.array([0, -64]), np.array([0, -64, 1])), shape=(2, 2))
        r = A.toarray()
    """),
    _found("scipy-fuzz-csc-indptr", "sparse arrays with unchecked indices", """
        A = sps.csc_array(np.eye(6))
        A.indptr[0] = -58
        r = A.toarray()
    """),
    _found("pandas-fuzz-indexer-max", "window bounds from the model", """
        from pandas.api.indexers import BaseIndexer
        class Bounds(BaseIndexer):
            def get_window_bounds(self, num_values=0, min_periods=None, center=None, closed=None, step=None):
                return np.array([4294967296, -2147483648, 15, -49], dtype=np.int64), np.array([1, 4611686018427387904, 255, 0], dtype=np.int64)
        s = pd.Series(np.arange(4, dtype=float))
        r = s.rolling(Bounds(window_size=1)).max()
    """),
    _found("pyarrow-fuzz-union-dense", "arrays assembled from parts", """
        v = pa.UnionArray.from_dense(pa.array([16], pa.int8()), pa.array([16], pa.int32()), [pa.array([1, 2]), pa.array(['a'])])
        r = v.to_pylist()
    """),
    _found("pyarrow-fuzz-list-view", "arrays assembled from parts", """
        v = pa.ListViewArray.from_arrays(pa.array([33, -52, 2147483647, 0], pa.int32()), pa.array([1, 0, -52, 0], pa.int32()), pa.array([1, 2, 3]))
        r = v.to_pylist()
    """),
]
