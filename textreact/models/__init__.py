"""Chat models: the one seam between the loop and a language model. A model takes the message
list and the stop sequences and returns one Completion; everything else is the loop's job."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from textreact.errors import ConfigError
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

#: One chat message: {"role": "system" | "user" | "assistant", "content": str}.
Message = dict[str, Any]


@runtime_checkable
class ChatModel(Protocol):
    """Anything that turns a message list into one completion. A client for the text protocol
    needs only `messages` and `stop`; native tool calling also passes `tools=` (specs in the
    client's `tool_dialect`), and constrained decoding `grammar=`."""

    def complete(
        self, messages: Sequence[Message], *, stop: Sequence[str] = (), **options: Any
    ) -> Completion:
        """Return the model's next reply; raise ModelError when no reply can be had."""
        ...


@runtime_checkable
class AsyncChatModel(Protocol):
    """A ChatModel whose `complete` is a coroutine, for `Agent.arun` and `Agent.aiter`."""

    async def complete(
        self, messages: Sequence[Message], *, stop: Sequence[str] = (), **options: Any
    ) -> Completion:
        """Return the model's next reply; raise ModelError when no reply can be had."""
        ...


_CLIENTS = {
    "OpenAICompatModel": "textreact.models.openai_compat",
    "AsyncOpenAICompatModel": "textreact.models.openai_compat",
    "AsyncAnthropicModel": "textreact.models.anthropic",
    "AnthropicModel": "textreact.models.anthropic",
}


def check_client_settings(
    model: object, *, timeout: float, max_retries: int, max_tokens: int | None
) -> None:
    """Refuse settings no server could honour, at construction, the same way for every client
    (`max_tokens=None` leaves the limit to the server, where the API allows that)."""
    if not isinstance(model, str) or not model:
        raise ConfigError(f"model must be a non-empty model name, got {model!r}")
    if timeout <= 0 or max_retries < 0 or (max_tokens is not None and max_tokens < 1):
        raise ConfigError(
            "timeout must be > 0, max_retries >= 0 and max_tokens >= 1, got "
            f"{timeout!r}, {max_retries!r} and {max_tokens!r}"
        )


def __getattr__(name: str) -> object:
    # The clients pull in their SDKs: load them only when asked for.
    if name in _CLIENTS:
        return getattr(import_module(_CLIENTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
