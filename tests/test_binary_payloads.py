"""Binary payloads (issue 48): arrays, frames, Arrow data, bytes and images cross as blobs beside
the JSON of a message (inline, or through the worker's shared-memory arena), within
`Limits.max_payload_bytes`, and a worker that lies about them gets a clear error, the host
unharmed.

The laws are checked on the codec and framing in this process; the executors' tests below run a
real SubprocessExecutor (the arena under the kernel layers) and LocalExecutor. The hostile frames
are played against the real host side by the lying-worker harness (`judge_lie`).
"""

from __future__ import annotations

import datetime
import os
import struct

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from executors import Limits, LocalExecutor, SubprocessExecutor
from executors.fuzzing.attacks.frames import Lie, Raw
from executors.fuzzing.judging.lying_worker import judge_lie
from executors.remote.protocol import parse_worker_message
from executors.worker.codec import Crossing, decode_value, encode_value
from executors.worker.codec.frames import ARENA_MIN_BYTES, BINARY
from executors.worker.wire import (
    Arena,
    FrameBuffer,
    Outgoing,
    PayloadTooLarge,
    ProtocolError,
    pack_frame,
    unpack_message,
)

MB = 2**20


def over_the_wire(value, arena: Arena | None = None, limit: int = 1 << 30):
    """`value` through a packed frame, split and unpacked as the host does, decoded."""
    frame = pack_frame({"op": "variables", "id": 1, "values": {"x": encode_value(value, raw=True)}})
    data = frame if type(frame) is bytes else frame.render(arena)
    buf = FrameBuffer(max_payload_bytes=limit)
    buf.feed(data)
    msg = unpack_message(buf.next_frame(), arena, limit)
    assert buf.pending() == 0
    return decode_value(msg["values"], parsed=True)["x"]


def frame_1m(n: int = 1000) -> pd.DataFrame:
    return pd.DataFrame({"i": np.arange(n), "f": np.arange(n) * 0.5, "s": [f"k{i % 97}" for i in range(n)],
                         "t": pd.date_range("2020-01-01", periods=n, freq="s")})


# -- the laws -------------------------------------------------------------------------------------

plain_dtypes = st.sampled_from(["<i8", "<i4", "|u1", "<u2", "<f8", "<f4", "|b1", "<c16", "<M8[ns]", "<m8[s]", "<U3", "|S2"])


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(plain_dtypes, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=40)), st.booleans())
def test_an_array_crosses_whole_inline_or_through_the_arena(a, through_arena):
    arena = Arena.create(64 * MB) if through_arena else None
    try:
        out = over_the_wire(a, arena)
    finally:
        if arena is not None:
            arena.close()
    assert type(out) is np.ndarray and out.dtype == a.dtype and out.shape == a.shape
    assert out.tobytes() == a.tobytes()  # (bit for bit: NaN and NaT too)
    assert out.flags.writeable and not np.shares_memory(out, a)


def test_the_raw_bytes_are_never_text_on_the_wire():
    a = np.arange(100_000, dtype=np.int64)
    frame = pack_frame({"op": "variables", "id": 1, "values": {"a": encode_value(a, raw=True)}})
    assert isinstance(frame, Outgoing) and frame.total == a.nbytes
    assert len(frame.json) < 200  # the JSON holds the dtype, the shape and a blob reference
    data = frame.render(None)
    assert int.from_bytes(data[:4], "big") & BINARY and a.tobytes() in data


@pytest.mark.parametrize("through_arena", [False, True])
def test_a_frame_of_every_kind_of_column_crosses_whole(through_arena):
    df = frame_1m(50_000)
    df["c"] = pd.Categorical(df["s"])
    df["n"] = pd.array([1, None] * 25_000, dtype="Int64")
    df["z"] = df["t"].dt.tz_localize("UTC")
    df["o"] = pd.Series([f"o{i}" for i in range(50_000)], dtype=object)
    arena = Arena.create(256 * MB) if through_arena else None
    try:
        out = over_the_wire(df, arena)
    finally:
        if arena is not None:
            arena.close()
    pd.testing.assert_frame_equal(out, df)
    assert isinstance(out["s"].array, pd.arrays.ArrowStringArray)  # no str object was made for it


def test_arrow_tables_batches_and_arrays_cross_as_buffers():
    table = pa.table({"a": pa.array(range(1000), pa.int64()), "s": pa.array([str(i) for i in range(1000)]),
                      "t": pa.array([datetime.datetime(2020, 1, 1)] * 1000, pa.timestamp("us", "UTC")),
                      "b": pa.array([b"x", None] * 500, pa.binary())})
    assert over_the_wire(table).equals(table)
    batch = table.to_batches()[0]
    assert over_the_wire(batch).equals(batch)
    sliced = pa.array([str(i) for i in range(100)]).slice(10, 50)
    assert over_the_wire(sliced).equals(sliced)


def test_an_arrow_type_outside_the_allowlist_crosses_as_its_repr():
    nested = pa.array([[1, 2], [3]])
    out = over_the_wire(nested)
    assert type(out).__name__ == "Repr"


def test_bytes_and_pictures_are_blobs():
    data = os.urandom(10_000)
    assert over_the_wire(data) == data
    assert over_the_wire(b"tiny") == b"tiny"  # (a few bytes ride as base64 text: no table entry)


def test_in_process_the_handoff_copies_once_and_never_shares():
    a = np.arange(1_000_000.0)
    tree = Crossing(binary=True).encode([a, a])
    first, again = decode_value(tree), decode_value(tree)
    assert not np.shares_memory(first[0], a) and not np.shares_memory(first[0], again[0])
    first[0][0] = 42.0
    assert again[0][0] == 0.0 and a[0] == 0.0


# -- the limit ------------------------------------------------------------------------------------


def test_past_the_payload_limit_the_sender_gets_a_clear_error():
    frame = pack_frame({"op": "x", "v": encode_value(np.zeros(1000), raw=True)})
    with pytest.raises(PayloadTooLarge, match="Limits.max_payload_bytes"):
        pack_frame({"op": "x", "v": encode_value(np.zeros(1000), raw=True)}, max_payload_bytes=4000)
    buf = FrameBuffer(max_payload_bytes=4000)
    buf.feed(frame.render(None)[:16])  # the fixed header alone: refused before the body is buffered
    with pytest.raises(PayloadTooLarge, match="Limits.max_payload_bytes"):
        buf.next_frame()


def test_limits_validate_the_payload_limit():
    with pytest.raises(ValueError, match="max_payload_bytes"):
        Limits(max_payload_bytes=0)
    assert Limits().max_payload_bytes >= 1 << 30


# -- hostile frames: a clear error, the host unharmed ----------------------------------------------


def binary_frame(message: bytes, table: list, inline: bytes = b"", *, arena: bool = False,
                 j: int | None = None, b: int | None = None) -> bytes:
    """A binary frame written by hand: each field may lie."""
    head = struct.pack(">II", BINARY | (len(message) if j is None else j), len(table) | (BINARY if arena else 0))
    head += struct.pack(">Q", len(inline) if b is None else b)
    for off, length in table:
        head += struct.pack(">QQ", off, length)
    return head + message + inline


def array_result(dtype: str, shape: list) -> bytes:
    return (b'{"op":"result","id":2,"output":{"$t":"ndarray","dtype":"%s","shape":%s,'
            b'"v":{"$t":"blob","i":0}}}' % (dtype.encode(), str(shape).replace(" ", "").encode()))


HOSTILE = {
    "a blob table pointing past its section": binary_frame(array_result("<f8", [4]), [(0, 64)], bytes(32)),
    "blobs that overlap": binary_frame(array_result("<f8", [4]), [(0, 32), (16, 32)], bytes(64)),
    "a header claiming 8 EB of blobs": binary_frame(array_result("<f8", [4]), [(0, 32)], bytes(32), b=2**63),
    "a shape past the bytes it sent": binary_frame(array_result("<f8", [10**9]), [(0, 32)], bytes(32)),
    "an object dtype over raw pointers": binary_frame(array_result("|O", [4]), [(0, 32)], bytes(32)),
    "a structured dtype": binary_frame(array_result("|V8", [4]), [(0, 32)], bytes(32)),
    "one blob referenced twice": binary_frame(
        b'{"op":"result","id":2,"output":[{"$t":"bytes","v":{"$t":"blob","i":0}},'
        b'{"$t":"bytes","v":{"$t":"blob","i":0}}]}', [(0, 300)], bytes(300)),
    "a blob reference past the table": binary_frame(
        b'{"op":"result","id":2,"output":{"$t":"bytes","v":{"$t":"blob","i":7}}}', [(0, 300)], bytes(300)),
    "an arena the host never gave": binary_frame(array_result("<f8", [4]), [(0, 32)], arena=True),
    "Arrow offsets past the data": b"",  # (filled below)
    "Arrow strings that are no UTF-8": b"",
}


def _arrow_lie(offsets: bytes, data: bytes) -> bytes:
    message = (b'{"op":"result","id":2,"output":{"$t":"arrow_array","type":"string","length":2,"offset":0,'
               b'"buffers":[null,{"$t":"blob","i":0},{"$t":"blob","i":1}]}}')
    pad = bytes(-len(offsets) % 64)
    return binary_frame(message, [(0, len(offsets)), (len(offsets) + len(pad), len(data))], offsets + pad + data)


HOSTILE["Arrow offsets past the data"] = _arrow_lie(struct.pack("<3i", 0, 4, 10**6), b"abcd" * 70)
HOSTILE["Arrow strings that are no UTF-8"] = _arrow_lie(struct.pack("<3i", 0, 2, 280), b"\xff\xfe" * 140)


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_lying_binary_frame_gets_a_clear_error_and_the_host_stays_well(name):
    verdict = judge_lie(Lie((Raw(HOSTILE[name]),)))
    assert verdict.problems == [], verdict
    assert verdict.outcome == "WorkerProtocolError", verdict


def test_a_blob_past_the_arena_is_refused_before_it_is_read():
    arena = Arena.create(1 * MB)
    try:
        frame = binary_frame(array_result("<f8", [4]), [(0, 2 * MB)], arena=True)
        buf = FrameBuffer()
        buf.feed(frame)
        with pytest.raises(ProtocolError, match="outside its section"):
            parse_worker_message(buf.next_frame(), arena=arena)
    finally:
        arena.close()


def test_an_arena_written_after_sending_changes_nothing_the_host_holds():
    arena = Arena.create(64 * MB)
    try:
        a = np.arange(ARENA_MIN_BYTES, dtype=np.float64)
        frame = pack_frame({"op": "variables", "id": 2, "values": {"a": encode_value(a, raw=True)}})
        data = frame.render(arena)
        buf = FrameBuffer()
        buf.feed(data)
        msg = parse_worker_message(buf.next_frame(), arena=arena)
        os.pwrite(arena.fd, b"\xff" * 4096, 0)  # the worker keeps the descriptor and writes again
        with pytest.raises(OSError):
            os.ftruncate(arena.fd, 0)  # (sealed: no shrinking, so no mapping of it can fault)
        out = decode_value(msg.values, parsed=True)["a"]
        assert np.array_equal(out, a)
    finally:
        arena.close()


# -- the executors ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def worker():
    ex = SubprocessExecutor(authorized_imports=["numpy", "pandas"], limits=Limits(max_memory_mb=1024))
    yield ex
    ex.close()


def test_a_worker_returns_more_than_a_frame_holds(worker):
    worker.set_variables({"b": np.ones(6 * MB)})  # 48 MB: over the 32 MB frame of JSON
    r = worker.execute("import numpy as np\nc = b * 2\nfloat(c.sum())")
    assert r.error is None and r.output == 2.0 * 6 * MB
    c = worker.get_variables(["c"])["c"]
    assert c.dtype == np.float64 and c.shape == (6 * MB,) and c[-1] == 2.0 and c.flags.writeable


def test_a_data_frame_round_trips_through_the_worker(worker):
    df = frame_1m(200_000)
    worker.set_variables({"df": df})
    r = worker.execute("import pandas as pd\nout = df.assign(g=df.i * 2)\nlen(out)")
    assert r.error is None and r.output == 200_000
    out = worker.get_variables(["out"])["out"]
    pd.testing.assert_frame_equal(out, df.assign(g=df.i * 2))


def test_a_tool_takes_and_returns_frames_and_arrays():
    seen = {}

    def summarize(frame, weights):
        seen["types"] = (type(frame).__name__, type(weights).__name__)
        return frame.describe(), weights * 2

    with SubprocessExecutor(tools={"summarize": summarize}, authorized_imports=["numpy", "pandas"],
                            limits=Limits(max_memory_mb=1024)) as ex:
        r = ex.execute("import numpy as np\nimport pandas as pd\n"
                       "d, w = summarize(pd.DataFrame({'x': np.arange(100000.)}), np.ones(100000))\n"
                       "(float(d.loc['mean', 'x']), float(w.sum()))")
    assert r.error is None, r.error
    assert r.output == (49999.5, 200000.0) and seen["types"] == ("DataFrame", "ndarray")


def test_past_the_limit_the_worker_and_the_host_name_the_setting():
    with SubprocessExecutor(authorized_imports=["numpy"], limits=Limits(max_payload_bytes=1 * MB)) as ex:
        r = ex.execute("import numpy as np\nbig = np.zeros(1_000_000)\nsmall = np.zeros(10)\n1")
        assert r.error is None
        got = ex.get_variables(["big", "small"])
        assert "Limits.max_payload_bytes" in str(got["big"]) and got["small"].shape == (10,)
        with pytest.raises(ValueError, match="max_payload_bytes"):
            ex.set_variables({"x": np.zeros(1_000_000)})
        assert ex.execute("small.sum()").output == 0.0  # the worker still serves


def test_model_code_that_owns_the_arena_cannot_shrink_it_or_change_a_copy():
    # the open policy: model code holds every descriptor of the worker, the arena's too
    with SubprocessExecutor(policy="open", limits=Limits(max_memory_mb=1024)) as ex:
        r = ex.execute(
            "import os, stat, threading, numpy as np\n"
            "def memfds():\n"
            "    out = []\n"
            "    for fd in range(3, 256):\n"
            "        try:\n"
            "            if stat.S_ISREG(os.fstat(fd).st_mode) and os.fstat(fd).st_size >= 1 << 30: out.append(fd)\n"
            "        except OSError: pass\n"
            "    return out\n"
            "arena = memfds()\n"
            "a = np.arange(1_000_000.0)\n"
            "errors = []\n"
            "try:\n"
            "    os.ftruncate(arena[0], 0)\n"
            "except OSError as e:\n"
            "    errors.append(e.errno)\n"
            "stop = False\n"
            "def scribble():\n"
            "    while not stop:\n"
            "        os.pwrite(arena[0], b'\\xff' * 65536, 0)\n"
            "t = threading.Thread(target=scribble, daemon=True); t.start()\n"
            "(len(arena), errors)")
        assert r.error is None, r.error
        assert r.output[0] == 1 and r.output[1], r.output  # one arena; ftruncate refused (EPERM)
        for _ in range(3):
            # what the worker sends is its own (scribbled or not); what the host took is the host's
            a = ex.get_variables(["a"])["a"]
            taken = a.tobytes()
            assert ex.execute("import time\ntime.sleep(0.05)\n1").output == 1  # more scribbles
            assert a.tobytes() == taken and a.shape == (1_000_000,)
        ex.execute("stop = True")


def test_local_executor_hands_frames_over_without_a_per_element_conversion():
    with LocalExecutor(authorized_imports=["numpy", "pandas"], limits=Limits(max_memory_mb=2048)) as ex:
        ex.set_variables({"df": frame_1m(100_000)})
        r = ex.execute("out = df.assign(g=df.i * 2)\nlen(out)")
        assert r.error is None and r.output == 100_000
        out = ex.get_variables(["out"])["out"]
    assert isinstance(out["s"].array, pd.arrays.ArrowStringArray)
    pd.testing.assert_frame_equal(out, frame_1m(100_000).assign(g=np.arange(100_000) * 2))


def test_in_process_arrow_data_is_copied_not_shared():
    # an Arrow array over memory the model can still write: the host's copy does not change
    memory = bytearray(b"abcdefgh")
    offsets = pa.py_buffer(bytearray(struct.pack("<2i", 0, 8)))
    arr = pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(memory)])
    host = decode_value(encode_value(arr, binary=True))
    memory[0] = ord("Z")
    assert host.to_pylist() == ["abcdefgh"] and arr.to_pylist() == ["Zbcdefgh"]


# -- Arrow strings: the ASCII fast path takes only what full validation passes --------------------


@pytest.mark.parametrize("offsets, data, offset, length", [
    ([0, 3, 6], b"abcdef", 0, 2),  # fine
    ([0, 3, 6, 9], b"abcdefghi", 1, 2),  # fine, sliced
    ([0, 5, 3], b"abcdef", 0, 2),  # falling offsets, all within the data
    ([-1, 3, 6], b"abcdef", 0, 2),  # a negative first offset
    ([0, 3, 7], b"abcdef", 0, 2),  # past the data
    ([0, 3], b"abcdef", 0, 2),  # offsets shorter than the length
    ([0, 3, 6], b"ab\\xffdef", 0, 2),  # not UTF-8
    ([0, 2, 4], "aé€".encode()[:4], 0, 2),  # UTF-8 split inside a character
    ([0, 2, 5], "aé€".encode()[:5], 0, 2),  # UTF-8, not ASCII
])
@pytest.mark.parametrize("large", [False, True])
def test_arrow_strings_pass_the_host_exactly_when_full_validation_does(offsets, data, offset, length, large):
    pa = pytest.importorskip("pyarrow")
    from executors.worker.arrow_data import decode_array

    width = "<q" if large else "<i"
    offsets_blob = struct.pack(width[0] + width[1] * len(offsets), *offsets)
    data = data.decode("unicode_escape").encode("latin-1") if b"\\" in data else data
    typ = pa.large_string() if large else pa.string()
    try:
        pa.Array.from_buffers(typ, length, [None, pa.py_buffer(offsets_blob), pa.py_buffer(data)],
                              offset=offset).validate(full=True)
        verdict = None
    except (ValueError, pa.ArrowInvalid) as exc:
        verdict = exc
    payload = {"$t": "arrow_array", "type": "large_string" if large else "string", "length": length,
               "offset": offset, "buffers": [None, offsets_blob, data]}
    if verdict is None:
        assert decode_array(payload, pa, bytes).to_pylist() == \
            [data[offsets[i]:offsets[i + 1]].decode() for i in range(offset, offset + length)]
    else:
        with pytest.raises(ValueError):
            decode_array(payload, pa, bytes)
