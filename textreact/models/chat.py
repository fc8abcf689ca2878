"""What a chat model is: the message it reads and the interface the loop calls, sync and async.
The one seam between the loop and a language model; the clients in this package implement it,
and everything that builds or reads messages names its types from here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from textreact.steps import Completion

__all__ = ["AsyncChatModel", "ChatModel", "Message"]

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
