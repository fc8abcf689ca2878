"""textreact: tool use for any chat model through a plain-text ReAct protocol.

Importing this package does nothing but define names: no network, no files, no environment.
The parser and the records load at once (they are light); the loop and the tools, which need
pydantic, load on first use."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from textreact.errors import (
    CalculatorError,
    ConfigError,
    ModelError,
    TextReactError,
    ToolArgumentError,
    ToolError,
)
from textreact.grammar import render_step
from textreact.parser import parse
from textreact.steps import (
    Action,
    Completion,
    FinalAnswer,
    FormatError,
    Step,
    ToolResult,
    Turn,
    Usage,
)

if TYPE_CHECKING:
    from textreact.agent import Agent, Event, Result
    from textreact.memory import MemoryConfig
    from textreact.models.scripted import ScriptedModel
    from textreact.tools import Tool, ToolBox, builtin_tools, tool

__version__ = "0.1.0"

_LAZY = {
    "Agent": "textreact.agent",
    "Event": "textreact.agent",
    "Result": "textreact.agent",
    "MemoryConfig": "textreact.memory",
    "ScriptedModel": "textreact.models.scripted",
    "Tool": "textreact.tools",
    "ToolBox": "textreact.tools",
    "builtin_tools": "textreact.tools",
    "tool": "textreact.tools",
}

__all__ = [
    "Action",
    "Agent",
    "CalculatorError",
    "Completion",
    "ConfigError",
    "Event",
    "FinalAnswer",
    "FormatError",
    "MemoryConfig",
    "ModelError",
    "Result",
    "ScriptedModel",
    "Step",
    "TextReactError",
    "Tool",
    "ToolArgumentError",
    "ToolBox",
    "ToolError",
    "ToolResult",
    "Turn",
    "Usage",
    "builtin_tools",
    "parse",
    "render_step",
    "tool",
]


def __getattr__(name: str) -> object:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'textreact' has no attribute {name!r}")
