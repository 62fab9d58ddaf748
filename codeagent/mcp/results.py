"""What an MCP tool call gives back to the model's code: plain data, and the images beside it.

- `is_error`: a `ToolError` with the server's own message (what the model reads and fixes).
- `structured_content`: the value itself (a dict, or the `result` of a wrapped scalar or list);
- else the text blocks joined (embedded text resources count as text; audio, blobs and links
  are named in one line each);
- image blocks become `executors.Attachment`s, handed to the calling step (`tools.attach`), so a
  vision model sees them as it sees the step's own figures; the value names them in its text.
- A result bigger than `max_chars` is cut head and tail with a note saying how much was cut and
  what to do, so a 10 MB answer neither floods the sandbox's channel nor the model's context.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from executors.base import Attachment, ToolError

from ..agent.memory import truncate_middle
from .schema import unwrapped_result

__all__ = ["result_value", "image_attachment"]


def result_value(result: Any, *, tool: str, output_schema: Any, max_chars: int) -> tuple[Any, list[Attachment]]:
    """(value for the sandbox, images) of a `CallToolResult`; a `ToolError` when it is an error."""
    texts: list[str] = []
    images: list[Attachment] = []
    for block in result.content or ():
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "image":
            image = image_attachment(block, len(images) + 1, tool)
            if image is None:
                texts.append(f"[{tool}: an image block that is not valid base64]")
            else:
                images.append(image)
        elif kind == "resource":
            inner = block.resource
            text = getattr(inner, "text", None)
            texts.append(text if isinstance(text, str) else f"[resource {inner.uri} ({inner.mime_type or 'binary'})]")
        elif kind == "resource_link":
            texts.append(f"[resource link: {block.uri}{f' ({block.name})' if block.name else ''}]")
        elif kind == "audio":
            texts.append(f"[{tool}: an audio block ({block.mime_type}), not shown]")
    if result.is_error:
        message = "\n".join(texts).strip() or "the server reported an error without a message"
        raise ToolError(f"{tool}() failed on the MCP server: {truncate_middle(message, 2_000)}")
    if images:
        texts.append(f"[{len(images)} image{'s' if len(images) > 1 else ''} from {tool} shown beside this result]")
    structured = result.structured_content
    if structured is not None:
        value = structured["result"] if unwrapped_result(output_schema) and "result" in structured else structured
        return _bounded(value, tool, max_chars), images
    return _bounded("\n".join(texts), tool, max_chars), images


def _bounded(value: Any, tool: str, max_chars: int) -> Any:
    """The value, or its text cut head and tail when it is over `max_chars` (with a note)."""
    text = value if isinstance(value, str) else None
    if text is None:
        try:
            size = len(json.dumps(value, ensure_ascii=False))
        except (TypeError, ValueError):
            return value
        if size <= max_chars:
            return value
        text = json.dumps(value, ensure_ascii=False)
    if len(text) <= max_chars:
        return text
    note = (f"[the result of {tool}() was {len(text):,} characters, over the {max_chars:,} kept: its "
            "middle is cut where marked. Ask the tool for less (a filter, a page, a limit)]")
    return f"{note}\n{truncate_middle(text, max_chars)}"


def image_attachment(block: Any, index: int, tool: str) -> Attachment | None:
    """An MCP image block as an Attachment (None when its data is not base64)."""
    try:
        data = base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError):
        return None
    width, height = _png_size(data)
    return Attachment(block.mime_type or "application/octet-stream", data, f"{tool} image {index}", width, height)


def _png_size(data: bytes) -> tuple[int | None, int | None]:
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return None, None
