"""`textreact serve`: OpenAI tool calls for any model, as a proxy. An OpenAI-compatible server
in front of an upstream that has no working tool calls: each request with `tools` is one turn
of the text protocol (one request = one model turn; the client runs its own loop), answered
in OpenAI's shape. With MCP servers (`ServerTools`, `--mcp`), a request without tools is
answered by textreact's own loop with their tools instead. Needs the `serve` extra (Starlette
and uvicorn)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textreact.serve.app import create_app
    from textreact.serve.config import ServeConfig
    from textreact.serve.mcp_tools import ServerTools
    from textreact.serve.running import serving

__all__ = ["ServeConfig", "ServerTools", "create_app", "serving"]

_HOMES = {
    "ServeConfig": "config",
    "ServerTools": "mcp_tools",
    "create_app": "app",
    "serving": "running",
}


def __getattr__(name: str) -> object:
    # The CLI imports textreact.serve.cli to build its parser: load the app only when used.
    if name in _HOMES:
        return getattr(import_module(f"textreact.serve.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
