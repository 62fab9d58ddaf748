"""Library-mediated escapes through the PyData stack (issue 22): scipy, scikit-learn (joblib,
threadpoolctl), statsmodels (patsy), seaborn, polars, pyarrow, sympy and networkx.

Same shape and rules as tests/library_escapes.py (whose helpers and placeholders these use): each
attempt is code the restricted policy accepts, escapes plain CPython, and must be refused (or
contained) by every executor, while the neighbours (everyday code next to each route) keep working.
"""

from __future__ import annotations

from library_escapes import CHAIN, PICKLE, SH, SYSTEM, Attempt, Neighbour, _attempt, _neighbour

SP = "scipy.* numpy.*"
SK = "sklearn.* numpy.*"
JOBLIB = "joblib.* pathlib"
SM = "statsmodels.* numpy.* pandas.* io"
PATSY = "patsy.* numpy.* pandas.*"
SNS = "seaborn.* matplotlib.* pandas.*"
PL = "polars.* io"
PA = "pyarrow.* io"
SY = "sympy.*"
NX = "networkx.*"
# an expression a string evaluator runs: os.system(SH) through the class graph
SYSTEM_CALL = f"{SYSTEM}('{SH}')"
# patsy formulas take no empty parentheses: the class graph from a string literal
PCHAIN = "'a'.__class__.__base__.__subclasses__()"
GLOBALS = ".__init__.__globals__"
WRAP_CLOSE_NAME = "<class 'os._wrap_close'>"

PYDATA_ATTEMPTS: list[Attempt] = [
    # ------------------------------------------------------------------------------- read
    _attempt("read-pl-read_csv", "read", PL, "polars.read_csv", """
        import polars as pl
        print(pl.read_csv("{SECRET_FILE}", has_header=False))
    """, note="polars reads the file in Rust: no Python open()"),
    _attempt("read-pl-scan_csv", "read", PL, "polars.scan_csv", """
        import polars as pl
        print(pl.scan_csv("{SECRET_FILE}", has_header=False).collect())
    """, note="a lazy scan opens the path when collected"),
    _attempt("read-pa-csv", "read", PA, "pyarrow.csv.read_csv", """
        import pyarrow.csv as pc
        print(pc.read_csv("{SECRET_FILE}", read_options=pc.ReadOptions(autogenerate_column_names=True)).to_pydict())
    """, note="pyarrow reads the file in C++"),
    _attempt("read-pa-memory_map", "read", PA, "pyarrow.memory_map", """
        import pyarrow as pa
        pa.memory_map("{SECRET_FILE}").read()
    """),
    _attempt("read-pa-localfs", "read", PA, "pyarrow.fs.LocalFileSystem", """
        import pyarrow.fs
        pyarrow.fs.LocalFileSystem().open_input_stream("{SECRET_FILE}").read()
    """),
    # pyarrow.lib (a public module of pyarrow) re-exports pyarrow's file classes and functions
    _attempt("read-pa-lib-osfile", "read", PA, "pyarrow.lib.OSFile", """
        import pyarrow.lib
        pyarrow.lib.OSFile("{SECRET_FILE}").read()
    """),
    _attempt("read-pa-lib-input_stream", "read", PA, "pyarrow.lib.input_stream", """
        import pyarrow.lib
        pyarrow.lib.input_stream("{SECRET_FILE}").read()
    """),
    _attempt("read-sk-load_files", "read", SK, "sklearn.datasets.load_files", """
        from sklearn.datasets import load_files
        print(load_files("{SECRET_DIR}/..").data)
    """, note="every file under a directory, one category per subdirectory"),
    _attempt("read-nx-read_adjlist", "read", NX, "networkx.read_adjlist", """
        import networkx as nx
        print(list(nx.read_adjlist("{SECRET_FILE}").nodes))
    """),
    # ------------------------------------------------------------------------------- write
    _attempt("write-pl-write_csv", "write", PL, "polars.DataFrame.write_csv", """
        import polars as pl
        pl.DataFrame({"a": [1]}).write_csv("{TARGET_FILE}")
    """),
    _attempt("write-pa-parquet", "write", PA, "pyarrow.parquet.write_table", """
        import pyarrow as pa
        import pyarrow.parquet as pq
        pq.write_table(pa.table({"a": [1]}), "{TARGET_FILE}")
    """),
    _attempt("write-pa-lib-output_stream", "write", PA, "pyarrow.lib.output_stream", """
        import pyarrow.lib
        pyarrow.lib.output_stream("{TARGET_FILE}").write(b"written")
    """),
    _attempt("write-sp-savemat", "write", SP, "scipy.io.savemat", """
        from scipy import io
        io.savemat("{TARGET_FILE}", {"a": [1, 2]})
    """),
    _attempt("write-joblib-dump", "write", JOBLIB, "joblib.dump", """
        import joblib
        joblib.dump([1, 2], "{TARGET_FILE}")
    """),
    _attempt("write-nx-write_edgelist", "write", NX, "networkx.write_edgelist", """
        import networkx as nx
        nx.write_edgelist(nx.path_graph(3), "{TARGET_FILE}")
    """),
    # ------------------------------------------------------------------------------- unpickle
    _attempt("unpickle-joblib-load", "unpickle", JOBLIB + " io", "joblib.load", f"""
        import io
        import joblib
        joblib.load(io.BytesIO({PICKLE}))
    """, note="joblib's files are pickles"),
    _attempt("unpickle-sm-load_pickle", "unpickle", SM, "statsmodels.iolib.smpickle.load_pickle", f"""
        import io
        import statsmodels.api as sm
        sm.load_pickle(io.BytesIO({PICKLE}))
    """, note="results.save()/sm.load_pickle are pickles"),
    # ------------------------------------------------------------------------------- evaluator
    _attempt("eval-sy-sympify", "evaluator", SY, "sympy.sympify", f"""
        import sympy
        SUBS = sympy.sympify("{CHAIN}")
        i = [str(c) for c in SUBS].index("{WRAP_CLOSE_NAME}")
        sympy.sympify("{CHAIN}[" + str(i) + "]{GLOBALS}['system']('{SH}')")
    """, note="a dotted chain survives sympy's transformations; the index is found with str()"),
    _attempt("eval-sy-parse_expr", "evaluator", SY, "sympy.parsing.sympy_parser.parse_expr", f"""
        from sympy.parsing.sympy_parser import parse_expr
        parse_expr("{SYSTEM_CALL}", transformations=())
    """, note="no transformations: the string is Python"),
    _attempt("eval-sy-lambdify-string", "evaluator", SY, "sympy.lambdify", f"""
        import sympy
        sympy.lambdify([], "{SYSTEM_CALL}")()
    """, note="a string expression is pasted into generated source"),
    _attempt("eval-smf-ols-formula", "evaluator", SM, "statsmodels.formula.api.ols", f"""
        import pandas as pd
        import statsmodels.formula.api as smf
        df = pd.DataFrame({{"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 4.0]}})
        SUBS = []
        try:
            smf.ols("y ~ x + SUBS.append({PCHAIN})", data=df)
        except Exception:
            pass
        i = [str(c) for c in SUBS[0]].index("{WRAP_CLOSE_NAME}")
        smf.ols("y ~ x + {PCHAIN}[" + str(i) + "]{GLOBALS}['system']('{SH}')", data=df)
    """, note="patsy evaluates each factor as Python, with the caller's variables in scope"),
    _attempt("eval-patsy-dmatrix", "evaluator", PATSY, "patsy.dmatrix", f"""
        import patsy
        SUBS = []
        try:
            patsy.dmatrix("SUBS.append({PCHAIN})", {{"x": [1]}})
        except Exception:
            pass
        i = [str(c) for c in SUBS[0]].index("{WRAP_CLOSE_NAME}")
        patsy.dmatrix("{PCHAIN}[" + str(i) + "]{GLOBALS}['system']('{SH}')", {{"x": [1]}})
    """, note="no comprehensions or empty parentheses in a formula: the index is found in the step"),
    # ------------------------------------------------------------------------------- native
    _attempt("native-threadpoolctl-register", "native", "threadpoolctl", "threadpoolctl.register", f"""
        import threadpoolctl
        class Libc(threadpoolctl.LibController):
            user_api = "libc"
            internal_api = "libc"
            filename_prefixes = ("libc.so",)
            def get_num_threads(self):
                return self.dynlib.system(b"{SH}")
            def set_num_threads(self, n):
                return None
            def get_version(self):
                return None
        threadpoolctl.register(Libc)
        threadpoolctl.ThreadpoolController().info()
    """, note="a registered controller is handed a ctypes.CDLL of every matching loaded library"),
    # ------------------------------------------------------------------------------- execute
    _attempt("exec-joblib-parallel", "execute", JOBLIB, "joblib.Parallel", """
        import joblib
        import pathlib
        joblib.Parallel(n_jobs=2)(joblib.delayed(pathlib.Path("{MARKER}").touch)() for i in range(2))
    """, note="loky worker processes run the call outside any guard"),
    _attempt("exec-loky-executor", "execute", JOBLIB, "joblib.externals.loky.get_reusable_executor", """
        import pathlib
        from joblib.externals import loky
        loky.get_reusable_executor(max_workers=1).submit(pathlib.Path("{MARKER}").touch).result()
    """),
    _attempt("exec-sk-cross_val-n_jobs", "execute", SK + " pathlib", "sklearn.model_selection.cross_val_score", """
        import pathlib
        from sklearn.dummy import DummyClassifier
        from sklearn.model_selection import cross_val_score
        class Touch(DummyClassifier):
            def fit(self, X, y):
                pathlib.Path("{MARKER}").touch()
                return DummyClassifier.fit(self, X, y)
        cross_val_score(Touch(), [[0], [1], [2], [3]], [0, 1, 0, 1], cv=2, n_jobs=2)
    """, note="n_jobs>1 fits in loky processes"),
    # ------------------------------------------------------------------------------- tamper
    _attempt("tamper-pa-set_cpu_count", "tamper", PA, "pyarrow.set_cpu_count", """
        import pyarrow as pa
        pa.set_cpu_count(1 if pa.cpu_count() != 1 else 2)
    """, probe="import pyarrow as pa\npa.cpu_count()"),
    _attempt("tamper-sp-special-seterr", "tamper", SP, "scipy.special.seterr", """
        import scipy.special
        scipy.special.seterr(singular="raise")
    """, probe='import scipy.special\nscipy.special.geterr()["singular"]'),
    _attempt("tamper-pl-fmt_float", "tamper", PL, "polars.Config.set_fmt_float", """
        import polars as pl
        pl.Config.set_fmt_float("full")
    """, probe='import polars as pl\npl.Config.state(if_set=True)["set_fmt_float"]', note="a setting of the Rust core"),
    _attempt("tamper-pl-tbl_rows", "tamper", PL, "polars.Config.set_tbl_rows", """
        import polars as pl
        pl.Config.set_tbl_rows(3)
    """, probe='import polars as pl\npl.Config.state(if_set=True).get("POLARS_FMT_MAX_ROWS")',
             note="polars keeps its display settings in the process environment"),
    _attempt("tamper-sk-set_config", "tamper", SK, "sklearn.set_config", """
        import sklearn
        sklearn.set_config(assume_finite=True)
    """, probe='import sklearn\nsklearn.get_config()["assume_finite"]'),
    _attempt("tamper-sns-set_theme", "tamper", SNS, "seaborn.set_theme", """
        import seaborn as sns
        sns.set_theme(style="darkgrid")
    """, probe='import matplotlib\nmatplotlib.rcParams["axes.facecolor"]', probe_imports="matplotlib.*"),
]

PYDATA_NEIGHBOURS: list[Neighbour] = [
    _neighbour("pl-csv-buffer", PL, """
        import io
        import polars as pl
        print(pl.read_csv(io.StringIO("a,b\\n1,2\\n3,4\\n")).sum().row(0))
    """, "(4, 6)\n"),
    # (pyarrow's parquet writer reaches for pandas' metadata helpers: pandas is authorized too)
    _neighbour("pa-parquet-buffer", PA + " pandas.*", """
        import io
        import pyarrow as pa
        import pyarrow.parquet as pq
        buf = io.BytesIO()
        pq.write_table(pa.table({"a": [1, 2, 3]}), buf)
        buf.seek(0)
        print(pq.read_table(buf).column("a").to_pylist())
    """, "[1, 2, 3]\n"),
    _neighbour("joblib-dump-load-buffer", JOBLIB + " io", """
        import io
        import joblib
        buf = io.BytesIO()
        joblib.dump({"a": [1, 2]}, buf)
        print(len(buf.getvalue()) > 0)
    """, "True\n"),
    _neighbour("sy-sympify-math", SY, """
        import sympy
        x = sympy.Symbol("x")
        print(sympy.sympify("x**2 + 2*x + 1").factor(), sympy.integrate(sympy.sympify("2*x"), x))
    """, "(x + 1)**2 x**2\n"),
    # (lambdify's default namespaces are scipy's and numpy's when installed: both authorized too)
    _neighbour("sy-lambdify-expr", SY + " numpy.* scipy.*", """
        import sympy
        x = sympy.Symbol("x")
        print(sympy.lambdify(x, x ** 2 + 1)(3))
    """, "10\n"),
    _neighbour("smf-ols-formula", SM, """
        import numpy as np
        import pandas as pd
        import statsmodels.formula.api as smf
        df = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": [2.0, 4.1, 5.9, 8.0]})
        print(smf.ols("y ~ x + np.log(x)", data=df).fit().params.round(3).tolist())
    """, "[0.092, 1.925, 0.12]\n"),
    _neighbour("sk-n_jobs-fit", SK, """
        from sklearn.ensemble import RandomForestClassifier
        f = RandomForestClassifier(n_estimators=4, random_state=0, n_jobs=-1).fit([[0], [1], [2], [3]], [0, 1, 0, 1])
        print(f.predict([[1]]).tolist())
    """, "[1]\n"),
    _neighbour("joblib-parallel", "joblib.*", """
        import joblib
        print(joblib.Parallel(n_jobs=-1)(joblib.delayed(abs)(-i) for i in range(4)))
    """, "[0, 1, 2, 3]\n"),
]
