"""ExecutorPool: a ready executor per session, recycled per policy, nothing passed between users.

The policy's logic runs against fake executors (no process, no timing); what a user relies on from
the real worker (no variable, file or process of one session seen by the next; nothing left after
close) against SubprocessExecutor.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from executors import SubprocessExecutor
from executors.base import ExecutorError
from executors.remote.pool import ExecutorPool


class Fake:
    made = 0

    def __init__(self, fail_start: bool = False) -> None:
        Fake.made += 1
        self.number = Fake.made
        self.fail_start = fail_start
        self.started = self.closed = False
        self.resets = 0

    def start(self) -> None:
        if self.fail_start:
            raise OSError("no worker for you")
        self.started = True

    def reset(self) -> None:
        self.resets += 1

    def close(self) -> None:
        self.closed = True


def _settle(pool: ExecutorPool, ready: int) -> None:
    """Waits (bounded) until `ready` executors are free: replacements start in the background."""
    deadline = time.monotonic() + 30
    while pool.ready < ready and time.monotonic() < deadline:
        time.sleep(0.005)
    assert pool.ready == ready


def test_fresh_hands_each_session_an_executor_never_used_and_destroys_the_used_one():
    made: list[Fake] = []
    pool = ExecutorPool(lambda: made.append(Fake()) or made[-1], 2)
    with pool:
        seen = []
        for _ in range(5):
            with pool.acquire() as ex:
                assert ex.started and not ex.closed and ex.resets == 0
                seen.append(ex)
            _settle(pool, 2)
        assert len({id(ex) for ex in seen}) == 5
        assert all(ex.closed for ex in seen)
        assert len(pool) == 2  # replaced one for one
    assert all(ex.closed for ex in made)


def test_reset_reuses_and_max_uses_replaces():
    made: list[Fake] = []
    with ExecutorPool(lambda: made.append(Fake()) or made[-1], 1, recycle="reset", max_uses=3) as pool:
        used = []
        for _ in range(4):
            with pool.acquire() as ex:
                used.append(ex)
            _settle(pool, 1)
        assert used[0] is used[1] is used[2] and used[3] is not used[0]
        assert used[0].resets == 2 and used[0].closed  # reset twice, destroyed after the third
    assert all(ex.closed for ex in made)


def test_bad_policy_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="fresh"):
        ExecutorPool(Fake, 1, recycle="sometimes")
    with pytest.raises(ValueError, match="max_uses"):
        ExecutorPool(Fake, 1, recycle="reset", max_uses=0)


def test_a_replacement_that_cannot_start_is_reported_not_waited_for():
    calls = [0]

    def factory() -> Fake:
        calls[0] += 1
        return Fake(fail_start=calls[0] > 1)

    with ExecutorPool(factory, 1) as pool:
        with pool.acquire():
            pass
        with pytest.raises(ExecutorError, match="no worker for you"):
            with pool.acquire(timeout=30):
                pass


def test_close_while_a_session_runs_destroys_it_on_release_and_starts_nothing():
    made: list[Fake] = []
    pool = ExecutorPool(lambda: made.append(Fake()) or made[-1], 2).start()
    with pool.acquire() as ex:
        pool.close()
    assert ex.closed and all(e.closed for e in made) and len(made) == 2
    with pytest.raises(ExecutorError, match="closed"):
        with pool.acquire():
            pass


def test_async_sessions_get_fresh_executors_too():
    made: list[Fake] = []

    async def main(pool: ExecutorPool) -> list[int]:
        async def use() -> int:
            async with pool.aacquire(timeout=30) as ex:
                await asyncio.sleep(0)
                return ex.number

        return await asyncio.gather(*(use() for _ in range(6)))

    with ExecutorPool(lambda: made.append(Fake()) or made[-1], 2) as pool:
        numbers = asyncio.run(main(pool))
    assert len(set(numbers)) == 6 and all(ex.closed for ex in made)


# -- the real worker ------------------------------------------------------------------------------
PROBE = """
try:
    print("left:", secret)
except NameError:
    print("clean")
secret = TOKEN
"""


def test_no_state_passes_between_sessions_of_a_subprocess_pool():
    """A variable, a file in the workdir, the worker itself: none of one session is the next's."""
    with SubprocessExecutor.pool(2, authorized_imports=["pathlib"]) as pool:
        workers, workdirs = [], []
        for token in range(4):
            with pool.acquire(timeout=60) as ex:
                r = ex.execute(PROBE.replace("TOKEN", str(token)))
                assert r.error is None and r.logs.strip() == "clean", (r.logs, r.error)
                listing = ex.execute("import pathlib\nsorted(p.name for p in pathlib.Path('.').iterdir())")
                assert listing.output == [], listing
                wrote = ex.execute(f"pathlib.Path('note.txt').write_text('{token}')")
                assert wrote.error is None, wrote.error
                workers.append(ex._link.handle.proc.pid)
                workdirs.append(ex.access.workdir)
        assert len(set(workers)) == 4 and len(set(workdirs)) == 4
    for pid, workdir in zip(workers, workdirs, strict=True):
        assert not Path(workdir).exists()
        assert not _alive(pid)


def test_a_session_that_timed_out_hands_the_next_user_a_clean_worker():
    from executors import Limits

    with SubprocessExecutor.pool(1, limits=Limits(timeout_s=1)) as pool:
        with pool.acquire(timeout=60) as ex:
            ex.execute("secret = 1")
            assert ex.execute("while True:\n    pass").error.type == "TimeoutError"
        with pool.acquire(timeout=60) as ex:
            assert ex.execute("secret").error.type == "NameError"


def test_pool_threads_end_with_the_pool():
    before = {t.ident for t in threading.enumerate()}
    with ExecutorPool(Fake, 2) as pool:
        for _ in range(3):
            with pool.acquire():
                pass
    left = [t for t in threading.enumerate() if t.ident not in before and t.name == "codeagent-pool-refill"]
    assert left == []


def _alive(pid: int) -> bool:
    """Running (a zombie not yet reaped by the zygote counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False

