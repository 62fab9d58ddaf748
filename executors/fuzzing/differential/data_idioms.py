"""numpy and pandas idioms with generated values, for campaigns that authorize those libraries.

A table (data): idiom name -> (library, a function of the expression writer `w` and a small
integer `k` that returns the code). `programs(authorized_imports=[...])` draws from the rows whose
library is authorized and importable here. Every idiom is deterministic (seeded generators), keeps
its arrays non-empty (no warnings on stderr) and changes no process-wide setting except through a
context manager, so CPython and a correct executor print the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# the import line each library's idioms need at the top of the program
LIBRARY_IMPORTS = {"numpy": "import numpy as np", "pandas": "import pandas as pd"}


def _ints(w: Any, k: int) -> str:
    """A non-empty list of ints (the writer's list plus one), small enough for int64."""
    return f"[v % 10_000 for v in {w.numbers(1)}] + [{k}]"


def _frame(w: Any, k: int) -> str:
    return (f"vals = {_ints(w, k)}\n"
            "df = pd.DataFrame({'val': vals, 'key': [['a', 'b', 'c'][i % 3] for i in range(len(vals))],"
            " 'pos': range(len(vals))})")


DATA_IDIOMS: dict[str, tuple[str, Callable[[Any, int], str]]] = {
    "np_stats": ("numpy", lambda w, k: f"a = np.array({_ints(w, k)})\nprint(a.sum(), a.min(), a.max(), a.mean().round(3), np.median(a), a.std().round(3))"),
    "np_sort_unique": ("numpy", lambda w, k: f"a = np.array({_ints(w, k)})\nvalues, counts = np.unique(a, return_counts=True)\nprint(np.sort(a), values, counts, np.argsort(a, kind='stable'))"),
    "np_mask_where": ("numpy", lambda w, k: f"a = np.array({_ints(w, k)})\nprint(a[a > {k}], np.where(a % 2 == 0, a, -a), np.count_nonzero(a > 0), (a > {k}).any(), (a >= 0).all())"),
    "np_cumsum_diff": ("numpy", lambda w, k: f"a = np.array({_ints(w, k)})\nprint(np.cumsum(a), np.diff(a), np.cumprod(np.ones({k}, dtype=int) * 2))"),
    "np_reshape": ("numpy", lambda w, k: f"m = np.arange({k * 4}).reshape({k}, 4)\nprint(m.T, m.sum(axis=0), m.mean(axis=1), m[:, 1:3], m.ravel()[::3])"),
    "np_linspace": ("numpy", lambda w, k: f"x = np.linspace(0, {k}, {k + 2})\nprint(x.round(4), (x ** 2).round(2), np.interp({k} / 3, x, x * 2).round(4))"),
    "np_rng": ("numpy", lambda w, k: f"rng = np.random.default_rng({k})\nprint(rng.integers(0, 100, size=5), rng.normal(size=3).round(4), rng.permutation({k}))"),
    "np_matrix": ("numpy", lambda w, k: f"m = np.arange({k * k}).reshape({k}, {k})\nprint(m @ m, np.trace(m), m.dot(np.ones({k}, dtype=int)), np.diag(m))"),
    "np_broadcast": ("numpy", lambda w, k: f"col = np.arange({k}).reshape(-1, 1)\nrow = np.array({_ints(w, k)})\nprint(col + row, (col * row).sum(), np.maximum(col, {k} // 2))"),
    "np_printoptions": ("numpy", lambda w, k: f"x = np.array({_ints(w, k)}) / 7\nwith np.printoptions(precision={k % 4 + 1}, suppress=True):\n    print(x)\nprint(x.round(2))"),
    "np_histogram": ("numpy", lambda w, k: f"a = np.array({_ints(w, k)})\ncounts, edges = np.histogram(a, bins={k % 4 + 1})\nprint(counts, edges.round(3), np.bincount(np.abs(a) % {k + 1}))"),
    "pd_groupby": ("pandas", lambda w, k: f"{_frame(w, k)}\nprint(df.groupby('key')['val'].agg(['sum', 'max', 'count']))\nprint(df.groupby('key').size().to_dict())"),
    "pd_describe": ("pandas", lambda w, k: f"{_frame(w, k)}\nprint(df['val'].describe().round(3))\nprint(df.shape, list(df.columns), df.dtypes.astype(str).to_dict())"),
    "pd_sort_filter": ("pandas", lambda w, k: f"{_frame(w, k)}\nprint(df.sort_values(['val', 'pos'], ascending=[False, True]).head({k}))\nprint(df[df['val'] > {k}]['pos'].tolist(), df.nlargest(2, 'val')['pos'].tolist())"),
    "pd_value_counts": ("pandas", lambda w, k: f"s = pd.Series({w.words(1)} + ['x'])\nprint(s.value_counts().sort_index(), s.nunique(), s.str.upper().tolist(), s.str.len().max())"),
    "pd_series_ops": ("pandas", lambda w, k: f"s = pd.Series({_ints(w, k)}, name='v')\nprint(s.cumsum().tolist(), s.rolling(2).sum().tolist(), s.rank(method='first').tolist(), s.idxmax())"),
    "pd_merge": ("pandas", lambda w, k: f"left = pd.DataFrame({{'id': range({k}), 'x': [i * 2 for i in range({k})]}})\nright = pd.DataFrame({{'id': [0, 2, 4, 6], 'y': list('abcd')}})\nprint(left.merge(right, on='id', how='left'))\nprint(left.merge(right, on='id'))"),
    "pd_pivot": ("pandas", lambda w, k: f"{_frame(w, k)}\ndf['half'] = df['pos'] % 2\nprint(df.pivot_table(index='key', columns='half', values='val', aggfunc='sum', fill_value=0))"),
    "pd_apply": ("pandas", lambda w, k: f"{_frame(w, k)}\ndf['label'] = df['val'].apply(lambda v: 'hi' if v > {k} else 'lo')\nprint(df[['val', 'label']].to_dict(orient='list'))\nprint(df.assign(double=df['val'] * 2).tail(2))"),
    "pd_missing": ("pandas", lambda w, k: f"s = pd.Series({_ints(w, k)}, dtype=float)\ns[s > {k}] = None\nprint(s.isna().sum(), s.fillna(-1).tolist(), s.dropna().astype(int).tolist())"),
    "pd_dates": ("pandas", lambda w, k: f"d = pd.Series(pd.date_range('2024-01-{k:02d}', periods={k + 1}, freq='D'))\nprint(d.dt.day_name().tolist(), d.dt.dayofyear.sum(), (d.iloc[-1] - d.iloc[0]).days)"),
}
