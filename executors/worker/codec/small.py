"""The codec's tree of small builtin data, without the bounds' bookkeeping: what a durable run's
journal writes for each tool call's arguments and result (codeagent/runs/journal.py), where
`encode_value`'s budgets and markers cost more than the value (a 5-key dict: 4.4 us there, about 1
here) and can never bite. Stdlib only.

`small_tree(v)` is `encode_value(v)` (the same tree, the same exact types) for values made only of
exact str, int, float, bool, None, list, tuple and str-keyed dict, up to `NODES` values, `TEXT`
characters and `DEPTH` levels; for anything else it raises `NotSmall` and the caller encodes the
value the full way. Exact types only, as the encoder: no method of a subclass runs here.
"""

from __future__ import annotations

from .encode import _BIG_INT_BITS
from .text import TAG

__all__ = ["small_tree", "NotSmall", "NODES", "TEXT", "DEPTH"]

NODES = 2_000  # far below any bounds table's values and containers: nothing here would be cut
TEXT = 1 << 16
DEPTH = 16


class NotSmall(Exception):
    """Not small builtin data: encode it with `encode_value`."""


def small_tree(value):
    budget = [NODES, TEXT]
    return _tree(value, budget, 0)


def _tree(v, budget, depth):
    t = type(v)
    budget[0] -= 1
    if t is str:
        budget[1] -= len(v)
        if budget[1] < 0:
            raise NotSmall
        return v
    if v is None or t is bool:
        return v
    if t is int:
        if v.bit_length() < _BIG_INT_BITS:
            return v
        raise NotSmall
    if t is float:
        if v - v == 0.0:  # (inf and nan are tagged by the encoder)
            return v
        raise NotSmall
    if budget[0] < 0 or depth >= DEPTH:  # (a cycle ends here too)
        raise NotSmall
    d = depth + 1
    if t is list:
        return [_tree(x, budget, d) for x in v]
    if t is tuple:
        return {TAG: "tuple", "v": [_tree(x, budget, d) for x in v]}
    if t is dict:
        out = {}
        for k, x in v.items():
            if type(k) is not str or k == TAG:
                raise NotSmall
            budget[1] -= len(k)
            out[k] = _tree(x, budget, d)
        if budget[1] < 0:
            raise NotSmall
        return out
    raise NotSmall
