"""Library settings changed during a step are put back after it (in process, the host shares them)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from executors.restricted.libraries.hooks import install_hooks
from executors.restricted.libraries.state import SETTINGS, StepSettings

ROOT = Path(__file__).resolve().parents[1]


def test_numpy_settings_are_restored():
    np = pytest.importorskip("numpy")
    before = (np.get_printoptions(), np.geterr(), np.getbufsize())
    step = StepSettings(["numpy"])
    step.save()
    np.set_printoptions(precision=2, threshold=5)
    np.seterr(all="raise")
    np.setbufsize(16384)
    restored = step.restore()
    assert len(restored) == 3
    assert (np.get_printoptions(), np.geterr(), np.getbufsize()) == before


def test_pandas_options_are_restored():
    pd = pytest.importorskip("pandas")
    install_hooks()  # (pandas is loaded) the setters snapshot the options on the first change in a step
    before = pd.get_option("display.max_rows")
    step = StepSettings(["pandas"])
    step.save()
    pd.set_option("display.max_rows", 3)
    pd.options.display.precision = 1
    assert step.restore() == ["pandas: options (pd.set_option, pd.options.*)"]
    assert pd.get_option("display.max_rows") == before
    assert pd.get_option("display.precision") != 1


def test_matplotlib_rcparams_are_restored():
    mpl = pytest.importorskip("matplotlib")
    install_hooks()
    mpl.get_backend()  # resolve the "auto" backend now, not in the middle of the test
    before = {k: list(v) if type(v) is list else v for k, v in dict.items(mpl.rcParams)}
    step = StepSettings(["matplotlib"])
    step.save()
    mpl.rcParams["lines.linewidth"] = 9
    mpl.rcParams["font.family"] = ["monospace"]
    mpl.rcParams["font.sans-serif"].insert(0, "Canary Sans")  # in place: no setter runs
    step.restore()
    assert dict(mpl.rcParams) == before


def test_rcparams_lists_changed_in_place_are_judged_by_identity():
    """An item replaced in place, even by an equal copy or by an object whose `==` says "same",
    is put back, and what the step put there is never compared (its `__eq__` would run here)."""
    mpl = pytest.importorskip("matplotlib")
    compared = []

    class Liar:
        def __eq__(self, other):
            compared.append(other)
            return True

        __hash__ = object.__hash__

    first = dict.__getitem__(mpl.rcParams, "font.sans-serif")[0]
    step = StepSettings(["matplotlib"])
    for replacement in ("".join(first), Liar()):  # an equal copy, then a liar
        step.save()
        dict.__getitem__(mpl.rcParams, "font.sans-serif")[0] = replacement  # (a fresh list after a restore)
        assert step.restore() == ["matplotlib: rcParams lists"]
        assert dict.__getitem__(mpl.rcParams, "font.sans-serif")[0] is first
    assert compared == []
    step.save()
    assert step.restore() == []  # untouched: nothing put back


def test_a_step_that_changes_nothing_takes_no_large_snapshot():
    pytest.importorskip("pandas")
    install_hooks()
    step = StepSettings(["pandas"])
    step.save()
    assert step.saved == [] and step.restore() == []


def test_nothing_changed_nothing_restored_and_unauthorized_modules_untouched():
    np = pytest.importorskip("numpy")
    step = StepSettings(["numpy"])
    step.save()
    assert step.restore() == []
    step = StepSettings(["math"])  # numpy not authorized: not the sandbox's business
    step.save()
    np.set_printoptions(precision=3)
    try:
        assert step.restore() == []
    finally:
        np.set_printoptions(precision=8)


def test_warning_filters_are_restored():
    step = StepSettings([])
    before = list(warnings.filters)
    step.save()
    warnings.simplefilter("ignore")
    assert "warnings: filters" in step.restore()
    assert warnings.filters == before


def test_every_setting_names_its_module():
    assert all(s.module in {"numpy", "pandas", "matplotlib", "scipy", "sklearn", "pyarrow", "polars",
                            "sympy"} and s.what for s in SETTINGS)


def test_pydata_settings_are_restored():
    """Issue 22: scikit-learn's config, pyarrow's thread pools, scipy.special's error handling and
    polars' core display settings changed in a step are put back after it."""
    import polars as pl
    import pyarrow as pa
    import scipy.special
    import sklearn

    before = (sklearn.get_config()["assume_finite"], pa.cpu_count(), scipy.special.geterr()["singular"],
              pl.Config.state()["set_fmt_float"])
    step = StepSettings({"sklearn", "pyarrow", "scipy", "polars"})
    step.save()
    sklearn.set_config(assume_finite=not before[0])
    pa.set_cpu_count(before[1] + 1)
    scipy.special.seterr(singular="raise" if before[2] != "raise" else "warn")
    pl.Config.set_fmt_float("full" if before[3] != "full" else "mixed")
    restored = step.restore()
    assert len(restored) == 4, restored
    assert (sklearn.get_config()["assume_finite"], pa.cpu_count(), scipy.special.geterr()["singular"],
            pl.Config.state()["set_fmt_float"]) == before


def test_a_library_the_host_loads_later_is_hooked_before_the_next_step():
    """Native file checks go into a library loaded after the last look (by the host, between
    steps), not only into those loaded when an executor was built or through a trusted import."""
    pytest.importorskip("pyarrow")
    code = ("import sys\nfrom executors.restricted.libraries.hooks import install_hooks, install_new_hooks\n"
            "install_hooks()\nassert 'pyarrow' not in sys.modules\nimport pyarrow\n"
            "assert not hasattr(pyarrow.memory_map, '__wrapped__')\ninstall_new_hooks()\n"
            "print(hasattr(pyarrow.memory_map, '__wrapped__'), isinstance(pyarrow.OSFile, type))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]  # wrapped; its classes left as they are


def test_polars_display_variables_are_set_in_the_step_and_put_back():
    """Issue 44: pl.Config keeps its display settings in POLARS_FMT_* environment variables. A
    step may set them (its own reprs follow), no other variable, and the host keeps its own."""
    import os

    pytest.importorskip("polars")
    from executors import LocalExecutor

    assert "POLARS_FMT_STR_LEN" not in os.environ
    with LocalExecutor(authorized_imports=["polars", "os"]) as ex:
        r = ex.execute("import polars as pl\npl.Config.set_fmt_str_lengths(100)\n"
                       "print(pl.Config.state(if_set=True).get('POLARS_FMT_STR_LEN'))")
        assert r.error is None and r.logs == "100\n"
        assert "POLARS_FMT_STR_LEN" not in os.environ  # put back after the step
        r = ex.execute("import polars as pl\nwith pl.Config(fmt_str_lengths=70):\n"
                       "    print(pl.Config.state(if_set=True).get('POLARS_FMT_STR_LEN'))")
        assert r.error is None and r.logs == "70\n"
        r = ex.execute("import os\nos.environ['POLARS_TEMP_DIR'] = '/tmp/x'")
        assert r.error is not None and "environment" in r.error.message
        assert "POLARS_TEMP_DIR" not in os.environ


def test_numpy_polynomial_print_style_is_restored():
    """Issue 44: np.polynomial.set_default_printstyle runs in a step (its docs call it) and the
    host's polynomials print as before afterwards."""
    pytest.importorskip("numpy")
    import numpy.polynomial as poly

    from executors import LocalExecutor

    before = str(poly.Polynomial([1, 2]))
    style = "ascii" if "·" in before else "unicode"
    with LocalExecutor(authorized_imports=["numpy"]) as ex:
        r = ex.execute(f"import numpy as np\nnp.polynomial.set_default_printstyle({style!r})\n"
                       "print(np.polynomial.Polynomial([1, 2]))")
        assert r.error is None and r.logs.strip() != before
    assert str(poly.Polynomial([1, 2])) == before
