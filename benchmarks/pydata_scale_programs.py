"""Data-scale programs for benchmarks/pydata_imports.py: one per library, each an everyday call at
the size of a data task (thousands of rows; milliseconds in CPython), with seeded data so every
executor prints the same. The differential corpus (tests/pydata_programs.py) holds the small ones."""


SCALE: dict[str, str] = {
    "scipy": """
import numpy as np
from scipy import stats
rng = np.random.default_rng(0)
a, b = rng.normal(0, 1, 20000), rng.normal(0.05, 1, 20000)
t = stats.ttest_ind(a, b)
fit = stats.linregress(a, 2 * a + b)
print(round(float(t.pvalue), 4), round(float(fit.slope), 3), round(float(stats.skew(a)), 4))
""",
    "sklearn": """
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
rng = np.random.default_rng(0)
X = rng.normal(size=(3000, 8))
y = (X @ np.arange(1, 9) + rng.normal(size=3000) > 0).astype(int)
Xtr, Xte, ytr, yte = train_test_split(X, y, random_state=0)
model = LogisticRegression(max_iter=500).fit(Xtr, ytr)
print(round(model.score(Xte, yte), 3))
""",
    "statsmodels": """
import numpy as np
import statsmodels.api as sm
rng = np.random.default_rng(0)
X = sm.add_constant(rng.normal(size=(5000, 4)))
y = X @ np.array([1.0, 2.0, -1.0, 0.5, 0.0]) + rng.normal(size=5000)
res = sm.OLS(y, X).fit()
print([round(float(v), 2) for v in res.params], round(float(res.rsquared), 3))
print(res.summary().tables[1])  # the coefficient table (the whole summary prints the clock time)
""",
    "seaborn": """
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
rng = np.random.default_rng(0)
df = pd.DataFrame({"x": rng.normal(size=5000), "g": rng.integers(0, 4, 5000)})
ax = sns.histplot(data=df, x="x", hue="g", bins=40)
print(len(ax.patches))
plt.close("all")
""",
    "polars": """
import polars as pl
n = 200000
df = pl.DataFrame({"k": [i % 100 for i in range(n)], "v": list(range(n))})
out = df.group_by("k").agg(pl.col("v").sum().alias("total"), pl.len().alias("n")).sort("k")
print(out.height, out["total"].sum(), out["n"][0])
""",
    "pyarrow": """
import pyarrow as pa
import pyarrow.compute as pc
arr = pa.array(range(300000))
t = pa.table({"k": pc.remainder(arr, 50), "v": arr})
g = t.group_by("k").aggregate([("v", "sum"), ("v", "count")])
print(g.num_rows, pc.sum(g["v_sum"]).as_py(), pc.mean(arr).as_py())
""",
    "sympy": """
from sympy import symbols, expand, factor, diff, integrate, exp, sin
x, y = symbols("x y")
e = expand((x + y + 1) ** 12)
print(len(e.args), factor(x ** 8 - 1), integrate(x ** 2 * exp(x), x), diff(sin(x) ** 3, x, 2))
""",
    "networkx": """
import networkx as nx
G = nx.gnm_random_graph(400, 2000, seed=0)
lengths = dict(nx.all_pairs_shortest_path_length(G))
print(G.number_of_edges(), sum(sum(d.values()) for d in lengths.values()))
""",
}
