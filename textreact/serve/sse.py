"""Server-sent events, both ways: an upstream's bytes -> its lines, and a JSON value -> one
event. An SSE line ends at CR, LF or CRLF and nowhere else (a raw U+2028 or NEL inside an
event's JSON is part of it, where `str.splitlines` would cut it); what the proxy writes holds
no character that a reader built on `splitlines` would cut at (`textreact.jsonline`)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, Final

from textreact import jsonline

#: The end of the stream, as OpenAI writes it.
DONE: Final = b"data: [DONE]\n\n"
_BREAK: Final = re.compile(rb"\r\n|\r|\n")
#: The blank line that ends an event, in each of SSE's line endings.
_EVENT_ENDS: Final = (b"\n\n", b"\r\r", b"\r\n\r\n")


def event(data: dict[str, Any]) -> bytes:
    """One `data:` event holding `data` as JSON."""
    return b"data: " + jsonline.encoded(data) + b"\n\n"


def named_event(name: str, data: dict[str, Any]) -> bytes:
    """One event of type `name` (`event: NAME`), holding `data` as JSON, as the Responses and
    Anthropic Messages APIs write their streams."""
    return b"event: " + name.encode() + b"\n" + event(data)


async def lines(chunks: AsyncIterable[bytes]) -> AsyncIterator[str]:
    """The lines of an SSE body, split at CR, LF and CRLF only (split as bytes: no UTF-8
    character holds either byte), each decoded as UTF-8; a line that runs across chunks is
    joined once, so the cost is linear in the body."""
    partial: list[bytes] = []
    after_cr = False  # a CRLF split across two chunks is one line ending
    async for chunk in chunks:
        if after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        after_cr = chunk.endswith(b"\r")
        *ended, rest = _BREAK.split(chunk)
        for piece in ended:
            partial.append(piece)
            yield b"".join(partial).decode("utf-8", "replace")
            partial = []
        if rest:
            partial.append(rest)
    if partial:
        yield b"".join(partial).decode("utf-8", "replace")


def events_end(data: bytes) -> int:
    """Where the last complete event in `data` ends (0: none has ended yet)."""
    ends = [data.rfind(mark) + len(mark) for mark in _EVENT_ENDS if mark in data]
    return max(ends, default=0)
