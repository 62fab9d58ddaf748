"""executors.base.after_tool_reply: a host tool's work left for after its reply has gone back to the
worker (a durable run's log line) runs before the step's next message is read, so before the next
tool call, and where it is not offered (in process) it is refused and done at once."""

from __future__ import annotations

from executors.base import after_tool_reply, replying
from executors.local import LocalExecutor
from executors.process import SubprocessExecutor


def _tools(seen: list[str]):
    def first() -> int:
        offered = after_tool_reply(lambda: seen.append("first: after its reply"))
        seen.append(f"first (offered: {offered})")
        return 1

    def second() -> int:
        seen.append("second")
        return 2

    return {"first": first, "second": second}


def test_the_worker_runs_the_work_after_the_reply_and_before_the_next_call():
    seen: list[str] = []
    with SubprocessExecutor(tools=_tools(seen)) as ex:
        result = ex.execute("x = first() + second()\nprint(x)")
    assert result.error is None and result.logs.strip() == "3"
    assert seen == ["first (offered: True)", "first: after its reply", "second"]


def test_in_process_it_is_not_offered():
    seen: list[str] = []
    with LocalExecutor(tools=_tools(seen)) as ex:
        result = ex.execute("x = first() + second()\nprint(x)")
    assert result.error is None
    assert seen == ["first (offered: False)", "second"]


def test_work_added_after_the_reply_has_run_is_refused():
    with replying() as after:
        assert after_tool_reply(lambda: None)
    after.run()
    assert after.add(lambda: None) is False  # (a tool that outlived its deadline: it does the work itself)
    assert after_tool_reply(lambda: None) is False  # (outside any reply)
