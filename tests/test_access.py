"""Access: the grants object, checked at construction with errors that name the fix."""

from __future__ import annotations

import os
import sys

import pytest

from executors.access import Access, AccessError, Isolation


def test_defaults_give_a_private_workdir_removed_on_cleanup():
    resolved = Access().resolve()
    assert os.path.isdir(resolved.workdir) and resolved.private_workdir
    assert resolved.read == () and resolved.write == () and resolved.network is False
    resolved.cleanup()
    assert not os.path.exists(resolved.workdir)


def test_paths_resolve_against_the_base_and_must_exist(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "out").mkdir()
    resolved = Access(read=["data/"], write="out").resolve(base=str(tmp_path))
    assert resolved.read == (str(tmp_path / "data"),)
    assert resolved.write == (str(tmp_path / "out"),)
    with pytest.raises(AccessError, match="does not exist"):
        Access(read=["nope"]).resolve(base=str(tmp_path))
    resolved.cleanup()


@pytest.mark.parametrize("bad", [42, [None], [""], [3.5]])
def test_bad_values_are_refused_with_the_setting_named(bad):
    with pytest.raises(AccessError, match=r"Access\(read="):
        Access(read=bad)


def test_network_and_require_are_checked():
    with pytest.raises(AccessError, match="network"):
        Access(network="yes")
    with pytest.raises(AccessError, match="require"):
        Access(require="strong")


def test_write_grants_over_host_code_are_refused_unless_forced(tmp_path):
    on_path = os.path.dirname(os.__file__)  # the stdlib: on sys.path
    with pytest.raises(AccessError, match="import path"):
        Access(write=[on_path]).resolve()
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\n")
    with pytest.raises(AccessError, match="pyproject.toml"):
        Access(write=[project]).resolve()
    with pytest.raises(AccessError, match="system or home"):
        Access(workdir="/etc").resolve()
    forced = Access(write=[project], force=True).resolve()
    assert forced.write == (str(project),)
    forced.cleanup()
    assert project.exists()  # only a private workdir is ever removed


def test_overlapping_grants_with_different_modes_are_refused(tmp_path):
    (tmp_path / "d" / "sub").mkdir(parents=True)
    with pytest.raises(AccessError, match="overlap"):
        Access(read=[tmp_path / "d"], write=[tmp_path / "d" / "sub"]).resolve()
    with pytest.raises(AccessError, match="overlap"):
        Access(read=[tmp_path / "d" / "sub"], workdir=tmp_path / "d").resolve()
    same = Access(read=[tmp_path / "d", tmp_path / "d"]).resolve()
    assert same.read == (str(tmp_path / "d"),)
    same.cleanup()


def test_the_listing_for_the_prompt_is_capped(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for i in range(100):
        (data / f"f{i:03}.csv").write_text("x\n")
    resolved = Access(read=[data]).resolve()
    text = resolved.listing(max_entries=10)
    assert "f000.csv" in text and "f099.csv" not in text and "more files" in text
    resolved.cleanup()


def test_isolation_reports_layers():
    iso = Isolation("SubprocessExecutor", {"files": "Landlock ABI 7 + audit hook"}, ())
    assert iso.kernel and "Landlock" in str(iso)
    assert not Isolation("LocalExecutor", {"files": "audit hook"}).kernel
    assert sys.version_info >= (3, 10)


def test_a_shared_private_workdir_avoids_a_tmpdir_other_users_cannot_enter(tmp_path, monkeypatch):
    import tempfile

    private = tmp_path / "private-tmp"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    own = Access().resolve()
    shared = Access().resolve(shared=True)
    try:
        assert own.workdir.startswith(str(private))  # in process: the host's TMPDIR is fine
        assert not shared.workdir.startswith(str(private)) and shared.workdir.startswith("/tmp/")
    finally:
        own.cleanup()
        shared.cleanup()
