"""`resource_bombs()`: programs that try to exhaust time, memory, output, recursion or processes.

Each kind is a table of templates (name, code) filled with sizes drawn for that kind. A template
is a `str.format` string over the kind's parameters, or a function of them where the code is
built by repetition. Each kind draws its sizes in the order its `_draw_<kind>` says, then picks
one template: keep both orders, or every seed produces different bombs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .._hypothesis import st

__all__ = ["Bomb", "BOMB_KINDS", "resource_bombs"]

BOMB_KINDS = ("time", "memory", "output", "recursion", "process")


@dataclass(frozen=True)
class Bomb:
    """One resource bomb: `kind` is one of BOMB_KINDS, `size` the generated size it uses."""

    kind: str
    code: str
    name: str
    size: int = 0

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.name}"


Template = str | Callable[[dict[str, int]], str]

TIME_BOMBS: tuple[tuple[str, Template], ...] = (
    ("while_true", "while True:\n    pass"),
    ("while_swallow", "while True:\n    try:\n        pass\n    except BaseException:\n        pass"),
    ("nested_for", "for i in range({n}):\n    for j in range({n}):\n        pass"),
    ("counter", "x = 0\nwhile x >= 0:\n    x += 1"),
    ("c_sum", "sum(range({big}))"),
    ("c_any_repeat", "import itertools\nany(itertools.repeat(0))"),
    ("c_deque_count", "import collections, itertools\ncollections.deque(itertools.count(), maxlen=0)"),
    ("c_iter_callable", "any(iter(int, 1))"),
    ("c_max_count", "import itertools\nmax(itertools.islice(itertools.count(), {big}))"),
    ("redos", "import re\nre.match(r'(a+)+$', 'a' * {redos} + 'b')"),
    ("sleep", "import time\ntime.sleep({sleep})"),
    ("factorial", "import math\nmath.factorial({factorial})"),
    ("pow_mod_free", "pow(7, {exponent})"),
    ("sorted_big", "sorted(range({big}))"),
    ("swallow_all", "def spin():\n    while True:\n        try:\n            spin()\n        except BaseException:\n            pass\nspin()"),
    ("generator_loop", "def g():\n    while True:\n        yield 1\nfor _ in g():\n    pass"),
    # model code the executor itself might run after the step: rendering the last value,
    # the final answer or an exception message must happen under the same limits
    ("repr_of_output", "class Slow:\n    def __repr__(self):\n        while True:\n            pass\nSlow()"),
    ("str_of_final_answer", "class Slow:\n    def __str__(self):\n        while True:\n            pass\n\n    def __repr__(self):\n        while True:\n            pass\nfinal_answer(Slow())"),
    ("str_of_exception", "class Slow(Exception):\n    def __str__(self):\n        while True:\n            pass\nraise Slow()"),
    ("repr_in_exception_args", "class Slow:\n    def __repr__(self):\n        while True:\n            pass\nraise ValueError(Slow())"),
    ("eq_of_output", "class Slow:\n    def __eq__(self, other):\n        while True:\n            pass\n    __hash__ = None\nfinal_answer([Slow()])"),
)

MEMORY_BOMBS: tuple[tuple[str, Template], ...] = (
    ("str_mul", "x = 'a' * {nbytes}"),
    ("list_mul", "x = [0] * {n8}"),
    ("list_mul_aug", "x = [0]\nx *= {n8}"),
    ("str_mul_aug", "x = 'a'\nx *= {nbytes}"),
    ("range_list", "x = list(range({n8}))"),
    # zero-filled buffers are lazily mapped: touch them, or they cost nothing
    ("bytearray", "x = bytearray(b'x') * {nbytes}"),
    ("bytes", "x = b'x' * {nbytes}"),
    ("big_pow", "x = 10 ** {digits}"),
    ("big_shift", "x = 1 << {bits}"),
    ("pow_builtin", "x = pow(10, {digits})"),
    ("growing_list", "x = []\nwhile True:\n    x.append('x' * 10000)"),
    ("doubling", "s = 'ab'\nfor i in range(64):\n    s = s + s"),
    ("nested_mul", "x = [[0] * 1000 for _ in range({rows})]"),
    ("join_many", "x = ''.join(['abcdefgh'] * {n8})"),
    ("format_width", "x = f'{{1:>{nbytes}}}'"),
    ("percent_width", "x = '%*d' % ({nbytes}, 1)"),
    ("ljust", "x = 'a'.ljust({nbytes})"),
    ("replace_blowup", "x = ('a' * 10000).replace('', 'b' * {chunk})"),
    ("array_mul", "import array\nx = array.array('b', [0]) * {nbytes}"),
    ("deque_mul", "import collections\nx = collections.deque([0]) * {n8}"),
    ("repeat_list", "import itertools\nx = list(itertools.repeat(0, {n8}))"),
    ("dict_comp", "x = {{i: i for i in range({n8})}}"),
    ("mul_chain", "x = [0] * {side} * {side}"),
    ("expandtabs", "x = '\\t'.expandtabs({nbytes})"),
)

OUTPUT_BOMBS: tuple[tuple[str, Template], ...] = (
    ("print_loop", "while True:\n    print('x' * 100)"),
    ("print_range", "for i in range({n}):\n    print(i)"),
    ("print_big", "print('x' * {n})"),
    ("print_star", "print(*range({n}))"),
    ("print_end", "for i in range({n}):\n    print('y', end='')"),
    ("print_sep", "print(*(['z'] * {n}), sep='--')"),
)

RECURSION_BOMBS: tuple[tuple[str, Template], ...] = (
    ("direct", "def f(n):\n    return f(n + 1)\nf(0)"),
    ("mutual", "def a(n):\n    return b(n + 1)\ndef b(n):\n    return a(n + 1)\na(0)"),
    ("lambda", "f = lambda n: f(n + 1)\nf(0)"),
    ("repr_self", "class R:\n    def __repr__(self):\n        return repr(self)\nrepr(R())"),
    ("getattr_self", "class A:\n    def __getattr__(self, name):\n        return self.missing\nA().x"),
    ("retry", "def f():\n    try:\n        f()\n    except RecursionError:\n        f()\nf()"),
    ("nested_repr", "x = []\nfor i in range({n}):\n    x = [x]\nrepr(x)"),
    ("nested_json", "import json\nx = []\nfor i in range({n}):\n    x = [x]\njson.dumps(x)"),
    ("nested_eq", "x = []\ny = []\nfor i in range({n}):\n    x = [x]\n    y = [y]\nx == y"),
    ("nested_copy", "import copy\nx = []\nfor i in range({n}):\n    x = [x]\ncopy.deepcopy(x)"),
    ("yield_from", "def g():\n    yield from g()\nlist(g())"),
    # deeply nested source: the parser and compiler recurse too
    ("src_unary", lambda p: "x = " + "-" * p["n"] + "1"),
    ("src_parens", lambda p: "x = " + "(" * min(p["n"], 5000) + "1" + ")" * min(p["n"], 5000)),
    ("src_lists", lambda p: "x = " + "[" * min(p["n"], 5000) + "]" * min(p["n"], 5000)),
    ("src_chain", lambda p: "x = 1" + " + 1" * p["n"]),
    ("src_not", lambda p: "x = " + "not " * p["n"] + "True"),
    ("src_lambda", lambda p: "f = " + "lambda: " * min(p["n"], 3000) + "0"),
    ("src_attr", lambda p: "x = a" + ".b" * p["n"]),
    ("src_call", lambda p: "x = f" + "()" * p["n"]),
)

PROCESS_BOMBS: tuple[tuple[str, Template], ...] = (
    ("fork_loop", "import os\nfor i in range({n}):\n    os.fork()"),
    ("subprocess_sleep", "import subprocess\nsubprocess.Popen(['sleep', '600'])"),
    ("threads", "import threading\nfor i in range({n}):\n    threading.Thread(target=lambda: [0 for _ in iter(int, 1)], daemon=True).start()"),
    ("multiprocessing", "import multiprocessing\nfor i in range({n}):\n    multiprocessing.Process(target=print).start()"),
    ("os_system_bg", "import os\nos.system('sleep 600 &')"),
    ("spawn", "import os\nos.spawnlp(os.P_NOWAIT, 'sleep', 'sleep', '600')"),
)


@dataclass(frozen=True)
class _Sizes:
    """What the sizes are relative to: the executor's limits."""

    mem_mb: int
    max_output: int
    max_depth: int


def _draw_time(draw: Any, sizes: _Sizes) -> dict[str, int]:
    return {"n": draw(st.integers(10**4, 10**6)), "big": draw(st.integers(10**10, 10**14)),
            "redos": draw(st.integers(28, 40)), "sleep": draw(st.integers(60, 3600)),
            "factorial": draw(st.integers(10**6, 10**7)), "exponent": draw(st.integers(10**7, 10**9))}


def _draw_memory(draw: Any, sizes: _Sizes) -> dict[str, int]:
    nbytes = max(sizes.mem_mb, 64) * 1024 * 1024 * draw(st.integers(2, 16))
    n8 = nbytes // 8
    return {"n": nbytes, "nbytes": nbytes, "n8": n8, "digits": nbytes * 2, "bits": nbytes * 8,
            "rows": n8 // 1000, "chunk": max(nbytes // 10**4, 1), "side": int(n8 ** 0.5) + 1}


def _draw_output(draw: Any, sizes: _Sizes) -> dict[str, int]:
    return {"n": draw(st.integers(sizes.max_output * 10, sizes.max_output * 10_000))}


def _draw_recursion(draw: Any, sizes: _Sizes) -> dict[str, int]:
    depth = max(sizes.max_depth, 50)
    return {"n": draw(st.integers(depth * 5, depth * 200))}


def _draw_process(draw: Any, sizes: _Sizes) -> dict[str, int]:
    return {"n": draw(st.integers(2, 8))}


# kind -> (how its sizes are drawn, its templates). A bomb's `size` is its parameter "n".
_KINDS: dict[str, tuple[Callable[[Any, _Sizes], dict[str, int]], tuple[tuple[str, Template], ...]]] = {
    "time": (_draw_time, TIME_BOMBS),
    "memory": (_draw_memory, MEMORY_BOMBS),
    "output": (_draw_output, OUTPUT_BOMBS),
    "recursion": (_draw_recursion, RECURSION_BOMBS),
    "process": (_draw_process, PROCESS_BOMBS),
}


@st.composite
def _bomb(draw: Any, kinds: tuple[str, ...], sizes: _Sizes) -> Bomb:
    kind = draw(st.sampled_from(kinds))
    draw_sizes, templates = _KINDS[kind]
    params = draw_sizes(draw, sizes)
    name, template = draw(st.sampled_from(templates))
    code = template(params) if callable(template) else template.format(**params)
    return Bomb(kind, code, name, params["n"])


def resource_bombs(
    kinds: Iterable[str] = BOMB_KINDS,
    *,
    limits: Any = None,
) -> st.SearchStrategy[Bomb]:
    """Strategy for `Bomb`s: programs that try to exhaust time, memory, output, recursion or
    processes, with generated sizes (relative to `limits`, an `executors.Limits`, when given).

    Containment (what `executors.testing.check_bombs_contained` asserts): `execute` returns
    within `timeout_s` plus a margin (with an error, except output bombs whose output is simply
    truncated), the host did not grow by hundreds of MB, and the executor answers `1 + 1` next.

        @given(resource_bombs(["time", "memory"]))
        def test_contained(bomb): ...
    """
    kinds = tuple(kinds)
    if not kinds or set(kinds) - set(BOMB_KINDS):
        raise ValueError(f"kinds must be among {BOMB_KINDS}, got {kinds!r}")
    sizes = _Sizes(mem_mb=getattr(limits, "max_memory_mb", None) or 512,
                   max_output=getattr(limits, "max_output_chars", None) or 20_000,
                   max_depth=getattr(limits, "max_recursion_depth", None) or 200)
    return _bomb(kinds, sizes)
