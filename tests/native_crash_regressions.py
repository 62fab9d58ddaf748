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
        # (the fuzzer's row -64 and indptr -64 read and wrote near the heap: CI saw a host survive it)
        A = sps.csc_array((np.ones(2), np.array([0, -2**31 + 1], dtype=np.int32), np.array([0, 1, 2], dtype=np.int32)), shape=(2, 2))
        r = A.toarray()
    """),
    _found("scipy-fuzz-csc-indptr", "sparse arrays with unchecked indices", """
        A = sps.csc_array(np.eye(6))
        A.indptr[0] = -2**31 + 1  # (the fuzzer's -58 read just below the buffer: 1 run in 12 survived)
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


# Programs that ran for years in one C call, where no deadline reaches a step in process: numpy's
# mode="wrap" subtracts the length from an index until it fits. The long campaign found the
# string spelling; the mode also comes as an integer (1), an object with __index__, or a str
# subclass that answers "not wrap" to a check. Each must end at once with numpy's positions
# (index % n), which the test computes with small indices in plain numpy.
_EDGES = "[2**62, -2**62, 2**63 - 1, -2**63, 7, -1]"
_MODE_OBJECTS = """
class Index:  # "clip" the first time it is read, "wrap" after
    reads = 0
    def __index__(self):
        Index.reads += 1
        return 0 if Index.reads == 1 else 1
class Lying(str):  # "wrap" that compares unequal to "wrap"
    def __eq__(self, other):
        return False
    def __ne__(self, other):
        return True
class Int(int):
    def __index__(self):
        return 0
"""
HANGS: dict[str, tuple[str, str]] = {  # name -> (program's result, the same with small indices)
    "np.take, mode='wrap'": (f"np.take(np.arange(5) * 10, {_EDGES}, mode='wrap')",
                             "np.take(np.arange(5) * 10, [i % 5 for i in EDGES])"),
    "np.take, mode=1": (f"np.take(np.arange(5) * 10, {_EDGES}, mode=1)",
                        "np.take(np.arange(5) * 10, [i % 5 for i in EDGES])"),
    "np.take, mode=np.int64(1), axis=-1": (
        f"np.take(np.arange(10).reshape(2, 5), {_EDGES}, axis=-1, mode=np.int64(1))",
        "np.take(np.arange(10).reshape(2, 5), [i % 5 for i in EDGES], axis=-1)"),
    "np.take, a stateful __index__ mode": (f"np.take(np.arange(5), {_EDGES}, mode=Index())",
                                           "np.take(np.arange(5), [4, 0, 4, 0, 4, 0])"),
    "np.take, a lying str mode": (f"np.take(np.arange(5), {_EDGES}, mode=Lying('wrap'))",
                                  "np.take(np.arange(5), [i % 5 for i in EDGES])"),
    "np.take, an int subclass mode": (f"np.take(np.arange(5), {_EDGES}, mode=Int(1))",
                                      "np.take(np.arange(5), [i % 5 for i in EDGES])"),
    "ndarray.take, mode=1": (f"(np.arange(5) * 10).take({_EDGES}, mode=1)",
                             "np.take(np.arange(5) * 10, [i % 5 for i in EDGES])"),
    "np.put, mode=1": (f"np.put(a := np.zeros(5), {_EDGES}, np.arange(6), mode=1) or a",
                       "np.put(a := np.zeros(5), [i % 5 for i in EDGES], np.arange(6)) or a"),
    "ndarray.put, mode='wrap'": (f"(a := np.zeros(5)).put({_EDGES}, np.arange(6), mode='wrap') or a",
                                 "np.put(a := np.zeros(5), [i % 5 for i in EDGES], np.arange(6)) or a"),
    "np.choose, mode='wrap'": (f"np.choose({_EDGES}, np.arange(18).reshape(3, 6), mode='wrap')",
                               "np.choose([i % 3 for i in EDGES], np.arange(18).reshape(3, 6))"),
    "ndarray.choose, mode=1": (f"np.array({_EDGES}).choose(np.arange(18).reshape(3, 6), mode=1)",
                               "np.choose([i % 3 for i in EDGES], np.arange(18).reshape(3, 6))"),
}
HANG_PRELUDE = "import numpy as np\n" + _MODE_OBJECTS.strip() + f"\nEDGES = {_EDGES}\n"
