"""The raw-memory routes of the authorized native libraries, by class, and what each gets in
process: `refuse` (never in a step), `check` (the arguments are checked at the entry point),
`copy` (the data is read into memory instead of being mapped), `library` (the library checks
them itself: a test holds it to that), `shield` (model-made objects cannot supply it), `info`. docs/library-capabilities.md shows this table;
tests/raw_memory_escapes.py holds at least one attempt per row.
"""

from __future__ import annotations

from typing import NamedTuple


class Route(NamedTuple):
    klass: str  # what the route turns into memory
    examples: str  # the entry points
    decision: str
    reason: str


ROUTES: tuple[Route, ...] = (
    Route("strided views", "np.lib.stride_tricks.as_strided(x, shape, strides)", "check",
          "numpy checks nothing: a stride of `address - x's address` reaches any byte. The view's "
          "lowest and highest byte must lie in the memory of the array that owns x's data, and a "
          "view of Python objects must step by whole elements; sliding_window_view, reshape and "
          "slicing pass unchanged"),
    Route("array constructors over buffers",
          "np.ndarray(shape, dtype, buffer, offset, strides) (also as type(a)(...), a subclass, "
          "np.recarray(buf=...), np.char.chararray(buffer=...))", "check",
          "numpy checks offset and strides against the buffer's length, except for an empty "
          "buffer, whose length it takes from the shape (found by the crash fuzzer): any byte "
          "after it can be read or written. Model code's np.ndarray is a checked stand-in (a "
          "subclass answering isinstance for every array; type() answers with it too); "
          "recarray's and chararray's constructors are checked"),
    Route("buffers numpy checks itself", "np.frombuffer(b, dtype, count, offset), a.strides = "
          "..., a.view(object), np.frombuffer(b, dtype=object), a.setfield(v, dtype, offset)",
          "library", "numpy refuses offsets past the buffer and object arrays over memory; held by "
          "the corpus and the crash fuzzer"),
    Route("array interfaces of model-made objects",
          "__array_interface__ (an address, or a buffer with an unchecked offset), "
          "__array_struct__, __array__, __dlpack__, __arrow_c_array__/_stream__/_schema__, "
          "__dataframe__, __buffer__", "shield",
          "numpy and pyarrow read these from the instance (its dict, its __getattr__): every class "
          "the model defines, and the library classes that turn data into attributes "
          "(argparse.Namespace, OptimizeResult, Bunch), answer them only from a base class; a model "
          "function's __dict__ takes no dunder key; setattr, keyword and ** names with a leading "
          "'_' are refused"),
    Route("addresses as ctypes objects", "ndarray.ctypes (.data_as, .shape_as), np.ctypeslib, "
          "ctypes' from_address/from_buffer/cast", "refuse",
          "`.ctypes` hands out ctypes types whose from_address reads any memory: refused where "
          "model code takes it; np.ctypeslib is hidden; every ctypes audit event is refused"),
    Route("buffers at an address", "pyarrow.foreign_buffer(address, size), pyarrow.lib's too, "
          "pyarrow's interchange (a `.ptr` it is handed)", "refuse",
          "it makes memory of any address; hidden from model code and refused in a step for "
          "library callers"),
    Route("arrays assembled from parts", "pa.Array.from_buffers, *.from_arrays, "
          "UnionArray.from_dense/from_sparse, ExtensionArray.from_storage, "
          "RecordBatch.from_struct_array", "check",
          "pyarrow validates only lengths there (a list view's offsets past its values abort the "
          "process when read): the result is validated in full before the model holds it"),
    Route("sparse tensors of pyarrow", "pa.SparseCOOTensor/SparseCSRMatrix/SparseCSCMatrix/"
          "SparseCSFTensor .from_numpy/.from_scipy/.from_dense_numpy/...", "refuse",
          "pyarrow trusts their index arrays; converting one with an index out of range writes "
          "outside its memory. scipy.sparse does the same job with checked indices"),
    Route("sparse arrays with unchecked indices", "scipy.sparse csr/csc/bsr/coo/dia arrays and "
          "matrices, built from index arrays or with A.indices/A.indptr/A.coords changed later, "
          "then any operation or csgraph/linalg routine, or sklearn's estimators", "check",
          "sparsetools, csgraph and sklearn's Cython helpers follow the indices without bounds "
          "checks: when the step's code enters a sparse method, the array and its sparse arguments "
          "are checked in full (O(nnz), unchanged); construction is checked when __init__ ends; "
          "sklearn's check_array checks its sparse input first"),
    Route("window bounds from the model", "pandas rolling with a BaseIndexer subclass "
          "(get_window_bounds)", "check",
          "pandas' Cython kernels read values[start:end] unchecked: 0 <= start <= end <= n"),
    Route("memory freed under a live view", "ndarray.resize(refcheck=False), "
          "pyarrow ResizableBuffer.resize, bytearray/array.array resized while exported", "refuse",
          "numpy's refcheck=True (the default) and CPython's export counts refuse the others; "
          "refcheck=False and pyarrow's resize free memory views still point at"),
    Route("memory-mapped files", "np.memmap, np.load(mmap_mode=...), np.lib.format.open_memmap, "
          "mmap.mmap of a file, pa.memory_map, pa.create_memory_map, readers' memory_map=True "
          "(polars.read_parquet's default, pyarrow's parquet and feather readers, pd.read_csv)",
          "refuse / copy",
          "a file shortened while it is mapped (the model can write its workdir) kills the process "
          "with SIGBUS at the next read: Python-level maps of files are refused (the mmap.__new__ "
          "audit event), pa.memory_map(path) reads the file into memory, its writable modes and "
          "create_memory_map are refused, readers run with memory_map=False (same results)"),
    Route("native function pointers", "scipy.LowLevelCallable (and .from_cython)", "refuse",
          "scipy calls the pointer with raw pointers to its data"),
    Route("index arguments checked by the library", "np.take/put/choose (raise, clip), ufunc.at, reduceat, "
          "pd.Categorical.from_codes, pd.api.extensions.take, pa.DictionaryArray (safe=False), "
          "Buffer.slice, pa.ipc readers", "library",
          "each checks its indices or validates what it reads (pyarrow 26 checks dictionary "
          "indices even with safe=False); held by the corpus and the crash fuzzer"),
    Route("index wrapping", "np.take/put/choose and ndarray.take/put/choose with mode='wrap' "
          "(also mode=1, np.int64(1), any __index__ object, a str subclass)", "check",
          "numpy subtracts the length from an index until it fits, one step at a time: an index "
          "of 2**62 runs for years inside one C call, where no deadline reaches a step in process "
          "(found by the crash fuzzer). The mode, axis and choices are read once, the indices "
          "reduced with np.mod (the same positions), and numpy gets what was read"),
    Route("addresses as numbers", "id(), Buffer.address, np.byte_bounds, a.__array_interface__ "
          "(refused by the policy)", "info",
          "an address is only a number: every route above that would turn one into memory is "
          "closed, so they stay available"),
)
DECISIONS = ("refuse", "check", "shield", "library", "info", "refuse / copy")
