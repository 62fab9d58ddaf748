"""Everyday idioms with generated values: the constructs a model reaches for.

A table (data): idiom name -> a function of the expression writer `w` (an `Expressions`) and a
small integer `k` that returns the code. Its order is the order hypothesis samples from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Modules an idiom uses, imported at the top of the program.
IDIOM_IMPORTS = {
    "groupby": "itertools", "total_ordering": "functools", "lru_cache": "functools",
    "defaultdict": "collections", "deque": "collections", "namedtuple": "collections",
    "dataclass_order": "dataclasses", "enum_auto": "enum", "json_indent": "json", "re_sub_fn": "re",
}

IDIOMS: dict[str, Callable[[Any, int], str]] = {
    "sets": lambda w, k: f"a = set({w.numbers(1)})\nb = set({w.numbers(1)})\nprint(sorted(a | b), sorted(a & b), sorted(a - b), sorted(a ^ b), a <= b)",
    "dict_merge": lambda w, k: f"left = {{'a': {w.lit_int()}, 'b': 2}}\nright = {{'b': {w.lit_int()}, 'c': 3}}\nprint(left | right, {{**right, **left}})\nleft |= right\nprint(left)",
    "divmod": lambda w, k: f"print(divmod({w.lit_int()}, {k}), divmod(-{k * 7}, {k}), {w.lit_int()} % -{k}, -{k * 5} // 3)",
    "conversions": lambda w, k: f"print(bin({k * 37}), hex({w.lit_int()}), oct({k}), int('{k}{k}', {k + 6 if k + 6 <= 36 else 10}), float('1e{k}'), chr(65 + {k}))",
    "chained": lambda w, k: f"v = {w.lit_int()}\nprint(-500 < v <= 500, 0 <= v < {k} < 10, v == v != v + 1)",
    "slice_assign": lambda w, k: f"items = list(range(10))\nitems[1:{k}] = ['x', 'y']\ndel items[::3]\nitems[-1:] = []\nprint(items)",
    "send": lambda w, k: "def acc():\n    total = 0\n    while True:\n        got = yield total\n        if got is None:\n            return total\n        total += got\n"
            f"g = acc()\nnext(g)\nfor v in {w.numbers(1)}:\n    print(g.send(v))",
    "yield_from": lambda w, k: f"def inner(n):\n    yield from range(n)\n    return n * 10\ndef outer():\n    got = yield from inner({k})\n    yield got\nprint(list(outer()))",
    "global": lambda w, k: f"count = 0\ndef bump():\n    global count\n    count += {k}\n    return count\nbump()\nprint(bump(), count)",
    "raise_from_none": lambda w, k: "try:\n    try:\n        int('x')\n    except ValueError:\n        raise KeyError('k') from None\nexcept KeyError as e:\n    print(repr(e), e.__suppress_context__, e.__cause__)",
    "finally_return": lambda w, k: f"def f():\n    try:\n        return {k}\n    finally:\n        print('cleanup')\nprint(f())",
    "total_ordering": lambda w, k: f"@functools.total_ordering\nclass V:\n    def __init__(self, n):\n        self.n = n\n    def __eq__(self, o):\n        return self.n == o.n\n    def __lt__(self, o):\n        return self.n < o.n\n    def __repr__(self):\n        return f'V({{self.n}})'\nprint(sorted([V(x) for x in {w.numbers(1)}]), V(1) >= V({k}))",
    "lru_cache": lambda w, k: f"@functools.lru_cache(maxsize=None)\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nprint(fib({k * 4}), fib.cache_info().hits > 0)",
    "groupby": lambda w, k: f"data = sorted({w.words(1)} + {w.words(1)}, key=len)\nfor size, group in itertools.groupby(data, key=len):\n    print(size, list(group))",
    "defaultdict": lambda w, k: f"groups = collections.defaultdict(list)\nfor w in {w.words(1)}:\n    groups[len(w)].append(w)\nprint(dict(groups), groups[99])",
    "deque": lambda w, k: f"q = collections.deque({w.numbers(1)}, maxlen={k})\nq.appendleft(0)\nq.rotate(1)\nprint(q, q.pop(), len(q))",
    "namedtuple": lambda w, k: f"Pt = collections.namedtuple('Pt', 'x y')\np = Pt({w.lit_int()}, y={w.lit_int()})\nprint(p, p._replace(x=0), p._asdict(), p.x + p.y)",
    "translate": lambda w, k: f"table = str.maketrans('aeiou', '12345', 'xyz')\nprint({w.text(1)}.translate(table))",
    "textwrap": lambda w, k: f"import textwrap\nprint(textwrap.fill({w.text(1)} * {k}, width={k + 10}))\nprint(textwrap.shorten('hello world ' * {k}, width=20))",
    "datetime": lambda w, k: f"import datetime\nd = datetime.date(2024, {k}, {k + 10}) + datetime.timedelta(days={w.lit_int()})\nprint(d, d.isoformat(), d.weekday(), d.strftime('%Y/%m/%d %A'))",
    "json_indent": lambda w, k: f"print(json.dumps({{'k': {w.numbers(1)}, 'n': None, 't': True}}, indent={k % 4}, sort_keys=True))",
    "re_sub_fn": lambda w, k: f"print(re.sub(r'\\d+', lambda m: str(int(m.group()) * 2), 'a1 b22 c{k}'), re.split(r'[,;]\\s*', 'x, y;z'))",
    "dataclass_order": lambda w, k: f"@dataclass(order=True, frozen=True)\nclass Card:\n    rank: int\n    suit: str = 'h'\ncards = sorted([Card({w.lit_int()}), Card({k}, 's'), Card({k})])\nprint(cards, cards[0] < cards[-1], hash(Card(1)) == hash(Card(1)))",
    "enum_auto": lambda w, k: "class Color(enum.Enum):\n    RED = enum.auto()\n    GREEN = enum.auto()\nprint(list(Color), Color(2), Color['RED'].value, Color.RED is Color(1), repr(Color.GREEN))",
    "match_patterns": lambda w, k: f"for item in [{w.lit_int()}, 'text', [1, 2, 3], {{'kind': 'pt', 'x': {k}}}, (1, 'a'), None]:\n    match item:\n        case int() if item > 0:\n            print('pos', item)\n        case str() as s:\n            print('str', s)\n        case [first, *rest]:\n            print('seq', first, rest)\n        case {{'kind': 'pt', 'x': x}}:\n            print('pt', x)\n        case None:\n            print('none')\n        case _:\n            print('other', item)",
    "property_setter": lambda w, k: f"class Temp:\n    def __init__(self):\n        self._c = 0\n    @property\n    def c(self):\n        return self._c\n    @c.setter\n    def c(self, v):\n        if v < -273:\n            raise ValueError('too cold')\n        self._c = v\nt = Temp()\nt.c = {w.lit_int()}\nprint(t.c)",
    "dunder_container": lambda w, k: f"class Bag:\n    def __init__(self, items):\n        self.items = list(items)\n    def __len__(self):\n        return len(self.items)\n    def __getitem__(self, i):\n        return self.items[i]\n    def __contains__(self, x):\n        return x in self.items\n    def __call__(self, n):\n        return self.items[:n]\nb = Bag({w.numbers(1)})\nprint(len(b), b[0], {k} in b, b({k}), list(b), sorted(b))",
    "mro": lambda w, k: "class A:\n    def who(self):\n        return 'A'\nclass B(A):\n    def who(self):\n        return 'B' + super().who()\nclass C(A):\n    def who(self):\n        return 'C' + super().who()\nclass D(B, C):\n    def who(self):\n        return 'D' + super().who()\nprint(D().who(), [k.__name__ for k in D.__mro__], isinstance(D(), A), issubclass(D, (C, int)))",
    "sorted_multi": lambda w, k: f"rows = [{{'n': {w.word()}, 'v': {w.lit_int()}}}, {{'n': {w.word()}, 'v': {w.lit_int()}}}, {{'n': 'z', 'v': {k}}}]\nprint(sorted(rows, key=lambda r: (-r['v'], r['n'])), max(rows, key=lambda r: r['v'])['n'])",
    "zip_enumerate": lambda w, k: f"for i, (a, b) in enumerate(zip({w.numbers(1)}, {w.words(1)}), start={k}):\n    print(i, a, b)\nprint(list(zip(*[(1, 'a'), (2, 'b')])))",
    "walrus_comp": lambda w, k: f"vals = [y for x in {w.numbers(1)} if (y := x * 2) > {w.lit_int()}]\nprint(vals)",
    "format_builtin": lambda w, k: f"print(format({w.lit_int()}, '>+8,'), format(3.14159, '.{k % 5}f'), format('s', '^5'), '{{:08.3f}}'.format({k}/7), '{{0!r:>12}}'.format('q'))",
    "star_call": lambda w, k: f"def f(a, b=2, *args, c, d=4, **kw):\n    return (a, b, args, c, d, sorted(kw.items()))\nprint(f(1, c={k}), f(*[1, 2, 3], c=0, **{{'e': 5}}), f(1, 2, 3, 4, c=1, d=0, z=9))",
    "nested_comp": lambda w, k: f"m = [[i * j for j in range({k % 5 + 1})] for i in range(3)]\nprint(m, [x for row in m for x in row if x], {{i: [c for c in w] for i, w in enumerate({w.words(1)})}})",
    "any_all": lambda w, k: f"vals = {w.numbers(1)}\nprint(any(v > {w.lit_int()} for v in vals), all(v % 2 == 0 for v in vals), sum(1 for v in vals if v < 0))",
    "str_methods": lambda w, k: f"t = {w.text(1)}\nprint(t.isdigit(), t.isalpha(), t.casefold(), t.removeprefix('a'), t.splitlines(), t.rjust(8, '_'), t.expandtabs(2), t.count(''), t.rsplit(' ', 1))",
    "int_bases": lambda w, k: f"print(int('ff', 16), int('0b101', 0), int('  {k}  '), (255).to_bytes(2, 'big'), int.from_bytes(b'\\x01\\x00', 'little'), (2 ** {k * 7}).bit_length())",
    "round_half_even": lambda w, k: f"print(round(0.5), round(1.5), round(2.5), round(-{k}.5), round({k}.125, 2), round({w.lit_int()}, -1))",
    "exception_args": lambda w, k: f"try:\n    raise ValueError('bad', {k})\nexcept ValueError as e:\n    print(e.args, str(e), repr(e))\ntry:\n    {{}}['missing']\nexcept KeyError as e:\n    print(repr(e), e.args)",
    "else_loops": lambda w, k: f"for n in range(2, {k + 12}):\n    for d in range(2, n):\n        if n % d == 0:\n            break\n    else:\n        print('prime', n)\nwhile False:\n    pass\nelse:\n    print('while-else')",
}
