"""Expressions of the data programs: one method per kind, one table of kinds per value type.

`Expressions.expr(kind, depth)` draws one of the kinds listed for that type in `KINDS` (those
whose condition holds right now) and calls the method `<type>_<kind>`. The order and repetition
of the table entries are the weights hypothesis samples from: change them and every seed
produces different programs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._hypothesis import st

WORDS = ["apple", "banana", "cherry", "data", "model", "agent", "tool", "alpha", "beta",
         "Zoë", "naïve", "x", "hello world", "A-B", "42", "", "tab\tsep", "ünïcode", "sum"]

# The value types a program keeps variables of (keys of ProgramEnv.vars, except "any").
VALUE_TYPES = ["int", "float", "str", "bool", "list_int", "list_str", "dict"]

# When a kind may be drawn: always, only below the depth limit ("deep") or at it ("shallow"),
# only when a variable of the type exists ("var"), a function or an instance was defined.
ALWAYS, DEEP, SHALLOW, VAR = "always", "deep", "shallow", "var"
DEEP_FUNCS, DEEP_INSTANCES = "deep+funcs", "deep+instances"

KINDS: dict[str, tuple[tuple[str, str], ...]] = {
    "int": (("lit", ALWAYS), ("lit", ALWAYS), ("var", VAR), ("var", VAR),
            ("binop", DEEP), ("binop", DEEP), ("abs", DEEP), ("minmax", DEEP), ("cond", DEEP),
            ("len_str", DEEP), ("len_list", DEEP), ("aggregate", DEEP), ("count", DEEP),
            ("pow", DEEP), ("round", DEEP), ("ord", DEEP), ("get", DEEP),
            ("call", DEEP_FUNCS), ("method", DEEP_INSTANCES)),
    "float": (("lit", ALWAYS), ("div", DEEP), ("conv", DEEP), ("sqrt", DEEP), ("mean", DEEP),
              ("round", DEEP)),
    "str": (("lit", ALWAYS), ("var", VAR), ("var", VAR), ("method", DEEP), ("concat", DEEP),
            ("fstring", DEEP), ("join", DEEP), ("slice", DEEP), ("conv", DEEP), ("format", DEEP),
            ("repeat", DEEP), ("percent", DEEP)),
    "bool": (("cmp", DEEP), ("lit", ALWAYS), ("cmp_lit", SHALLOW), ("in", DEEP),
             ("affix", DEEP), ("logic", DEEP)),
    "list_int": (("lit", ALWAYS), ("var", VAR), ("var", VAR), ("sorted", DEEP), ("comp", DEEP),
                 ("range", DEEP), ("concat", DEEP), ("slice", DEEP), ("map", DEEP),
                 ("lens", DEEP), ("accumulate", DEEP)),
    "list_str": (("lit", ALWAYS), ("split", DEEP), ("comp", DEEP), ("sorted", DEEP)),
    "dict": (("lit", ALWAYS), ("var", VAR), ("comp", DEEP), ("zip", DEEP), ("counter", DEEP)),
}

_COMPARISONS = ['<', '>', '==', '!=', '<=', '>=']
_STR_METHODS = ["upper()", "lower()", "strip()", "title()", "capitalize()", "replace('a', '4')",
                "swapcase()", "lstrip('a')", "center(9, '*')", "ljust(6, '.')", "zfill(5)"]


class ProgramEnv:
    """Variables in scope, by type, while a data program is being built."""

    def __init__(self) -> None:
        self.vars: dict[str, list[str]] = {t: [] for t in [*VALUE_TYPES, "any"]}
        self.funcs: list[tuple[str, int]] = []  # (name, arity) of int functions
        self.classes: list[str] = []  # class names with (a, b) constructors and .total()
        self.instances: list[str] = []
        self.imports: set[str] = set()
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"


class Expressions:
    """Writes expressions of a given type from hypothesis draws, using what `env` has in scope."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any], env: ProgramEnv) -> None:
        self.draw, self.env = draw, env

    # -- dispatch ----------------------------------------------------------------------------
    def expr(self, type_: str, d: int) -> str:
        options = [kind for kind, when in KINDS[type_] if self._available(when, type_, d)]
        kind = self.draw(st.sampled_from(options))
        return getattr(self, f"{type_}_{kind}")(d)

    def _available(self, when: str, type_: str, d: int) -> bool:
        env = self.env
        return {ALWAYS: True, DEEP: d > 0, SHALLOW: d <= 0, VAR: bool(env.vars[type_]),
                DEEP_FUNCS: d > 0 and bool(env.funcs),
                DEEP_INSTANCES: d > 0 and bool(env.instances)}[when]

    def integer(self, d: int) -> str:
        return self.expr("int", d)

    def floating(self, d: int) -> str:
        return self.expr("float", d)

    def text(self, d: int) -> str:
        return self.expr("str", d)

    def boolean(self, d: int) -> str:
        return self.expr("bool", d)

    def numbers(self, d: int) -> str:
        return self.expr("list_int", d)

    def words(self, d: int) -> str:
        return self.expr("list_str", d)

    def table(self, d: int) -> str:
        return self.expr("dict", d)

    # -- leaves ------------------------------------------------------------------------------
    def lit_int(self) -> str:
        return str(self.draw(st.integers(-1000, 1000)))

    def nonzero(self) -> str:
        return str(self.draw(st.integers(1, 97)) * self.draw(st.sampled_from([1, -1])))

    def word(self) -> str:
        return repr(self.draw(st.sampled_from(WORDS)))

    def var(self, type_: str) -> str | None:
        names = self.env.vars[type_]
        return self.draw(st.sampled_from(names)) if names else None

    def pick(self, options: list[Any]) -> Any:
        return self.draw(st.sampled_from(options))

    # -- int ---------------------------------------------------------------------------------
    def int_lit(self, d: int) -> str:
        return self.lit_int()

    def int_var(self, d: int) -> str:
        return self.var("int")

    def int_binop(self, d: int) -> str:
        op = self.pick(["+", "-", "*", "//", "%"])
        right = self.nonzero() if op in ("//", "%") else self.integer(d - 1)
        return f"({self.integer(d - 1)} {op} {right})"

    def int_abs(self, d: int) -> str:
        return f"abs({self.integer(d - 1)})"

    def int_minmax(self, d: int) -> str:
        return f"{self.pick(['min', 'max'])}({self.integer(d - 1)}, {self.integer(d - 1)})"

    def int_cond(self, d: int) -> str:
        return f"({self.integer(d - 1)} if {self.boolean(d - 1)} else {self.integer(d - 1)})"

    def int_len_str(self, d: int) -> str:
        return f"len({self.text(d - 1)})"

    def int_len_list(self, d: int) -> str:
        return f"len({self.numbers(d - 1)})"

    def int_aggregate(self, d: int) -> str:
        return self.pick([
            f"sum({self.numbers(d - 1)})", f"max({self.numbers(d - 1)}, default=0)",
            f"sum(v * v for v in {self.numbers(d - 1)})", f"min({self.numbers(d - 1)}, default=-1)",
        ])

    def int_count(self, d: int) -> str:
        return f"{self.text(d - 1)}.count({self.pick(['a', 'e', ' ', 'an'])!r})"

    def int_pow(self, d: int) -> str:
        return f"({self.draw(st.integers(-30, 30))} ** {self.draw(st.integers(0, 4))})"

    def int_round(self, d: int) -> str:
        return f"round({self.floating(d - 1)})"

    def int_ord(self, d: int) -> str:
        return f"ord({repr(self.pick(list('aZ0 é')))})"

    def int_get(self, d: int) -> str:
        return f"{self.table(d - 1)}.get({self.word()}, {self.lit_int()})"

    def int_call(self, d: int) -> str:
        name, arity = self.pick(self.env.funcs)
        return f"{name}({', '.join(self.integer(d - 1) for _ in range(arity))})"

    def int_method(self, d: int) -> str:
        return f"{self.pick(self.env.instances)}.total()"

    # -- float -------------------------------------------------------------------------------
    def float_lit(self, d: int) -> str:
        return repr(self.pick([0.5, 1.25, -3.75, 2.0, 1e-3, 100.125, 0.1]))

    def float_div(self, d: int) -> str:
        return f"({self.integer(d - 1)} / {self.nonzero()})"

    def float_conv(self, d: int) -> str:
        return f"float({self.integer(d - 1)})"

    def float_sqrt(self, d: int) -> str:
        self.env.imports.add("math")
        return f"math.sqrt(abs({self.integer(d - 1)}))"

    def float_mean(self, d: int) -> str:
        self.env.imports.add("statistics")
        return f"statistics.mean([{self.integer(0)}, {self.integer(0)}, {self.integer(0)}])"

    def float_round(self, d: int) -> str:
        return f"round({self.floating(d - 1)}, {self.draw(st.integers(0, 3))})"

    # -- str ---------------------------------------------------------------------------------
    def str_lit(self, d: int) -> str:
        return self.word()

    def str_var(self, d: int) -> str:
        return self.var("str")

    def str_method(self, d: int) -> str:
        method = self.pick(_STR_METHODS)
        return f"{self.text(d - 1)}.{method}"

    def str_concat(self, d: int) -> str:
        return f"({self.text(d - 1)} + {self.text(d - 1)})"

    def str_fstring(self, d: int) -> str:
        spec = self.pick(["", ":>6", ":<4", ":^7", ":+d", ":05d", ":x", ":,", "!r", "="])
        fspec = self.pick(["", ":.2f", ":8.3f", ":e", ":.1%", ":g"])
        # f-string fields stay free of quotes, braces and backslashes (Python 3.10/3.11 rules)
        text = self.var("str")
        tail = f"|{{{text}!r}}" if text else ""
        return f"f\"[{{({self.integer(0)}){spec}}}|{{{self.floating(0)}{fspec}}}{tail}]\""

    def str_join(self, d: int) -> str:
        sep = repr(self.pick(["", ", ", "-", "\n", " | "]))
        return f"{sep}.join({self.words(d - 1)})"

    def str_slice(self, d: int) -> str:
        a, b = self.draw(st.integers(-5, 5)), self.draw(st.integers(-5, 8))
        step = self.pick(["", ":2", ":-1"])
        return f"{self.text(d - 1)}[{a}:{b}{step}]"

    def str_conv(self, d: int) -> str:
        inner = [self.integer(d - 1), self.numbers(d - 1), self.boolean(d - 1), self.floating(d - 1)]
        return f"str({self.pick(inner)})"

    def str_format(self, d: int) -> str:
        width = self.draw(st.integers(0, 9))
        return f"'{{:>{width}}}|{{}}'.format({self.integer(d - 1)}, {self.text(d - 1)})"

    def str_repeat(self, d: int) -> str:
        return f"({self.text(d - 1)} * {self.draw(st.integers(0, 4))})"

    def str_percent(self, d: int) -> str:
        return f"('%s=%d' % ({self.text(d - 1)}, {self.integer(d - 1)}))"

    # -- bool --------------------------------------------------------------------------------
    def bool_lit(self, d: int) -> str:
        return self.pick(["True", "False"])

    def bool_cmp_lit(self, d: int) -> str:
        return f"({self.lit_int()} {self.pick(_COMPARISONS)} {self.lit_int()})"

    def bool_cmp(self, d: int) -> str:
        return f"({self.integer(d - 1)} {self.pick(_COMPARISONS)} {self.integer(d - 1)})"

    def bool_in(self, d: int) -> str:
        return f"({self.integer(d - 1)} in {self.numbers(d - 1)})"

    def bool_affix(self, d: int) -> str:
        return f"{self.text(d - 1)}.{self.pick(['startswith', 'endswith'])}({self.word()})"

    def bool_logic(self, d: int) -> str:
        return f"({self.boolean(d - 1)} {self.pick(['and', 'or'])} not {self.boolean(d - 1)})"

    # -- list of int -------------------------------------------------------------------------
    def list_int_lit(self, d: int) -> str:
        return "[" + ", ".join(self.lit_int() for _ in range(self.draw(st.integers(1, 6)))) + "]"

    def list_int_var(self, d: int) -> str:
        return self.var("list_int")

    def list_int_sorted(self, d: int) -> str:
        key = self.pick(["", ", reverse=True", ", key=abs", ", key=lambda v: (v % 3, -v)"])
        return f"sorted({self.numbers(d - 1)}{key})"

    def list_int_comp(self, d: int) -> str:
        cond = self.pick(["", " if v % 2 == 0", " if v > 0", f" if v != {self.lit_int()}"])
        body = self.pick(['v * 2', 'v - 1', 'v // 3', 'abs(v)', 'v * v'])
        return f"[{body} for v in {self.numbers(d - 1)}{cond}]"

    def list_int_range(self, d: int) -> str:
        start, stop = self.draw(st.integers(-3, 5)), self.draw(st.integers(0, 15))
        return f"list(range({start}, {stop}, {self.pick([1, 2, 3])}))"

    def list_int_concat(self, d: int) -> str:
        return f"({self.numbers(d - 1)} + {self.numbers(d - 1)})"

    def list_int_slice(self, d: int) -> str:
        return f"{self.numbers(d - 1)}[{self.pick(['::-1', '1:', ':3', '::2', '-2:'])}]"

    def list_int_map(self, d: int) -> str:
        return f"list(map(abs, {self.numbers(d - 1)}))"

    def list_int_lens(self, d: int) -> str:
        return f"[len(w) for w in {self.words(d - 1)}]"

    def list_int_accumulate(self, d: int) -> str:
        self.env.imports.add("itertools")
        return f"list(itertools.accumulate({self.numbers(d - 1)}))"

    # -- list of str -------------------------------------------------------------------------
    def list_str_lit(self, d: int) -> str:
        return "[" + ", ".join(self.word() for _ in range(self.draw(st.integers(1, 4)))) + "]"

    def list_str_split(self, d: int) -> str:
        return f"{self.text(d - 1)}.split({self.pick(['', repr(' '), repr('a')])})"

    def list_str_comp(self, d: int) -> str:
        return f"[w.upper() for w in {self.words(d - 1)} if w]"

    def list_str_sorted(self, d: int) -> str:
        return f"sorted({self.words(d - 1)})"

    # -- dict --------------------------------------------------------------------------------
    def dict_lit(self, d: int) -> str:
        n = self.draw(st.integers(0, 4))
        return "{" + ", ".join(f"{self.word()}: {self.lit_int()}" for _ in range(n)) + "}"

    def dict_var(self, d: int) -> str:
        return self.var("dict")

    def dict_comp(self, d: int) -> str:
        return f"{{w: len(w) for w in {self.words(d - 1)}}}"

    def dict_zip(self, d: int) -> str:
        return f"dict(zip({self.words(d - 1)}, {self.numbers(d - 1)}))"

    def dict_counter(self, d: int) -> str:
        self.env.imports.add("collections")
        return f"dict(collections.Counter({self.text(d - 1)}))"
