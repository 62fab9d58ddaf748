"""Raw-memory routes through numpy, pandas, pyarrow and scipy that the restricted policy lets
through (issue 41): each is code the policy and the guard accept, and each hands the code memory
outside the object it holds: reads and writes past a buffer, absolute addresses, a view over
freed memory, sparse indices nobody checks. With them the code can reach the guard's own state,
so what holds the worker is the kernel (tests/test_owned_worker.py shows what native code can do
from there); here each route runs in a worker per configuration and nothing may reach the host.

ROUTES: name -> code (its value says what it got: "read ...", "wrote ...", or it fails).
`variant(route, offset, value)` is the code hypothesis varies (offsets and values of raw reads
and writes); `raw_writes()` the strategy.
"""

from __future__ import annotations

import textwrap

IMPORTS = ["numpy.*", "pandas.*", "pyarrow.*", "scipy.*"]

_NP = "import numpy as np\n"
_AT = ("def at(addr, dtype=np.uint8):\n"  # one element at an absolute address, from any array
       "    base = np.zeros(1, dtype=dtype)\n"
       "    return np.lib.stride_tricks.as_strided(base, shape=(2,), strides=(addr - base.ctypes.data,))\n")

ROUTES: dict[str, str] = {
    "numpy as_strided reads past the buffer":
        _NP + "a = np.zeros(8, dtype=np.uint8)\n"
              "b = np.lib.stride_tricks.as_strided(a, shape=(4096,), strides=(1,))\n"
              "'read %d bytes past' % (int(b[8:].size))",
    "numpy as_strided writes past the buffer":
        _NP + "a = np.zeros(64, dtype=np.uint8)\nguard = np.zeros(64, dtype=np.uint8)\n"
              "b = np.lib.stride_tricks.as_strided(a, shape=(2,), strides=(guard.ctypes.data - a.ctypes.data,))\n"
              "b[1] = 7\n'wrote %d into another array' % int(guard[0])",
    "numpy ctypes.data gives absolute addresses":
        _NP + _AT + "x = bytearray(b'secret')\nhdr = at(id(x), np.uint64)\n"
              "'read refcount %d at id()' % int(hdr[1])",
    "numpy absolute write into another object":
        _NP + _AT + "x = np.frombuffer(bytearray(b'AAAA'), dtype=np.uint8)\n"
              "cell = at(x.ctypes.data)\ncell[1] = 66\n'wrote %r' % bytes(x)",
    "numpy resize under a live view (use after free)":
        _NP + "a = np.arange(1 << 16, dtype=np.int64)\nv = a[:]\n"
              "a.resize(1 << 20, refcheck=False)\n'read %d from freed memory' % int(v[100])",
    "pandas to_numpy then as_strided":
        "import pandas as pd\n" + _NP + "s = pd.Series(range(16))\nv = s.to_numpy()\n"
        "w = np.lib.stride_tricks.as_strided(v, shape=(64,), strides=(8,))\n'read %d past' % int(w[40])",
    "pandas values address":
        "import pandas as pd\ndf = pd.DataFrame({'a': [1.0, 2.0]})\n"
        "'address %d' % df.values.ctypes.data",
    "pyarrow foreign_buffer at any address":
        "import pyarrow as pa\n" + _NP + "a = np.frombuffer(bytearray(b'host?'), dtype=np.uint8)\n"
        "'read %r' % pa.foreign_buffer(a.ctypes.data, 5).to_pybytes()",
    "pyarrow buffer address":
        "import pyarrow as pa\n'address %d' % pa.py_buffer(b'abc').address",
    "pyarrow from_buffers with a lying length":
        "import pyarrow as pa\narr = pa.Array.from_buffers(pa.int64(), 64, [None, pa.py_buffer(b'x' * 8)])\n"
        "'read %d values' % len(arr.to_pylist())",
    "scipy sparse indices nobody checks":
        "import numpy as np\nfrom scipy import sparse\n"
        "m = sparse.csr_matrix((np.array([1.0]), np.array([40]), np.array([0, 1])), shape=(1, 2))\n"
        "'read %r' % (m @ np.ones(2)).tolist()",
}


def variant(route: str, offset: int, value: int) -> str:
    """A raw read or write `offset` bytes away from a fresh array (value 0..255)."""
    head = _NP + "a = np.zeros(16, dtype=np.uint8)\n"
    if route == "write":
        return head + (f"b = np.lib.stride_tricks.as_strided(a, shape=(2,), strides=({offset},))\n"
                       f"b[1] = {value}\n'wrote'")
    if route == "pyarrow":
        return head + ("import pyarrow as pa\n"
                       f"'read %r' % pa.foreign_buffer(a.ctypes.data + {offset}, 8).to_pybytes()")
    return head + (f"b = np.lib.stride_tricks.as_strided(a, shape=(2,), strides=({offset},))\n"
                   "'read %d' % int(b[1])")


def raw_writes():
    """hypothesis: (route, offset, value) near the worker's own heap: reads, writes, pyarrow reads."""
    from hypothesis import strategies as st

    return st.tuples(st.sampled_from(["read", "write", "pyarrow"]),
                     st.integers(min_value=-(1 << 16), max_value=1 << 16).filter(bool),
                     st.integers(min_value=0, max_value=255))


def all_routes() -> dict[str, str]:
    return {name: textwrap.dedent(code) for name, code in ROUTES.items()}
