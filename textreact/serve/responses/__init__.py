"""`POST /v1/responses` (OpenAI Responses), served by the chat endpoint's own path: the request
is translated into a chat request (`request`) and checked as one, answered exactly as
`POST /v1/chat/completions` answers it (the same turn, re-ask, `tool_choice`, safety, stops and
errors, and pass-through without tools), and the chat answer, whole or streamed, read back into
output items and events (`output`). Nothing is kept between requests, so any number of workers
serve it; what would need a stored response is a 400 that says to send the whole input."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from textreact.serve import sse
from textreact.serve.body import read_json
from textreact.serve.config import ServeConfig
from textreact.serve.errors import ServeError
from textreact.serve.request import ChatRequest, parse_request
from textreact.serve.responses.output import Output
from textreact.serve.responses.request import Translated, translate

__all__ = ["Asked", "not_kept", "read"]


@dataclass(frozen=True)
class Asked:
    """A Responses request made the chat endpoint's, and how its answer is made a response."""

    #: The chat request, checked.
    call: ChatRequest
    translated: Translated

    def renamed(self, error: ServeError) -> ServeError:
        """A chat-path error in the Responses request's terms (`Translated.renamed`)."""
        return self.translated.renamed(error)

    def whole(self, completion: Any) -> dict[str, Any]:
        """The response object for a whole `chat.completion`."""
        output = self._output()
        output.chunk(completion if isinstance(completion, dict) else {})
        if output.error is not None:  # a body passed through that says it failed
            raise ServeError(502, output.error["message"], type="upstream_error")
        output.end()
        return output.response()

    async def events(self, chat: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """The Responses stream (`event: TYPE`, `data: JSON`) for a stream of chat chunks: the
        chat stream's error event (an upstream that broke off) ends it in `response.failed`, as
        OpenAI ends a response that fails after it has begun."""
        output = self._output()
        try:
            async for line in sse.lines(chat):
                chunk = _chunk(line)
                for event in output.chunk(chunk) if chunk is not None else ():
                    yield sse.named_event(event["type"], event)
                if output.error is not None:
                    return
        finally:  # the client may leave first: the chat stream then closes its upstream
            if hasattr(chat, "aclose"):
                await chat.aclose()
        for event in output.end():
            yield sse.named_event(event["type"], event)

    def _output(self) -> Output:
        return Output(self.translated.echo, model=self.call.model)


def read(raw: bytes, config: ServeConfig) -> Asked:
    """The request's body read, translated and checked as a chat request; raises ServeError
    (400) naming the Responses field that is wrong."""
    translated = translate(read_json(raw))
    try:
        call = parse_request(translated.chat, model=config.model)
    except ServeError as error:
        raise translated.renamed(error) from None
    return Asked(call, translated)


def not_kept(path: str) -> ServeError:
    """The 404 for a stored response asked for by id (read, cancelled, deleted, listed)."""
    return ServeError(
        404,
        f"{path}: textreact serve keeps no responses (it is stateless), so none can be read "
        "back, cancelled or deleted: keep what a response returns, and send the whole "
        "conversation in the next request's input",
        code="not_found",
    )


def _chunk(line: str) -> dict[str, Any] | None:
    """The chat chunk an SSE line holds, if it holds one (not `[DONE]`, nor what an upstream
    passed through wrote that is not JSON)."""
    data = line[5:].strip() if line.startswith("data:") else ""
    try:
        value = json.loads(data) if data and data != "[DONE]" else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
