"""textreact: tool use for any chat model through a plain-text ReAct protocol.

Importing this package does nothing but define names: no network, no files, no environment."""

from __future__ import annotations

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
from textreact.steps import Action, Completion, FinalAnswer, FormatError, Step, ToolResult, Usage

__version__ = "0.1.0"

__all__ = [
    "Action",
    "CalculatorError",
    "Completion",
    "ConfigError",
    "FinalAnswer",
    "FormatError",
    "ModelError",
    "Step",
    "TextReactError",
    "ToolArgumentError",
    "ToolError",
    "ToolResult",
    "Usage",
    "parse",
    "render_step",
]
