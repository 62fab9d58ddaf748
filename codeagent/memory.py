"""The conversation the agent sends to the model, trimmed to a token budget.

Layout: system prompt, worked examples if any (user / assistant turns, for weak models), the task
(user), then per step the model's reply (assistant) and the observation (user). Roles alternate,
which chat templates of weak local models require. When the
history outgrows the budget, the oldest steps go first; the system prompt and the task always stay,
and the model is told that earlier steps were dropped (their variables still exist).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Memory", "estimate_tokens", "truncate_middle", "newest_that_fit"]

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4  # role markers and separators a chat template adds per message


def estimate_tokens(text: str) -> int:
    """A cheap estimate (~4 characters per token); good enough to stay under a context window."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN + MESSAGE_OVERHEAD_TOKENS


def truncate_middle(text: str, max_chars: int) -> str:
    """Keep the head and the tail of `text`, say how much of the middle was cut."""
    if len(text) <= max_chars:
        return text
    marker = "\n... [{} characters omitted] ...\n"
    keep = max(max_chars - len(marker) - 8, 0)
    head = keep * 2 // 3
    tail = keep - head
    omitted = len(text) - head - tail
    return text[:head] + marker.format(omitted) + (text[-tail:] if tail else "")


def newest_that_fit(costs: Sequence[int], budget: int) -> int:
    """Where the newest steps that fit in `budget` start: an index into `costs` (one per step,
    oldest first); `len(costs)` when not even the newest fits. Shared by both agents' histories."""
    used = 0
    start = len(costs)
    for i in range(len(costs) - 1, -1, -1):
        used += costs[i]
        if used > budget:
            break
        start = i
    return start


@dataclass
class Memory:
    system_prompt: str
    task: str
    steps: list[tuple[str, str]] = field(default_factory=list)  # (assistant text, observation message)
    last_dropped: int = 0
    _costs: list[int] = field(default_factory=list, repr=False)  # estimated tokens of each step
    # Worked examples between the system prompt and the task: user / assistant turns that end with
    # an assistant turn. Always sent, like the system prompt (they are short).
    examples: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        roles = [m.get("role") for m in self.examples]
        if roles and (roles != ["user", "assistant"] * (len(roles) // 2) or len(roles) % 2):
            raise ValueError("examples must be user / assistant turns, in pairs, starting with user")

    def add_step(self, assistant_text: str, observation_message: str) -> None:
        self.steps.append((assistant_text, observation_message))
        self._costs.append(estimate_tokens(assistant_text) + estimate_tokens(observation_message))

    def messages(self, budget_tokens: int | None = None, note: str | None = None) -> list[dict[str, str]]:
        """The messages for the next model call, trimmed to `budget_tokens` (None: no limit).

        `note` (e.g. "this is your last step") is appended to the last user message so roles
        keep alternating.
        """
        kept = self.steps
        dropped = 0
        if budget_tokens is not None:
            fixed = estimate_tokens(self.system_prompt) + estimate_tokens(self.task) + 60
            fixed += sum(estimate_tokens(str(m.get("content") or "")) for m in self.examples)
            if note:
                fixed += estimate_tokens(note)
            available = budget_tokens - fixed
            if len(self._costs) != len(self.steps):  # steps appended directly, not via add_step
                self._costs = [estimate_tokens(a) + estimate_tokens(o) for a, o in self.steps]
            start = newest_that_fit(self._costs, available)
            if start == len(self.steps) and self.steps:
                # Not even the latest step fits: keep it, with its observation cut to what is left.
                assistant, observation = self.steps[-1]
                room = max(available - estimate_tokens(assistant), 50) * CHARS_PER_TOKEN
                kept = [(assistant, truncate_middle(observation, room))]
                start = len(self.steps) - 1
            else:
                kept = self.steps[start:]
            dropped = start
        self.last_dropped = dropped

        task = self.task
        if dropped:
            task += (
                f"\n\n[Steps 1-{dropped} were dropped from this conversation to fit the context window. "
                "Variables they defined still exist.]"
            )
        out = [{"role": "system", "content": self.system_prompt}, *(dict(m) for m in self.examples),
               {"role": "user", "content": task}]
        for assistant, observation in kept:
            out.append({"role": "assistant", "content": assistant})
            out.append({"role": "user", "content": observation})
        if note:
            out[-1] = {"role": "user", "content": f"{out[-1]['content']}\n\n{note}"}
        return out
