"""Resource limits of the in-process executor (`LocalExecutor`) hold, and the host survives.

Each case runs in a fresh child python acting as the host, because an in-process executor that
fails to stop a C-level computation (a huge `**`, a C loop over `itertools.count()`) would freeze
the test runner itself: the parent kills the child and the test fails with the phase that hung.

For every case the child reports: how long `execute()` took, the error it returned, how much the
host's peak RSS (VmHWM) grew, then whether the same executor still answers `1 + 1`. Cases with a
`host` action then make the host touch a model-defined object after `execute()` returned (repr,
==, hash, iteration, garbage collection of a generator with a `finally`, ...): model code must not
run unbounded on the host, so that action must finish quickly.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TIMEOUT_S = 2.0
SLACK_S = 1.0  # the bound: an error within timeout_s + 1 s
MAX_HWM_GROWTH_MB = 500
HOST_ACTION_MAX_S = 1.5
LIMIT_ERRORS = {"TimeoutError", "OperationLimitError", "MemoryError", "RecursionError"}

pytestmark = pytest.mark.timeout(90)


@dataclass(frozen=True)
class Case:
    id: str
    code: str
    expect: str = "error"  # "error": must fail; "final": must be a final answer; "any": no demand
    types: frozenset[str] | None = None  # allowed error types (None: any error type)
    host: str | None = None  # python run on the host after execute() (names: r, ex, gc, tools)
    max_logs: int | None = None  # bound on len(result.logs)
    limits: tuple = ()  # extra Limits fields, as (name, value) pairs
    in_thread: bool = False  # run execute() in a worker thread of the host, not its main thread
    setup: tuple = ()  # earlier execute() calls on the same executor


def C(id: str, code: str, **kw: Any) -> Case:
    if "setup" in kw:
        kw["setup"] = tuple(kw["setup"])
    if "limits" in kw:
        kw["limits"] = tuple(sorted(kw["limits"].items()))
    if "types" in kw and kw["types"] is not None:
        kw["types"] = frozenset(kw["types"])
    return Case(id, textwrap.dedent(code).strip("\n") + "\n", **kw)


LOOPING_CLASS = """
class Loop:
    def __repr__(self):
        while True:
            pass
    def __str__(self):
        while True:
            pass
    def __eq__(self, other):
        while True:
            pass
    def __hash__(self):
        while True:
            pass
    def __len__(self):
        while True:
            pass
    def __bool__(self):
        while True:
            pass
    def __iter__(self):
        while True:
            yield 1
    def __lt__(self, other):
        while True:
            pass
    def spin(self):
        while True:
            pass
"""

CASES: list[Case] = [
    # ------------------------------------------------------------ time
    C("while_true", "while True:\n    pass", types=LIMIT_ERRORS),
    C("for_itertools_count", "import itertools\nfor i in itertools.count():\n    pass", types=LIMIT_ERRORS),
    C("nested_loops", "n = 0\nfor i in range(10**6):\n    for j in range(10**6):\n        n += 1", types=LIMIT_ERRORS),
    C("while_loop_in_comprehension", "import itertools\n[i for i in itertools.count()]"),
    C("generator_pipeline", "def gen():\n    i = 0\n    while True:\n        i += 1\n        yield i\nfor x in gen():\n    pass"),
    C("deep_recursion", "def f(n):\n    return f(n + 1)\nf(0)", types={"RecursionError"}),
    C("mutual_recursion", "def a(n):\n    return b(n + 1)\ndef b(n):\n    return a(n + 1)\na(0)", types={"RecursionError"}),
    C("recursion_catch_and_retry", "def f():\n    try:\n        f()\n    except BaseException:\n        f()\nf()"),
    C("lambda_recursion", "f = lambda n: f(n + 1)\nf(0)", types={"RecursionError"}),
    C("sleep_forever", "import time\ntime.sleep(3600)", types=LIMIT_ERRORS),
    C("sleep_from_import", "from time import sleep\nsleep(3600)", types=LIMIT_ERRORS),
    C("try_except_base_in_loop", "while True:\n    try:\n        pass\n    except BaseException:\n        pass", types=LIMIT_ERRORS),
    C("nested_try_except_loops", """
        while True:
            try:
                while True:
                    try:
                        pass
                    except BaseException:
                        pass
            except BaseException:
                pass
        """, types=LIMIT_ERRORS),
    C("finally_loops_again", "try:\n    while True:\n        pass\nfinally:\n    while True:\n        pass", types=LIMIT_ERRORS),
    # `continue` in a finally block swallows any exception, the interrupt included
    C("finally_continue_swallows_interrupt", "while True:\n    try:\n        pass\n    finally:\n        continue", types=LIMIT_ERRORS),
    C("finally_continue_without_op_budget", "while True:\n    try:\n        pass\n    finally:\n        continue", types=LIMIT_ERRORS, limits={"max_operations": None}),
    C("nested_finally_continue_in_thread", "while True:\n    try:\n        while True:\n            try:\n                pass\n            finally:\n                continue\n    finally:\n        continue", types=LIMIT_ERRORS, limits={"max_operations": None}, in_thread=True),
    C("catch_limit_and_recurse", "def spin():\n    try:\n        while True:\n            pass\n    except BaseException:\n        spin()\nspin()"),
    C("catch_limit_then_finish", "try:\n    while True:\n        pass\nexcept BaseException:\n    pass\nprint('survived')"),
    C("suppressing_context_manager", """
        class Suppress:
            def __enter__(self):
                return self
            def __exit__(self, *exc):
                return True
        def spin():
            with Suppress():
                while True:
                    pass
            spin()
        spin()
        """),
    C("loop_in_user_str_during_print", LOOPING_CLASS + "print(Loop())"),
    C("loop_in_exception_str", "class E(Exception):\n    def __str__(self):\n        while True:\n            pass\nraise E()"),
    C("loop_in_tool_argument_str", LOOPING_CLASS + "search(Loop())"),
    # C loops that no loop-head check sees
    C("sum_huge_range", "sum(range(10**15))"),
    C("deque_consumes_count", "import collections, itertools\ncollections.deque(itertools.count(), maxlen=0)"),
    C("any_over_repeat", "import itertools\nany(itertools.repeat(0))"),
    C("any_over_callable_iterator", "any(iter(int, 1))"),
    C("membership_in_count", "import itertools\n-1 in itertools.count()"),
    C("max_over_cycle", "import itertools\nmax(itertools.cycle([1, 2]))"),
    C("deque_consumes_range", "import collections\ncollections.deque(range(10**15), maxlen=0)"),
    C("membership_in_callable_iterator", "-1 in iter(int, 1)"),
    C("membership_in_map_over_range", "-1 in map(abs, range(10**15))"),
    C("set_of_callable_iterator", "set(iter(int, 1))"),
    C("counter_of_callable_iterator", "import collections\ncollections.Counter(iter(int, 1))"),
    C("sum_huge_range_without_op_budget", "sum(range(10**15))", limits={"max_operations": None}),
    # ~2 s of host work: finishes just in time on a quiet machine, times out on a busy one;
    # either is fine as long as execute() returns within timeout_s + 1 s
    C("heavy_host_code_in_tool_callback", "import random\nclass Q:\n    def __str__(self):\n        return str(len(random.choices('ab', k=3 * 10**7)))\nsearch(Q())", expect="any"),
    C("pow_modular_huge", "pow(3, 10**200, 10**(10**5))"),
    C("math_prod_huge", "import math\nmath.prod(range(1, 3 * 10**5))"),
    C("deque_over_permutations", "import collections, itertools\ncollections.deque(itertools.permutations(range(14)), maxlen=0)"),
    C("membership_in_product", "import itertools\n(-1,) in itertools.product(range(10**4), repeat=3)"),
    C("factorial_huge", "import math\nmath.factorial(10**6)"),
    C("comb_huge", "import math\nmath.comb(10**7, 5 * 10**6)"),
    C("int_square_growth", "x = 3 ** 100000\nwhile True:\n    x = x * x"),
    C("regex_catastrophic_backtracking", "import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')"),
    # the same hogs when the host runs the executor in a worker thread (no signals there)
    C("thread_while_true", "while True:\n    pass", in_thread=True, types=LIMIT_ERRORS),
    C("thread_regex_catastrophic_backtracking", "import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')", in_thread=True),
    C("thread_host_python_loop", "import random\nrandom.choices('ab', k=10**10)", in_thread=True),
    C("thread_pow_modular_huge", "pow(3, 10**200, 10**(10**5))", in_thread=True),
    C("thread_sleep_forever", "import time\ntime.sleep(3600)", in_thread=True, types=LIMIT_ERRORS),
    C("thread_big_int_division", "x = 7**(1300000)\ny = 3**(600000)\nz = x // y\n1", in_thread=True),
    C("thread_deque_consumes_range", "import collections\ncollections.deque(range(10**15), maxlen=0)", in_thread=True),
    # ------------------------------------------------------------ memory and size
    C("pow_tower", "10**10**10"),
    C("pow_builtin", "pow(10, 10**9)"),
    C("int_subclass_exponent", "class I(int):\n    pass\n10 ** I(10**9)"),
    C("int_subclass_shift", "class I(int):\n    pass\n1 << I(8 * 10**9)"),
    C("dunder_pow_method", "(10).__pow__(10**9)"),
    C("dunder_lshift_method", "(1).__lshift__(8 * 10**9)"),
    C("operator_pow", "import operator\noperator.pow(10, 10**9)"),
    C("operator_lshift", "import operator\noperator.lshift(1, 8 * 10**9)"),
    C("fraction_pow", "import fractions\nfractions.Fraction(10) ** 10**9"),
    C("float_pow_overflow", "2.0 ** 10**10"),
    C("left_shift_huge", "1 << 10**12"),
    C("str_times_huge", "'a' * 10**11"),
    C("huge_times_str", "10**11 * 'a'"),
    C("str_augmented_times", "s = 'a'\ns *= 10**11"),
    C("bytes_times_huge", "b'a' * 10**11"),
    C("list_times_huge", "[0] * 10**11"),
    C("tuple_times_huge", "(0,) * 10**11"),
    C("list_of_range_huge", "list(range(10**11))"),
    C("sorted_range_huge", "sorted(range(10**10))"),
    C("bytearray_huge", "bytearray(10**11)"),
    C("str_ljust_huge", "'a'.ljust(10**11)"),
    C("str_join_huge", "'-'.join(['a' * 10**6] * 10**5)"),
    C("format_width_huge", "'{:>100000000000}'.format(1)"),
    C("fstring_width_huge", "w = 10**11\nf'{1:>{w}}'"),
    C("percent_width_huge", "'%100000000000d' % 1"),
    C("str_doubling", "s = 'a'\nwhile True:\n    s = s + s"),
    C("list_extend_doubling", "x = [0]\nwhile True:\n    x.extend(x)"),
    C("growing_list", "x = []\nwhile True:\n    x.append('a' * 10**6)"),
    C("growing_dict", "d = {}\ni = 0\nwhile True:\n    d[i] = [i] * 1000\n    i += 1"),
    C("set_of_count", "import itertools\nset(itertools.count())"),
    C("decimal_huge_precision", "import decimal\ndecimal.getcontext().prec = 10**9\ndecimal.Decimal(1) / decimal.Decimal(7)"),
    C("json_deep_nesting", "import json\njson.loads('[' * 10**6 + ']' * 10**6)"),
    C("deep_nested_list_repr", "x = []\nfor i in range(10**5):\n    x = [x]\nrepr(x)"),
    C("deep_nested_output", "x = []\nfor i in range(10**5):\n    x = [x]\nx", expect="any"),
    # size checks must not be fooled by objects that change their answer (check, then use)
    C("index_toctou_str_times", """
        class N:
            def __init__(self):
                self.calls = 0
            def __index__(self):
                self.calls += 1
                return 1 if self.calls == 1 else 2 * 10**9
        'a' * N()
        """, expect="any"),
    C("float_toctou_sleep", """
        import time
        class T:
            def __init__(self):
                self.calls = 0
            def __float__(self):
                self.calls += 1
                return 0.01 if self.calls == 1 else 3600.0
        time.sleep(T())
        """, expect="any"),
    # C-level amplifiers the size checks may not know
    C("int_to_bytes_huge", "(0).to_bytes(10**11, 'big')"),
    C("bytes_of_huge_int", "bytes(10**11)"),
    C("str_replace_amplification", "('a' * 10**5).replace('a', 'a' * 10**5)"),
    C("str_expandtabs_amplification", "('\\t' * 1000).expandtabs(10**8)"),
    C("str_center_huge", "'a'.center(10**11)"),
    C("dict_fromkeys_huge", "dict.fromkeys(range(10**10))"),
    C("counter_of_huge_range", "import collections\ncollections.Counter(range(10**10))"),
    # host (stdlib) Python code looping on the model's behalf: no inserted checks there
    C("random_choices_huge_k", "import random\nrandom.choices('ab', k=10**10)"),
    C("statistics_mean_huge_range", "import statistics\nstatistics.mean(range(10**12))"),
    # finishes in ~1.9 s on a quiet machine, times out on a busy one: either is fine, in time
    C("difflib_quadratic", "import difflib\ndifflib.SequenceMatcher(None, 'ab' * 3000, 'ba' * 3000, autojunk=False).ratio()", expect="any"),
    C("textwrap_huge", "import textwrap\ntextwrap.fill('ab ' * 10**7, 10)"),
    # the executor's own bookkeeping runs under the same cap: fill it to the last byte and stop
    C("memory_exhausted_then_finish", """
        hog = []
        try:
            while True:
                hog.append(bytearray(10**6))
        except MemoryError:
            pass
        crumbs = []
        try:
            while True:
                crumbs.append(bytearray(100))
        except MemoryError:
            pass
        len(hog) + len(crumbs)
        """, expect="any"),
    # the watchdog thread shares the address-space cap: exhaust it, then loop in host code
    C("memory_exhausted_then_host_loop", """
        import statistics
        hog = []
        try:
            while True:
                hog.append(bytearray(10**6))
        except MemoryError:
            pass
        crumbs = []
        try:
            while True:
                crumbs.append(bytearray(100))
        except MemoryError:
            pass
        statistics.fmean(range(10**12))
        """),
    # ------------------------------------------------------------ output
    C("print_flood_forever", "while True:\n    print('x' * 1000)", max_logs=25_000),
    C("print_flood_one_huge_line", "print('y' * 10**9)", expect="any", max_logs=25_000),
    # ------------------------------------------------------------ pathological source
    C("huge_source_compile_time", "".join(f"x{i} = [{i}, {i} + 1, (lambda q: q)({i})]\n" for i in range(8000)), expect="any"),
    C("deep_unary_source", "x = " + "-" * 100_000 + "1", expect="any"),
    C("long_binop_chain_source", "x = " + "+".join(["1"] * 100_000), expect="any"),
    C("deep_parentheses_source", "x = " + "(" * 5000 + "1" + ")" * 5000),
    # ------------------------------------------------------------ final answers
    C("final_answer_in_try_except_base", "try:\n    final_answer(5)\nexcept BaseException:\n    pass\nprint('after')", expect="final"),
    C("final_answer_in_bare_except", "try:\n    final_answer(6)\nexcept:\n    pass", expect="final"),
    C("final_answer_looping_repr", LOOPING_CLASS + "final_answer(Loop())", expect="any"),
    # ------------------------------------------------------------ model code on the host after execute()
    C("host_repr_of_output", LOOPING_CLASS + "Loop()", expect="any", host="repr(r.output)"),
    C("host_str_of_output", LOOPING_CLASS + "Loop()", expect="any", host="str(r.output)"),
    C("host_eq_on_output", LOOPING_CLASS + "Loop()", expect="any", host="r.output == 1"),
    C("host_hash_of_output", LOOPING_CLASS + "Loop()", expect="any", host="hash(r.output)"),
    C("host_len_of_output", LOOPING_CLASS + "Loop()", expect="any", host="len(r.output)"),
    C("host_bool_of_output", LOOPING_CLASS + "Loop()", expect="any", host="bool(r.output)"),
    C("host_iterates_output", LOOPING_CLASS + "Loop()", expect="any", host="list(r.output)"),
    C("host_sorts_outputs", LOOPING_CLASS + "[Loop(), Loop()]", expect="any", host="sorted(r.output)"),
    C("host_calls_method", LOOPING_CLASS + "Loop()", expect="any", host="r.output.spin()"),
    C("host_calls_returned_function", "def spin():\n    while True:\n        pass\nspin", expect="any", host="r.output()"),
    C("host_resumes_returned_generator", "def g():\n    while True:\n        yield 1\ng()", expect="any", host="list(r.output)"),
    C("host_collects_generator_with_finally", "def g():\n    try:\n        yield 1\n    finally:\n        while True:\n            pass\nx = g()\nnext(x)", expect="any", host="ex.reset(); gc.collect()"),
    C("host_collects_dataclass_del", "import dataclasses\ndef spin(self):\n    while True:\n        pass\nX = dataclasses.make_dataclass('X', ['a'], namespace={'__del__': spin})\nx = X(1)", expect="any", host="ex.reset(); gc.collect()"),
    C("host_collects_type_alias_del", "t = type\ndef spin(self):\n    while True:\n        pass\nX = t('X', (), {'__del__': spin})\nx = X()", expect="any", host="ex.reset(); gc.collect()"),
    C("host_resumes_generator_after_yield", "def g():\n    yield 1\n    search('ran after execute')\n    yield 2\nx = g()\nnext(x)\nx", expect="any",
      host="next(r.output, None)\nassert tools['search'].calls == [], 'model code ran on the host after execute(): ' + repr(tools['search'].calls)"),
    C("host_collects_generator_finally_straight_line", "def g():\n    try:\n        yield 1\n    finally:\n        search('ran at gc')\nx = g()\nnext(x)", expect="any",
      # (its finally block runs inside the step, when the runtime closes the generator; nothing
      # may run when the host drops it)
      host="tools['search'].calls.clear()\nex.reset(); gc.collect()\nassert tools['search'].calls == [], 'model code ran on the host after execute(): ' + repr(tools['search'].calls)"),
    C("host_resumes_generator_heavy", "import random\ndef g():\n    yield 1\n    yield len(random.choices('ab', k=3 * 10**7))\nx = g()\nnext(x)\nx", expect="any", host="next(r.output, None)"),
    C("list_appended_while_iterated", "lst = [0]\nfor x in lst:\n    lst.append(x)"),
    C("host_iterates_generator_expression", "import random\n(len(random.choices('ab', k=3 * 10**7)) for i in [1, 2])", expect="any", host="list(r.output)"),
    # a generator expression handed straight to sum() skips per-item checks; rebinding sum in a
    # later step hands that unchecked generator to the host
    C("host_iterates_unchecked_genexp_from_rebound_consumer", "sum = lambda g: g\nf()",
      setup=["import random\ndata = list(range(20))\nf = lambda: sum(len(random.choices('ab', k=3 * 10**6)) for x in data)"],
      expect="any", host="list(r.output)"),
    C("host_final_answer_repr", LOOPING_CLASS + "final_answer(Loop())", expect="any", host="repr(r.output)"),
    C("host_calls_sleep_after", "import time\nnap = time.sleep\nnap", expect="any", host="r.output(3600)"),
]


# ----------------------------------------------------------------------------- child host
_CHILD = r"""
import gc, json, sys, time
sys.path.insert(0, sys.argv[1])
spec = json.loads(sys.stdin.read())
import conftest
from executors import Limits
from executors.local import LocalExecutor

def mb(key):
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith(key + ':'):
                return int(line.split()[1]) / 1024
    return 0.0

def emit(**kw):
    sys.stdout.write(json.dumps(kw, default=repr) + '\n')
    sys.stdout.flush()

tools = conftest.make_host_tools()
ex = LocalExecutor(tools=tools, limits=Limits(**spec['limits']))
warm = ex.execute('import itertools, collections, math, re, json, time, decimal, dataclasses\n1 + 1')
assert warm.error is None and warm.output == 2, warm
for step in spec.get('setup') or []:  # earlier steps of the same executor
    ex.execute(step)
gc.collect()
hwm0, rss0 = mb('VmHWM'), mb('VmRSS')
emit(phase='execute-start')
t0 = time.monotonic()
if spec.get('in_thread'):
    # Hosts often run agents in worker threads (web servers, thread pools).
    import threading
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault('r', ex.execute(spec['code'])), daemon=True)
    worker.start()
    worker.join()
    r = box['r']
else:
    r = ex.execute(spec['code'])
elapsed = time.monotonic() - t0
err = r.error
emit(phase='execute', elapsed=elapsed,
     error_type=err.type if err else None, error_message=(err.message or '')[:400] if err else None,
     is_final=r.is_final_answer, output_repr=(r.output_repr or '')[:200],
     logs_len=len(r.logs), logs_head=r.logs[:80], logs_tail=r.logs[-80:],
     hwm_growth=mb('VmHWM') - hwm0, rss_growth=mb('VmRSS') - rss0)
if spec.get('host'):
    emit(phase='host-start', action=spec['host'])
    t0 = time.monotonic()
    try:
        exec(spec['host'], {'r': r, 'ex': ex, 'gc': gc, 'tools': tools})
        outcome = 'returned'
    except BaseException as e:
        outcome = type(e).__name__ + ': ' + str(e)[:200]
    emit(phase='host', elapsed=time.monotonic() - t0, outcome=outcome)
t0 = time.monotonic()
f = ex.execute('1 + 1')
emit(phase='followup', elapsed=time.monotonic() - t0, output=f.output, error=str(f.error) if f.error else None)
ex.close()
emit(phase='closed')
"""


def run_in_child_host(
    code: str, host: str | None = None, in_thread: bool = False, setup: tuple = (), **limits: Any
) -> tuple[dict[str, dict], str]:
    limits.setdefault("timeout_s", TIMEOUT_S)
    spec = {"code": code, "host": host, "limits": limits, "in_thread": in_thread, "setup": list(setup)}
    # Generous: startup + timeout + follow-up; the real bounds are asserted on measured times.
    budget = 12 + 2 * limits["timeout_s"]
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, str(Path(__file__).parent)],
            input=json.dumps(spec), capture_output=True, text=True, timeout=budget,
        )
        out, err, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err, rc = f"KILLED after {budget} s", -9
    phases = {}
    for line in out.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        phases[d["phase"]] = d
    return phases, f"phases reached={list(phases)} rc={rc} stderr={err[-1500:]!r}"


# Known limits of the in-process executor, kept visible as strict xfails: C code that holds the
# GIL can only be interrupted in the main thread (a signal handler); off the main thread only
# SubprocessExecutor/DockerExecutor (a hard kill) bound it. The README says so.
KNOWN_LIMITS = {
    "thread_regex_catastrophic_backtracking": "a GIL-holding regex off the main thread cannot be interrupted in process",
}


def _with_known_limits(cases: list[Case]) -> list[Any]:
    return [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=KNOWN_LIMITS[c.id]))
        if c.id in KNOWN_LIMITS else c
        for c in cases
    ]


@pytest.mark.parametrize("case", _with_known_limits(CASES), ids=lambda c: c.id)
def test_limit_holds(case: Case):
    phases, diag = run_in_child_host(case.code, case.host, case.in_thread, case.setup, **dict(case.limits))
    assert "execute" in phases, f"execute() never returned (host frozen or crashed): {diag}"
    ex = phases["execute"]
    where = f"[{case.id}] {ex}"
    assert ex["elapsed"] <= TIMEOUT_S + SLACK_S, f"execute() took {ex['elapsed']:.2f} s > timeout_s + 1: {where}"
    assert ex["hwm_growth"] < MAX_HWM_GROWTH_MB, f"host peak RSS grew {ex['hwm_growth']:.0f} MB: {where}"
    if case.expect == "error":
        assert ex["error_type"] is not None, f"expected an error: {where}"
        if case.types is not None:
            assert ex["error_type"] in case.types, f"expected one of {sorted(case.types)}: {where}"
    elif case.expect == "final":
        assert ex["is_final"], f"expected a final answer: {where}"
    if case.max_logs is not None:
        assert ex["logs_len"] <= case.max_logs, f"logs not truncated: {ex['logs_len']} chars: {where}"
    if case.host is not None and ex.get("error_type") is None:
        assert "host" in phases, f"host action {case.host!r} never returned (model code ran unbounded on the host): {diag}"
        h = phases["host"]
        assert not h["outcome"].startswith("AssertionError"), f"ESCAPE: {h['outcome']}"
        assert h["elapsed"] < HOST_ACTION_MAX_S, f"host action {case.host!r} took {h['elapsed']:.2f} s: {h}"
    assert "followup" in phases, f"the executor did not answer after the case: {diag}"
    f = phases["followup"]
    assert f["error"] is None and f["output"] == 2, f"executor broken after the case: {f}"
    assert "closed" in phases, f"close() failed: {diag}"


def test_final_answer_value_survives_except(local_executor):
    r = local_executor.execute("try:\n    final_answer(5)\nexcept BaseException:\n    pass\nprint('after')")
    assert r.is_final_answer and r.output == 5
    r = local_executor.execute("try:\n    final_answer([1, 2])\nexcept Exception:\n    print('swallowed')")
    assert r.is_final_answer and r.output == [1, 2] and "swallowed" not in r.logs


def test_print_flood_truncated_head_and_tail(local_executor_factory):
    from executors import Limits

    ex = local_executor_factory(limits=Limits(timeout_s=10, max_output_chars=1000))
    r = ex.execute("for i in range(100000):\n    print(i)")
    assert r.error is None, r.error
    assert len(r.logs) <= 1000 + 200, len(r.logs)
    assert r.logs.startswith("0\n1\n2\n"), r.logs[:50]
    assert r.logs.rstrip().endswith("99998\n99999"), r.logs[-50:]


def test_operation_budget_is_deterministic(local_executor_factory):
    from executors import Limits

    ex = local_executor_factory(limits=Limits(timeout_s=30, max_operations=10_000))
    r = ex.execute("n = 0\nfor i in range(10**6):\n    n += 1")
    assert r.error is not None and r.error.type == "OperationLimitError", r.error
    ok = ex.execute("n = 0\nfor i in range(100):\n    n += 1\nn")
    assert ok.error is None and ok.output == 100


def test_the_default_limits_never_refuse_work_that_fits_the_time_limit(local_executor_factory):
    """No operation budget by default: 10.5M loop iterations (the old default budget was 10M)
    finish, because the time limit bounds the work; a budget the user sets still stops them."""
    from executors import Limits

    loops = ("import itertools\nn = 0\nfor row in itertools.repeat(None, 3500):\n"
             "    for cell in itertools.repeat(None, 3000):\n        pass\n    n += 1\nn")
    ex = local_executor_factory(limits=Limits(timeout_s=60), authorized_imports=["itertools"])
    r = ex.execute(loops)
    assert r.error is None and r.output == 3500, r.error
    assert Limits().max_operations is None  # (what ran above is the default budget)
    budget = local_executor_factory(limits=Limits(timeout_s=60, max_operations=10_000_000),
                                    authorized_imports=["itertools"])
    r = budget.execute(loops)
    assert r.error is not None and r.error.type == "OperationLimitError", r.error
    assert "Limits.max_operations" in r.error.message


def test_recursion_limit_is_the_configured_depth(local_executor_factory):
    from executors import Limits

    ex = local_executor_factory(limits=Limits(max_recursion_depth=50))
    r = ex.execute("def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\nf(30)")
    assert r.error is None and r.output == 30, r.error
    r = ex.execute("f(500)")
    assert r.error is not None and r.error.type == "RecursionError"
    assert ex.execute("f(30)").output == 30


def test_timeout_error_says_which_setting(local_executor_factory):
    from executors import Limits

    ex = local_executor_factory(limits=Limits(timeout_s=0.5, max_operations=None))
    r = ex.execute("while True:\n    pass")
    assert r.error is not None and r.error.type == "TimeoutError"
    assert "timeout" in r.error.message.lower()
    assert r.error.lineno in (1, 2)  # wherever the deadline found the loop: its head or its body


def test_a_deadline_already_past_still_names_the_timeout(local_executor_factory, monkeypatch):
    """The step's error is named before rendering, which the same past deadline cuts short (on a
    loaded machine it did, and the error read "LimitExceeded: the code failed")."""
    from executors import Limits
    from executors.restricted.execution import runtime

    def cut_short(*_args, **_kwargs):
        raise runtime.Interrupt()

    monkeypatch.setattr(runtime, "describe_error", cut_short)
    ex = local_executor_factory(limits=Limits(timeout_s=0.3, max_operations=None))
    r = ex.execute("while True:\n    pass")
    assert r.error is not None and r.error.type == "TimeoutError", r.error
    assert "Limits.timeout_s" in r.error.message
    r = ex.execute("x = 1\nraise ValueError('no')")  # not a limit: described while rendering
    assert r.error is not None and r.error.type == "ValueError"
    assert "could not be rendered" in r.error.message


_STORM = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import conftest
from executors import Limits
from executors.local import LocalExecutor

snippets = [
    "while True:\n    print('x' * 100)",
    "x = []\nwhile True:\n    x.append(len(x))",
    "import random\nrandom.choices('ab', k=10**8)",
    "def f(n):\n    return f(n + 1)\nf(0)",
    "class E(Exception):\n    def __str__(self):\n        while True:\n            pass\nraise E()",
    "try:\n    while True:\n        pass\nexcept BaseException:\n    final_answer(1)",
    "import time\ntime.sleep(0.03)\nsum(i for i in range(10**6))",
    "s = 0\nfor i in range(10**7):\n    s += i",
]
rlimit0, depth0 = resource.getrlimit(resource.RLIMIT_AS), sys.getrecursionlimit()
ex = LocalExecutor(tools=conftest.make_host_tools(), limits=Limits(timeout_s=0.05))
raised = []
t0 = time.monotonic()
for i in range(240):
    code = snippets[i % len(snippets)]
    try:
        r = ex.execute(code)
        assert r.error is not None or r.is_final_answer or r.output is not None or code.startswith("import time"), r
    except BaseException as e:  # execute() must never raise for anything the code did
        raised.append(f"{type(e).__name__}: {e!r} on {code!r}")
ok = ex.execute("1 + 1")
print(json.dumps({
    "raised": raised[:5], "n_raised": len(raised), "elapsed": time.monotonic() - t0,
    "rlimit_restored": resource.getrlimit(resource.RLIMIT_AS) == rlimit0,
    "recursion_restored": sys.getrecursionlimit() == depth0,
    "followup": [ok.output, str(ok.error) if ok.error else None],
}))
"""


def test_interrupt_storm_never_escapes_execute():
    """Many runs that hit their deadline at random points: execute() never raises, and the
    process-wide settings it changes (address-space cap, recursion limit) are restored."""
    proc = subprocess.run(
        [sys.executable, "-c", _STORM, str(Path(__file__).parent)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, f"the host process died: rc={proc.returncode} {proc.stderr[-2000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["n_raised"] == 0, f"execute() raised {report['n_raised']} times, e.g. {report['raised']}"
    assert report["rlimit_restored"], "RLIMIT_AS was not restored after the runs"
    assert report["recursion_restored"], "the recursion limit was not restored after the runs"
    assert report["followup"] == [2, None], report


@pytest.mark.parametrize(
    "code",
    [
        "raise ValueError('x' * 10**7)",
        "d = {}\nd['k' * 10**6]",
        "class E(Exception):\n    def __str__(self):\n        return 'e' * 10**7\nraise E()",
    ],
    ids=["long_message", "long_key_error", "long_user_str"],
)
def test_error_message_is_bounded(code: str, local_executor_factory):
    """What the model sees is bounded: an error message is truncated like the logs."""
    from executors import Limits

    ex = local_executor_factory(limits=Limits(timeout_s=5, max_output_chars=1000))
    r = ex.execute(code)
    assert r.error is not None
    assert len(r.error.message) <= 1000 + 200, f"error message of {len(r.error.message):,} chars"


_BYSTANDER = r"""
import json, sys, threading, time
sys.path.insert(0, sys.argv[1])
from executors import Limits
from executors.local import LocalExecutor

errors, stop = [], []

def host_work():  # an unrelated host thread (a web server's request, another agent's tool)
    def depth(n):
        return 0 if n == 0 else 1 + depth(n - 1)
    while not stop:
        try:
            depth(600)
        except RecursionError:
            errors.append("RecursionError")
        try:
            bytearray(200 * 1024 * 1024)
        except MemoryError:
            errors.append("MemoryError")
        time.sleep(0.005)

t = threading.Thread(target=host_work)
t.start()
ex = LocalExecutor(limits=Limits(timeout_s=1.5))
r = ex.execute("x = [bytearray(10**6) for i in range(400)]\nwhile True:\n    pass")
stop.append(True)
t.join()
print(json.dumps({"errors": errors[:5], "kinds": sorted(set(errors)), "n": len(errors), "run_error": r.error.type if r.error else None}))
"""


def _bystander_report() -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _BYSTANDER, str(Path(__file__).parent)],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["run_error"] is not None
    return report


def test_host_threads_keep_their_recursion_limit_during_a_run():
    """Limits belong to the model's code: while it runs, unrelated host threads keep the
    process's normal recursion limit (a process-wide knob)."""
    report = _bystander_report()
    assert "RecursionError" not in report["kinds"], (
        f"an unrelated host thread hit the run's recursion limit: {report['errors']}")


@pytest.mark.xfail(strict=False, reason="known limit (README): the in-process memory cap is a "
                   "process-wide RLIMIT_AS, so a host thread allocating during a step shares its headroom")
def test_host_threads_keep_their_memory_during_a_run():
    report = _bystander_report()
    assert report["n"] == 0, f"an unrelated host thread failed {report['n']} times: {report['errors']}"


_DEEP_C_RECURSION = r"""
import json, sys, threading
sys.path.insert(0, sys.argv[1])
from executors import Limits
from executors.local import LocalExecutor

sys.setrecursionlimit(100_000)  # some hosts raise it (deep parsers, recursive pydantic models)
if sys.argv[2] == "with-thread":
    threading.Thread(target=threading.Event().wait, daemon=True).start()  # e.g. a server thread
ex = LocalExecutor(limits=Limits(timeout_s=5))
r = ex.execute("x = []\nfor i in range(200000):\n    x = [x]\nlen(repr(x))")
print(json.dumps({"error": r.error.type if r.error else None}))
"""


@pytest.mark.parametrize("threads", ["no-thread", "with-thread"])
def test_deep_c_recursion_cannot_crash_the_host(threads: str):
    """C-level recursion over model-built data (repr of a 200,000-deep list) must end in an
    error, not overflow the C stack, even when the host raised its recursion limit and runs
    other threads."""
    proc = subprocess.run(
        [sys.executable, "-c", _DEEP_C_RECURSION, str(Path(__file__).parent), threads],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, f"the host process died (rc={proc.returncode}): {proc.stderr[-1500:]}"
    assert json.loads(proc.stdout.strip().splitlines()[-1])["error"] is not None


_CAP_RESTORED = r"""
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from executors import Limits
from executors.local import LocalExecutor
before = resource.getrlimit(resource.RLIMIT_AS)
ex = LocalExecutor(limits=Limits(timeout_s=5, max_memory_mb=64))
r = ex.execute("d = {}\ni = 0\nwhile True:\n    d[i] = [i] * 1000\n    i += 1")
after = resource.getrlimit(resource.RLIMIT_AS)
big = len(bytearray(200 * 1024 * 1024))  # the host allocates freely again
print(json.dumps({"error": r.error.type if r.error else None, "restored": after == before, "big": big}))
"""


def test_memory_cap_is_lifted_after_a_step_that_exhausted_it():
    """The runtime restores the address-space cap (host code the capability guard must not
    refuse: it once swallowed the refusal and left the host capped at the step's limit)."""
    proc = subprocess.run([sys.executable, "-c", _CAP_RESTORED, str(Path(__file__).parent.parent)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report == {"error": "MemoryError", "restored": True, "big": 200 * 1024 * 1024}, report


def test_a_host_thread_started_or_ended_between_steps_is_seen():
    """The check for other host threads remembers its last answer while the same threads run
    (limits/process_caps.py): a thread started after a step, and its end, change the next step's headroom."""
    import threading

    from executors import LocalExecutor
    from executors.restricted.limits.process_caps import _other_host_threads

    def recursion_limit() -> int:
        """The process's recursion limit while the step runs (a host tool reads it)."""
        return sys.getrecursionlimit()

    ex = LocalExecutor(tools=[recursion_limit])

    def limit() -> int:
        r = ex.execute("recursion_limit()")
        assert r.error is None, r.error
        return r.output

    try:
        assert not _other_host_threads()
        alone = limit()
        stop = threading.Event()
        thread = threading.Thread(target=stop.wait)
        thread.start()
        try:
            assert _other_host_threads()
            assert limit() >= 1000 > alone
        finally:
            stop.set()
            thread.join()
        assert not _other_host_threads()
        assert limit() == alone
    finally:
        ex.close()


def test_lifting_the_cap_with_no_memory_left_frees_the_reserve_first(monkeypatch):
    # A step that filled the address space to its last page left none for the lift's own audit
    # event: the lift met MemoryError and execute() raised with the cap and guard on (3.14).
    import mmap
    import resource

    from executors.restricted.limits.process_caps import ProcessCaps

    calls = []

    def setrlimit(which, limits):
        calls.append(limits)
        if len(calls) == 1:
            raise MemoryError

    monkeypatch.setattr(resource, "setrlimit", setrlimit)
    caps = ProcessCaps()
    caps._reserve = mmap.mmap(-1, 1 << 16, mmap.MAP_PRIVATE, mmap.PROT_READ)
    caps._lift((1, 2))
    assert calls == [(1, 2), (1, 2)] and caps._reserve is None
    calls.clear()
    with pytest.raises(MemoryError):  # nothing left to free: the error is the caller's
        caps._lift((1, 2))
