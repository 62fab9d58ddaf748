"""numpy, pandas and matplotlib programs of the kind a model writes for data work (test data).

Each is one step that prints what it computed; tests/test_data_programs.py runs every one in a
fresh CPython process and in each executor, and the printed text must be the same. They change
no process-wide setting except through context managers (np.printoptions, pd.option_context):
the open policy in a container keeps its worker between programs.
"""

from __future__ import annotations

NUMPY = {
    "np_create": """
import numpy as np
print(np.arange(10), np.linspace(0, 1, 5), np.zeros((2, 3)), np.ones(3, dtype=int), np.eye(2))
print(np.full((2, 2), 7), np.arange(12).reshape(3, 4).T)
""",
    "np_arith_broadcast": """
import numpy as np
a = np.arange(6).reshape(2, 3)
b = np.array([10, 20, 30])
print(a + b, a * 2 - 1, a ** 2, a / 4, a // 2, a % 3, sep='\\n')
""",
    "np_reductions": """
import numpy as np
m = np.arange(1, 13).reshape(3, 4)
print(m.sum(), m.sum(axis=0), m.mean(axis=1), m.max(), m.argmin(axis=1), m.cumsum(), m.prod(axis=0))
print(m.std().round(4), np.median(m), np.percentile(m, [25, 75]))
""",
    "np_bool_index": """
import numpy as np
x = np.array([3, -1, 4, -1, 5, -9, 2, 6])
print(x[x > 0], x[(x > 0) & (x % 2 == 0)], np.where(x < 0, 0, x), np.count_nonzero(x < 0))
x[x < 0] = 0
print(x, x.nonzero())
""",
    "np_sort_unique": """
import numpy as np
x = np.array([5, 3, 5, 1, 3, 9, 1])
values, counts = np.unique(x, return_counts=True)
print(np.sort(x), np.argsort(x, kind='stable'), values, counts, np.sort(x)[::-1])
""",
    "np_linalg": """
import numpy as np
a = np.array([[3.0, 1.0], [1.0, 2.0]])
b = np.array([9.0, 8.0])
print(np.linalg.solve(a, b), np.round(np.linalg.det(a), 6), np.linalg.inv(a).round(4))
print(a @ a, np.dot(b, b), np.trace(a), np.linalg.norm(b).round(5))
""",
    "np_random_generator": """
import numpy as np
rng = np.random.default_rng(42)
print(rng.integers(0, 10, size=5), rng.normal(size=3).round(4), rng.choice(['a', 'b', 'c'], size=4))
print(rng.permutation(6), rng.uniform(0, 1, 2).round(3))
""",
    "np_stack_split": """
import numpy as np
a, b = np.arange(3), np.arange(3, 6)
print(np.vstack([a, b]), np.hstack([a, b]), np.column_stack([a, b]), np.concatenate([a, b]))
print(np.split(np.arange(9), 3), np.array_split(np.arange(7), 3))
""",
    "np_float_print": """
import numpy as np
x = np.array([1 / 3, 2 / 3, 1e-8, 12345.678])
print(x)
with np.printoptions(precision=3, suppress=True):
    print(x)
print(np.float64(0.1) + np.float64(0.2), np.float32(1 / 3), np.int64(7) // 2)
""",
    "np_dtypes": """
import numpy as np
x = np.array([1, 2, 3], dtype=np.int8)
print(x.dtype, x.astype(np.float32), x.itemsize, x.nbytes, np.array([1.5, 2.5]).astype(int))
print(np.iinfo(np.int16).max, np.finfo(np.float32).eps, np.array(['a', 'bc']).dtype)
""",
    "np_nan": """
import numpy as np
x = np.array([1.0, np.nan, 3.0, np.inf])
print(np.isnan(x), np.nanmean(x[:3]), np.nansum(x[:3]), np.isfinite(x), np.nan_to_num(x, posinf=0))
""",
    "np_datetime": """
import numpy as np
d = np.arange('2024-01-01', '2024-01-08', dtype='datetime64[D]')
print(d, d[-1] - d[0], np.busday_count('2024-01-01', '2024-02-01'), d.astype('datetime64[W]')[:3])
""",
    "np_structured": """
import numpy as np
people = np.array([('ann', 31, 1.62), ('bob', 25, 1.80)], dtype=[('name', 'U10'), ('age', 'i4'), ('h', 'f8')])
print(people['name'], people['age'].mean(), np.sort(people, order='age')['name'])
""",
    "np_polyfit": """
import numpy as np
x = np.arange(10.0)
y = 2.5 * x + 1.0
coef = np.polyfit(x, y, 1)
print(coef.round(6), np.polyval(coef, 12).round(6), np.interp(2.5, x, y), np.diff(y)[:3])
""",
    "np_histogram": """
import numpy as np
rng = np.random.default_rng(7)
data = rng.integers(0, 100, size=200)
counts, edges = np.histogram(data, bins=5)
print(counts, edges, np.digitize([5, 50, 95], edges), np.bincount(data % 4))
""",
    "np_meshgrid_outer": """
import numpy as np
xs, ys = np.meshgrid(np.arange(3), np.arange(2))
print(xs, ys, np.outer([1, 2], [3, 4, 5]), np.add.outer(np.arange(2), np.arange(3)), sep='\\n')
""",
    "np_big_summary": """
import numpy as np
big = np.arange(100_000).reshape(1000, 100)
print(big)
print(big.shape, big[::250, ::40])
""",
}

PANDAS = {
    "pd_frame_basics": """
import pandas as pd
df = pd.DataFrame({'city': ['Lyon', 'Paris', 'Nice', 'Lyon'], 'sales': [120, 340, 80, 95], 'month': [1, 1, 2, 2]})
print(df)
print(df.shape, list(df.columns), df.dtypes.to_dict())
print(df.head(2), df.tail(1), sep='\\n')
""",
    "pd_describe": """
import pandas as pd
df = pd.DataFrame({'x': [1, 2, 3, 4, 5], 'y': [2.0, 4.5, 6.0, 8.5, 10.0]})
print(df.describe())
print(df.corr().round(4))
""",
    "pd_groupby": """
import pandas as pd
df = pd.DataFrame({'team': ['a', 'b', 'a', 'b', 'c'], 'pts': [10, 7, 3, 12, 5], 'ast': [1, 2, 3, 4, 5]})
print(df.groupby('team')['pts'].sum())
print(df.groupby('team').agg(total=('pts', 'sum'), best=('pts', 'max'), n=('ast', 'count')))
print(df.groupby('team').mean().round(2))
""",
    "pd_merge": """
import pandas as pd
orders = pd.DataFrame({'oid': [1, 2, 3], 'cid': [10, 20, 10], 'amount': [9.5, 20.0, 3.25]})
customers = pd.DataFrame({'cid': [10, 20, 30], 'name': ['Ada', 'Bob', 'Cy']})
print(orders.merge(customers, on='cid'))
print(customers.merge(orders, on='cid', how='left'))
""",
    "pd_pivot": """
import pandas as pd
df = pd.DataFrame({'region': ['n', 'n', 's', 's', 'n'], 'q': ['q1', 'q2', 'q1', 'q2', 'q1'], 'rev': [1, 2, 3, 4, 5]})
print(df.pivot_table(index='region', columns='q', values='rev', aggfunc='sum', fill_value=0))
print(pd.crosstab(df['region'], df['q']))
""",
    "pd_sort_filter": """
import pandas as pd
df = pd.DataFrame({'name': ['x', 'y', 'z', 'w'], 'score': [3.5, 9.0, 7.25, 9.0], 'age': [30, 22, 41, 22]})
print(df.sort_values(['score', 'name'], ascending=[False, True]))
print(df[df['score'] > 5], df.loc[df['age'] == 22, 'name'].tolist(), df.nlargest(2, 'score'), sep='\\n')
""",
    "pd_query_eval": """
import pandas as pd
df = pd.DataFrame({'a': range(6), 'b': [5, 3, 8, 1, 9, 2]})
print(df.query('a > 2 and b < 9'))
print(df.eval('c = a + b'))
""",
    "pd_missing": """
import numpy as np
import pandas as pd
df = pd.DataFrame({'a': [1.0, np.nan, 3.0], 'b': ['x', None, 'z']})
print(df.isna().sum(), df.fillna({'a': 0, 'b': '-'}), df.dropna(), df['a'].interpolate(), sep='\\n')
""",
    "pd_strings": """
import pandas as pd
s = pd.Series(['  Alice Smith', 'bob jones ', 'CAROL  king'])
print(s.str.strip().str.title(), s.str.split().str[0], s.str.contains('o'), s.str.len(), sep='\\n')
""",
    "pd_dates": """
import pandas as pd
s = pd.Series(pd.date_range('2024-01-30', periods=5, freq='D'))
print(s, s.dt.day_name(), s.dt.month, (s.max() - s.min()).days, sep='\\n')
print(pd.to_datetime(['2024-03-01', '2024-03-15']).strftime('%d/%m'))
""",
    "pd_resample": """
import pandas as pd
idx = pd.date_range('2024-01-01', periods=10, freq='D')
ts = pd.Series(range(10), index=idx)
print(ts.resample('3D').sum())
print(ts.rolling(3).mean().round(2).tolist())
""",
    "pd_apply_map": """
import pandas as pd
df = pd.DataFrame({'w': [1.5, 2.0, 3.5], 'h': [2, 4, 6]})
df['area'] = df.apply(lambda r: r['w'] * r['h'], axis=1)
df['size'] = df['area'].map(lambda a: 'big' if a > 10 else 'small')
print(df, df['w'].apply(round).tolist(), sep='\\n')
""",
    "pd_value_counts": """
import pandas as pd
s = pd.Series(['a', 'b', 'a', 'c', 'a', 'b'])
print(s.value_counts(), s.value_counts(normalize=True).round(3), s.nunique(), s.mode().tolist(), sep='\\n')
""",
    "pd_concat_melt": """
import pandas as pd
a = pd.DataFrame({'id': [1, 2], 'x': [3, 4]})
b = pd.DataFrame({'id': [3], 'x': [5]})
both = pd.concat([a, b], ignore_index=True)
print(both)
print(pd.melt(pd.DataFrame({'id': [1, 2], 'jan': [5, 6], 'feb': [7, 8]}), id_vars='id', var_name='m'))
""",
    "pd_multiindex": """
import pandas as pd
df = pd.DataFrame({'k1': ['a', 'a', 'b'], 'k2': [1, 2, 1], 'v': [10, 20, 30]}).set_index(['k1', 'k2'])
print(df)
print(df.loc['a'], df.unstack(), df.reset_index(), sep='\\n')
""",
    "pd_cut_categorical": """
import pandas as pd
ages = pd.Series([5, 17, 30, 45, 70])
groups = pd.cut(ages, bins=[0, 18, 65, 100], labels=['kid', 'adult', 'senior'])
print(groups, groups.value_counts().sort_index(), pd.qcut(ages, 2, labels=False).tolist(), sep='\\n')
""",
    "pd_csv_roundtrip": """
import io
import pandas as pd
text = 'name,qty,price\\napple,3,0.5\\npear,1,0.75\\n'
df = pd.read_csv(io.StringIO(text))
df['total'] = df['qty'] * df['price']
out = io.StringIO()
df.to_csv(out, index=False)
print(df, out.getvalue(), sep='\\n')
""",
    "pd_json_records": """
import pandas as pd
df = pd.DataFrame([{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'y'}])
print(df.to_dict(orient='records'), df.to_json(orient='split'), pd.DataFrame.from_records([(1, 2)], columns=['p', 'q']))
""",
    "pd_big_print": """
import numpy as np
import pandas as pd
df = pd.DataFrame({'i': np.arange(5000), 'sq': np.arange(5000) ** 2, 'tag': ['t%d' % (k % 7) for k in range(5000)]})
print(df)
with pd.option_context('display.max_rows', 6):
    print(df.describe())
""",
    "pd_series_ops": """
import pandas as pd
s = pd.Series([4, 8, 15, 16, 23, 42], index=list('abcdef'), name='lost')
print(s, s['b':'d'], s.pct_change().round(3).tolist(), s.cumsum().iloc[-1], s.idxmax(), sep='\\n')
""",
    "pd_iterrows_itertuples": """
import pandas as pd
df = pd.DataFrame({'n': ['u', 'v'], 'q': [1, 2]})
for index, row in df.iterrows():
    print(index, row['n'], row['q'])
for t in df.itertuples(index=False):
    print(t.n, t.q, t)
""",
    "pd_style_numbers": """
import pandas as pd
df = pd.DataFrame({'amount': [1234.5678, 0.001, 1e7]})
print(df)
with pd.option_context('display.float_format', '{:,.2f}'.format):
    print(df)
print(df.round(1).to_string(index=False))
""",
}

MATPLOTLIB = {
    "mpl_line_props": """
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(6.4, 4.8))
line, = ax.plot([0, 1, 2], [0, 1, 4], label='sq', color='tab:red')
ax.set_title('growth')
ax.set_xlabel('x')
ax.legend()
print(line.get_color(), ax.get_title(), ax.get_xlabel(), fig.get_size_inches(), fig.dpi)
print([t.get_text() for t in ax.get_legend().get_texts()])
plt.close(fig)
""",
    "mpl_limits_ticks": """
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.plot([1, 5, 10], [2, 3, 1])
ax.set_xlim(0, 12)
ax.set_xticks([0, 4, 8, 12])
print(ax.get_xlim(), ax.get_ylim(), list(ax.get_xticks()), ax.get_yscale())
plt.close(fig)
""",
    "mpl_savefig_bytes": """
import io
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(2, 1), dpi=50)
ax.bar(['a', 'b'], [3, 5])
buf = io.BytesIO()
fig.savefig(buf, format='png')
data = buf.getvalue()
print(data[:8], int.from_bytes(data[16:20], 'big'), int.from_bytes(data[20:24], 'big'))
plt.close(fig)
""",
    "mpl_subplots_grid": """
import matplotlib.pyplot as plt
fig, axes = plt.subplots(2, 3, sharex=True)
print(axes.shape, len(fig.axes), axes[1, 2].get_subplotspec().get_geometry())
for i, ax in enumerate(axes.flat):
    ax.set_title(f'p{i}')
print([ax.get_title() for ax in axes.flat])
plt.close('all')
print(plt.get_fignums())
""",
    "mpl_hist_data": """
import numpy as np
import matplotlib.pyplot as plt
rng = np.random.default_rng(3)
fig, ax = plt.subplots()
counts, edges, patches = ax.hist(rng.integers(0, 10, 50), bins=5)
print(counts, edges, len(patches))
plt.close(fig)
""",
    "mpl_pandas_plot": """
import pandas as pd
import matplotlib.pyplot as plt
df = pd.DataFrame({'x': [1, 2, 3], 'y': [3, 1, 2]})
ax = df.plot(x='x', y='y', kind='line', title='from pandas')
print(type(ax).__name__, ax.get_title(), [l.get_label() for l in ax.get_lines()])
plt.close('all')
""",
    "mpl_colormap": """
import matplotlib
import matplotlib.pyplot as plt
cmap = matplotlib.colormaps['viridis']
print(cmap.name, cmap.N, [round(c, 4) for c in cmap(0.5)])
print(matplotlib.colors.to_hex('tab:blue'), matplotlib.colors.to_rgb('red'))
""",
    "mpl_scatter_annotate": """
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
pts = ax.scatter([1, 2, 3], [4, 5, 6], s=[10, 20, 30])
note = ax.annotate('peak', xy=(3, 6), xytext=(2, 6.5))
print(pts.get_offsets().tolist(), note.get_text(), pts.get_sizes().tolist())
plt.close(fig)
""",
}

PROGRAMS: dict[str, str] = {**NUMPY, **PANDAS, **MATPLOTLIB}
