"""How one deferred-escape attempt runs in each mode, on the runner's side of
tests/deferred_escape_harness.py: PlainSession (CPython, one dict namespace, the real tools),
ExecutorSession (an executor of a sandboxed mode, shared by a group of attempts, reset between
them; run_agent drives it through a CodeAgent), RuntimeEmulation (what the executors' runtime does
around a step, done the same way in plain CPython), and the process probes the canaries read
(threads of this process and its worker, descriptors into the workdir).
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import sys
from pathlib import Path
from typing import Any

import library_escape_harness as base
from deferred_host import HostContext, plain, safe_text

STEP_TIMEOUT_S = 20.0  # cold pandas/matplotlib imports on a loaded 2-core machine take seconds
CRASH_ERRORS = ("WorkerCrashed", "ExecutorInternalError", "ExecutorError", "InternalError")


class RuntimeEmulation:
    """In plain CPython, what a naive runtime does around a step, so the attempts that aim at the
    runtime's own operations prove their payload real (the executors' runtime must not do it so):
      runtime:restore:CLASS  a host-object restore that compares the class's containers with
                             their snapshot by `==` (a model object inside runs its __eq__)
      runtime:settings       a library-settings restore that compares snapshots by `==`
      runtime:audit_hook     an audit hook that reads an opened path with the path's own methods
                             (`os.fspath`, `in`, `startswith`, str() of it)
    The executors run their own restores and hook: there the action does nothing."""

    def __init__(self, actions: list[str]) -> None:
        self.actions = [a for a in actions if a.startswith("runtime:")]
        self.snapshots: dict[str, list[tuple[Any, Any]]] = {}
        self.settings: list[tuple[Any, Any, Any]] = []
        self.hooking = False

    def before(self) -> None:
        import importlib

        from executors.restricted.libraries import state as library_state

        for action in self.actions:
            what, _, arg = action.removeprefix("runtime:").partition(":")
            if what == "restore":
                module, _, name = arg.rpartition(".")
                klass = getattr(importlib.import_module(module), name)
                self.snapshots[action] = [
                    (item, type(item)(item)) for c in klass.__mro__ if c is not object
                    for item in vars(c).values() if type(item) in (list, dict, set)]
            elif what == "settings":
                for setting in library_state.SETTINGS:
                    module = sys.modules.get(setting.module)
                    with contextlib.suppress(Exception):
                        self.settings.append((setting, module, setting.snapshot(module)))
            elif what == "audit_hook":
                import os

                def naive_path(value: Any) -> str:
                    path = os.fsdecode(os.fspath(value))
                    if "\x00" in path or str(path).startswith("\x00"):
                        return ""
                    return os.path.realpath(os.path.join(os.getcwd(), path))

                def hook(event: str, args: tuple) -> None:
                    if self.hooking and event == "open" and args and not isinstance(args[0], int):
                        self.hooking = False  # what the path's methods open is not judged again
                        try:
                            naive_path(args[0])
                        except Exception:  # noqa: BLE001 - a path the naive hook cannot read
                            pass
                        finally:
                            self.hooking = True

                sys.addaudithook(hook)

    def run(self, action: str) -> None:
        if action in self.snapshots:
            for container, saved in self.snapshots[action]:
                with contextlib.suppress(Exception):
                    bool(container != saved)  # (what a naive restore asks first)
        elif action == "runtime:settings":
            for setting, module, saved in self.settings:
                with contextlib.suppress(Exception):
                    bool(setting.snapshot(module) == saved)


class FinalSignal(BaseException):
    """Ends a plain step at final_answer(...), as FinalAnswer ends a real one."""


class PlainSession(HostContext):
    """CPython without a sandbox: one dict namespace, the real tools, the real values."""

    def __init__(self, tools: dict[str, Any], host: dict[str, Any], emulation: RuntimeEmulation) -> None:
        self.tools, self.host, self.outputs, self.emulation = tools, host, [], emulation
        self._fresh()

    def _fresh(self) -> None:
        # A new namespace: the old one lives on in what still refers to it (a suspended
        # generator's frame), as the executors' retired namespaces do.
        self.ns: dict[str, Any] = {"__name__": "__main__", **self.tools, "final_answer": self._final}
        self.final: list[Any] = []

    def _final(self, value: Any) -> None:
        self.final.append(value)
        raise FinalSignal()

    def execute(self, code: str) -> dict:
        logs = io.StringIO()
        self.final = []
        self.emulation.hooking = True
        try:
            value, err = base.plain_exec(code, logs, ns=self.ns)
        finally:
            self.emulation.hooking = False
        if self.final:
            value, err = self.final[-1], None
        self.outputs.append(value)
        return {"logs": logs.getvalue(), "output_text": safe_text(value),
                "error": f"{err['type']}: {err['message']}" if err else "", "error_type": (err or {}).get("type")}

    def variable(self, name: str) -> Any:
        return self.ns[name]

    def variables_text(self) -> list[str]:
        return [safe_text(v) for k, v in list(self.ns.items()) if not k.startswith("__") and k not in self.tools]

    def set_variables(self, values: dict[str, Any]) -> None:
        self.ns.update(values)

    def probe(self, code: str) -> str:
        value, err = base.plain_exec(code, io.StringIO())
        return repr(value) if err is None else f"<probe error {err['type']}>"

    def reset(self) -> None:
        self._fresh()

    def runtime(self, what: str) -> None:
        self.emulation.run("runtime:" + what)

    def pids(self) -> list[int]:
        return [os.getpid()]

    def close(self) -> None:
        self._fresh()
        gc.collect()


def make_executor(mode: str, imports: list[str]) -> Any:
    from executors import Limits, LocalExecutor, SubprocessExecutor

    limits = Limits(timeout_s=STEP_TIMEOUT_S)
    if mode == "local":
        return LocalExecutor(authorized_imports=imports, limits=limits)
    return SubprocessExecutor(authorized_imports=imports, limits=limits, harden=mode == "subprocess",
                              unconfined_native=mode != "subprocess")


class ExecutorSession(HostContext):
    """One attempt on an executor of a sandboxed mode (shared by a group of attempts, reset
    between them), with this attempt's tools registered."""

    def __init__(self, ex: Any, mode: str, tools: dict[str, Any], host: dict[str, Any]) -> None:
        self.ex = ex
        ex.register_tools(tools)
        self.mode, self.host, self.outputs, self.closed = mode, host, [], False
        self.in_process = mode == "local"

    @property
    def workdir(self) -> str:
        return str(getattr(self.ex, "workdir", None) or getattr(self.ex, "cwd", None) or "")

    def execute(self, code: str) -> dict:
        r = self.ex.execute(code)
        self.outputs.append(r.output)
        err = r.error
        return {"logs": r.logs, "output_repr": r.output_repr or "", "output_text": safe_text(r.output),
                "error": f"{err.type}: {err.message}" if err else "", "error_type": err.type if err else None,
                "plain": plain(r.output)}

    def run_agent(self, steps: list[str]) -> dict:
        """The steps as the replies of a scripted model, run by a CodeAgent on this executor: what
        the host then holds is the RunResult's output; what the run showed is its events."""
        from codeagent import CodeAgent, ScriptedModel
        from codeagent.events import RunEnd

        agent = CodeAgent(ScriptedModel([f"```python\n{code}```" for code in steps]), executor=self.ex,
                          max_steps=len(steps))
        lines, result = [], None
        for event in agent.stream("Answer the question."):
            lines.append(event.to_json())  # the NDJSON a host logs
            if isinstance(event, RunEnd):
                result = event.result
        self.outputs.append(result.output if result is not None else None)
        lines.append(repr(result))
        logs = "\n".join(lines)
        crashed = next((e for e in CRASH_ERRORS if e in logs), None)  # the executor failed under the run
        return {"logs": logs, "output_text": safe_text(self.outputs[-1]), "error_type": crashed,
                "error": "" if result is None or result.error is None else str(result.error),
                "plain": plain(self.outputs[-1])}

    def variable(self, name: str) -> Any:
        if self.closed:
            raise KeyError(name)
        return self.ex.get_variables([name])[name]

    def variables_text(self) -> list[str]:
        if self.closed:
            return []
        return [safe_text(k) + "=" + safe_text(v) for k, v in self.ex.get_variables().items()]

    def set_variables(self, values: dict[str, Any]) -> None:
        self.ex.set_variables(values)

    def probe(self, code: str) -> str:
        if self.in_process:
            return PlainSession.probe(self, code)  # type: ignore[arg-type]
        self.ex.reset()
        r = self.ex.execute(code)
        return (r.output_repr or repr(r.output)) if r.error is None else f"<probe error {r.error.type}>"

    def reset(self) -> None:
        self.ex.reset()

    def runtime(self, what: str) -> None:
        pass  # the executor's runtime does it itself

    def pids(self) -> list[int]:
        return [os.getpid(), *descendants(os.getpid())]

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.ex.close()
            self.ex = None  # the host lets go of it: what it still holds is collected


def descendants(pid: int) -> list[int]:
    """Processes below `pid` (the worker of a SubprocessExecutor), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def descriptors_into(folder: str) -> int:
    """Descriptors of this process open on files in `folder` (the step's workdir)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            count += os.readlink(f"/proc/self/fd/{fd}").startswith(folder.rstrip("/") + "/")
    return count


def thread_count(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            total += len(os.listdir(f"/proc/{pid}/task"))
    return total
