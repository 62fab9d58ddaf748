"""Single-call mode: one tool call per turn, for models too weak to write a whole action block.

The model replies with one line of Python, a call of one known tool (or `final_answer`) whose
arguments are literals. After the parser has stripped tags, fences and reasoning, `ast` checks that
shape; anything else comes back to the model as a short lesson, not as a crash. Several calls in one
reply run only if every one of them is in the agent's `bundleable` set (read-only lookups, say),
and the call the model made in the previous step is refused if it comes again unchanged (same tool,
same arguments once bound to the signature and evaluated, so quoting and keyword spelling do not
matter). The loop, the executor, the events and the RunResult are CodeAgent's.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .agent import PROMPTS_DIR, ActionRefused, CodeAgent
from .tools import Tool

__all__ = ["SingleCallAgent", "ParsedCall", "check_single_call", "call_fingerprint"]

FINAL_ANSWER = "final_answer"


@dataclass(frozen=True)
class ParsedCall:
    name: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    source: str  # the call, re-spelled canonically by ast.unparse


def _example(tools: Mapping[str, Tool], name: str | None = None) -> str:
    """A call the model can copy: the tool with its parameters as keyword placeholders."""
    tool = tools.get(name) if name else next(iter(tools.values()), None)
    if tool is None:
        return 'final_answer("...")'
    params = [p.name for p in tool.signature.parameters.values() if p.default is p.empty
              and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return f'{tool.name}({", ".join(f"{p}=..." for p in params)})'


def render_tool_line(tool: Tool) -> str:
    """One line per tool: the call signature and the first line of its doc (no `def` to copy)."""
    doc = (tool.description or "").strip().splitlines()
    return f"{tool.signature_text()}  # {doc[0]}" if doc else tool.signature_text()


def _names(tools: Mapping[str, Tool]) -> str:
    return ", ".join([*tools, FINAL_ANSWER])


def _literal(node: ast.expr) -> Any:
    return ast.literal_eval(node)


def check_single_call(code: str, tools: Mapping[str, Tool], bundleable: Iterable[str] = ()) -> list[ParsedCall]:
    """The calls in `code` if it is one allowed call (or an allowed bundle); else ActionRefused.

    Every message is written for the model: what is wrong, and the line it should send instead.
    """
    bundleable = frozenset(bundleable)
    example = _example(tools)
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ActionRefused(
            "invalid_action",
            f"Your line is not valid Python ({exc.msg}). Reply with one tool call on one line, like {example}.",
        ) from None
    if not tree.body:
        raise ActionRefused("invalid_action", f"Your reply has no call. Reply with one tool call, like {example}.")
    calls: list[ParsedCall] = []
    for stmt in tree.body:
        calls.append(_check_statement(stmt, tools, example))
    if len(calls) > 1:
        outside = sorted({c.name for c in calls if c.name not in bundleable})
        if outside:
            allowed = (
                f" Only these tools may be combined in one reply: {', '.join(sorted(bundleable))}."
                if bundleable else ""
            )
            raise ActionRefused(
                "invalid_action",
                f"Your reply has {len(calls)} calls; make exactly one call per reply "
                f"({', '.join(outside)} cannot be combined with other calls).{allowed} "
                f"Send the first call alone now: {calls[0].source}",
            )
    return calls


def _check_statement(stmt: ast.stmt, tools: Mapping[str, Tool], example: str) -> ParsedCall:
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and isinstance(stmt.value, ast.Call):
        call_text = ast.unparse(stmt.value)
        raise ActionRefused(
            "invalid_action",
            f"Do not assign the result to a variable: there are no variables in this mode. Write just the "
            f"call, {call_text}, and its result will be shown to you.",
        )
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        known = stmt.name if stmt.name in tools else None
        raise ActionRefused(
            "invalid_action",
            f"Do not define functions: the tools already exist. Call one, like {_example(tools, known)}, "
            "with the values written out.",
        )
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        raise ActionRefused(
            "invalid_action",
            f"Reply with exactly one tool call on one line, like {example}. Assignments, loops, imports "
            f"and other statements are not available in this mode. Tools: {_names(tools)}.",
        )
    call = stmt.value
    func = call.func
    name = func.id if isinstance(func, ast.Name) else ast.unparse(func)
    if name not in tools and name != FINAL_ANSWER:
        inner = [a for a in call.args if isinstance(a, ast.Call)]
        close = _closest_tool(name, tools)
        if name == "print" and len(inner) == 1:
            hint = f" Write just {ast.unparse(inner[0])}: its result is shown to you without print."
        elif close:
            hint = f" Did you mean {_example(tools, close)}?"
        else:
            hint = ""
        raise ActionRefused(
            "invalid_action", f"`{name}` is not a tool you can call.{hint} The tools are: {_names(tools)}."
        )
    args: list[Any] = []
    for i, node in enumerate(call.args, 1):
        if isinstance(node, ast.Starred):
            raise ActionRefused("invalid_action", f"Write the arguments of {name}() one by one, without *.")
        args.append(_literal_argument(name, f"argument {i}", node))
    kwargs: list[tuple[str, Any]] = []
    for kw in call.keywords:
        if kw.arg is None:
            raise ActionRefused("invalid_action", f"Write the arguments of {name}() one by one, without **.")
        kwargs.append((kw.arg, _literal_argument(name, f"argument {kw.arg}=", kw.value)))
    return ParsedCall(name=name, args=tuple(args), kwargs=tuple(kwargs), source=ast.unparse(call))


def _closest_tool(name: str, tools: Mapping[str, Tool]) -> str | None:
    """The tool a misspelled or shortened name most likely meant (`capital` -> `capital_of`)."""
    names = [*tools, FINAL_ANSWER]
    found = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if found:
        return found[0]
    prefixed = [n for n in names if name and (n.startswith(name) or name.startswith(n))]
    return prefixed[0] if len(prefixed) == 1 else None


# `tool(country: "Japan")`: weak models copy the signature's colon into the call.
_COLON_KWARG = re.compile(r"\b([A-Za-z_]\w*)\s*\(([^()\n]*\b[A-Za-z_]\w*\s*:[^()\n]*)\)")
_COLON = re.compile(r"\b([A-Za-z_]\w*)\s*:\s*")


def colon_call_fix(text: str, tools: Mapping[str, Tool]) -> str | None:
    """`tool(key: value)` in `text`, rewritten as a valid call of a known tool, else None."""
    # short lines only: the pattern backtracks, and a call is one short line anyway
    lines = [line for line in text.splitlines()[:50] if len(line) <= 300]
    for m in (m for line in lines for m in _COLON_KWARG.finditer(line)):
        name = m.group(1) if m.group(1) in tools or m.group(1) == FINAL_ANSWER else _closest_tool(m.group(1), tools)
        if name is None:
            continue
        fixed = f"{name}({_COLON.sub(lambda k: k.group(1) + '=', m.group(2))})"
        try:
            check_single_call(fixed, tools)
        except ActionRefused:
            continue
        return fixed
    return None


def _literal_argument(name: str, where: str, node: ast.expr) -> Any:
    try:
        return _literal(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ActionRefused(
            "invalid_action",
            f"The {where} of {name}() is `{ast.unparse(node)}`, which is not a literal value. There are no "
            "variables or expressions in this mode: write the value itself (a number, a string in quotes, "
            "a list), copied from an earlier observation.",
        ) from None


def call_fingerprint(call: ParsedCall, tools: Mapping[str, Tool]) -> str:
    """Tool name + arguments bound to the signature, as canonical JSON (quotes/keywords don't matter)."""
    arguments: Any = {"args": list(call.args), "kwargs": dict(call.kwargs)}
    tool = tools.get(call.name)
    if tool is not None:
        try:
            bound = tool.signature.bind(*call.args, **dict(call.kwargs))
            bound.apply_defaults()
            arguments = dict(bound.arguments)
        except TypeError:
            pass  # the call itself will fail with the tool's own message
    return json.dumps([call.name, arguments], sort_keys=True, default=repr)


class SingleCallAgent(CodeAgent):
    """CodeAgent in single-call mode: one literal tool call per turn (RA.Aid's CIAYN style).

    bundleable: tool names (read-only lookups, say) that may come several to a reply; their results
        come back together, keyed by the call. Any other tool must be called alone.
    Everything else (model, tools, executor, max_steps, limits, events, RunResult) is CodeAgent's.
    """

    refuse_repeated_code = False  # only an immediate repeat is refused, by the check below

    def __init__(
        self,
        model: Any,
        tools: Iterable[Any] | Mapping[str, Any] = (),
        executor: Any = None,
        max_steps: int = 10,
        *,
        bundleable: Iterable[str] = (),
        **options: Any,
    ) -> None:
        if options.get("system_prompt_template") is None:
            options["system_prompt_template"] = (PROMPTS_DIR / "single_call.md").read_text(encoding="utf-8")
        super().__init__(model, tools, executor, max_steps, **options)
        self.bundleable = frozenset(bundleable)
        unknown = sorted(self.bundleable - set(self.tools) - {FINAL_ANSWER})
        if unknown:
            raise ValueError(f"bundleable names unknown tools: {', '.join(unknown)}")
        # Tools as one-line call signatures, not CodeAgent's `def` stubs: weak models copy the stubs.
        lines = "\n".join(render_tool_line(t) for t in self.tools.values()) or "# (no tools besides final_answer)"
        self._template = self._template.replace("{{tools}}", lines)

    def system_prompt(self) -> str:
        text = super().system_prompt()
        if self.bundleable:
            rule = (
                "These tools may be called several at once, one call per line: "
                + ", ".join(sorted(self.bundleable)) + "."
            )
        else:
            rule = "Call final_answer(...) as soon as you have the answer."
        return text.replace("{{bundleable}}", rule)

    def _parse_lesson(self, exc: Exception) -> str:
        """The parser's lesson shows a whole code block; in this mode the model must send one call."""
        open_tag, close_tag = self.code_tags
        lesson = (
            "I could not find a tool call in your reply. Reply with one line: a single call of one tool, "
            f"like {open_tag}{_example(self.tools)}{close_tag}, with the values written out."
        )
        fixed = colon_call_fix(str(getattr(exc, "reply", "") or ""), self.tools)
        if fixed:
            return (
                "Your call is not valid Python: keyword arguments take =, not :. "
                f"Reply exactly: {open_tag}{fixed}{close_tag}"
            )
        suggestion = getattr(exc, "suggestion", None)
        if suggestion:
            return f"{lesson} If you already have the answer, reply {open_tag}{suggestion}{close_tag}."
        return f"{lesson} If you already know the answer, reply {open_tag}final_answer(\"your answer\"){close_tag}."

    def _prepare_action(self, code: str, run: Any) -> str:
        calls = check_single_call(code, self.tools, self.bundleable)
        fingerprint = "\n".join(call_fingerprint(c, self.tools) for c in calls)
        previous = getattr(run, "single_call_previous", None)
        if fingerprint == previous:
            shown = "; ".join(c.source for c in calls)
            raise ActionRefused(
                "repeated_action",
                f"You made this exact call ({shown}) in your previous step and its result is above; it was "
                "not run again. Try something different: another tool, other arguments, or "
                "final_answer(...) with what you know.",
            )
        run.single_call_previous = fingerprint
        if len(calls) == 1:
            return calls[0].source
        # A bundle: one dict of results keyed by each call, so every result is shown, in order.
        items = ", ".join(f"{c.source!r}: {c.source}" for c in calls)
        return "{" + items + "}"
