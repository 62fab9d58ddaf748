"""A durable run in a process of its own, for tests/test_durable.py: killed with SIGKILL at a
chosen point, then resumed (or approved) in a new process.

    python durable_child.py run|resume|approve|reject RECORD_DIR COUNTER_FILE [KILL_AT] [EXECUTOR]

KILL_AT: model (waiting for the model's third reply), tool (inside the second counted call, before
its effect), step (in a step's code, after its tool call returned), write (in the middle of the
sixth line written to the record's log: a torn line), none. The model answers by the step it is
asked for (its replies are fixed per step), so a resumed run gets the same replies.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

from codeagent import CodeAgent, tool
from codeagent.models.replies import ModelReply
from executors import LocalExecutor

REPLIES = [
    "<code>\nimport random\na = count('a')\nr = random.randint(0, 10**6)\nprint(a, r)\n</code>",
    "<code>\nimport time\nb = count('b')\ntime.sleep(mark())\nprint(b)\n</code>",
    "<code>\nsent = send('report')\nc = count('c')\nprint(a + b + c, sent)\n</code>",
    "<code>\nfinal_answer([a, b, c, r, sent])\n</code>",
]


def kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class StepModel:
    """Replies by the step asked for (the number of assistant turns so far), like a model that
    answers the same conversation the same way; `kill_at_step`: die when asked for that step."""

    model_id = "step-model"

    def __init__(self, kill_at_step: int | None = None) -> None:
        self.kill_at_step = kill_at_step

    def complete(self, messages, stop=None, **options):
        step = sum(m["role"] == "assistant" for m in messages) + 1
        if step == self.kill_at_step:
            kill()
        return ModelReply(text=REPLIES[step - 1])


def main() -> None:
    mode, record_dir, counter = sys.argv[1], Path(sys.argv[2]).absolute(), Path(sys.argv[3]).absolute()
    kill_at = sys.argv[4] if len(sys.argv) > 4 and mode == "run" else "none"
    place = sys.argv[5] if len(sys.argv) > 5 else "local"

    @tool
    def count(name: str) -> int:
        """Count one call (appended to a file); the number of calls so far."""
        if kill_at == "tool" and name == "b":
            kill()
        with counter.open("a") as f:
            f.write(name + "\n")
        return len(counter.read_text().splitlines())

    @tool
    def mark() -> float:
        """Seconds to sleep (the step is killed while it sleeps)."""
        if kill_at == "step":
            threading.Timer(0.2, kill).start()
            return 2.0
        return 0.0

    @tool(approval=os.environ.get("DURABLE_APPROVAL") == "1")
    def send(to: str) -> str:
        """Send the report (needs approval when DURABLE_APPROVAL=1)."""
        with counter.open("a") as f:
            f.write("send\n")
        return f"sent to {to}"

    if kill_at == "write":  # the sixth line of the record's log is cut in the middle by the kill
        import codeagent.runs.record_file as record_file

        real, writes = record_file._write, [0]

        def write(fd, data):
            writes[0] += 1
            if writes[0] == 6:
                real(fd, data[: len(data) // 2])
                kill()
            return real(fd, data)

        record_file._write = write
    if place == "local":
        executor = LocalExecutor(authorized_imports=["random", "time"])
    else:
        from executors.process import SubprocessExecutor

        executor = SubprocessExecutor(authorized_imports=["random", "time"])
    model = StepModel(3 if kill_at == "model" else None)
    with executor, CodeAgent(model, tools=[count, mark, send], executor=executor, record_dir=record_dir) as agent:
        if mode == "run":
            result = agent.run("count three times")
        else:
            [path] = [p for p in record_dir.glob("*.json")]
            options = {"approve": mode == "approve", "message": "not to that address"} if mode != "resume" else {}
            if mode == "approve":
                options.pop("message")
            result = agent.resume(path, **options)
    print(result.status, result.output)


if __name__ == "__main__":
    main()


class KilledOnce(StepModel):
    """Kills its process when asked for step 3, the first time only (a marker file says so)."""

    def __init__(self, marker: Path) -> None:
        super().__init__(3 if not marker.exists() else None)
        self.marker = marker

    def complete(self, messages, stop=None, **options):
        if sum(m["role"] == "assistant" for m in messages) + 1 == self.kill_at_step:
            self.marker.touch()
        return super().complete(messages, stop, **options)


def batch_agent(task, executor=None):
    """A batch's agent factory: the run's process is killed at step 3 the first time."""
    where = Path(task.meta["dir"])
    counter = where / "counter"

    @tool
    def count(name: str) -> int:
        """Count one call."""
        with counter.open("a") as f:
            f.write(name + "\n")
        return len(counter.read_text().splitlines())

    @tool
    def mark() -> float:
        """No sleep."""
        return 0.0

    @tool
    def send(to: str) -> str:
        """Send."""
        with counter.open("a") as f:
            f.write("send\n")
        return f"sent to {to}"

    return CodeAgent(KilledOnce(where / "killed"), tools=[count, mark, send],
                     executor=LocalExecutor(authorized_imports=["random", "time"]))
