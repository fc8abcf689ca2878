"""MCP servers' tools as ordinary textreact tools (extra `mcp`, on the official `mcp` SDK 2.x).

    from textreact import Agent
    from textreact.mcp import connect, load_config

    with connect(load_config("mcp.json")) as mcp:
        result = Agent(model, mcp.tools).run("What time is it in Tokyo?")

Names are mapped to what every protocol accepts (`names`), schemas degrade instead of failing
(`schemas`), results become text with placeholders for media (`results`) and long ones come a
page at a time (`pages`); descriptions, titles and results are untrusted text, defused as any
tool output is. `writes=` and `allow=` are the safety controls (`safety`, docs/mcp.md): a tool
its server does not mark read-only is offered only when `writes` says so. Nothing above this
package needs to know a tool came from MCP. Importing it does not import the SDK."""

from __future__ import annotations

from textreact.mcp.catalog import McpToolInfo
from textreact.mcp.config import (
    ServerSpec,
    load_config,
    parse_config,
    server_from_command,
    server_from_url,
)
from textreact.mcp.connection import Connection, connect
from textreact.mcp.safety import Confirm
from textreact.mcp.sdk import INSTALL_HINT

__all__ = [
    "INSTALL_HINT",
    "Confirm",
    "Connection",
    "McpToolInfo",
    "ServerSpec",
    "connect",
    "load_config",
    "parse_config",
    "server_from_command",
    "server_from_url",
]
