"""Native tool calling, as it was imported before the one loop: `NativeAgent` is now
`Agent(model, tools, protocol="native")`, the protocol lives in `textreact.protocols.native`
and `capability` in `textreact.compare.runner`. Kept for one release so existing imports keep
working."""

from __future__ import annotations

from textreact.agent import NativeAgent
from textreact.compare.runner import Capability, capability
from textreact.protocols.native import UNSUPPORTED, NativeProtocol, call_written_as_text

__all__ = [
    "UNSUPPORTED",
    "Capability",
    "NativeAgent",
    "NativeProtocol",
    "call_written_as_text",
    "capability",
]
