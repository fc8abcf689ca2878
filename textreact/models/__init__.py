"""Chat models: the one seam between the loop and a language model. A model takes the message
list and the stop sequences and returns one Completion; everything else is the loop's job."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from textreact.steps import Completion, Usage

if TYPE_CHECKING:
    from textreact.models.openai_compat import OpenAICompatModel

__all__ = ["ChatModel", "Completion", "Message", "OpenAICompatModel", "Usage"]

#: One chat message: {"role": "system" | "user" | "assistant", "content": str}.
Message = dict[str, str]


@runtime_checkable
class ChatModel(Protocol):
    """Anything that turns a message list into one completion."""

    def complete(self, messages: Sequence[Message], *, stop: Sequence[str] = ()) -> Completion:
        """Return the model's next reply; raise ModelError when no reply can be had."""
        ...


def __getattr__(name: str) -> object:
    # The OpenAI SDK is heavy to import; load it only when the client is asked for.
    if name == "OpenAICompatModel":
        from textreact.models.openai_compat import OpenAICompatModel

        return OpenAICompatModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
