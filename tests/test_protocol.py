"""The host <-> worker protocol: value codec, framing, and strict validation of worker messages."""

from __future__ import annotations

import ast
import datetime as dt
import json
import math
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from executors.remote.protocol import (
    TAG,
    Execute,
    FrameBuffer,
    FrameTooLarge,
    GetVariables,
    ProtocolError,
    Repr,
    Result,
    ToolCall,
    Variables,
    decode_value,
    encode_value,
    pack_frame,
    parse_worker_message,
    unpack_message,
)
from executors.worker.codec.small import NotSmall, small_tree
from executors.worker.wire import OutputBuffer, full_length, omitted_note, safe_repr, truncate_text


def roundtrip(value):
    """Through JSON text, exactly as on the wire."""
    return decode_value(json.loads(json.dumps(encode_value(value), allow_nan=False)))


def same(a, b) -> bool:
    """Equal, with the same types all the way down (and nan equal to nan)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, complex):
        return same(a.real, b.real) and same(a.imag, b.imag)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


# ----------------------------------------------------------------------------- codec


@pytest.mark.parametrize(
    "value",
    [
        None, True, False, 0, -7, 2**64, -(10**4299), 2**14284 - 1, 1.5, -0.0, math.inf, -math.inf, "", "héllo \x00 \ud800",
        b"", b"\x00\xffbytes", bytearray(b"ba"), 3 + 4j, complex(math.nan, -math.inf),
        (), (1, "a", (2,)), [1, [2, [3]]], {1, 2}, frozenset({"a"}), set(),
        {"a": 1, "b": [1, 2]}, {1: "int key", (1, 2): "tuple key", None: 0, 2.5: "f"},
        {TAG: "a user dict that looks tagged", "v": 1},
        dt.datetime(2024, 2, 29, 12, 30, 1, 5, tzinfo=dt.UTC), dt.datetime(2020, 1, 1),
        dt.date(1999, 12, 31), dt.time(23, 59, 59, 999), dt.timedelta(days=-3, seconds=5, microseconds=7),
        Decimal("3.14159265358979323846264338327950288"), Decimal("-0E+3"),
        [{"nested": ({1: frozenset({b"x"})},)}],
    ],
    ids=lambda v: type(v).__name__,
)
def test_roundtrip_known_types(value):
    if isinstance(value, bytearray):
        assert roundtrip(value) == bytes(value)
        return
    assert same(roundtrip(value), value), roundtrip(value)


def test_nan_roundtrips_and_json_stays_strict():
    assert math.isnan(roundtrip(math.nan))
    json.dumps(encode_value([math.nan, {"x": math.inf}]), allow_nan=False)  # no bare NaN on the wire


hashables = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.binary(max_size=5)
    | st.floats(allow_nan=False),
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3),
    max_leaves=6,
)
leaves = (
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary()
    | st.complex_numbers() | st.datetimes() | st.dates() | st.times() | st.timedeltas()
    | st.decimals(allow_nan=False).filter(lambda d: not d.is_finite() or abs(d.adjusted()) < 4000)
    | st.integers(min_value=2**100, max_value=2**14284 - 1)
)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner, inner)
    | st.sets(hashables, max_size=4)
    | st.frozensets(hashables, max_size=4)
    | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    | st.dictionaries(hashables, inner, max_size=3),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(values)
def test_roundtrip_property(value):
    assert same(roundtrip(value), value)


@settings(max_examples=150, deadline=None)
@given(values)
def test_the_small_tree_is_the_encoders_tree_or_declined(value):
    """A durable run's journal writes small_tree's tree for each tool call: it must be encode_value's
    exactly (types included: True is not 1, 1.0 is not 1), or NotSmall (then the journal encodes)."""
    try:
        tree = small_tree(value)
    except NotSmall:
        return
    assert json.dumps(tree) == json.dumps(encode_value(value))


class _Text(str):
    pass


@pytest.mark.parametrize("value", [
    {"$t": 1}, {1: 2}, (1, [2.0, None]), [math.inf], [math.nan], 2**12_000, _Text("x"), b"x",
    "x" * 70_000, [[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]], list(range(3_000)),
])
def test_the_small_tree_declines_what_the_encoder_tags_or_bounds(value):
    try:
        tree = small_tree(value)
    except NotSmall:
        return
    assert json.dumps(tree) == json.dumps(encode_value(value))
    assert type(value) in (tuple, list)  # (only these of the cases above are small builtin data)


def test_the_small_tree_ends_at_a_cycle():
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(NotSmall):
        small_tree(cycle)


class Opaque:
    def __repr__(self):
        return "Opaque()"


class HostileRepr:
    def __repr__(self):
        raise RuntimeError("no repr for you")


def test_unknown_objects_cross_as_marked_repr():
    out = roundtrip([Opaque(), HostileRepr(), len])
    assert all(isinstance(x, Repr) for x in out)
    assert out[0] == "Opaque()" and out[0].type_name == "Opaque"
    assert "unrepresentable HostileRepr" in out[1]
    assert out[2] == "<built-in function len>"
    again = roundtrip(out[0])  # a Repr crosses back as a Repr
    assert isinstance(again, Repr) and again.type_name == "Opaque"


def test_cycles_depth_and_size_never_raise():
    cyc = [1]
    cyc.append(cyc)
    out = roundtrip(cyc)
    assert out[0] == 1 and isinstance(out[1], Repr)
    deep: list = []
    cur = deep
    for _ in range(5000):
        cur.append([])
        cur = cur[0]
    assert isinstance(json.dumps(encode_value(deep)), str)
    shared = [0]
    for _ in range(40):  # 2**40 nodes if expanded: the node budget must stop it
        shared = [shared, shared]
    enc = encode_value(shared, max_nodes=10_000)
    assert enc[TAG] == "repr"
    assert len(encode_value("x" * 1000)) == 1000
    assert len(encode_value(Opaque() if False else ("y" * 100_000,))["v"][0]) == 100_000


def test_subclasses_become_their_base():
    import collections
    import enum

    class Color(enum.IntEnum):
        RED = 1

    Point = collections.namedtuple("Point", "x y")
    assert same(roundtrip(Color.RED), 1)
    assert same(roundtrip(Point(1, 2)), (1, 2))
    assert same(roundtrip(collections.OrderedDict(a=1)), {"a": 1})
    assert same(roundtrip(collections.defaultdict(list, {1: [2]})), {1: [2]})


@pytest.mark.parametrize(
    "data",
    [
        {TAG: "pickle", "v": "gASV"},
        {TAG: "bytes", "v": "!!not base64!!"},
        {TAG: "bytes", "v": 5},
        {TAG: "float", "v": "1.0"},
        {TAG: "tuple", "v": "abc"},
        {TAG: "dict", "v": [[1]]},
        {TAG: "dict", "v": [[[1, 2], 3]]},  # unhashable key
        {TAG: "set", "v": [[1]]},
        {TAG: "datetime", "v": "yesterday"},
        {TAG: "complex", "v": [1, 2]},
        {TAG: "timedelta", "v": [1, 2]},
        {TAG: "int", "v": "zz"},
        {TAG: "repr", "v": 3},
        {TAG: "tuple"},
        b"raw",
    ],
)
def test_decoder_is_strict(data):
    with pytest.raises(ProtocolError):
        decode_value(data)


def test_decoder_refuses_deep_nesting():
    data: list = []
    cur = data
    for _ in range(400):
        cur.append([])
        cur = cur[0]
    with pytest.raises(ProtocolError):
        decode_value(data)


# ----------------------------------------------------------------------------- framing


def test_frames_split_anywhere():
    frames = [pack_frame({"op": "ping", "id": i, "pad": "x" * i}) for i in range(50)]
    stream = b"".join(frames)
    buf = FrameBuffer()
    got = []
    for i in range(0, len(stream), 7):
        buf.feed(stream[i : i + 7])
        while (body := buf.next_frame()) is not None:
            got.append(unpack_message(body))
    assert [m["id"] for m in got] == list(range(50)) and buf.pending() == 0


def test_oversized_frames_are_refused_both_ways():
    with pytest.raises(FrameTooLarge):
        pack_frame({"op": "x", "blob": "a" * 2000}, max_frame_bytes=1000)
    buf = FrameBuffer(max_frame_bytes=1000)
    buf.feed((1001).to_bytes(4, "big"))  # refused from the header alone, before any body
    with pytest.raises(FrameTooLarge):
        buf.next_frame()
    assert issubclass(FrameTooLarge, ProtocolError)


@pytest.mark.parametrize("body", [b"\xff\xfe", b"[1, 2]", b'"op"', b'{"id": 1}', b'{"op": 5}', b"[" * 100_000])
def test_unpack_refuses_non_messages(body):
    with pytest.raises(ProtocolError):
        unpack_message(body)


# ----------------------------------------------------------------------------- message models


def _body(msg: dict) -> bytes:
    return pack_frame(msg)[4:]


def test_worker_messages_validate():
    r = parse_worker_message(_body({"op": "result", "id": 3, "output": 1, "logs": "hi", "is_final_answer": False,
                                    "error": {"type": "ValueError", "message": "m", "lineno": 2, "line": "x"},
                                    "output_repr": "1", "duration_s": 0.1}))
    assert isinstance(r, Result) and r.error is not None and r.error.lineno == 2
    t = parse_worker_message(_body({"op": "tool_call", "id": 3, "call": 1, "name": "add", "args": [1], "kwargs": {}}))
    assert isinstance(t, ToolCall) and t.name == "add"
    v = parse_worker_message(_body({"op": "variables", "id": 4, "values": {"x": {"$t": "tuple", "v": [1]}}}))
    assert isinstance(v, Variables) and decode_value(v.values) == {"x": (1,)}


@pytest.mark.parametrize(
    "msg",
    [
        {"op": "result", "id": "3"},  # strict: no str -> int coercion
        {"op": "result", "id": 3, "is_final_answer": "yes"},
        {"op": "result", "id": 3, "surprise": 1},  # extra fields
        {"op": "result", "id": 3, "error": {"type": "X"}},
        {"op": "result", "id": 3, "logs": 5},
        {"op": "tool_call", "id": 3, "call": 1, "name": "x" * 500},
        {"op": "tool_call", "id": 3, "call": 1, "name": "add", "kwargs": []},
        {"op": "variables", "id": "4", "values": {}},
        {"op": "variables", "id": 4, "values": {}, "names": []},
        {"op": "get_variables", "id": 4},  # a host->worker op coming from the worker
        {"op": "execute", "id": 1, "code": "1"},
        {"op": "launch_missiles", "id": 1},
    ],
)
def test_worker_messages_are_strict(msg):
    with pytest.raises(ProtocolError):
        parse_worker_message(_body(msg))


def test_host_messages_frame_compactly():
    frame = Execute(id=7, code="1 + 1").frame()
    assert unpack_message(frame[4:]) == {"op": "execute", "id": 7, "code": "1 + 1", "ref": None}
    assert unpack_message(Execute(id=8, ref=3).frame()[4:]) == {"op": "execute", "id": 8,
                                                                  "code": None, "ref": 3}
    assert b" " not in frame[4:].replace(b"1 + 1", b"")
    assert unpack_message(GetVariables(id=8).frame()[4:]) == {"op": "get_variables", "id": 8, "names": None}
    assert unpack_message(GetVariables(id=8, names=["a"]).frame()[4:])["names"] == ["a"]


# ----------------------------------------------------------------------------- text limits


@given(st.text(max_size=3000), st.integers(min_value=10, max_value=2000))
def test_truncate_text_keeps_head_and_tail(text, limit):
    out = truncate_text(text, limit)
    if len(text) <= limit:
        assert out == text
    else:
        keep = max(limit - len(omitted_note(len(text))), 0) // 2
        assert out.startswith(text[:keep]) and out.endswith(text[len(text) - keep:])
        assert "characters omitted] ...\n" in out
        assert len(out) <= max(limit, len(omitted_note(len(text))))
        assert full_length(out) == len(text)  # the note counts what is gone, exactly


@given(st.lists(st.text(max_size=300), max_size=40), st.integers(min_value=100, max_value=1000))
def test_output_buffer_is_truncate_text_of_everything_written(parts, limit):
    """Written piece by piece, the buffer keeps what cutting the whole text at once would keep."""
    buffer = OutputBuffer(limit)
    for part in parts:
        assert buffer.write(part) == len(part)
    whole = "".join(parts)
    assert buffer.text() == truncate_text(whole, limit)


def test_safe_repr_survives_hostile_reprs():
    class Raises:
        def __repr__(self):
            raise RuntimeError("no")

    class NotAStr:
        def __repr__(self):
            return 42

    assert safe_repr(Raises()) == "<unrepresentable Raises object>"
    assert safe_repr(NotAStr()) == "<unrepresentable NotAStr object>"
    assert len(safe_repr("x" * 50_000, 1000)) < 1100


# ----------------------------------------------------------------------------- layering


def _imports(path: Path) -> list[tuple[int, str]]:
    """(level, module) of every import in a file: level 0 is absolute, >0 relative."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(0, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or ""))
    return found


def test_the_worker_package_is_stdlib_only():
    """It runs from a bare read-only directory: only the standard library and its own modules (the
    restricted runtime is a plugin it loads by name, `executors.restricted.execution.served`)."""
    allowed = set(sys.stdlib_module_names) | {"__future__"}
    worker_dir = Path(__file__).resolve().parent.parent / "executors" / "worker"
    for path in sorted([*worker_dir.glob("*.py"), *worker_dir.glob("bounds/*.py"), *worker_dir.glob("codec/*.py")]):
        for level, module in _imports(path):
            if level:
                assert level <= 1 + (path.parent != worker_dir), (path.name, module)  # never above the package
            else:
                assert module.split(".")[0] in allowed, (path.name, module)


HOST_SIDE = ("", "remote", "process", "docker")  # executors/ and the places that drive a worker


def _host_files() -> list[Path]:
    root = Path(__file__).resolve().parent.parent / "executors"
    return [path for sub in HOST_SIDE for path in sorted((root / sub).glob("*.py"))]


def test_the_host_imports_only_the_wire_and_the_errors_from_the_worker():
    root = Path(__file__).resolve().parent.parent / "executors"
    for path in _host_files():
        depth = len(path.parent.relative_to(root).parts)  # 0 at the top, 1 in a place's package
        for level, module in _imports(path):
            if level == depth + 1 and module.startswith("worker"):
                # hardening: the host asks the kernel's Landlock ABI before a worker starts;
                # bounds: the table and checks every byte from a worker is held to;
                # display: the one way text is cut, on both sides (its note's count true)
                assert module.split(".")[:2] in (["worker", "wire"], ["worker", "errors"], ["worker", "hardening"],
                                                 ["worker", "bounds"], ["worker", "display"]), (path.name, module)


def test_no_pickle_anywhere():
    root = Path(__file__).resolve().parent.parent / "executors"
    files = _host_files() + sorted((root / "worker").glob("*.py")) + sorted((root / "worker").glob("*/*.py"))
    for path in files:
        text = path.read_text()
        assert "import pickle" not in text and "pickle.loads" not in text and "marshal" not in text, path


def test_worker_codec_runs_standalone(tmp_path):
    """The worker package alone (no `executors`, no pydantic) imports, encodes and frames."""
    shutil.copytree(Path(__file__).resolve().parent.parent / "executors" / "worker", tmp_path / "worker",
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = (
        "import sys, json; sys.path.insert(0, '.'); sys.modules['pydantic'] = None\n"
        "from worker import wire\n"
        "import worker.main\n"
        "v = wire.encode_value((1, {2}, b'x'))\n"
        "print(json.dumps(v, sort_keys=True))\n"
        "assert wire.decode_value(v) == (1, {2}, b'x')\n"
        "assert 'executors' not in sys.modules\n"
    )
    out = subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(tmp_path)}, timeout=30)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[TAG] == "tuple"


# ----------------------------------------------------------------------------- sources by ref


@given(st.lists(st.sampled_from([f"x = {i}" for i in range(100)]), max_size=400))
def test_host_and_worker_agree_on_the_sources_the_worker_holds(codes):
    """The host sends a source once, then its ref; the worker, keeping what it was sent, can
    always answer a ref the host thinks it has (both forget the same oldest sources)."""
    from executors.worker.wire import SourceRefs

    host, worker = SourceRefs(), SourceRefs()
    for code in codes:
        ref, known = host.ref_of(code)
        if known:
            assert worker.code_of(ref) == code
        else:
            worker.keep(ref, code)


def test_a_repeated_source_is_sent_by_ref():
    """Through a real worker: the same source again goes as its ref alone, and a source past the
    bound is sent again in full (nothing a worker lacks is ever asked of it)."""
    from executors import SubprocessExecutor
    from executors.worker.wire import SOURCE_REFS

    with SubprocessExecutor(harden=False) as ex:
        sent = []
        channel = ex._link.handle.channel
        write = channel.write
        channel.write = lambda data, timeout: (sent.append(data), write(data, timeout))[1]
        first = "n = 41\nn + 1"
        assert ex.execute(first).output == 42 and ex.execute(first).output == 42
        assert b"41" in sent[0] and b"41" not in sent[1] and b'"ref"' in sent[1]
        for i in range(SOURCE_REFS + 1):
            assert ex.execute(f"{i} * 2").output == 2 * i
        assert ex.execute(first).output == 42 and b"41" in sent[-1]
