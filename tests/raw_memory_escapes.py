"""Raw memory and registries through authorized native libraries: code the restricted policy
accepts, where numpy, pandas, pyarrow, scipy, polars or sympy is the way to the host's memory or
to host code after the step (issue 42). Run by tests/raw_memory_harness.py; every case escapes
(or kills) plain CPython (tests/test_raw_memory.py proves it), and none may do either in
LocalExecutor or SubprocessExecutor.

Placeholders the harness fills in the host: {SECRET_ADDR}/{SECRET_LEN} (the bytes of a secret
the host holds), {TARGET_ADDR}/{TARGET_LEN} (bytes the host will read back), {PI_ADDR} (the
double inside the host's math.pi). `probe` is host code (plain Python, any names) whose value
must be the same after the step; `route` is the row of executors/restricted/libraries/
raw_memory/routes.py (or "registry") the case belongs to; `expect` is how it gets out of plain
CPython: read, wrote, crashed or tampered.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    id: str
    library: str
    route: str
    expect: str
    imports: tuple[str, ...]
    code: str
    probe: str = ""


def _case(id: str, route: str, expect: str, imports: str, code: str, probe: str = "") -> Case:
    return Case(id, id.split("-")[0], route, expect, tuple(imports.split()),
                textwrap.dedent(code).strip() + "\n", probe)


NP, PA, SP, PD, PL, SY = "numpy.*", "pyarrow.* numpy.*", "scipy.* numpy.*", \
    "pandas.* numpy.*", "polars.* numpy.*", "sympy.*"
# an __array_interface__ over the secret (or the target, or math.pi) given by its address
READ_IFACE = '{"data": ({SECRET_ADDR}, True), "shape": ({SECRET_LEN},), "typestr": "|u1", "version": 3}'
WRITE_IFACE = '{"data": ({TARGET_ADDR}, False), "shape": ({TARGET_LEN},), "typestr": "|u1", "version": 3}'
PI_IFACE = '{"data": ({PI_ADDR}, False), "shape": (1,), "typestr": "<f8", "version": 3}'
STRIDED = "numpy.lib.stride_tricks.as_strided"
IFACE = "array interfaces of model-made objects"
SPARSE = "sparse arrays with unchecked indices"
PARTS = "arrays assembled from parts"
FREED = "memory freed under a live view"
CTYPES = "addresses as ctypes objects"
FOREIGN = "buffers at an address"
REG = "registry"
MAPPED = "memory-mapped files"
# a dataframe-interchange object (the protocol's names only) whose one column's data buffer is
# the host's secret, given by its `.ptr`
INTERCHANGE = """
class Buffer:
    ptr = {SECRET_ADDR}
    bufsize = {SECRET_LEN}
class Column:
    def __init__(self):
        self.dtype = (1, 8, "C", "=")
        self.offset = 0
        self.describe_null = (0, None)
        self.null_count = 0
        self.metadata = {}
    def size(self):
        return {SECRET_LEN}
    def num_chunks(self):
        return 1
    def get_chunks(self, n_chunks=None):
        return [self]
    def get_buffers(self):
        return {"data": (Buffer(), (1, 8, "C", "=")), "validity": None, "offsets": None}
class Frame:
    def __getattr__(self, name):
        if name == "__dataframe__":
            return lambda nan_as_null=False, allow_copy=True: self
        raise AttributeError(name)
    metadata = {}
    def num_chunks(self):
        return 1
    def get_chunks(self, n_chunks=None):
        return [self]
    def column_names(self):
        return ["x"]
    def get_column_by_name(self, name):
        return Column()
    def get_column(self, i):
        return Column()
    def get_columns(self):
        return [Column()]
    def num_columns(self):
        return 1
    def num_rows(self):
        return {SECRET_LEN}
"""

CASES: list[Case] = [
    # ------------------------------------------------------------------ strided views (numpy)
    _case("numpy-as_strided-read", "strided views", "read", NP, """
        import numpy as np
        a = np.zeros(1, dtype=np.uint8)
        off = {SECRET_ADDR} - np.lib.array_utils.byte_bounds(a)[0]
        v = np.lib.stride_tricks.as_strided(a, shape=(2, {SECRET_LEN}), strides=(off, 1))
        bytes(v[1]).decode()
    """),
    _case("numpy-as_strided-write", "strided views", "wrote", NP, """
        import numpy as np
        a = np.zeros(1, dtype=np.uint8)
        off = {TARGET_ADDR} - np.lib.array_utils.byte_bounds(a)[0]
        v = np.lib.stride_tricks.as_strided(a, shape=(2, 4), strides=(off, 1))
        v[1, :] = 33
    """),
    _case("numpy-as_strided-pi", "strided views", "wrote", NP, """
        import numpy as np
        a = np.zeros(1)
        off = {PI_ADDR} - np.lib.array_utils.byte_bounds(a)[0]
        v = np.lib.stride_tricks.as_strided(a, shape=(2,), strides=(off,))
        v[1] = 3.0
    """),
    _case("numpy-as_strided-id", "strided views", "read", NP, """
        import numpy as np
        from numpy.lib.stride_tricks import as_strided
        a = np.arange(4, dtype=np.uint8)
        start = np.lib.array_utils.byte_bounds(a)[0]
        v = as_strided(a, shape=({SECRET_LEN},), strides=(1,))
        w = as_strided(v, shape=(2, {SECRET_LEN}), strides=({SECRET_ADDR} - start, 1))
        w[1].tobytes().decode()
    """),
    _case("numpy-as_strided-negative", "strided views", "read", NP, """
        import numpy as np
        a = np.zeros(8, dtype=np.uint8)
        end = np.lib.array_utils.byte_bounds(a)[0]
        v = np.lib.stride_tricks.as_strided(a, shape=(2, {SECRET_LEN}), strides=({SECRET_ADDR} - end, 1))
        print(bytes(v[1]).decode())
    """),
    _case("numpy-as_strided-view-of-view", "strided views", "read", NP, """
        import numpy as np
        a = np.arange(100, dtype=np.uint8)[10:20]
        w = np.lib.stride_tricks.sliding_window_view(a, 3)
        off = {SECRET_ADDR} - np.lib.array_utils.byte_bounds(w)[0]
        v = np.lib.stride_tricks.as_strided(w, shape=(2, {SECRET_LEN}), strides=(off, 1))
        bytes(v[1]).decode()
    """),
    _case("numpy-as_strided-objects", "strided views", "crashed", NP, """
        import numpy as np
        a = np.array([1.5, 2.5, 3.5, 4.5], dtype=object)
        v = np.lib.stride_tricks.as_strided(a, shape=(3,), strides=(3,))
        [repr(x) for x in v]
    """),
    _case("numpy-as_strided-huge", "strided views", "crashed", NP, """
        import numpy as np
        a = np.zeros(4)
        v = np.lib.stride_tricks.as_strided(a, shape=(4,), strides=(1 << 30,))
        v.sum()
    """),
    _case("numpy-empty-buffer-read", "array constructors over buffers", "read", NP, """
        import numpy as np
        empty = np.zeros(0, dtype=np.uint8)
        reach = {SECRET_ADDR} - np.lib.array_utils.byte_bounds(empty)[0]
        v = np.ndarray((reach + {SECRET_LEN},), dtype=np.uint8, buffer=empty, offset=0, strides=(1,))
        bytes(v[reach:]).decode()
    """),
    _case("numpy-empty-buffer-write", "array constructors over buffers", "wrote", NP, """
        import numpy as np
        empty = np.zeros(0, dtype=np.uint8)
        reach = {TARGET_ADDR} - np.lib.array_utils.byte_bounds(empty)[0]
        v = type(np.zeros(1))((reach + 4,), dtype=np.uint8, buffer=empty, offset=0, strides=(1,))
        v[reach:] = 33
    """),
    _case("numpy-empty-buffer-recarray", "array constructors over buffers", "wrote", NP, """
        import numpy as np
        empty = np.zeros(0, dtype=np.uint8)
        reach = {PI_ADDR} - np.lib.array_utils.byte_bounds(empty)[0]
        v = np.recarray((reach // 8 + 1,), dtype=[("x", "<f8")], buf=empty, strides=(8,))
        v.x[reach // 8] = 3.0
    """),
    # ----------------------------------------------------- array interfaces of model-made objects
    _case("numpy-getattr-interface", IFACE, "read", NP, f"""
        import numpy as np
        class Memory:
            def __getattr__(self, name):
                if name == "__array_interface__":
                    return {READ_IFACE}
                raise AttributeError(name)
        bytes(np.asarray(Memory())).decode()
    """),
    _case("numpy-getattr-interface-write", IFACE, "wrote", NP, f"""
        import numpy as np
        class Memory:
            def __getattr__(self, name):
                if name == "__array_interface__":
                    return {WRITE_IFACE}
                raise AttributeError(name)
        np.asarray(Memory())[:4] = 33
    """),
    _case("numpy-getattr-interface-pi", IFACE, "wrote", NP, f"""
        import numpy as np
        class Memory:
            def __getattr__(self, name):
                if name == "__array_interface__":
                    return {PI_IFACE}
                raise AttributeError(name)
        np.asarray(Memory())[0] = 3.0
    """),
    _case("numpy-instance-dict-interface", IFACE, "read", NP, f"""
        import numpy as np
        class Holder:
            pass
        h = Holder()
        h.__dict__["__array_interface__"] = {READ_IFACE}
        bytes(np.asarray(h)).decode()
    """),
    _case("numpy-vars-interface-write", IFACE, "wrote", NP, f"""
        import numpy as np
        class Holder:
            pass
        h = Holder()
        vars(h).update({{"__array_interface__": {WRITE_IFACE}}})
        np.asarray(h)[:4] = 33
    """),
    _case("numpy-function-dict-interface", IFACE, "read", NP, f"""
        import numpy as np
        def f():
            pass
        f.__dict__["__array_interface__"] = {READ_IFACE}
        bytes(np.asarray(f)).decode()
    """),
    _case("numpy-namespace-kwargs-interface", IFACE, "read", NP + " types", f"""
        import numpy as np, types
        ns = types.SimpleNamespace(**{{"__array_interface__": {READ_IFACE}}})
        bytes(np.asarray(ns)).decode()
    """),
    _case("numpy-inherited-getattr-interface", IFACE, "read", NP, f"""
        import numpy as np
        class Base:
            def __getattr__(self, name):
                if name.startswith("__array_i"):
                    return {READ_IFACE}
                raise AttributeError(name)
        class Child(Base):
            pass
        bytes(np.array(Child())).decode()
    """),
    _case("numpy-interface-buffer-offset", IFACE, "read", NP, """
        import numpy as np
        class Memory:
            def __getattr__(self, name):
                if name == "__array_interface__":
                    return {"data": b"x", "offset": {SECRET_ADDR} - np.lib.array_utils.byte_bounds(np.frombuffer(b"x", np.uint8))[0],
                            "shape": ({SECRET_LEN},), "typestr": "|u1", "version": 3}
                raise AttributeError(name)
        print(bytes(np.asarray(Memory())).decode())
    """),
    _case("numpy-argparse-dest-interface", IFACE, "read", NP + " argparse", f"""
        import numpy as np, argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--memory", dest="__array_interface__", default={READ_IFACE})
        bytes(np.asarray(parser.parse_args([]))).decode()
    """),
    _case("scipy-optimizeresult-interface", IFACE, "read", SP, f"""
        import numpy as np, scipy.optimize
        result = scipy.optimize.OptimizeResult({{"__array_interface__": {READ_IFACE}}})
        bytes(np.asarray(result)).decode()
    """),
    _case("scipy-optimizeresult-interface-write", IFACE, "wrote", SP, f"""
        import numpy as np, scipy.optimize
        result = scipy.optimize.OptimizeResult()
        result["__array_interface__"] = {WRITE_IFACE}
        np.asarray(result)[:4] = 33
    """),
    _case("polars-series-of-interface", IFACE, "read", PL, f"""
        import numpy as np, polars as pl
        class Memory:
            def __getattr__(self, name):
                if name == "__array_interface__":
                    return {READ_IFACE}
                raise AttributeError(name)
        bytes(pl.Series(np.asarray(Memory())).to_numpy()).decode()
    """),
    _case("pyarrow-interchange-ptr", IFACE, "read", PA, INTERCHANGE + textwrap.dedent("""
        import pyarrow.interchange
        bytes(pyarrow.interchange.from_dataframe(Frame()).column(0).to_numpy()).decode()
    """)),
    _case("pandas-interchange-ptr", IFACE, "read", PD, INTERCHANGE + textwrap.dedent("""
        import pandas as pd
        bytes(pd.api.interchange.from_dataframe(Frame())["x"].to_numpy()).decode()
    """)),
    _case("numpy-optimizeresult-pi", IFACE, "wrote", SP, f"""
        import numpy as np, scipy.optimize
        np.asarray(scipy.optimize.OptimizeResult({{"__array_interface__": {PI_IFACE}}}))[0] = 3.0
    """),
    _case("polars-from-interface-write", IFACE, "wrote", PL, f"""
        import numpy as np, polars as pl
        class Memory:
            def __getattr__(self, name):
                if name == "__array_interface__":
                    return {WRITE_IFACE}
                raise AttributeError(name)
        target = np.asarray(Memory())
        target[:] = pl.Series([33] * {{TARGET_LEN}}, dtype=pl.UInt8).to_numpy()
    """),
    # --------------------------------------------------------------- ctypes and raw addresses
    _case("numpy-ctypes-from_address", CTYPES, "read", NP, """
        import numpy as np
        cell = type(np.zeros(1).ctypes.shape)
        raw = (cell * 8).from_address({SECRET_ADDR})
        bytes(raw).decode(errors="replace")
    """),
    _case("numpy-ctypes-write", CTYPES, "wrote", NP, """
        import numpy as np
        cell = type(np.zeros(1).ctypes.strides)
        cell.from_address({TARGET_ADDR})[0] = 0x2121212121212121
    """),
    _case("numpy-getattr-ctypes", CTYPES, "read", NP, """
        import numpy as np
        cell = type(getattr(np.zeros(1), "ctypes").shape)
        raw = (cell * 4).from_address({SECRET_ADDR})
        bytes(raw).decode(errors="replace")
    """),
    _case("pyarrow-foreign_buffer", FOREIGN, "read", PA, """
        import pyarrow as pa
        pa.foreign_buffer({SECRET_ADDR}, {SECRET_LEN}).to_pybytes().decode()
    """),
    _case("pyarrow-lib-foreign_buffer", FOREIGN, "read", PA, """
        import pyarrow.lib
        pyarrow.lib.foreign_buffer({SECRET_ADDR}, {SECRET_LEN}).to_pybytes().decode()
    """),
    _case("pyarrow-foreign_buffer-numpy", FOREIGN, "read", PA, """
        import numpy as np, pyarrow as pa
        bytes(np.frombuffer(pa.foreign_buffer({SECRET_ADDR}, {SECRET_LEN}), np.uint8)).decode()
    """),
    # -------------------------------------------------------------- arrays assembled from parts
    _case("pyarrow-listview-offsets", PARTS, "crashed", PA, """
        import pyarrow as pa
        a = pa.ListViewArray.from_arrays(pa.array([10**7], pa.int32()), pa.array([5], pa.int32()),
                                         pa.array([1, 2, 3]))
        a.to_pylist()
    """),
    _case("pyarrow-listview-getattr", PARTS, "crashed", PA, """
        import pyarrow as pa
        make = getattr(pa.ListViewArray, "from_arrays")
        make(pa.array([10**7], pa.int32()), pa.array([5], pa.int32()), pa.array([1, 2, 3])).to_pylist()
    """),
    _case("pyarrow-sparse-csr", "sparse tensors of pyarrow", "crashed", PA, """
        import numpy as np, pyarrow as pa
        for i in range(50):
            t = pa.SparseCSRMatrix.from_numpy(np.ones(1), np.array([0, 1, 1]), np.array([1 << 28 + i % 3]), shape=(2, 2))
            t.to_tensor()
    """),
    _case("pyarrow-sparse-coo", "sparse tensors of pyarrow", "crashed", PA, """
        import numpy as np, pyarrow as pa
        for i in range(50):
            t = pa.SparseCOOTensor.from_numpy(np.ones(1), np.array([[1 << 28, 1 << 28]]), shape=(2, 2))
            t.to_tensor()
    """),
    # ------------------------------------------------------------ memory freed under a live view
    _case("numpy-resize-refcheck", FREED, "crashed", NP, """
        import numpy as np
        a = np.ones(1 << 22)
        view = a[:]
        a.resize(4, refcheck=False)
        b = [np.full(1 << 18, 7.0) for i in range(8)]
        view[:] = 1e300
        [x.sum() for x in b]
    """),
    _case("numpy-resize-unbound", FREED, "crashed", NP, """
        import numpy as np
        a = np.ones(1 << 22)
        view = a[:]
        np.ndarray.resize(a, 4, refcheck=False)
        view[:] = 1e300
        b = [np.full(1 << 18, 7.0) for i in range(8)]
        [x.sum() for x in b]
    """),
    _case("pyarrow-resizable-buffer", FREED, "crashed", PA, """
        import numpy as np, pyarrow as pa
        buf = pa.allocate_buffer(1 << 26, memory_pool=pa.system_memory_pool(), resizable=True)
        view = np.frombuffer(buf, dtype=np.uint8)
        buf.resize(16, shrink_to_fit=True)
        b = [np.zeros(1 << 20) for i in range(8)]
        view[:] = 255
        [x.sum() for x in b]
    """),
    # ---------------------------------------------------------------- memory-mapped files
    _case("numpy-memmap-truncated", MAPPED, "crashed", NP, """
        import numpy as np
        m = np.memmap("mapped.bin", dtype=np.uint8, mode="w+", shape=(1 << 16,))
        np.zeros(1, dtype=np.uint8).tofile("mapped.bin")
        int(m[-1])
    """),
    _case("numpy-load-mmap-truncated", MAPPED, "crashed", NP, """
        import numpy as np
        np.save("mapped.npy", np.arange(1 << 16))
        m = np.load("mapped.npy", mmap_mode="r")
        np.save("mapped.npy", np.zeros(1))
        int(m[-1])
    """),
    _case("numpy-open_memmap-truncated", MAPPED, "crashed", NP, """
        import numpy as np
        m = np.lib.format.open_memmap("mapped.npy", mode="w+", dtype=np.uint8, shape=(1 << 16,))
        np.save("mapped.npy", np.zeros(1))
        int(m[-1])
    """),
    _case("pyarrow-memory_map-truncated", MAPPED, "crashed", PA, """
        import numpy as np, pyarrow as pa
        with pa.output_stream("mapped.arrow") as f:
            with pa.ipc.new_file(f, pa.schema([("a", pa.int64())])) as writer:
                writer.write_table(pa.table({"a": np.arange(1 << 16)}))
        table = pa.ipc.open_file(pa.memory_map("mapped.arrow")).read_all()
        with pa.output_stream("mapped.arrow") as f:
            f.write(b"x")
        print(table.column("a").to_numpy().sum())
    """),
    # ---------------------------------------------------- sparse arrays with unchecked indices
    _case("scipy-csr-indices", SPARSE, "crashed", SP, """
        import numpy as np, scipy.sparse as sps
        A = sps.csr_array((np.ones(1), np.array([1 << 30]), np.array([0, 1])), shape=(1, 2))
        A.toarray()
    """),
    _case("scipy-csr-indices-mutated", SPARSE, "crashed", SP, """
        import numpy as np, scipy.sparse as sps
        A = sps.csr_array(np.eye(3))
        A.indices[0] = 1 << 30
        A @ np.ones(3)
    """),
    # another library's native code following the indices: sklearn's Cython helpers
    _case("scipy-indices-into-sklearn", SPARSE, "crashed", SP + " sklearn.*", """
        import numpy as np, scipy.sparse as sps
        from sklearn.preprocessing import StandardScaler
        A = sps.csr_matrix(np.eye(4))
        A.indices[0] = 10**8
        StandardScaler(with_mean=False).fit(A).scale_
    """),
    _case("scipy-csr-indices-replaced", SPARSE, "crashed", SP, """
        import numpy as np, scipy.sparse as sps
        A = sps.csr_matrix(np.eye(3))
        A.indices = np.array([0, 1 << 30, 2])
        A.toarray()
    """),
    _case("scipy-csc-indices", SPARSE, "crashed", SP, """
        import numpy as np, scipy.sparse as sps
        A = sps.csc_array((np.ones(2), np.array([0, 1 << 30]), np.array([0, 1, 2])), shape=(2, 2))
        A @ np.ones(2)
    """),
    _case("scipy-indptr-mutated", SPARSE, "crashed", SP, """
        import numpy as np, scipy.sparse as sps
        A = sps.csr_array(np.eye(3))
        A.indptr[1] = -(1 << 30)
        A.toarray()
    """),
    _case("scipy-bsr-indices-mutated", SPARSE, "crashed", SP, """
        import numpy as np, scipy.sparse as sps
        A = sps.bsr_array(np.eye(4), blocksize=(2, 2))
        A.indices[0] = 1 << 28
        A @ np.ones(4)
    """),
    _case("scipy-coo-coords-mutated", SPARSE, "crashed", SP, """
        import numpy as np, scipy.sparse as sps
        A = sps.coo_array(np.eye(3))
        A.coords[0][0] = 1 << 30
        A.toarray()
    """),
    _case("scipy-csgraph-mutated", SPARSE, "crashed", SP, """
        import numpy as np, scipy.sparse as sps, scipy.sparse.csgraph as csgraph
        A = sps.csr_array(np.eye(3))
        A.indices[1] = 1 << 30
        csgraph.connected_components(A)
    """),
    _case("scipy-sparse-sum-operand", SPARSE, "crashed", SP, """
        import numpy as np, scipy.sparse as sps
        A = sps.csr_array(np.eye(3))
        B = sps.csr_array(np.eye(3))
        B.indices[2] = 1 << 30
        (A + B).toarray()
    """),
    _case("scipy-subclass-lies-about-shape", SPARSE, "crashed", SP, """
        import numpy as np, scipy.sparse as sps
        class Lying(sps.csr_array):
            def _swap(self, x):
                return x if isinstance(x[0], str) else (x[0], x[1] << 24)
        A = Lying(np.eye(3))
        A.toarray()
    """),
    # ---------------------------------------------------------- window bounds from the model
    _case("pandas-baseindexer-sum", "window bounds from the model", "crashed", PD, """
        import numpy as np, pandas as pd
        from pandas.api.indexers import BaseIndexer
        class Far(BaseIndexer):
            def get_window_bounds(self, num_values=0, min_periods=None, center=None, closed=None, step=None):
                return np.array([0, 0], dtype=np.int64), np.array([1 << 30, 1 << 30], dtype=np.int64)
        pd.Series([1.0, 2.0]).rolling(Far(window_size=1)).sum()
    """),
    _case("pandas-baseindexer-negative", "window bounds from the model", "crashed", PD, """
        import numpy as np, pandas as pd
        from pandas.api.indexers import BaseIndexer
        class Before(BaseIndexer):
            def get_window_bounds(self, num_values=0, min_periods=None, center=None, closed=None, step=None):
                return np.array([-(1 << 30)] * num_values, dtype=np.int64), np.array([1] * num_values, dtype=np.int64)
        pd.DataFrame({"a": [1.0, 2.0, 3.0]}).rolling(Before(window_size=1)).mean()
    """),
    _case("pandas-baseindexer-apply", "window bounds from the model", "crashed", PD, """
        import numpy as np, pandas as pd
        from pandas.api.indexers import BaseIndexer
        class Far(BaseIndexer):
            def get_window_bounds(self, num_values=0, min_periods=None, center=None, closed=None, step=None):
                return np.zeros(num_values, dtype=np.int64), np.full(num_values, 1 << 30, dtype=np.int64)
        pd.Series([1.0, 2.0, 3.0]).rolling(Far(window_size=1)).apply(len, raw=True)
    """),
    _case("scipy-spsolve-mutated", SPARSE, "crashed", SP + " scipy.sparse.linalg", """
        import numpy as np, scipy.sparse as sps, scipy.sparse.linalg as spla
        A = sps.csc_array(np.eye(3) * 2.0)
        A.indices[1] = 1 << 30
        spla.splu(A, permc_spec="NATURAL").solve(np.ones(3))
    """),
    _case("pyarrow-unregister-opaque", REG, "tampered", PA, """
        import pyarrow as pa
        pa.unregister_extension_type("arrow.opaque")
    """, probe="__import__('raw_memory_probes').extension_registered('arrow.opaque')"),
    # ------------------------------------------------------------------------------ registries
    _case("polars-dataframe-namespace", REG, "tampered", PL, """
        import polars as pl
        @pl.api.register_dataframe_namespace("report")
        class Report:
            def __init__(self, df):
                self.df = df
    """, probe="hasattr(__import__('polars').DataFrame, 'report')"),
    _case("polars-expr-namespace", REG, "tampered", PL, """
        import polars as pl
        @pl.api.register_expr_namespace("report")
        class Report:
            def __init__(self, expr):
                self.expr = expr
    """, probe="hasattr(__import__('polars').Expr, 'report')"),
    _case("polars-series-namespace", REG, "tampered", PL, """
        import polars as pl
        pl.api.register_series_namespace("report")(print)
    """, probe="hasattr(__import__('polars').Series, 'report')"),
    _case("polars-lazyframe-namespace", REG, "tampered", PL, """
        import polars as pl
        pl.api.register_lazyframe_namespace("report")(print)
    """, probe="hasattr(__import__('polars').LazyFrame, 'report')"),
    _case("pyarrow-unregister-extension", REG, "tampered", PA, """
        import pyarrow as pa
        pa.unregister_extension_type("arrow.json")
    """, probe="__import__('raw_memory_probes').extension_registered('arrow.json')"),
    _case("pyarrow-compute-udf", REG, "tampered", PA, """
        import pyarrow as pa, pyarrow.compute as pc
        def twice(ctx, x):
            return pc.multiply(x, 2)
        pc.register_scalar_function(twice, "host_twice", {"summary": "s", "description": "d"},
                                    {"x": pa.int64()}, pa.int64())
    """, probe="'host_twice' in __import__('pyarrow.compute').compute.list_functions()"),
    _case("pyarrow-memory-pool", REG, "tampered", PA, """
        import pyarrow as pa
        pa.set_memory_pool(pa.system_memory_pool())
    """, probe="__import__('pyarrow').default_memory_pool().backend_name"),
    _case("scipy-fft-global-backend", REG, "tampered", SP + " scipy.fft", """
        import scipy.fft, scipy.optimize
        backend = scipy.optimize.OptimizeResult({"__ua_domain__": "numpy.scipy.fft",
                                                 "__ua_function__": lambda f, a, k: "model"})
        scipy.fft.set_global_backend(backend)
    """, probe="repr(__import__('scipy.fft').fft.fft([1.0, 2.0]))"),
    _case("scipy-fft-register-backend", REG, "tampered", SP + " scipy.fft", """
        import scipy.fft, scipy.optimize
        backend = scipy.optimize.OptimizeResult({"__ua_domain__": "numpy.scipy.fft",
                                                 "__ua_function__": lambda f, a, k: "model"})
        scipy.fft.register_backend(backend)
    """, probe="__import__('raw_memory_probes').fft_backends()"),
    _case("sympy-init-printing", REG, "tampered", SY, """
        import sympy
        sympy.init_printing(use_unicode=False)
    """, probe="__import__('sys').displayhook"),
    _case("sympy-printing-settings", REG, "tampered", SY, """
        import sympy
        sympy.init_printing(order="rev-lex", use_unicode=False, pretty_print=False)
    """, probe="__import__('raw_memory_probes').sympy_printer_settings()"),
    _case("sympy-interactive-printing", REG, "tampered", SY, """
        import sympy.interactive
        sympy.interactive.init_printing(str_printer=print)
    """, probe="__import__('sys').displayhook"),
    _case("sympy-evaluate-left-open", REG, "tampered", SY + " contextlib", """
        import contextlib, sympy
        stack = contextlib.ExitStack()
        stack.enter_context(sympy.evaluate(False))
    """, probe="__import__('raw_memory_probes').sympy_parameters()"),
]
