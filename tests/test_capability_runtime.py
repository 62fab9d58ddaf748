"""The capability guard as a user meets it: through LocalExecutor (and the restricted worker).

What an authorized library may do on the model's behalf follows the executor's grants; tools keep
the host's capabilities; host threads are untouched; library settings come back after a step.
"""

from __future__ import annotations

import logging
import os
import threading

import pytest

from executors import Access, Limits, LocalExecutor, SubprocessExecutor


@pytest.fixture
def data_dir(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    (d / "sales.csv").write_text("region,amount\nnorth,10\nsouth,32\n")
    (tmp_path / "secret.txt").write_text("TOKEN-XYZ")
    return d


def test_relative_paths_resolve_in_the_private_workdir_which_is_removed_on_close(data_dir):
    ex = LocalExecutor(authorized_imports=["pathlib"], access=Access(read=[data_dir]))
    host_cwd = os.getcwd()
    r = ex.execute('import pathlib\npathlib.Path("note.txt").write_text("hi")\n'
                   'sorted(p.name for p in pathlib.Path(".").iterdir())')
    assert r.error is None and r.output == ["note.txt"]
    assert os.getcwd() == host_cwd  # the host is back in its own directory after the step
    workdir = ex.workdir
    assert os.path.exists(os.path.join(workdir, "note.txt"))
    ex.reset()
    assert ex.execute('import pathlib\npathlib.Path("note.txt").read_text()').output == "hi"
    ex.close()
    assert not os.path.exists(workdir)


def test_granted_files_read_others_refused_with_the_setting_named(data_dir, tmp_path):
    pytest.importorskip("pandas")
    with LocalExecutor(authorized_imports=["pandas.*"], access=Access(read=[data_dir])) as ex:
        ok = ex.execute(f'import pandas as pd\npd.read_csv("{data_dir}/sales.csv").amount.sum()')
        assert ok.error is None and int(ok.output) == 42
        bad = ex.execute(f'import pandas as pd\npd.read_csv("{tmp_path}/secret.txt")')
        assert bad.error.type == "PermissionError"
        assert "Access(read=" in bad.error.message and "TOKEN" not in bad.error.message
        write = ex.execute(f'import pandas as pd\npd.DataFrame({{"a": [1]}}).to_csv("{data_dir}/x.csv")')
        assert write.error.type == "PermissionError" and "files.write" in write.error.message
    assert not (data_dir / "x.csv").exists()


def test_tools_run_with_the_hosts_capabilities(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN-XYZ")

    def read_secret_length() -> int:
        return len(secret.read_text())  # host code: not judged by the step's grants

    with LocalExecutor(tools={"read_secret_length": read_secret_length}) as ex:
        assert ex.execute("read_secret_length()").output == 9


def test_host_threads_keep_their_capabilities_while_a_step_runs(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN-XYZ")
    seen: list[str] = []
    stop = threading.Event()

    def host_reader():
        while not stop.is_set():
            seen.append(secret.read_text())

    t = threading.Thread(target=host_reader, daemon=True)
    t.start()
    try:
        with LocalExecutor(limits=Limits(timeout_s=5)) as ex:
            r = ex.execute("total = 0\nfor i in range(300000):\n    total += i\ntotal")
            assert r.error is None
    finally:
        stop.set()
        t.join(5)
    assert seen and all(text == "TOKEN-XYZ" for text in seen)


def test_dangerous_members_stay_hidden_even_when_authorized(caplog):
    with caplog.at_level(logging.WARNING, logger="executors"):
        ex = LocalExecutor(authorized_imports=["os", "sys", "subprocess", "builtins"])
    with ex:
        for code, kind in [('import os\nos.system("id")', "AttributeError"),
                           ('import os\nos.environ', "AttributeError"),
                           ("import sys\nsys.modules", "AttributeError"),
                           ("import subprocess", "ImportError"),
                           ('import builtins\nbuiltins.exec("1")', "AttributeError")]:
            r = ex.execute(code)
            assert r.error is not None and r.error.type == kind, (code, r.error)
        r = ex.execute('import builtins\nbuiltins.print("via builtins")\nimport os\nos.path.join("a", "b")')
        assert r.logs == "via builtins\n" and r.output == "a/b"  # the sandbox's print, not the host's


def test_library_settings_and_random_state_do_not_outlive_the_step():
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    before = (np.get_printoptions()["precision"], pd.get_option("display.max_rows"),
              np.random.get_state()[1][:4].tolist())
    with LocalExecutor(authorized_imports=["numpy.*", "pandas.*"]) as ex:
        r = ex.execute('import numpy as np, pandas as pd\nnp.set_printoptions(precision=1)\n'
                       'pd.set_option("display.max_rows", 2)\nnp.random.seed(7)\n'
                       'a = np.random.rand()\nnp.random.seed(7)\na == np.random.rand()')
        assert r.error is None and bool(r.output) is True  # the model's own seeded stream works
    after = (np.get_printoptions()["precision"], pd.get_option("display.max_rows"),
             np.random.get_state()[1][:4].tolist())
    assert after == before


def test_library_evaluators_are_checked_with_the_policy():
    pytest.importorskip("pandas")
    with LocalExecutor(authorized_imports=["pandas.*"]) as ex:
        ok = ex.execute('import pandas as pd\ndf = pd.DataFrame({"a": [1, 2, 3]})\nlimit = 1\n'
                        'int(df.query("a > @limit").a.sum())')
        assert ok.error is None and ok.output == 5
        bad = ex.execute('import pandas as pd\n'
                         'pd.eval("().__class__.__base__.__subclasses__()", engine="python")')
        assert bad.error is not None and "evaluator" in bad.error.message


def test_first_numpy_reduction_in_a_fresh_process_works():
    """numpy imports numpy._core._methods from C on the first .mean(): that is numpy's import."""
    pytest.importorskip("numpy")
    with SubprocessExecutor(authorized_imports=["numpy.*"]) as ex:
        r = ex.execute("import numpy as np\na = np.array([1.0, 2.0, 3.0])\n[float(a.mean()), float(a.std())]")
        assert r.error is None and r.output == [2.0, pytest.approx(0.816496580927726)]


def test_the_restricted_worker_holds_the_same_grants(data_dir, tmp_path):
    pytest.importorskip("pandas")
    with SubprocessExecutor(authorized_imports=["pandas.*"], access=Access(read=[data_dir]),
                            harden=False, unconfined_native=True) as ex:  # the audit hook alone
        ok = ex.execute(f'import pandas as pd\nint(pd.read_csv("{data_dir}/sales.csv").amount.sum())')
        assert ok.error is None and ok.output == 42
        bad = ex.execute(f'import pandas as pd\npd.read_csv("{tmp_path}/secret.txt")')
        assert bad.error is not None and bad.error.type == "PermissionError"


def test_isolation_says_what_holds_the_code():
    with LocalExecutor() as ex:
        iso = ex.isolation
        assert "audit hook" in iso.layers["files"] and not iso.kernel
    with pytest.raises(ValueError, match="kernel"):
        LocalExecutor(access=Access(require="kernel"))
