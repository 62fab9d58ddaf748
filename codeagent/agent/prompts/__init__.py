"""The prompt templates (`*.md` next to this file); placeholders are `{{name}}`."""

from __future__ import annotations

import functools
from pathlib import Path

__all__ = ["PROMPTS_DIR", "load_prompt"]

PROMPTS_DIR = Path(__file__).parent


@functools.cache  # (read once: a run's system prompt is made from it, 100 runs at once read it 100 times)
def load_prompt(name: str) -> str:
    """The text of the template `name` (e.g. "system.md")."""
    return (PROMPTS_DIR / name).read_text(encoding="utf-8")
