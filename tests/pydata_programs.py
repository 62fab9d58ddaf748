"""scipy, scikit-learn, statsmodels, seaborn, polars, pyarrow, sympy and networkx programs of the
kind a model writes for data work: fit, predict, test, plot, parse, solve (test data).

Each is one step that prints what it computed; tests/test_pydata_programs.py runs each library's
programs in a fresh CPython process and in a fresh executor of each kind, and the printed text
must be the same. Figures are closed by the program (plt.close) so that none comes back as an
attachment; tests/test_pydata_programs.py checks the figure path separately. Every program
imports what it uses (a fresh namespace each), is deterministic (seeded generators, rounded
floats) and changes no process-wide setting for good.
"""

from __future__ import annotations

SCIPY = {
    "sp_ttest": """
import numpy as np
from scipy import stats
rng = np.random.default_rng(0)
a, b = rng.normal(10, 2, 40), rng.normal(11, 2, 40)
t = stats.ttest_ind(a, b)
print(round(float(t.statistic), 4), round(float(t.pvalue), 4))
print(round(float(stats.ttest_rel(a, b).pvalue), 4), round(float(stats.ttest_1samp(a, 10).pvalue), 4))
""",
    "sp_distributions": """
from scipy import stats
n = stats.norm(loc=5, scale=2)
print(round(n.cdf(7), 6), round(n.ppf(0.975), 6), round(n.pdf(5), 6))
print(stats.binom.pmf(3, 10, 0.5).round(6), stats.poisson(4).sf(6).round(6), stats.t.ppf(0.95, 12).round(4))
""",
    "sp_describe_corr": """
import numpy as np
from scipy import stats
x = np.array([2.1, 3.4, 1.9, 5.6, 4.4, 3.3, 2.8])
y = np.array([1.0, 2.9, 1.2, 4.8, 4.1, 2.7, 2.5])
d = stats.describe(x)
print(d.nobs, d.minmax, round(float(d.mean), 4), round(float(d.variance), 4))
print(round(float(stats.pearsonr(x, y)[0]), 4), round(float(stats.spearmanr(x, y)[0]), 4))
print(round(float(stats.kendalltau(x, y)[0]), 4), stats.rankdata(x).tolist())
""",
    "sp_chi2_anova": """
import numpy as np
from scipy import stats
table = np.array([[20, 15], [30, 35]])
chi2, p, dof, expected = stats.chi2_contingency(table)
print(round(float(chi2), 4), round(float(p), 4), dof, expected.round(2).tolist())
print(round(float(stats.f_oneway([1, 2, 3, 4], [2, 3, 4, 6], [5, 6, 7, 9]).pvalue), 6))
print(round(float(stats.mannwhitneyu([1, 4, 6, 8], [2, 3, 5, 7, 9]).pvalue), 4))
""",
    "sp_optimize_minimize": """
import numpy as np
from scipy import optimize
def rosen(p):
    return (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2
res = optimize.minimize(rosen, x0=[-1.0, 2.0], method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-8})
print(res.success, np.round(res.x, 4).tolist())
print(round(optimize.brentq(lambda x: x ** 3 - 2 * x - 5, 2, 3), 6))
""",
    "sp_curve_fit": """
import numpy as np
from scipy.optimize import curve_fit
x = np.linspace(0, 4, 30)
y = 2.5 * np.exp(-1.3 * x) + 0.5
def model(x, a, b, c):
    return a * np.exp(-b * x) + c
params, cov = curve_fit(model, x, y, p0=(1, 1, 1))
print(np.round(params, 4).tolist(), cov.shape)
""",
    "sp_linprog": """
from scipy.optimize import linprog
res = linprog(c=[-1, -2], A_ub=[[1, 1], [1, -1]], b_ub=[4, 2], bounds=[(0, None), (0, None)])
print(res.status, [round(v, 6) for v in res.x], round(res.fun, 6))
""",
    "sp_integrate": """
import numpy as np
from scipy import integrate
value, err = integrate.quad(lambda x: np.exp(-x ** 2), -np.inf, np.inf)
print(round(value, 8), round(value ** 2, 6))
sol = integrate.solve_ivp(lambda t, y: -0.5 * y, (0, 4), [10.0], t_eval=[0, 1, 2, 4])
print(np.round(sol.y[0], 3).tolist())
print(round(integrate.simpson(np.arange(11) ** 2, x=np.arange(11)), 4))
""",
    "sp_interpolate": """
import numpy as np
from scipy import interpolate
x = np.arange(6)
y = x ** 2
f = interpolate.interp1d(x, y, kind="cubic")
print(np.round(f([0.5, 2.5, 4.5]), 4).tolist())
cs = interpolate.CubicSpline(x, y)
print(np.round(cs([1.5, 3.5]), 4).tolist(), round(float(cs(2, 1)), 4))
""",
    "sp_linalg": """
import numpy as np
from scipy import linalg
a = np.array([[4.0, 2.0], [2.0, 3.0]])
print(np.round(linalg.cholesky(a), 4).tolist(), round(linalg.det(a), 6))
p, l, u = linalg.lu(a)
print(np.round(l @ u, 6).tolist(), np.round(linalg.solve(a, [2.0, 1.0]), 6).tolist())
print(np.round(linalg.expm(np.zeros((2, 2))), 3).tolist())
""",
    "sp_sparse": """
import numpy as np
from scipy import sparse
from scipy.sparse.linalg import spsolve
m = sparse.csr_matrix(np.array([[4, 0, 1], [0, 3, 0], [1, 0, 2]], dtype=float))
print(m.nnz, m.shape, m.toarray().sum(axis=0).tolist())
print(np.round(spsolve(m, np.array([1.0, 2.0, 3.0])), 6).tolist())
print((m @ m).toarray().tolist()[0])
""",
    "sp_signal_fft": """
import numpy as np
from scipy import signal, fft
t = np.linspace(0, 1, 64, endpoint=False)
x = np.sin(2 * np.pi * 5 * t)
spectrum = np.abs(fft.rfft(x))
print(int(np.argmax(spectrum)), round(float(spectrum.max()), 4))
b, a = signal.butter(2, 0.2)
print(np.round(b, 5).tolist(), np.round(signal.lfilter(b, a, [1, 0, 0, 0]), 5).tolist())
print(signal.find_peaks([0, 2, 1, 3, 0, 4, 1])[0].tolist())
""",
    "sp_cluster_spatial": """
import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial import distance, KDTree
pts = np.array([[0, 0], [0, 1], [5, 5], [5, 6], [10, 0]], dtype=float)
print(fcluster(linkage(pts, "single"), 2, criterion="maxclust").tolist())
print(np.round(distance.cdist(pts[:2], pts[2:]), 3).tolist())
d, i = KDTree(pts).query([4.5, 5.2])
print(round(float(d), 4), int(i), round(distance.euclidean([0, 0], [3, 4]), 1))
""",
    "sp_special": """
from scipy import special
print(special.comb(10, 3, exact=True), special.perm(5, 2, exact=True), round(float(special.gamma(5.5)), 4))
print(round(float(special.erf(0.5)), 6), round(float(special.expit(0.3)), 6), round(float(special.logsumexp([1, 2, 3])), 6))
""",
}

SKLEARN = {
    "sk_linear_regression": """
import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_squared_error, r2_score
rng = np.random.default_rng(1)
X = rng.uniform(0, 10, (50, 2))
y = 3 * X[:, 0] - 2 * X[:, 1] + 5 + rng.normal(0, 0.5, 50)
model = LinearRegression().fit(X, y)
pred = model.predict(X)
print(np.round(model.coef_, 3).tolist(), round(float(model.intercept_), 3))
print(round(r2_score(y, pred), 4), round(mean_squared_error(y, pred), 4))
""",
    "sk_logistic_iris": """
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.metrics import accuracy_score
X, y = load_iris(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=42, stratify=y)
clf = LogisticRegression(max_iter=500).fit(X_train, y_train)
print(X.shape, round(accuracy_score(y_test, clf.predict(X_test)), 4))
print(clf.predict(X_test[:5]).tolist(), clf.predict_proba(X_test[:1]).round(3).shape)
""",
    "sk_random_forest_njobs": """
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
X, y = make_classification(n_samples=200, n_features=6, random_state=0)
forest = RandomForestClassifier(n_estimators=20, random_state=0, n_jobs=-1).fit(X, y)
print(round(forest.score(X, y), 4), forest.feature_importances_.round(3).tolist())
""",
    "sk_cross_val": """
from sklearn.datasets import load_diabetes
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, cross_val_score
X, y = load_diabetes(return_X_y=True)
scores = cross_val_score(Ridge(alpha=1.0), X, y, cv=KFold(5, shuffle=True, random_state=0), n_jobs=-1)
print(scores.round(4).tolist(), round(float(scores.mean()), 4))
""",
    "sk_pipeline_scaler": """
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler, PolynomialFeatures
from sklearn.linear_model import LinearRegression
X = np.arange(10, dtype=float).reshape(-1, 1)
y = (X[:, 0] ** 2) + 1
pipe = make_pipeline(PolynomialFeatures(2), StandardScaler(), LinearRegression()).fit(X, y)
print(np.round(pipe.predict([[11.0], [12.0]]), 4).tolist(), pipe.named_steps["standardscaler"].mean_.round(3).tolist())
""",
    "sk_kmeans": """
import numpy as np
from sklearn.cluster import KMeans
X = np.array([[1, 2], [1, 4], [1, 0], [10, 2], [10, 4], [10, 0]], dtype=float)
km = KMeans(n_clusters=2, n_init=10, random_state=0).fit(X)
print(sorted(km.cluster_centers_.round(3).tolist()), round(float(km.inertia_), 3))
print(len(set(km.labels_[:3].tolist())), len(set(km.labels_.tolist())))
""",
    "sk_pca": """
import numpy as np
from sklearn.decomposition import PCA
rng = np.random.default_rng(3)
X = rng.normal(size=(100, 4)) @ np.array([[3, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0.2, 0], [0, 0, 0, 0.1]])
pca = PCA(n_components=2).fit(X)
print(pca.explained_variance_ratio_.round(3).tolist(), pca.transform(X[:2]).shape)
""",
    "sk_grid_search": """
from sklearn.datasets import load_iris
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
X, y = load_iris(return_X_y=True)
search = GridSearchCV(KNeighborsClassifier(), {"n_neighbors": [1, 3, 5, 7]}, cv=5, n_jobs=-1).fit(X, y)
print(search.best_params_, round(search.best_score_, 4))
""",
    "sk_decision_tree": """
from sklearn.datasets import load_iris
from sklearn.tree import DecisionTreeClassifier, export_text
X, y = load_iris(return_X_y=True)
tree = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)
print(export_text(tree, feature_names=["sl", "sw", "pl", "pw"]))
print(tree.get_depth(), tree.get_n_leaves())
""",
    "sk_metrics_report": """
from sklearn.metrics import classification_report, confusion_matrix, f1_score, roc_auc_score
y_true = [0, 1, 1, 0, 1, 1, 0, 0, 1, 0]
y_pred = [0, 1, 0, 0, 1, 1, 1, 0, 1, 0]
print(confusion_matrix(y_true, y_pred).tolist(), round(f1_score(y_true, y_pred), 4))
print(classification_report(y_true, y_pred, digits=3))
print(round(roc_auc_score(y_true, [0.1, 0.9, 0.4, 0.2, 0.8, 0.7, 0.6, 0.3, 0.95, 0.05]), 4))
""",
    "sk_encoders_impute": """
import numpy as np
from sklearn.impute import SimpleImputer
from sklearn.preprocessing import OneHotEncoder, LabelEncoder, MinMaxScaler
print(SimpleImputer(strategy="mean").fit_transform([[1.0, np.nan], [3.0, 4.0], [np.nan, 8.0]]).tolist())
enc = OneHotEncoder().fit([["red"], ["green"], ["red"], ["blue"]])
print(enc.categories_[0].tolist(), enc.transform([["green"]]).toarray().tolist())
print(LabelEncoder().fit_transform(["b", "a", "c", "a"]).tolist(), MinMaxScaler().fit_transform([[1.0], [3.0], [5.0]]).ravel().tolist())
""",
    "sk_pandas_frame": """
import pandas as pd
from sklearn.linear_model import LinearRegression
df = pd.DataFrame({"size": [50, 70, 90, 110, 130], "rooms": [1, 2, 3, 3, 4], "price": [150, 210, 270, 320, 390]})
model = LinearRegression().fit(df[["size", "rooms"]], df["price"])
print(model.feature_names_in_.tolist(), [round(c, 4) for c in model.coef_.tolist()])
print(round(float(model.predict(pd.DataFrame({"size": [100], "rooms": [3]}))[0]), 3))
""",
    "sk_svm_scaled": """
from sklearn.datasets import make_moons
from sklearn.svm import SVC
from sklearn.model_selection import cross_val_score
X, y = make_moons(n_samples=120, noise=0.15, random_state=0)
print(cross_val_score(SVC(kernel="rbf", C=1.0), X, y, cv=4).round(4).tolist())
""",
}

STATSMODELS = {
    "sm_ols": """
import numpy as np
import statsmodels.api as sm
rng = np.random.default_rng(0)
x = rng.uniform(0, 10, 60)
y = 1.5 + 0.8 * x + rng.normal(0, 1, 60)
res = sm.OLS(y, sm.add_constant(x)).fit()
print(np.round(res.params, 4).tolist(), round(res.rsquared, 4), np.round(res.bse, 4).tolist())
print(round(float(res.f_pvalue), 10) < 1e-6, int(res.nobs), round(res.aic, 3))
""",
    "sm_formula_ols": """
import pandas as pd
import statsmodels.formula.api as smf
df = pd.DataFrame({"y": [3.1, 4.9, 7.2, 8.8, 11.1, 13.0, 15.2], "x": [1, 2, 3, 4, 5, 6, 7],
                   "g": ["a", "b", "a", "b", "a", "b", "a"]})
res = smf.ols("y ~ x + C(g)", data=df).fit()
print({k: round(v, 4) for k, v in res.params.items()})
print(round(res.rsquared_adj, 5))
""",
    "sm_formula_transform": """
import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
df = pd.DataFrame({"y": [2.0, 2.7, 3.3, 3.6, 4.1, 4.3], "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
res = smf.ols("y ~ np.log(x) + I(x ** 2)", data=df).fit()
print([round(v, 4) for v in res.params.tolist()], res.model.exog_names)
""",
    "sm_logit": """
import numpy as np
import statsmodels.api as sm
x = np.array([0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0])
y = np.array([0, 0, 0, 1, 0, 1, 0, 1, 1, 1])
res = sm.Logit(y, sm.add_constant(x)).fit(disp=0)
print(np.round(res.params, 4).tolist(), round(res.prsquared, 4))
print(np.round(res.predict(sm.add_constant(np.array([1.0, 4.0]))), 4).tolist())
""",
    "sm_glm_poisson": """
import numpy as np
import statsmodels.api as sm
x = np.arange(10, dtype=float)
y = np.array([1, 1, 2, 3, 3, 5, 7, 8, 12, 15])
res = sm.GLM(y, sm.add_constant(x), family=sm.families.Poisson()).fit()
print(np.round(res.params, 4).tolist(), round(res.deviance, 4))
""",
    "sm_summary_table": """
import numpy as np
import statsmodels.api as sm
x = np.arange(1, 11, dtype=float)
y = 2 * x + np.array([0.3, -0.2, 0.1, 0.4, -0.5, 0.2, -0.1, 0.3, -0.3, 0.1])
res = sm.OLS(y, sm.add_constant(x)).fit()
table = res.summary().tables[1]
print(table.as_text())
""",
    "sm_ttest_ind": """
from statsmodels.stats.weightstats import ttest_ind, DescrStatsW
t, p, df = ttest_ind([5.1, 4.9, 6.2, 5.8, 6.0], [6.5, 7.1, 6.8, 7.4, 6.9])
print(round(t, 4), round(p, 5), df)
d = DescrStatsW([1.0, 2.0, 3.0, 4.0])
print(round(d.mean, 4), round(d.std, 4), [round(v, 4) for v in d.tconfint_mean()])
""",
    "sm_anova": """
import pandas as pd
import statsmodels.api as sm
from statsmodels.formula.api import ols
df = pd.DataFrame({"score": [5, 6, 7, 8, 6, 9, 10, 11, 7, 8, 12, 13], "grp": list("aaaabbbbcccc")})
table = sm.stats.anova_lm(ols("score ~ C(grp)", data=df).fit(), typ=2)
print(table.round(4))
""",
    "sm_arima": """
import numpy as np
from statsmodels.tsa.arima.model import ARIMA
rng = np.random.default_rng(5)
e = rng.normal(size=120)
y = np.zeros(120)
for t in range(1, 120):
    y[t] = 0.6 * y[t - 1] + e[t]
res = ARIMA(y, order=(1, 0, 0)).fit()
print(round(float(res.params[1]), 2), np.round(res.forecast(3), 2).shape)
""",
    "sm_acf_pacf": """
import numpy as np
from statsmodels.tsa.stattools import acf, pacf
x = np.sin(np.arange(40) / 3.0) + np.random.default_rng(4).normal(0, 0.1, 40)
print(np.round(acf(x, nlags=3), 4).tolist())
print(np.round(pacf(x, nlags=3), 4).tolist())
""",
    "sm_seasonal_decompose": """
import numpy as np
import pandas as pd
from statsmodels.tsa.seasonal import seasonal_decompose
idx = pd.date_range("2024-01-01", periods=24, freq="MS")
s = pd.Series(10 + np.arange(24) * 0.5 + np.tile([1.0, -1.0, 0.5, -0.5], 6), index=idx)
dec = seasonal_decompose(s, model="additive", period=4)
print(dec.seasonal.iloc[:4].round(4).tolist(), round(float(dec.trend.dropna().iloc[0]), 4))
""",
    "sm_proportions_power": """
from statsmodels.stats.proportion import proportions_ztest, proportion_confint
from statsmodels.stats.power import TTestIndPower
z, p = proportions_ztest([45, 60], [100, 100])
print(round(z, 4), round(p, 4), [round(v, 4) for v in proportion_confint(45, 100)])
print(round(TTestIndPower().solve_power(effect_size=0.5, alpha=0.05, power=0.8), 3))
""",
    "sm_datasets_wls": """
import numpy as np
import statsmodels.api as sm
x = np.arange(1.0, 9.0)
y = np.array([2.1, 3.9, 6.2, 8.1, 9.7, 12.3, 13.8, 16.1])
res = sm.WLS(y, sm.add_constant(x), weights=1.0 / x).fit()
print(np.round(res.params, 4).tolist(), np.round(res.conf_int(), 3).tolist()[1])
""",
}

SEABORN = {
    "sns_barplot": """
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
df = pd.DataFrame({"day": ["mon", "tue", "mon", "tue"], "sales": [3, 5, 4, 6]})
ax = sns.barplot(data=df, x="day", y="sales", errorbar=None)
print(type(ax).__name__, [round(p.get_height(), 2) for p in ax.patches], ax.get_xlabel(), ax.get_ylabel())
plt.close("all")
""",
    "sns_histplot": """
import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
data = np.random.default_rng(0).normal(size=200)
ax = sns.histplot(data, bins=10)
print(len(ax.patches), sum(int(p.get_height()) for p in ax.patches))
plt.close("all")
""",
    "sns_scatter_hue": """
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
df = pd.DataFrame({"x": [1, 2, 3, 4, 5, 6], "y": [2, 4, 3, 6, 5, 7], "kind": list("ababab")})
ax = sns.scatterplot(data=df, x="x", y="y", hue="kind")
print(len(ax.collections), [t.get_text() for t in ax.get_legend().get_texts()])
plt.close("all")
""",
    "sns_lineplot": """
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
df = pd.DataFrame({"t": [0, 1, 2, 3] * 2, "v": [1, 2, 3, 4, 2, 3, 4, 5], "s": ["a"] * 4 + ["b"] * 4})
ax = sns.lineplot(data=df, x="t", y="v", hue="s")
print(len(ax.lines) >= 2, [line.get_ydata().tolist() for line in ax.lines[:2]])
plt.close("all")
""",
    "sns_boxplot": """
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
df = pd.DataFrame({"g": list("aaabbb"), "v": [1, 2, 9, 4, 5, 6]})
ax = sns.boxplot(data=df, x="g", y="v")
print([t.get_text() for t in ax.get_xticklabels()], ax.get_ylim()[0] < 1)
plt.close("all")
""",
    "sns_heatmap": """
import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
ax = sns.heatmap(np.arange(9).reshape(3, 3), annot=True, fmt="d", cbar=False)
print([t.get_text() for t in ax.texts])
plt.close("all")
""",
    "sns_regplot": """
import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
x = np.arange(10, dtype=float)
ax = sns.regplot(x=x, y=2 * x + 1, ci=None)
line = ax.lines[0]
print(round(float(line.get_ydata()[0]), 4), round(float(line.get_ydata()[-1]), 4))
plt.close("all")
""",
    "sns_countplot": """
import matplotlib.pyplot as plt
import seaborn as sns
ax = sns.countplot(x=["a", "b", "a", "c", "a", "b"])
print([int(p.get_height()) for p in ax.patches])
plt.close("all")
""",
    "sns_facetgrid": """
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
df = pd.DataFrame({"x": range(8), "y": [1, 3, 2, 4, 3, 5, 4, 6], "c": list("aabbaabb")})
g = sns.relplot(data=df, x="x", y="y", col="c")
print(g.axes.shape, [ax.get_title() for ax in g.axes.flat])
plt.close("all")
""",
    "sns_pairplot": """
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
df = pd.DataFrame({"a": [1, 2, 3, 4, 5], "b": [2, 1, 4, 3, 5], "c": [5, 3, 4, 1, 2]})
g = sns.pairplot(df)
print(g.axes.shape, g.axes[0, 1].get_ylabel(), g.axes[2, 0].get_xlabel())
plt.close("all")
""",
    "sns_theme_palette": """
import matplotlib.pyplot as plt
import seaborn as sns
pal = sns.color_palette("deep", 3)
print([tuple(round(c, 3) for c in rgb) for rgb in pal])
print(sns.color_palette("Blues", 2).as_hex())
with sns.axes_style("whitegrid"):
    fig, ax = plt.subplots()
    print(ax.get_facecolor())
plt.close("all")
""",
    "sns_kdeplot_stats": """
import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
x = np.random.default_rng(2).normal(size=100)
ax = sns.kdeplot(x)
ys = ax.lines[0].get_ydata()
print(len(ys), round(float(ys.max()), 2))
plt.close("all")
""",
    "sns_catplot_violin": """
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
df = pd.DataFrame({"g": list("ababab"), "v": [1.0, 2.0, 1.5, 2.5, 1.2, 2.2]})
g = sns.catplot(data=df, x="g", y="v", kind="violin")
print(type(g).__name__, [t.get_text() for t in g.ax.get_xticklabels()])
plt.close("all")
""",
}

POLARS = {
    "pl_frame_basics": """
import polars as pl
df = pl.DataFrame({"name": ["a", "b", "c"], "x": [1, 2, 3], "y": [0.5, 1.5, 2.5]})
print(df)
print(df.shape, df.columns, df.dtypes)
""",
    "pl_select_filter": """
import polars as pl
df = pl.DataFrame({"city": ["Oslo", "Rome", "Oslo", "Lima"], "temp": [3, 18, 5, 22]})
print(df.filter(pl.col("temp") > 4).select(["city", (pl.col("temp") * 1.8 + 32).alias("f")]))
""",
    "pl_groupby_agg": """
import polars as pl
df = pl.DataFrame({"k": ["a", "b", "a", "b", "c"], "v": [1, 2, 3, 4, 5]})
out = df.group_by("k").agg(pl.col("v").sum().alias("total"), pl.len().alias("n")).sort("k")
print(out)
print(out.to_dicts())
""",
    "pl_with_columns_when": """
import polars as pl
df = pl.DataFrame({"score": [45, 72, 88, 91]})
print(df.with_columns(pl.when(pl.col("score") >= 70).then(pl.lit("pass")).otherwise(pl.lit("fail")).alias("grade")))
""",
    "pl_join": """
import polars as pl
left = pl.DataFrame({"id": [1, 2, 3], "name": ["x", "y", "z"]})
right = pl.DataFrame({"id": [2, 3, 4], "q": [10, 20, 30]})
print(left.join(right, on="id", how="inner"))
print(left.join(right, on="id", how="left").sort("id")["q"].to_list())
""",
    "pl_lazy": """
import polars as pl
lf = pl.LazyFrame({"a": [1, 2, 3, 4, 5, 6], "b": ["x", "y"] * 3})
print(lf.filter(pl.col("a") % 2 == 0).group_by("b").agg(pl.col("a").mean()).sort("b").collect())
""",
    "pl_describe_stats": """
import polars as pl
df = pl.DataFrame({"v": [1.0, 2.0, 3.0, 4.0, 10.0]})
print(df["v"].mean(), df["v"].median(), round(df["v"].std(), 4), df["v"].quantile(0.5))
print(df.select(pl.col("v").max().alias("hi"), pl.col("v").min().alias("lo"), pl.col("v").cum_sum().alias("c")).tail(1))
""",
    "pl_strings": """
import polars as pl
s = pl.Series("s", ["Apple pie", "banana", "Cherry tart"])
print(s.str.to_lowercase().to_list(), s.str.contains("an").to_list(), s.str.len_chars().to_list())
print(s.str.split(" ").list.first().to_list())
""",
    "pl_dates": """
import datetime
import polars as pl
df = pl.DataFrame({"d": [datetime.date(2024, 1, 1), datetime.date(2024, 2, 15), datetime.date(2024, 3, 31)]})
print(df.with_columns(pl.col("d").dt.month().alias("m"), pl.col("d").dt.weekday().alias("wd")))
""",
    "pl_pivot_melt": """
import polars as pl
df = pl.DataFrame({"id": [1, 1, 2, 2], "k": ["a", "b", "a", "b"], "v": [1, 2, 3, 4]})
wide = df.pivot(on="k", index="id", values="v").sort("id")
print(wide)
print(wide.unpivot(index="id").sort(["id", "variable"]).rows())
""",
    "pl_csv_roundtrip": """
import io
import polars as pl
df = pl.read_csv(io.StringIO("a,b\\n1,x\\n2,y\\n3,z"))
print(df, df.write_csv(), sep="\\n")
""",
    "pl_to_pandas_numpy": """
import polars as pl
df = pl.DataFrame({"a": [1, 2, 3], "b": [4.0, 5.0, 6.0]})
print(df.to_numpy().sum(axis=0).tolist(), type(df.to_pandas()).__name__, df.to_pandas()["b"].sum())
""",
    "pl_window_rank": """
import polars as pl
df = pl.DataFrame({"g": ["a", "a", "b", "b", "b"], "v": [3, 1, 5, 2, 4]})
print(df.with_columns(pl.col("v").rank().over("g").alias("r"), pl.col("v").sum().over("g").alias("s")))
""",
}

PYARROW = {
    "pa_table": """
import pyarrow as pa
t = pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]})
print(t.num_rows, t.num_columns, t.schema)
print(t.column("a").to_pylist(), t.to_pydict())
""",
    "pa_compute": """
import pyarrow as pa
import pyarrow.compute as pc
arr = pa.array([1, 2, None, 4, 5])
print(pc.sum(arr).as_py(), pc.mean(arr).as_py(), pc.max(arr).as_py(), arr.null_count)
print(pc.multiply(arr, 10).to_pylist(), pc.is_null(arr).to_pylist())
""",
    "pa_filter_sort": """
import pyarrow as pa
import pyarrow.compute as pc
t = pa.table({"k": ["b", "a", "c", "a"], "v": [3, 1, 4, 2]})
print(t.filter(pc.greater(t["v"], 1)).to_pydict())
print(t.sort_by([("k", "ascending"), ("v", "descending")]).to_pydict())
""",
    "pa_group_by": """
import pyarrow as pa
t = pa.table({"k": ["a", "b", "a", "b", "a"], "v": [1, 2, 3, 4, 5]})
out = t.group_by("k").aggregate([("v", "sum"), ("v", "count")]).sort_by("k")
print(out.to_pydict())
""",
    "pa_types_schema": """
import pyarrow as pa
schema = pa.schema([("id", pa.int32()), ("price", pa.float64()), ("tags", pa.list_(pa.string()))])
t = pa.Table.from_pylist([{"id": 1, "price": 2.5, "tags": ["a"]}, {"id": 2, "price": 3.0, "tags": []}], schema=schema)
print(t.schema.field("tags").type, t["price"].type, t.column("id").to_pylist())
""",
    "pa_parquet_buffer": """
import io
import pyarrow as pa
import pyarrow.parquet as pq
t = pa.table({"a": list(range(5)), "b": [x * 0.5 for x in range(5)]})
buf = io.BytesIO()
pq.write_table(t, buf)
buf.seek(0)
back = pq.read_table(buf)
print(back.equals(t), back.num_rows, pq.read_metadata(io.BytesIO(buf.getvalue())).num_columns)
""",
    "pa_csv_buffer": """
import io
import pyarrow.csv as pcsv
t = pcsv.read_csv(io.BytesIO(b"x,y\\n1,2\\n3,4\\n"))
print(t.to_pydict(), t.schema.names)
""",
    "pa_pandas_roundtrip": """
import pandas as pd
import pyarrow as pa
df = pd.DataFrame({"a": [1, 2], "b": ["u", "v"]})
t = pa.Table.from_pandas(df, preserve_index=False)
print(t.schema.names, t.to_pandas().equals(df))
""",
    "pa_dictionary_chunked": """
import pyarrow as pa
arr = pa.array(["x", "y", "x", "x"]).dictionary_encode()
print(arr.dictionary.to_pylist(), arr.indices.to_pylist())
chunked = pa.chunked_array([[1, 2], [3]])
print(chunked.num_chunks, chunked.to_pylist(), len(chunked))
""",
    "pa_ipc_buffer": """
import pyarrow as pa
t = pa.table({"n": [1, 2, 3]})
sink = pa.BufferOutputStream()
with pa.ipc.new_stream(sink, t.schema) as writer:
    writer.write_table(t)
print(pa.ipc.open_stream(sink.getvalue()).read_all().to_pydict())
""",
    "pa_strings_compute": """
import pyarrow as pa
import pyarrow.compute as pc
s = pa.array(["Apple", "banana", None, "cherry"])
print(pc.utf8_upper(s).to_pylist(), pc.utf8_length(s).to_pylist(), pc.match_substring(s, "an").to_pylist())
""",
    "pa_timestamps": """
import datetime
import pyarrow as pa
import pyarrow.compute as pc
arr = pa.array([datetime.datetime(2024, 1, 5, 12), datetime.datetime(2024, 3, 1, 8)])
print(arr.type, pc.year(arr).to_pylist(), pc.month(arr).to_pylist(), pc.hour(arr).to_pylist())
""",
}

SYMPY = {
    "sy_integrate_diff": """
from sympy import symbols, integrate, diff, sin, exp, cos
x = symbols("x")
print(integrate(x ** 2, x), integrate(sin(x), (x, 0, 1)).evalf(6))
print(diff(exp(x) * sin(x), x), diff(x ** 4, x, 2))
""",
    "sy_solve": """
from sympy import symbols, solve, Eq
x, y = symbols("x y")
print(solve(x ** 2 - 5 * x + 6, x), solve([Eq(x + y, 10), Eq(x - y, 2)], [x, y]))
""",
    "sy_simplify_expand": """
from sympy import symbols, simplify, expand, factor, sin, cos
x = symbols("x")
print(simplify(sin(x) ** 2 + cos(x) ** 2), expand((x + 1) ** 3), factor(x ** 2 - 9))
""",
    "sy_sympify_parse": """
from sympy import sympify, symbols
from sympy.parsing.sympy_parser import parse_expr, standard_transformations, implicit_multiplication_application
x = symbols("x")
e = sympify("3*x**2 + 2*x + 1")
print(e, e.subs(x, 2), parse_expr("2x + 3y", transformations=standard_transformations + (implicit_multiplication_application,)))
print(sympify("sin(x)/x").limit(x, 0))
""",
    "sy_limits_series": """
from sympy import symbols, limit, series, oo, sin, exp
x = symbols("x")
print(limit(sin(x) / x, x, 0), limit((1 + 1 / x) ** x, x, oo))
print(series(exp(x), x, 0, 5))
""",
    "sy_matrix": """
from sympy import Matrix
m = Matrix([[2, 1], [1, 3]])
print(m.det(), m.inv(), m.eigenvals())
print(m.rref(), m * m)
""",
    "sy_lambdify_numpy": """
import numpy as np
from sympy import symbols, lambdify, sin
x = symbols("x")
f = lambdify(x, sin(x) + x ** 2, "numpy")
print(np.round(f(np.array([0.0, 1.0, 2.0])), 6).tolist())
""",
    "sy_ode": """
from sympy import Function, dsolve, Eq, symbols
t = symbols("t")
y = Function("y")
print(dsolve(Eq(y(t).diff(t), -2 * y(t)), y(t)))
""",
    "sy_rational_numbers": """
from sympy import Rational, sqrt, pi, nsimplify, N
print(Rational(3, 4) + Rational(1, 6), sqrt(8), N(pi, 20))
print(nsimplify(0.125), sqrt(2).evalf(10))
""",
    "sy_latex_pretty": """
from sympy import symbols, latex, Integral, sqrt
x = symbols("x")
print(latex(Integral(sqrt(x), x)), latex(x ** 2 / 3))
""",
    "sy_number_theory": """
from sympy import factorint, isprime, primerange, gcd, lcm, binomial
print(factorint(360), isprime(97), list(primerange(10, 30)))
print(gcd(48, 180), lcm(4, 6), binomial(10, 4))
""",
    "sy_inequality_sets": """
from sympy import symbols, solveset, S, Interval, reduce_inequalities
x = symbols("x", real=True)
print(solveset(x ** 2 - 4 > 0, x, domain=S.Reals), Interval(0, 2).intersect(Interval(1, 3)))
print(reduce_inequalities([x > 1, x < 5], [x]))
""",
    "sy_sum_product": """
from sympy import symbols, summation, product, oo
n, k = symbols("n k", integer=True, positive=True)
print(summation(k, (k, 1, n)), summation(1 / k ** 2, (k, 1, oo)), product(k, (k, 1, 5)))
""",
}

NETWORKX = {
    "nx_shortest_path": """
import networkx as nx
G = nx.Graph()
G.add_weighted_edges_from([("a", "b", 1), ("b", "c", 2), ("a", "c", 5), ("c", "d", 1)])
print(nx.shortest_path(G, "a", "d", weight="weight"), nx.shortest_path_length(G, "a", "d", weight="weight"))
print(nx.dijkstra_path_length(G, "a", "c"))
""",
    "nx_centrality": """
import networkx as nx
G = nx.karate_club_graph()
deg = nx.degree_centrality(G)
bet = nx.betweenness_centrality(G)
print(G.number_of_nodes(), G.number_of_edges(), max(deg, key=deg.get), round(max(bet.values()), 4))
""",
    "nx_pagerank": """
import networkx as nx
G = nx.DiGraph([(1, 2), (2, 3), (3, 1), (3, 4), (4, 1)])
pr = nx.pagerank(G)
print({k: round(v, 4) for k, v in sorted(pr.items())})
""",
    "nx_components": """
import networkx as nx
G = nx.Graph([(1, 2), (2, 3), (4, 5), (6, 6)])
G.add_node(7)
print(nx.number_connected_components(G), sorted(sorted(c) for c in nx.connected_components(G)))
""",
    "nx_mst": """
import networkx as nx
G = nx.Graph()
G.add_weighted_edges_from([(0, 1, 4), (0, 2, 1), (1, 2, 2), (1, 3, 5), (2, 3, 8)])
T = nx.minimum_spanning_tree(G)
print(sorted(T.edges(data="weight")), T.size(weight="weight"))
""",
    "nx_topological": """
import networkx as nx
G = nx.DiGraph([("wake", "coffee"), ("coffee", "work"), ("wake", "shower"), ("shower", "work")])
print(list(nx.topological_sort(G)), nx.is_directed_acyclic_graph(G), nx.dag_longest_path(G))
""",
    "nx_generators": """
import networkx as nx
print(nx.complete_graph(5).number_of_edges(), nx.cycle_graph(6).degree(0), nx.path_graph(4).number_of_edges())
G = nx.erdos_renyi_graph(20, 0.2, seed=1)
print(G.number_of_edges(), nx.is_connected(G))
""",
    "nx_clustering": """
import networkx as nx
G = nx.Graph([(1, 2), (2, 3), (3, 1), (3, 4)])
print(nx.clustering(G), round(nx.average_clustering(G), 4), nx.transitivity(G))
""",
    "nx_flow": """
import networkx as nx
G = nx.DiGraph()
G.add_edge("s", "a", capacity=3)
G.add_edge("s", "b", capacity=2)
G.add_edge("a", "t", capacity=2)
G.add_edge("b", "t", capacity=3)
G.add_edge("a", "b", capacity=1)
value, flow = nx.maximum_flow(G, "s", "t")
print(value, flow["s"])
""",
    "nx_bfs_dfs": """
import networkx as nx
G = nx.balanced_tree(2, 2)
print(list(nx.bfs_tree(G, 0)), list(nx.dfs_preorder_nodes(G, 0)))
print(dict(nx.single_source_shortest_path_length(G, 0)))
""",
    "nx_adjacency_matrix": """
import networkx as nx
G = nx.path_graph(4)
print(nx.to_numpy_array(G).astype(int).tolist())
print(sorted(nx.from_edgelist([(1, 2), (2, 3)]).edges()))
""",
    "nx_communities": """
import networkx as nx
from networkx.algorithms import community
G = nx.barbell_graph(4, 0)
parts = community.greedy_modularity_communities(G)
print(sorted(sorted(c) for c in parts), round(community.modularity(G, parts), 4))
""",
    "nx_digraph_degrees": """
import networkx as nx
G = nx.DiGraph([(1, 2), (1, 3), (2, 3), (3, 1)])
print(dict(G.in_degree()), dict(G.out_degree()), nx.has_path(G, 2, 1), list(nx.simple_cycles(G)))
""",
}

LIBRARIES: dict[str, dict[str, str]] = {
    "scipy": SCIPY, "sklearn": SKLEARN, "statsmodels": STATSMODELS, "seaborn": SEABORN,
    "polars": POLARS, "pyarrow": PYARROW, "sympy": SYMPY, "networkx": NETWORKX,
}

# What each library's programs may import (the executors authorize exactly this).
IMPORTS: dict[str, list[str]] = {
    "scipy": ["scipy.*", "numpy.*"],
    "sklearn": ["sklearn.*", "numpy.*", "pandas.*"],
    "statsmodels": ["statsmodels.*", "numpy.*", "pandas.*"],
    "seaborn": ["seaborn.*", "matplotlib.*", "numpy.*", "pandas.*"],
    "polars": ["polars.*", "datetime", "io", "pandas.*", "numpy.*"],
    "pyarrow": ["pyarrow.*", "datetime", "io", "pandas.*"],
    "sympy": ["sympy.*", "numpy.*"],
    "networkx": ["networkx.*", "numpy.*"],
}
