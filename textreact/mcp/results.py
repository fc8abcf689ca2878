"""An MCP `CallToolResult` -> the text the model reads: text blocks as they are; an image or
audio clip as a placeholder it can reason about (kind, MIME type, size), since a text protocol
cannot show it; a resource link or an embedded resource shown by its uri, name and type, with
an embedded text resource's text (a linked one can be read with `read_resource`);
`structuredContent` as compact JSON when there is no text.

The text is untrusted like any tool result: it goes back to the loop as the tool's value and
through `observation.observe`, which defuses and bounds it; nothing here trusts it. A result
marked `isError` is raised as ServerToolError, so the loop shows it as the tool's failure."""

from __future__ import annotations

import json
from typing import Any

from textreact.errors import ServerToolError

__all__ = ["contents", "links", "render", "size"]


def render(result: Any) -> str:
    """The result's text (raises ServerToolError for `isError`). Read by attribute from the
    SDK's types, so one function serves every block kind the SDK knows and names an unknown
    one instead of failing."""
    parts = [_block(block) for block in getattr(result, "content", None) or ()]
    has_text = any(getattr(b, "type", None) == "text" for b in result.content or ())
    structured = getattr(result, "structured_content", None)
    if not has_text and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, separators=(",", ":"), default=str))
    text = "\n".join(parts)
    if getattr(result, "is_error", False):
        raise ServerToolError(text.strip() or "the server reported an error and said nothing more")
    return text


def _block(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}, {size(block.data)}; not shown in text]"
    if kind == "resource_link":
        return "[resource link: " + _about(block) + "]"
    if kind == "resource":
        return contents(block.resource)
    return f"[{kind or 'unknown'} content, not shown in text]"


def contents(resource: Any) -> str:
    """One resource's contents (embedded in a result, or read with `read_resource`): its text
    under a line that says what it is, or a placeholder for binary data."""
    text = getattr(resource, "text", None)
    if text is not None:
        return f"[resource: {_about(resource)}]\n{text}"
    return f"[resource: {_about(resource)}, {size(getattr(resource, 'blob', ''))} of data]"


def links(result: Any) -> list[str]:
    """The uris of the resource links in a result, which `read_resource` can read."""
    return [
        str(block.uri)
        for block in getattr(result, "content", None) or ()
        if getattr(block, "type", None) == "resource_link"
    ]


def _about(resource: Any) -> str:
    """uri, then the name, title, type, size and description a resource has."""
    fields = [str(resource.uri)]
    for label in ("name", "title", "mime_type", "description"):
        value = getattr(resource, label, None)
        if value:
            fields.append(f"{label.replace('_', ' ')} {' '.join(str(value).split())}")
    if getattr(resource, "size", None) is not None:
        fields.append(_bytes(resource.size))
    return ", ".join(fields)


def size(data: str) -> str:
    """The size of base64 `data` once decoded, in words (`12.3 KB`)."""
    data = data.strip()
    return _bytes(len(data) * 3 // 4 - data[-2:].count("="))


def _bytes(count: int) -> str:
    if count < 1000:
        return f"{count} bytes"
    if count < 1_000_000:
        return f"{count / 1000:.1f} KB"
    return f"{count / 1_000_000:.1f} MB"
