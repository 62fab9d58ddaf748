"""Action formats: how a CodeAgent's model writes its action, and what the agent accepts.

A format turns a reply into code (`extract`: parse, then the final-answer fix), vets the code before
it runs (`vet`: raise `ActionRefused` to refuse it), says what the model is told when no code was
found (`lesson`) and fills its part of the system prompt. Two formats:

- `CodeBlock` (the default): a whole Python block between the code tags; an action that already
  ran in this run is refused (its result is above).
- `SingleCall`: for models too weak to write a whole block, one line of Python, a call of one known
  tool (or `final_answer`) whose arguments are literals. After the parser has stripped tags, fences
  and reasoning, `ast` checks that shape; anything else comes back to the model as a short lesson.
  Several calls in one reply run only if every one of them is in `bundleable` (read-only lookups,
  say), and the call made in the previous step is refused if it comes again unchanged (same tool,
  same arguments once bound to the signature and evaluated, so quoting and keyword spelling do not
  matter).

A format object given to an agent is bound to its tools and tags (`bind` returns a copy), and keeps
per-run state (what already ran) that `start_run` clears: one agent runs one task at a time.

Constrained decoding (`codeagent.models.constrain`): when the model can constrain its output, the agent
tells the format which kind at the start of a run (`use_constraint("grammar" | "schema" | None)`)
and sends `constraint()` with every request. CodeBlock: a grammar for "Thought, then one code block",
or the JSON `{"thought", "code"}` turned back into that text before the parser. SingleCall: a grammar
for one call in its own `<code>name(k=v)</code>` format (never the call that just ran), or a JSON
`oneOf` per tool read by the parser's JSON tier, with its own prompt. Either way the reply still goes
through the parser, the vetting and the executor's policy: a constraint the server ignored only
costs a lesson. SingleCall also brings worked examples from the actual tools (`examples`) and a
reminder after each result (`observation_note`).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from executors.base import FINAL_ANSWER_NAME

from ..models.constrain import (
    SCALAR_ANSWER_SCHEMA,
    Constraint,
    code_action_grammar,
    code_action_schema,
    code_action_text,
    fewshot_messages,
    single_call_grammar,
    single_call_schema,
)
from ..parsing import BlockWatch, CodeParseError, fix_final_answer, parse_code
from ..runs.record import ActionRefused, ErrorKind
from ..tools.tool import Tool
from .call_shape import (
    ParsedCall,
    bound_arguments,
    call_fingerprint,
    check_single_call,
    colon_call_fix,
    example_call,
    json_example_call,
    render_tool_line,
    with_note,
)

__all__ = [
    "ActionFormat",
    "CodeBlock",
    "SingleCall",
    "DEFAULT_CODE_TAGS",
    "ParsedCall",
    "check_single_call",
    "call_fingerprint",
    "bound_arguments",
    "colon_call_fix",
    "CONSTRAINT_KINDS",
    "normalize_code",
    "render_tool_line",
]

DEFAULT_CODE_TAGS = ("<code>", "</code>")
NO_TOOLS = "# (no tools besides final_answer)"
CONSTRAINT_KINDS = (None, "grammar", "schema")
# How the agent spells the messages of a worked example: a task, and an observation of a result.
Spelling = Callable[[Any], str]


class ActionFormat:
    """What every format shares: extraction through the tiered parser, the parser's own lesson."""

    template_file = "system.md"  # the system prompt template in codeagent/agent/prompts/
    mode = "code"  # the agent mode it makes (RunResult.mode)
    # A tool call written in a dialect (JSON, <tool_call>, ...) naming no tool is refused by the
    # parser with the list of tools (UnknownToolError); False where `vet` teaches that itself.
    parser_checks_names = True

    def __init__(self) -> None:
        self.tools: Mapping[str, Tool] = {}
        self.code_tags: tuple[str, str] = DEFAULT_CODE_TAGS
        self.constraint_kind: str | None = None  # "grammar" | "schema" | None, set per run by the agent

    def use_constraint(self, kind: str | None) -> None:
        """Constrain this run's replies: "grammar" (GBNF), "schema" (JSON schema) or None."""
        if kind not in CONSTRAINT_KINDS:
            raise ValueError(f"constraint kind must be one of {CONSTRAINT_KINDS}, got {kind!r}")
        self.constraint_kind = kind

    def constraint(self, last: bool = False) -> Constraint | None:
        """What the next request must decode (None: nothing); last: the run's last step."""
        return None

    def examples(self, task_text: Spelling, observation: Spelling) -> list[dict[str, str]]:
        """Worked examples (chat turns) to put between the system prompt and the task."""
        return []

    def observation_note(self) -> str | None:
        """A line to add after the result of an action that did not end the run."""
        return None

    def bind(self, tools: Mapping[str, Tool], code_tags: tuple[str, str]) -> ActionFormat:
        """A copy of this format for an agent with these tools and code tags."""
        bound = copy.copy(self)
        bound.tools, bound.code_tags = tools, code_tags
        bound.start_run()
        return bound

    def start_run(self) -> None:
        """Forget what earlier runs did."""

    def extract(self, text: str) -> str:
        """The code in a reply (the final-answer fix applied), or `CodeParseError`. A tool call
        written in any dialect of the parser's table becomes the Python call of that tool."""
        tools = self.tools if self.parser_checks_names else None
        return fix_final_answer(parse_code(text, tags=self.code_tags, tools=tools))

    def vet(self, code: str, step: int) -> str:
        """The code to run for step `step`, or `ActionRefused`."""
        return code

    def block_watch(self) -> BlockWatch | None:
        """What tells, as a reply streams in, that its action has closed (the rest need not be
        read); None: read every reply to its end (a JSON-schema reply closes as JSON does)."""
        return None if self.constraint_kind == "schema" else BlockWatch(self.code_tags)

    def lesson(self, error: CodeParseError) -> str:
        """What the model is told when no code could be found in its reply."""
        return getattr(error, "message", None) or str(error)

    def render_tools(self) -> str:
        """The tools as the system prompt shows them (`{{tools}}`)."""
        return "\n\n".join(t.render() for t in self.tools.values()) or NO_TOOLS

    def prompt_fields(self) -> dict[str, str]:
        """This format's other placeholders in its template, by name."""
        return {}


class CodeBlock(ActionFormat):
    """A whole Python action block between the code tags; an action that already ran is refused."""

    def start_run(self) -> None:
        self._seen: dict[str, int] = {}  # normalized code -> the step it ran in

    def constraint(self, last: bool = False) -> Constraint | None:
        if self.constraint_kind == "grammar":
            return Constraint(grammar=code_action_grammar(self.code_tags), name="code_action")
        if self.constraint_kind == "schema":
            return Constraint(schema=code_action_schema(), name="code_action")
        return None

    def extract(self, text: str) -> str:
        if self.constraint_kind == "schema":
            try:  # {"thought", "code"} back into "Thought + tagged block"; any other text as it is
                text = code_action_text(json.loads(text), self.code_tags)
            except ValueError:
                pass
        return super().extract(text)

    def lesson(self, error: CodeParseError) -> str:
        if self.constraint_kind == "schema":
            return ('I could not find code in your reply. Reply with one JSON object, {"thought": "what you '
                    'will do", "code": "the Python code"}; call final_answer(...) in the code when you are done.')
        return super().lesson(error)

    def examples(self, task_text: Spelling, observation: Spelling) -> list[dict[str, str]]:
        if self.constraint_kind is None:
            return []
        style = "code_json" if self.constraint_kind == "schema" else "code"
        return fewshot_messages(self.tools, style, self.code_tags, task_text=task_text, observation=observation)

    def vet(self, code: str, step: int) -> str:
        key = normalize_code(code)
        previous = self._seen.get(key)
        if previous is not None:
            raise ActionRefused(
                ErrorKind.REPEATED_ACTION,
                f"This is the same code as in step {previous}, so it was not run again; its result is "
                "above. Do something different: change the approach, print what you still need, or "
                "call final_answer(...) if you have the answer.",
            )
        self._seen[key] = step
        return code


class SingleCall(ActionFormat):
    """One literal tool call per turn (RA.Aid's CIAYN style), for very weak models.

    bundleable: tool names (read-only lookups, say) that may come several to a reply; their results
        come back together, keyed by the call. Any other tool must be called alone (and under a
        constraint every reply is one call).
    examples: worked examples built from the tools (a call, its result, the final answer) as chat
        turns before the task: small models copy an example far better than they follow rules.
    nudge: after each result, remind the model to answer with final_answer if it has the answer.
    Under a constraint, the last step's schema or grammar allows only final_answer.
    """

    mode = "single_call"
    parser_checks_names = False  # vet's check_single_call names the closest tool and its call

    def __init__(self, bundleable: Iterable[str] = (), *, examples: bool = True, nudge: bool = True) -> None:
        super().__init__()
        self.bundleable = frozenset(bundleable)
        self.with_examples = examples
        self.nudge = nudge
        self._previous: str | None = None
        self._forbid: dict[str, dict[str, Any]] | None = None  # the previous call, for the grammar

    @property
    def template_file(self) -> str:  # type: ignore[override]
        return "single_call_json.md" if self.constraint_kind == "schema" else "single_call.md"

    def bind(self, tools: Mapping[str, Tool], code_tags: tuple[str, str]) -> ActionFormat:
        unknown = sorted(self.bundleable - set(tools) - {FINAL_ANSWER_NAME})
        if unknown:
            raise ValueError(f"bundleable names unknown tools: {', '.join(unknown)}")
        return super().bind(tools, code_tags)

    def start_run(self) -> None:
        self._previous = None  # the fingerprint of the previous step's call(s)
        self._forbid = None

    def constraint(self, last: bool = False) -> Constraint | None:
        # On the last step only final_answer can be written: a weak model that loops on lookups
        # then ends with its best answer instead of running out of steps with none.
        tools = {} if last else self.tools
        if self.constraint_kind == "grammar":
            # the call that just ran cannot be written again (it would be refused as a repeat)
            grammar = single_call_grammar(tools, self.code_tags, answer_schema=SCALAR_ANSWER_SCHEMA,
                                          forbid=self._forbid)
            return Constraint(grammar=grammar, name="single_call")
        if self.constraint_kind == "schema":
            return Constraint(schema=single_call_schema(tools, answer_schema=SCALAR_ANSWER_SCHEMA),
                              name="single_call")
        return None

    def examples(self, task_text: Spelling, observation: Spelling) -> list[dict[str, str]]:
        if not self.with_examples:
            return []
        if self.constraint_kind == "schema":
            return fewshot_messages(self.tools, "json", task_text=task_text,
                                    observation=lambda r: with_note(observation(r), self.observation_note()))
        return fewshot_messages(self.tools, "call", self.code_tags, task_text=task_text,
                                observation=lambda r: with_note(observation(r), self.observation_note()))

    def observation_note(self) -> str | None:
        if not self.nudge:
            return None
        if self.constraint_kind == "schema":
            answer = '{"name": "final_answer", "arguments": {"answer": ...}}'
        else:
            answer = f"{self.code_tags[0]}final_answer(...){self.code_tags[1]}"
        return f"If this answers the task, reply {answer} with it; otherwise call the next tool."

    def vet(self, code: str, step: int) -> str:
        calls = check_single_call(code, self.tools, self.bundleable)
        fingerprint = "\n".join(call_fingerprint(c, self.tools) for c in calls)
        self._forbid = {calls[0].name: bound_arguments(calls[0], self.tools)} if len(calls) == 1 else None
        if fingerprint == self._previous:
            shown = "; ".join(c.source for c in calls)
            raise ActionRefused(
                ErrorKind.REPEATED_ACTION,
                f"You made this exact call ({shown}) in your previous step and its result is above; it was "
                "not run again. Try something different: another tool, other arguments, or "
                "final_answer(...) with what you know.",
            )
        self._previous = fingerprint
        if len(calls) == 1:
            return calls[0].source
        # A bundle: one dict of results keyed by each call, so every result is shown, in order.
        items = ", ".join(f"{c.source!r}: {c.source}" for c in calls)
        return "{" + items + "}"

    def lesson(self, error: CodeParseError) -> str:
        """The parser's lesson shows a whole code block; in this mode the model must send one call."""
        if self.constraint_kind == "schema":
            return ('I could not find a tool call in your reply. Reply with one JSON object: {"name": '
                    f'"<tool name>", "arguments": {{...}}}}, like {json_example_call(self.tools)}. If you already know '
                    'the answer, reply {"name": "final_answer", "arguments": {"answer": "your answer"}}.')
        open_tag, close_tag = self.code_tags
        lesson = (
            "I could not find a tool call in your reply. Reply with one line: a single call of one tool, "
            f"like {open_tag}{example_call(self.tools)}{close_tag}, with the values written out."
        )
        fixed = colon_call_fix(str(getattr(error, "reply", "") or ""), self.tools)
        if fixed:
            return (
                "Your call is not valid Python: keyword arguments take =, not :. "
                f"Reply exactly: {open_tag}{fixed}{close_tag}"
            )
        suggestion = getattr(error, "suggestion", None)
        if suggestion:
            return f"{lesson} If you already have the answer, reply {open_tag}{suggestion}{close_tag}."
        return f"{lesson} If you already know the answer, reply {open_tag}final_answer(\"your answer\"){close_tag}."

    def render_tools(self) -> str:
        # One-line call signatures, not CodeBlock's `def` stubs: weak models copy the stubs.
        return "\n".join(render_tool_line(t) for t in self.tools.values()) or NO_TOOLS

    def prompt_fields(self) -> dict[str, str]:
        if self.bundleable and self.constraint_kind is None:
            rule = (
                "These tools may be called several at once, one call per line: "
                + ", ".join(sorted(self.bundleable)) + "."
            )
        else:
            rule = "Call final_answer(...) as soon as you have the answer."
        return {"bundleable": rule}


_TRAILING_COMMENT = re.compile(r"\s+#[^'\"]*$")


def _wordy(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def normalize_code(code: str) -> str:
    """The code without comments, blank lines and optional spaces, to spot a repeated action.

    Text-only on purpose: it runs every step, and `ast.dump` costs about a millisecond for a
    15-line action. Indentation is kept (it is meaning); a space survives only between two word
    characters. Spacing inside string literals is normalized too, which can only merge two actions
    that differ by such spacing alone.
    """
    lines = []
    for line in code.splitlines():
        body = line.strip()
        if not body or body[0] == "#":
            continue
        if "#" in body:
            body = _TRAILING_COMMENT.sub("", body)
        parts = body.split()
        out = parts[0]
        for part in parts[1:]:
            if _wordy(out[-1]) and _wordy(part[0]):
                out += " "
            out += part
        lines.append(f"{len(line) - len(line.lstrip())}:{out}")
    return "\n".join(lines)
