"""The plain-data boundary, in every executor: data crosses as data, nothing the model made as itself.

What a user relies on: a DataFrame or an array returned by a step, handed to a tool or returned by
one comes back equal (rebuilt, not shared); a model's own object comes back as its repr; a tool
never receives a model-made object (a str subclass arrives as its text); host values passed in are
copies. Runs in LocalExecutor, SubprocessExecutor (restricted, and without its kernel layer) and
DockerExecutor on the data image (CI=true runs it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from data_image import DATA_IMPORTS, data_docker

from executors import Limits, Repr
from executors.worker.codec import decode_value, encode_value

pd = pytest.importorskip("pandas")
np = pytest.importorskip("numpy")

KINDS = ("local", "subprocess", "subprocess-noharden", "docker")
SEEN: list[Any] = []


def echo(x: Any) -> Any:
    """A tool that keeps what it got and gives it back."""
    SEEN.append(x)
    return x


def total(frame: Any) -> float:
    SEEN.append(frame)
    return float(frame["v"].sum())


TOOLS = {"echo": echo, "total": total}


def _make(kind: str) -> Any:
    limits = Limits(timeout_s=30)
    if kind == "docker":
        return data_docker(tools=TOOLS, limits=limits)
    from executors import LocalExecutor, SubprocessExecutor

    if kind == "local":
        return LocalExecutor(tools=TOOLS, authorized_imports=DATA_IMPORTS, limits=limits)
    return SubprocessExecutor(tools=TOOLS, authorized_imports=DATA_IMPORTS, limits=limits,
                              harden=kind == "subprocess",
                              unconfined_native=kind != "subprocess")


@pytest.fixture(scope="module", params=KINDS)
def ex(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "docker":
        request.applymarker(pytest.mark.docker)
    executor = _make(request.param)
    try:
        yield executor
    finally:
        executor.close()


@pytest.fixture(autouse=True)
def _fresh(ex: Any) -> None:
    ex.reset()
    SEEN.clear()


FRAME = ("import pandas as pd\nimport numpy as np\n"
         "df = pd.DataFrame({'v': [1.5, 2.5, 4.0], 'k': ['a', 'b', None],"
         " 'c': pd.Categorical(['x', 'y', 'x']), 'd': pd.to_datetime(['2024-01-01', '2024-02-01', None])},"
         " index=pd.Index([10, 20, 30], name='id'))\n")


def expected_frame() -> Any:
    ns: dict = {}
    exec(FRAME, ns)
    return ns["df"]


def test_a_frame_crosses_as_a_frame(ex: Any) -> None:
    r = ex.execute(FRAME + "df")
    assert r.error is None, r.error
    pd.testing.assert_frame_equal(r.output, expected_frame())
    pd.testing.assert_frame_equal(ex.get_variables(["df"])["df"], expected_frame())


def test_arrays_and_frames_go_to_tools_and_come_back(ex: Any) -> None:
    r = ex.execute(FRAME + "a = echo(np.arange(6).reshape(2, 3))\ns = total(df)\n"
                   "(a.shape, a.dtype.name, int(a.sum()), s)")
    assert r.error is None, r.error
    assert r.output == ((2, 3), "int64", 15, 8.0)
    array, frame = SEEN
    assert type(array) is np.ndarray and array.tolist() == [[0, 1, 2], [3, 4, 5]]
    pd.testing.assert_frame_equal(frame, expected_frame())


def test_a_tool_never_receives_a_model_made_object(ex: Any) -> None:
    r = ex.execute("class Name(str):\n    def upper(self):\n        return 'model code ran'\n"
                   "class Thing:\n    def __repr__(self):\n        return 'Thing()'\n"
                   "def gen():\n    yield 1\n"
                   "echo([Name('alice'), Thing(), gen(), {'k': (1, 2)}])")
    assert r.error is None, r.error
    [got] = SEEN
    name, thing, generator, plain = got
    assert type(name) is str and name.upper() == "ALICE"
    assert type(thing) is Repr and thing == "Thing()"
    assert type(generator) is Repr and "generator" in generator
    assert plain == {"k": (1, 2)}


def test_model_objects_come_back_as_their_repr(ex: Any) -> None:
    r = ex.execute("class Loud:\n    def __repr__(self):\n        return 'Loud()'\n"
                   "    def __eq__(self, other):\n        return True\nfinal_answer([Loud(), 2])")
    assert r.is_final_answer and r.output == ["Loud()", 2] and type(r.output[0]) is Repr
    assert r.output[0] != object()  # a str: the model's __eq__ is not there


def test_host_values_are_copies(ex: Any) -> None:
    mine = pd.DataFrame({"v": [1.0, 2.0]})
    ex.set_variables({"mine": mine, "items": [1, 2]})
    r = ex.execute("mine['v'] = mine['v'] * 10\nitems.append(3)\n(float(mine['v'].sum()), items)")
    assert r.output == (30.0, [1, 2, 3])
    assert mine["v"].tolist() == [1.0, 2.0]  # the host's frame is untouched


def test_the_codec_rejects_a_hostile_array_payload() -> None:
    """A worker's bytes are hostile: an object dtype over raw bytes would read pointers."""
    from executors.worker.wire import ProtocolError

    good = encode_value(np.arange(3))
    assert decode_value(good).tolist() == [0, 1, 2]
    for bad in ({**good, "dtype": "|O"}, {**good, "dtype": "|V8"}, {**good, "shape": [4]},
                {**good, "shape": [-1]}, {**good, "dtype": "<f8; import os"}):
        with pytest.raises(ProtocolError):
            decode_value(bad)


def test_builtin_subclasses_cross_as_their_own_data() -> None:
    """A list of Counters (or of any dict/set subclass) comes back value for value: each is read by
    its base type's C code, and the in-process memo is keyed by the value, not by a temporary copy
    (keyed by the copy, 999 of 1000 Counters came back as the first one's data)."""
    from collections import Counter, OrderedDict

    values = [Counter({str(i): i}) for i in range(1000)] + [OrderedDict(a=1), frozenset({1, 2})]
    for binary in (True, False):
        assert decode_value(encode_value(values, binary=binary)) == \
            [{str(i): i} for i in range(1000)] + [{"a": 1}, frozenset({1, 2})]


def test_reading_a_subclass_runs_none_of_its_methods() -> None:
    """dict.copy() calls a subclass's keys() and __getitem__ when it overrides __iter__, and a new
    set hashes each element again: the codec does neither (this was a write on the host through
    `get_variables()`, found by the deferred fuzz family)."""
    ran: list[str] = []

    class Hostile(dict):
        def __iter__(self):
            ran.append("__iter__")
            return iter(())

        def keys(self):
            ran.append("keys")
            return ()

        def __getitem__(self, key):
            ran.append("__getitem__")

    class Key(str):
        def __hash__(self):
            ran.append("__hash__")
            return 1

    class Elements(frozenset):
        def __iter__(self):
            ran.append("frozenset.__iter__")
            return iter(())

    values = [Hostile(a=1), Elements({Key("x")})]
    ran.clear()  # (building the set hashed its element)
    got = decode_value(encode_value(values, binary=True))
    assert ran == [] and got == [{"a": 1}, frozenset({"x"})]
