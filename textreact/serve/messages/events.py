"""A stream of chat chunks -> Anthropic's stream of message events.

`message_start` (and a `ping`) with the first chunk, so the message names the model the
upstream names; then one content block at a time: a text block (`content_block_start`,
`text_delta`s, `content_block_stop`) for the content, a `tool_use` block for each entry of
`tool_calls` (its id and name first, then `input_json_delta`s that carry the arguments as
the chat path sends them: only once they are whole and valid); `message_delta` with the
stop reason and the usage, `message_stop`. The chat stream's error event becomes an `error`
event, which ends the stream, as Anthropic's does.

The client's stop sequences are applied to the text as it comes (`reply` says why): text
that may begin one is held back until it cannot; at one, the message ends with
`stop_sequence`, and the chat stream is closed, which closes the upstream's, so it stops
generating. Its usage, which comes last, is then not known: the message says 0 tokens."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from textreact.serve import sse
from textreact.serve.messages.errors import error_event
from textreact.serve.messages.reply import message_id, stop_reason, stopped_at, tool_use_id, usage
from textreact.serve.sse import named_event
from textreact.serve.stops import Stops


async def events(
    chunks: AsyncIterator[bytes], *, model: str, stops: tuple[str, ...]
) -> AsyncIterator[bytes]:
    """The Messages events of a chat stream (`chunks`, its SSE bytes); `model`: the name
    asked for, where the chunks give none. Closing this closes `chunks`."""
    blocks = _Blocks(model, stops)
    lines = sse.lines(chunks)
    try:
        async for line in lines:
            data = line[5:].strip() if line.startswith("data:") else ""
            if data == "[DONE]":
                break
            if not data:
                continue
            try:
                chunk = json.loads(data)
            except ValueError:
                chunk = None
            if not isinstance(chunk, dict):
                said = f"the upstream sent a stream event that is not a JSON object: {data[:200]}"
                yield error_event({"message": said})
                return
            if isinstance(chunk.get("error"), dict):
                yield error_event(chunk["error"])
                return
            for event in blocks.read(chunk):
                yield event
            if blocks.stop is not None:
                break
        for event in blocks.end():
            yield event
    finally:
        await lines.aclose()
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


class _Blocks:
    """The events of one streamed message, made from the chat chunks read so far."""

    def __init__(self, model: str, stops: tuple[str, ...]) -> None:
        self.model = model
        self.stops = Stops((), stops)
        self.begun = False
        #: The last block's index, and the open block: "text", a chat call's index, or None.
        self.index = -1
        self.open: str | int | None = None
        #: The message's text so far (every text block's), and how much of it has gone out.
        self.text = ""
        self.sent = 0
        #: The stop sequence that ended the text, once one has.
        self.stop: str | None = None
        self.finish: Any = None
        self.called = False
        self.usage: Any = None

    def read(self, chunk: Mapping[str, Any]) -> list[bytes]:
        out = self._begin(chunk.get("model"))
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            delta = delta if isinstance(delta, dict) else {}
            if isinstance(delta.get("content"), str) and self.stop is None:
                out += self._text(delta["content"])
            for call in delta.get("tool_calls") or ():
                if isinstance(call, dict) and self.stop is None:
                    out += self._call(call)
            self.finish = choice.get("finish_reason") or self.finish
        return out

    def end(self) -> list[bytes]:
        """The last events: what text was held back, the open block's end, the stop reason
        and the usage, `message_stop`."""
        out = self._begin(None)
        if self.stop is None:
            out += self._send(self.text)
        out += self._close()
        reason = "stop_sequence" if self.stop else stop_reason(self.finish, self.called)
        delta = {"stop_reason": reason, "stop_sequence": self.stop}
        out.append(_event("message_delta", delta=delta, usage=usage(self.usage)))
        out.append(_event("message_stop"))
        return out

    def _begin(self, model: Any) -> list[bytes]:
        if self.begun:
            return []
        self.begun = True
        message = {
            "id": message_id(),
            "type": "message",
            "role": "assistant",
            "model": model if isinstance(model, str) and model else self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        return [_event("message_start", message=message), _event("ping")]

    def _text(self, piece: str) -> list[bytes]:
        start = self.stops.resume(len(self.text))
        self.text += piece
        kept, self.stop = stopped_at(self.text, self.stops, start)
        return self._send(kept if self.stop else self.stops.readable(self.text, start))

    def _send(self, kept: str) -> list[bytes]:
        """The text of `kept` (the message's text, to where it may go out) not sent yet."""
        piece = kept[self.sent :]
        if not piece:
            return []
        out = [] if self.open == "text" else self._open("text", {"type": "text", "text": ""})
        self.sent = len(kept)
        delta = {"type": "text_delta", "text": piece}
        return [*out, _event("content_block_delta", index=self.index, delta=delta)]

    def _call(self, call: Mapping[str, Any]) -> list[bytes]:
        index = call.get("index", 0)
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        out = []
        if self.open != index:
            out += self._send(self.text)  # the text before a call has ended: none is held
            block = {"type": "tool_use", "id": tool_use_id(call.get("id"))}
            out += self._open(index, {**block, "name": function.get("name"), "input": {}})
            self.called = True
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            delta = {"type": "input_json_delta", "partial_json": arguments}
            out.append(_event("content_block_delta", index=self.index, delta=delta))
        return out

    def _open(self, which: str | int, block: dict[str, Any]) -> list[bytes]:
        out = self._close()
        self.index += 1
        self.open = which
        return [*out, _event("content_block_start", index=self.index, content_block=block)]

    def _close(self) -> list[bytes]:
        if self.open is None:
            return []
        self.open = None
        return [_event("content_block_stop", index=self.index)]


def _event(kind: str, **fields: Any) -> bytes:
    return named_event(kind, {"type": kind, **fields})
