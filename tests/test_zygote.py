"""Workers forked from the zygote are the workers SubprocessExecutor would start directly.

A forked worker must not carry anything of the zygote's or of another worker's (descriptors,
environment, directory), must report how it ended, and a zygote that dies must take its workers
with it and be replaced.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

import pytest

from executors import SubprocessExecutor
from executors.process import zygote as zygotes
from executors.process.zygote import ZygoteChild


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return int(f.read().rsplit(b")", 1)[1].split()[1])


def _worker(ex: SubprocessExecutor):
    return ex._link.handle.proc


def test_a_worker_is_forked_from_the_zygote_and_dies_with_it():
    with SubprocessExecutor(policy="open", harden=False) as ex:
        assert ex.execute("1 + 1").output == 2
        proc = _worker(ex)
        assert isinstance(proc, ZygoteChild)
        zygote_pid = _parent_of(proc.pid)
        assert zygote_pid not in (os.getpid(), proc.pid)
        os.kill(zygote_pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is not None  # its death signal
        r = ex.execute("2 + 2")  # the executor notices, restarts (a new zygote), says so
        assert r.output == 4 or (r.error is not None and r.state_lost)
        assert ex.execute("3 + 3").output == 6
        assert _parent_of(_worker(ex).pid) != zygote_pid


def test_a_forked_worker_has_its_own_environment_directory_and_descriptors(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEAGENT_TEST_SECRET", "host only")
    code = ("import os\n[os.getcwd(), os.environ.get('HOME'), os.environ.get('EXTRA'),"
            " os.environ.get('CODEAGENT_TEST_SECRET'), sorted(os.listdir('/proc/self/fd'))]")
    seen = {}
    for use in (True, False):
        monkeypatch.setattr(SubprocessExecutor, "zygote", use)
        with SubprocessExecutor(policy="open", harden=False, env={"EXTRA": "1"}) as other, \
                SubprocessExecutor(policy="open", harden=False, env={"EXTRA": "1"}) as ex:
            other.execute("x = 1")  # another live worker: none of its pipes may leak into this one
            assert isinstance(_worker(ex), ZygoteChild) is use
            cwd, home, extra, secret, fds = ex.execute(code).output
            assert cwd == ex.cwd and home == ex.cwd and extra == "1" and secret is None
            seen[use] = len(fds)
    assert seen[True] == seen[False], seen  # the same descriptors as a worker started directly


def test_how_a_forked_worker_ended_is_reported():
    with SubprocessExecutor(policy="open", harden=False) as ex:
        ex.execute("x = 1")
        handle = ex._link.handle
        os.kill(handle.proc.pid, signal.SIGKILL)
        assert handle.proc.wait(timeout=10) == -signal.SIGKILL  # as the zygote reaped it
        assert "killed by signal SIGKILL" in handle.exit_description()
        r = ex.execute("x")  # replaced before the step: the state is gone, and it says so
        assert r.state_lost and r.error is not None and r.error.type == "NameError"
        assert ex.execute("1").output == 1


def test_without_a_zygote_workers_start_directly(monkeypatch):
    monkeypatch.setattr(SubprocessExecutor, "zygote", False)
    with SubprocessExecutor(policy="open", harden=False) as ex:
        assert ex.execute("1").output == 1
        assert isinstance(_worker(ex), subprocess.Popen)


def test_a_zygote_that_cannot_start_falls_back(monkeypatch):
    def broken(*args, **kwargs):
        raise zygotes.ZygoteUnavailable("the test broke it")

    monkeypatch.setattr("executors.process.executor.zygote_for", broken)
    with SubprocessExecutor(policy="open", harden=False) as ex:
        assert ex.execute("1").output == 1
        assert isinstance(_worker(ex), subprocess.Popen)


@pytest.mark.parametrize("policy", ["open", "restricted"])
def test_each_policy_has_its_zygote(policy):
    with SubprocessExecutor(policy=policy, harden=False) as a, \
            SubprocessExecutor(policy=policy, harden=False) as b:
        assert a.execute("1").output == 1 and b.execute("1").output == 1
        assert _parent_of(_worker(a).pid) == _parent_of(_worker(b).pid)


def test_a_zygote_that_does_not_answer_is_replaced(monkeypatch):
    """A stuck zygote costs one start its timeout (that start goes direct); the next start gets a
    fresh zygote instead of waiting on the stuck one again."""
    with SubprocessExecutor(policy="open", harden=False) as first:
        assert first.execute("1").output == 1
        # forked by the zygote (never stop a parent that could be this test's own process)
        assert isinstance(_worker(first), ZygoteChild)
        stuck = _parent_of(_worker(first).pid)
    assert stuck != os.getpid()
    # the short timeout only once the zygote is up: a loaded machine may take longer to start one
    default_timeout = zygotes._SPAWN_TIMEOUT_S
    monkeypatch.setattr(zygotes, "_SPAWN_TIMEOUT_S", 0.5)
    os.kill(stuck, signal.SIGSTOP)
    try:
        with SubprocessExecutor(policy="open", harden=False) as direct:
            assert direct.execute("1").output == 1
            assert isinstance(_worker(direct), subprocess.Popen)
        monkeypatch.setattr(zygotes, "_SPAWN_TIMEOUT_S", default_timeout)  # the fresh zygote's start
        with SubprocessExecutor(policy="open", harden=False) as fresh:
            assert fresh.execute("1").output == 1
            assert isinstance(_worker(fresh), ZygoteChild)
            assert _parent_of(_worker(fresh).pid) != stuck
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(stuck, signal.SIGCONT)
