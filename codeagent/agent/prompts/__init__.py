"""The prompt templates (`*.md` next to this file); placeholders are `{{name}}`."""

from __future__ import annotations

from pathlib import Path

__all__ = ["PROMPTS_DIR", "load_prompt"]

PROMPTS_DIR = Path(__file__).parent


def load_prompt(name: str) -> str:
    """The text of the template `name` (e.g. "system.md")."""
    return (PROMPTS_DIR / name).read_text(encoding="utf-8")
