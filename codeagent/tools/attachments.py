"""Figures and images a step produced (`executors.Attachment`), as the run keeps and shows them.

- The record: `AttachmentRecord` is one attachment in a `StepRecord` — its metadata in the JSON,
  its bytes beside it (`RunResult.save` writes `<name>.figure-1.png`, ...), never inside it.
- The model: a model that can see images (`model.vision` true) gets them as image content parts
  of the observation message (`image_part`); any other model reads one line per attachment,
  `[figure 1: 640×480 PNG, 23 kB, saved as out/3f2a.figure-1.png]` (`describe_line`).
- The budget: an image costs `IMAGE_TOKENS` estimated tokens, whatever its size (the providers
  scale images to a bounded number of tiles); `content_text` is the text of a message whose
  content is a list of parts.
- Which model names can see: `vision_capable(model_id)` for `OpenAIModel(vision="auto")`.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, PrivateAttr

__all__ = [
    "AttachmentRecord", "IMAGE_TOKENS", "SENDABLE_IMAGE_TYPES", "content_text", "describe_line",
    "image_part", "is_sendable_image", "strip_images", "vision_capable", "file_suffix", "has_images",
]

# An image's estimated cost in a prompt: OpenAI counts a 512×512 tile as 170 tokens plus 85 per
# image; a 640×480 figure at high detail is 765. Counting every image alike keeps trimming simple.
IMAGE_TOKENS = 800
# What the chat-completions `image_url` part accepts; anything else is described in text.
SENDABLE_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_SUFFIXES = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp",
             "image/svg+xml": "svg", "application/pdf": "pdf"}

# Model names known to take images (OpenAI, Anthropic, Google, and the open vision families that
# OpenAI-compatible servers serve). A heuristic by design: pass vision=True or False to be sure.
_VISION_NAMES = re.compile(
    r"gpt-4o|gpt-4\.1|gpt-4-turbo|gpt-4-vision|gpt-5|chatgpt-4o|\bo1(?!-mini)|\bo3(?!-mini)|\bo4-mini"
    r"|claude-3|claude-(?:sonnet|opus|haiku)-4|gemini|gemma-?3|llava|bakllava|moondream|pixtral"
    r"|qwen[\d.]*-?vl|qvq|internvl|minicpm-?v|llama-?3\.2-?(?:\d+b-)?vision|llama-?4|idefics|smolvlm"
    r"|phi-?[34](?:\.\d)?-vision|molmo|glm-4v|vision|[-_/]vl\b",
    re.IGNORECASE,
)


def vision_capable(model_id: str) -> bool:
    """Whether `model_id` names a model known to take images (the `vision="auto"` rule)."""
    return bool(_VISION_NAMES.search(model_id or ""))


def file_suffix(media_type: str) -> str:
    return _SUFFIXES.get(media_type, media_type.split("/")[-1].split("+")[0] or "bin")


def is_sendable_image(media_type: str) -> bool:
    return media_type in SENDABLE_IMAGE_TYPES


class AttachmentRecord(BaseModel):
    """One attachment of a step: what it is, and where its bytes are.

    index: its number in the run (1, 2, ...: the file names use it). file: where the bytes were
    saved — an absolute path while the run writes to its output_dir, the name beside the JSON
    once `RunResult.save` wrote them — or None. The bytes themselves stay out of the JSON:
    `data()` has them (from memory, else from the file).
    """

    step: int
    index: int
    name: str = ""
    media_type: str
    width: int | None = None
    height: int | None = None
    size: int = 0
    file: str | None = None
    _data: bytes | None = PrivateAttr(default=None)
    _base: Path | None = PrivateAttr(default=None)  # the saved JSON's directory, after load()

    @classmethod
    def of(cls, attachment: Any, *, step: int, index: int) -> AttachmentRecord:
        record = cls(step=step, index=index, name=str(getattr(attachment, "name", "") or ""),
                     media_type=str(attachment.media_type), width=attachment.width,
                     height=attachment.height, size=len(attachment.data))
        record._data = bytes(attachment.data)
        return record

    @property
    def label(self) -> str:
        return self.name or f"attachment {self.index}"

    @property
    def path(self) -> Path | None:
        """The saved file, resolved (relative names against the JSON's directory), or None."""
        if self.file is None:
            return None
        path = Path(self.file)
        return path if path.is_absolute() or self._base is None else self._base / path

    def data(self) -> bytes | None:
        if self._data is None and self.path is not None and self.path.is_file():
            self._data = self.path.read_bytes()
        return self._data

    def describe(self) -> str:
        """`figure 1: 640×480 PNG, 23 kB` (as `executors.Attachment.describe`)."""
        kind = file_suffix(self.media_type).upper()
        dims = f"{self.width}×{self.height} " if self.width and self.height else ""
        return f"{self.label}: {dims}{kind}, {max(1, round(self.size / 1000))} kB"

    def file_name(self, stem: str) -> str:
        """`<stem>.figure-<index>.<suffix>` (images), `<stem>.attachment-<index>.<suffix>`."""
        kind = "figure" if self.media_type.startswith("image/") else "attachment"
        return f"{stem}.{kind}-{self.index}.{file_suffix(self.media_type)}"

    def write(self, path: Path) -> bool:
        """Write the bytes to `path` (skipped when that file already is this one); False without bytes."""
        data = self.data()
        if data is None:
            return False
        source = self.path
        if not (path.is_file() and source is not None and source.is_file() and os.path.samefile(path, source)):
            path.write_bytes(data)
        return True

    def metadata(self) -> dict[str, Any]:
        """What an event carries: everything but the bytes."""
        return self.model_dump()


def describe_line(record: AttachmentRecord, *, shown: bool = False) -> str:
    """The observation's line for one attachment: what it is, and where it went."""
    where = f"saved as {record.file}" if record.file else "not saved"
    return f"[{record.describe()}, {where}{'; the image follows' if shown else ''}]"


def image_part(record: AttachmentRecord) -> dict[str, Any]:
    """The chat-completions content part that shows the image to a vision model."""
    encoded = base64.b64encode(record.data() or b"").decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{record.media_type};base64,{encoded}"}}


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(str(p.get("text") or "") for p in content
                         if isinstance(p, Mapping) and p.get("type") == "text")
    return "" if content is None else str(content)


def has_images(messages: Iterable[Mapping[str, Any]]) -> bool:
    return any(isinstance(m.get("content"), list) and any(
        isinstance(p, Mapping) and p.get("type") == "image_url" for p in m["content"]) for m in messages)


def strip_images(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages with every content list flattened to its text: for a model that cannot see
    (the text already describes each image, see `describe_line`)."""
    out = []
    for m in messages:
        m = dict(m)
        if isinstance(m.get("content"), list):
            m["content"] = content_text(m["content"])
        out.append(m)
    return out
