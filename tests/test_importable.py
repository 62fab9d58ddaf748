"""executors.importable: an authorized module that is not installed is refused when the executor is
made, with its name and the setting to change, for the host and for another interpreter."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from executors.importable import NotImportable, ensure_importable, missing_modules, top_level_names

ABSENT = "codeagent_no_such_module_xyz"


def test_installed_and_standard_modules_pass_on_the_host():
    ensure_importable(["math", "json", "os.path", "collections.*", "*", "pydantic"])


def test_a_missing_module_is_named_with_the_setting_to_change():
    with pytest.raises(NotImportable) as info:
        ensure_importable(["math", f"{ABSENT}.*", "statistics"])
    assert info.value.missing == (ABSENT,)
    text = str(info.value)
    assert ABSENT in text and "authorized_imports" in text and sys.executable in text
    assert "Install it" in text and "remove it from authorized_imports" in text
    assert isinstance(info.value, ImportError)


def test_several_missing_modules_are_named_together_and_the_setting_is_the_callers():
    with pytest.raises(NotImportable, match=r"--import names modules .*: a_missing_one, b_missing_two") as info:
        ensure_importable(["a_missing_one.sub", "b_missing_two", "a_missing_one"], setting="--import")
    assert info.value.missing == ("a_missing_one", "b_missing_two")


def test_the_check_imports_nothing_on_the_host():
    # A submodule's lookup would import its package: only the top-level name is looked up.
    if "xmlrpc" in sys.modules:
        pytest.skip("xmlrpc was already imported by something else in this process")
    ensure_importable(["xmlrpc.client"])
    assert "xmlrpc" not in sys.modules and "xmlrpc.client" not in sys.modules


def test_top_level_names():
    assert top_level_names(["numpy.*", "numpy.linalg", "pandas", "*", "", "1bad"]) == ["numpy", "pandas"]
    with pytest.raises(TypeError, match="list of module names"):
        top_level_names("numpy")


def test_another_interpreter_is_asked_in_isolated_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # A module importable here (on PYTHONPATH) but not for an isolated interpreter: the worker runs
    # with -I, so the probe must not see it either.
    (tmp_path / "only_on_pythonpath_mod.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert missing_modules(["only_on_pythonpath_mod"]) == []
    assert missing_modules(["only_on_pythonpath_mod", "json"], python=sys.executable) == ["only_on_pythonpath_mod"]
    with pytest.raises(NotImportable, match=f"for {sys.executable}: {ABSENT}"):
        ensure_importable([ABSENT], python=sys.executable)
    ensure_importable(["json", "pydantic"], python=sys.executable)


def test_an_interpreter_that_cannot_run_is_a_clear_error(tmp_path: Path):
    with pytest.raises(ValueError, match="cannot run python='/nonexistent/python3'"):
        ensure_importable(["json"], python="/nonexistent/python3")
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(ValueError, match=r"exit status 3\): broken"):
        ensure_importable(["json"], python=str(fake))


def test_nothing_to_check_runs_no_probe():
    ensure_importable(None, python="/nonexistent/python3")
    ensure_importable(["*"], python="/nonexistent/python3")
