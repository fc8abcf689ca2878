"""Anthropic's Messages API (`POST /v1/messages`, `POST /v1/messages/count_tokens`) as a thin
adapter over the chat path: the request made the chat endpoint's request (`request`), the
same turn answers it (the same re-ask, `tool_choice`, safety, stop and error rules, the same
`verdict.judge`: `textreact.serve.app`), and its `chat.completion` made a message (`reply`),
its stream of chunks Anthropic's event sequence (`events`), its faults Anthropic's error
shape (`errors`). Nothing of the turn's judgement lives here, so the APIs cannot drift."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textreact.serve.body import read_json
from textreact.serve.messages.errors import error_body
from textreact.serve.messages.events import events
from textreact.serve.messages.reply import message_body
from textreact.serve.messages.request import chat_request

if TYPE_CHECKING:
    from textreact.serve.config import ServeConfig
    from textreact.serve.request import ChatRequest

__all__ = ["Asked", "error_body", "read"]


@dataclass(frozen=True)
class Asked:
    """One Messages request, read: the chat request that answers it, and its stop sequences,
    which its reply applies (`reply`)."""

    call: ChatRequest
    stops: tuple[str, ...] = ()

    def message(self, completion: Any) -> dict[str, Any]:
        """The message for the chat path's whole answer."""
        return message_body(completion, self.stops, self.call.model)

    def events(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """The message's events for the chat path's streamed answer."""
        return events(chunks, model=self.call.model, stops=self.stops)


def read(raw: bytes, config: ServeConfig, counting: bool = False) -> Asked:
    """The request's body read and made a chat request (a 400 in Anthropic's terms for what
    is wrong); `counting`: a count_tokens request, which has no `max_tokens`."""
    call, stops = chat_request(
        read_json(raw), model=config.model, lang=config.lang, counting=counting
    )
    return Asked(call, stops)
