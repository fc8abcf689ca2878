"""Chat models: the one seam between the loop and a language model. A model takes the message
list and the stop sequences and returns one Completion; everything else is the loop's job.

`chat` defines the seam (`Message`, `ChatModel`, `AsyncChatModel`); `openai_compat` and
`anthropic` are the two SDK clients, built on `sdk` (what they share) and `faults` (an SDK's
fault as a ModelError); `decision` scores the call-or-answer branch, `scripted` replays given
replies, `local` runs the embedded model and `deadline` bounds each request in time."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from textreact.models.chat import AsyncChatModel, ChatModel, Message
from textreact.steps import Completion, Usage

if TYPE_CHECKING:
    from textreact.models.anthropic import AnthropicModel, AsyncAnthropicModel
    from textreact.models.openai_compat import AsyncOpenAICompatModel, OpenAICompatModel

__all__ = [
    "AnthropicModel",
    "AsyncAnthropicModel",
    "AsyncChatModel",
    "AsyncOpenAICompatModel",
    "ChatModel",
    "Completion",
    "Message",
    "OpenAICompatModel",
    "Usage",
]

_CLIENTS = {
    "OpenAICompatModel": "textreact.models.openai_compat",
    "AsyncOpenAICompatModel": "textreact.models.openai_compat",
    "AsyncAnthropicModel": "textreact.models.anthropic",
    "AnthropicModel": "textreact.models.anthropic",
}


def __getattr__(name: str) -> object:
    # The clients pull in their SDKs: load them only when asked for.
    if name in _CLIENTS:
        return getattr(import_module(_CLIENTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
