"""The conversation the agent sends to the model, trimmed to a token budget.

Layout: system prompt, worked examples if any (user / assistant turns, for weak models), the task
(user), then per step the model's reply (assistant) and the observation (user). Roles alternate,
which chat templates of weak local models require. When the
history outgrows the budget, the oldest steps go first; the system prompt and the task always stay,
and the model is told that earlier steps were dropped (their variables still exist).

An observation may carry images (figures, for a model that can see them): its message content is
then a list of parts, text first. Each image costs `IMAGE_TOKENS`; when the history is over budget,
images go first, oldest first (their one-line description stays in the text), then whole steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from executors.base import cut_middle

from ..tools.attachments import IMAGE_TOKENS

__all__ = ["Memory", "estimate_tokens", "truncate_middle", "newest_that_fit"]

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4  # role markers and separators a chat template adds per message


def estimate_tokens(text: str) -> int:
    """A cheap estimate (~4 characters per token); good enough to stay under a context window."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN + MESSAGE_OVERHEAD_TOKENS


def truncate_middle(text: str, max_chars: int) -> str:
    """Keep the head (two thirds) and the tail of `text` within `max_chars`, with a note that
    counts the middle truly (notes of earlier cuts included: `executors.worker.display`)."""
    return cut_middle(text, max_chars, head_share=2 / 3)


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


IMAGES_DROPPED = "[The images of this step were dropped to fit the context window.]"


def keep_newest_images(counts: Sequence[int], excess_tokens: int) -> list[int]:
    """How many images each step keeps when `excess_tokens` must go: the oldest images go first
    (IMAGE_TOKENS each), until the excess is covered or no image is left."""
    kept = list(counts)
    for i, n in enumerate(kept):
        while n and excess_tokens > 0:
            n -= 1
            excess_tokens -= IMAGE_TOKENS
        kept[i] = n
    return kept


def with_images(text: str, images: Sequence[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """A message content: the text alone, or the text then the image parts."""
    return [{"type": "text", "text": text}, *images] if images else text


def append_text(message: dict[str, Any], note: str) -> dict[str, Any]:
    """`message` with `note` after its text (its first text part when its content is a list)."""
    content = message.get("content")
    if isinstance(content, list):
        parts = [dict(p) for p in content]
        first = next((p for p in parts if p.get("type") == "text"), None)
        if first is None:
            parts.insert(0, {"type": "text", "text": note})
        else:
            first["text"] = f"{first['text']}\n\n{note}"
        return {**message, "content": parts}
    return {**message, "content": f"{content or ''}\n\n{note}"}


@dataclass
class Memory:
    system_prompt: str
    task: str
    steps: list[tuple[str, str]] = field(default_factory=list)  # (assistant text, observation message)
    last_dropped: int = 0
    last_images_dropped: int = 0
    _costs: list[int] = field(default_factory=list, repr=False)  # estimated tokens of each step's text
    _images: list[tuple[dict[str, Any], ...]] = field(default_factory=list, repr=False)  # image parts per step
    # Worked examples between the system prompt and the task: user / assistant turns that end with
    # an assistant turn. Always sent, like the system prompt (they are short).
    examples: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        roles = [m.get("role") for m in self.examples]
        if roles and (roles != ["user", "assistant"] * (len(roles) // 2) or len(roles) % 2):
            raise ValueError("examples must be user / assistant turns, in pairs, starting with user")

    def add_step(self, assistant_text: str, observation_message: str,
                 images: Sequence[dict[str, Any]] = ()) -> None:
        """One step: the reply, the observation, and the image parts that go with the observation."""
        self.steps.append((assistant_text, observation_message))
        self._costs.append(estimate_tokens(assistant_text) + estimate_tokens(observation_message))
        self._images.append(tuple(images))

    def _step_images(self) -> list[tuple[dict[str, Any], ...]]:
        if len(self._images) != len(self.steps):  # steps appended directly, not via add_step
            self._images = (self._images + [()] * len(self.steps))[:len(self.steps)]
        return self._images

    def messages(self, budget_tokens: int | None = None, note: str | None = None, *,
                 images: bool = True) -> list[dict[str, Any]]:
        """The messages for the next model call, trimmed to `budget_tokens` (None: no limit).

        `note` (e.g. "this is your last step") is appended to the last user message so roles
        keep alternating. images=False: no image parts (the model cannot see them).
        """
        counts = [len(i) if images else 0 for i in self._step_images()]
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
            counts = keep_newest_images(counts, sum(self._costs) + IMAGE_TOKENS * sum(counts) - available)
            costs = [c + IMAGE_TOKENS * n for c, n in zip(self._costs, counts, strict=True)]
            start = newest_that_fit(costs, available)
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
        offered = [len(i) if images else 0 for i in self._images]
        self.last_images_dropped = sum(offered[dropped:]) - sum(counts[dropped:])

        task = self.task
        if dropped:
            task += (
                f"\n\n[Steps 1-{dropped} were dropped from this conversation to fit the context window. "
                "Variables they defined still exist.]"
            )
        out: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt},
                                     *(dict(m) for m in self.examples),
                                     {"role": "user", "content": task}]
        for i, (assistant, observation) in enumerate(kept, start=dropped):
            shown = self._images[i][len(self._images[i]) - counts[i]:] if counts[i] else ()
            if images and len(shown) < len(self._images[i]):
                observation = f"{observation}\n{IMAGES_DROPPED}"
            out.append({"role": "assistant", "content": assistant})
            out.append({"role": "user", "content": with_images(observation, shown)})
        if note:
            out[-1] = append_text({**out[-1], "role": "user"}, note)
        return out
