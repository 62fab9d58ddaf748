"""Which packages import as the library in a step (restricted/libraries/packages.py, issue 44)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from executors.restricted.libraries.packages import library_packages


def test_pyarrow_brings_the_pandas_it_converts_through() -> None:
    """pyarrow's metadata declares no requirement, yet its scalars and tables convert through
    pandas when it is installed: pandas then imports as the library, not under the model's
    guard (where its import-time typing strings were refused)."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("pandas")
    assert {"pyarrow", "pandas", "numpy"} <= library_packages(["pyarrow"])
    assert "pandas" not in library_packages(["sympy"])


def test_a_date_scalar_of_pyarrow_alone() -> None:
    """In a fresh interpreter (pandas not imported yet): the step's pa.scalar imports it."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("pandas")
    script = (
        "import sys\nfrom executors import Limits, LocalExecutor\nassert 'pandas' not in sys.modules\n"
        "with LocalExecutor(authorized_imports=['pyarrow', 'datetime'], limits=Limits(timeout_s=120)) as ex:\n"
        "    r = ex.execute('import pyarrow as pa\\nfrom datetime import date\\n'\n"
        "                   'print(pa.scalar(date(2012, 1, 1), type=pa.date32()))')\n"
        "    print(r.error, r.logs, end='')\n"
        "    print(ex.execute('import pandas').error is not None)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.stdout == "None 2012-01-01\nTrue\n", done.stdout + done.stderr
