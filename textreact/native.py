"""Native tool calling, as it was imported before the one loop: `NativeAgent` is now
`Agent(model, tools, protocol="native")` and the protocol lives in `textreact.protocols.native`.
Kept for one release so existing imports keep working."""

from __future__ import annotations

from textreact.agent import NativeAgent
from textreact.protocols.native import (
    UNSUPPORTED,
    Capability,
    NativeProtocol,
    call_written_as_text,
    capability,
)

__all__ = [
    "UNSUPPORTED",
    "Capability",
    "NativeAgent",
    "NativeProtocol",
    "call_written_as_text",
    "capability",
]
