"""textreact: tool use for any chat model through a plain-text ReAct protocol.

Importing this package does nothing but define names: no network, no files, no environment.
The parser and the records load at once (they are light); the loop and the tools, which need
pydantic, load on first use."""

import importlib as _importlib
import typing as _typing

from textreact.errors import (
    ConfigError,
    MissingExtraError,
    ModelError,
    NativeToolsUnsupportedError,
    ScriptExhaustedError,
    TextReactError,
    ToolArgumentError,
    ToolError,
    ToolExampleError,
    WrongToolError,
)
from textreact.grammar import render_step
from textreact.parser import parse
from textreact.steps import (
    Action,
    Completion,
    Event,
    FinalAnswer,
    FormatError,
    Request,
    Result,
    Step,
    StopReason,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)

if _typing.TYPE_CHECKING:
    from textreact.agent import Agent
    from textreact.memory import MemoryConfig
    from textreact.models import AsyncChatModel, ChatModel
    from textreact.models.anthropic import AnthropicModel, AsyncAnthropicModel
    from textreact.models.openai_compat import AsyncOpenAICompatModel, OpenAICompatModel
    from textreact.models.scripted import ScriptedModel
    from textreact.protocols import Protocol
    from textreact.protocols.native import NativeProtocol
    from textreact.protocols.text import TextProtocol
    from textreact.tools import NotFound, Tool, builtin_tools, tool

__version__ = "0.1.0"

#: Names whose modules pull in the SDKs or pydantic: loaded on first use.
_LAZY = {
    "Agent": "textreact.agent",
    "AnthropicModel": "textreact.models.anthropic",
    "AsyncAnthropicModel": "textreact.models.anthropic",
    "AsyncChatModel": "textreact.models",
    "AsyncOpenAICompatModel": "textreact.models.openai_compat",
    "ChatModel": "textreact.models",
    "MemoryConfig": "textreact.memory",
    "NativeProtocol": "textreact.protocols.native",
    "NotFound": "textreact.tools",
    "OpenAICompatModel": "textreact.models.openai_compat",
    "Protocol": "textreact.protocols",
    "ScriptedModel": "textreact.models.scripted",
    "TextProtocol": "textreact.protocols.text",
    "Tool": "textreact.tools",
    "builtin_tools": "textreact.tools",
    "tool": "textreact.tools",
}

__all__ = [
    "Action",
    "Agent",
    "AnthropicModel",
    "AsyncAnthropicModel",
    "AsyncChatModel",
    "AsyncOpenAICompatModel",
    "ChatModel",
    "Completion",
    "ConfigError",
    "Event",
    "FinalAnswer",
    "FormatError",
    "MemoryConfig",
    "MissingExtraError",
    "ModelError",
    "NativeProtocol",
    "NativeToolsUnsupportedError",
    "NotFound",
    "OpenAICompatModel",
    "Protocol",
    "Request",
    "Result",
    "ScriptExhaustedError",
    "ScriptedModel",
    "Step",
    "StopReason",
    "TextProtocol",
    "TextReactError",
    "Tool",
    "ToolArgumentError",
    "ToolCall",
    "ToolError",
    "ToolExampleError",
    "ToolResult",
    "Turn",
    "Usage",
    "WrongToolError",
    "builtin_tools",
    "parse",
    "render_step",
    "tool",
]


def __getattr__(name: str) -> object:
    if name in _LAZY:
        value = getattr(_importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'textreact' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
