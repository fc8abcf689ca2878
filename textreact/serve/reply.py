"""Verdicts -> OpenAI's response shapes: the `chat.completion` body, and the
`chat.completion.chunk` events of a stream (role first, content or each tool call's name then
its arguments in pieces, the finish reason, the usage when asked, `[DONE]`). Several calls of
one reply are several `tool_calls`, each with its own id, indexed in the stream as written."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from typing import Any

from textreact.serve.sse import DONE, event
from textreact.serve.turn import Answer, Call, Calls, calls_of
from textreact.steps import Usage

#: Characters of a call's argument string per streamed piece.
ARGUMENT_PIECE = 24


def call_id() -> str:
    """A fresh tool call id in OpenAI's style; the text protocol has none of its own."""
    return f"call_{secrets.token_hex(12)}"


def completion_id() -> str:
    return f"chatcmpl-{secrets.token_hex(12)}"


def usage_body(usage: Usage) -> dict[str, int]:
    total = usage.prompt_tokens + usage.completion_tokens
    return {**usage.to_dict(), "total_tokens": total}


def arguments_text(call: Call) -> str:
    """The validated arguments as the JSON string OpenAI's `function.arguments` carries."""
    return json.dumps(call.arguments, ensure_ascii=False)


def message_body(
    verdict: Call | Calls | Answer, *, show_thoughts: bool
) -> tuple[dict[str, Any], str]:
    """(the assistant message, the finish reason) for one verdict."""
    thought = verdict.thought
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if isinstance(verdict, (Call, Calls)):
        message["content"] = thought if show_thoughts and thought else None
        message["tool_calls"] = [
            {
                "id": call_id(),
                "type": "function",
                "function": {"name": call.tool.name, "arguments": arguments_text(call)},
            }
            for call in calls_of(verdict)
        ]
        reason = "tool_calls"
    else:
        shown = f"{thought}\n\n{verdict.text}" if show_thoughts and thought else verdict.text
        message["content"] = shown
        reason = verdict.finish_reason
    if thought:
        message["reasoning_content"] = thought
    return message, reason


def completion_body(
    verdict: Call | Calls | Answer,
    *,
    model: str,
    usage: Usage,
    show_thoughts: bool = False,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole `chat.completion` body; `extra` adds textreact's own fields (what was
    re-asked, the note), which OpenAI clients ignore."""
    message, reason = message_body(verdict, show_thoughts=show_thoughts)
    body = {
        "id": completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reason, "logprobs": None}],
        "usage": usage_body(usage),
    }
    if extra:
        body["textreact"] = extra
    return body


class Chunks:
    """The SSE events of one streamed completion, in OpenAI's format; the first of them is
    always the role's, whichever event is asked for first."""

    def __init__(self, model: str, *, include_usage: bool = False) -> None:
        self.id = completion_id()
        self.created = int(time.time())
        #: The model every chunk names; it may change until the first chunk is made.
        self.model = model
        self.include_usage = include_usage
        self.begun = False
        #: The tool calls sent so far: the next one's index.
        self.calls_sent = 0

    def event(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        return self.role() + self._choice(delta, finish_reason)

    def _choice(self, delta: dict[str, Any], finish_reason: str | None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return self._data({"choices": [choice]})

    def _data(self, fields: dict[str, Any]) -> bytes:
        self.begun = True
        body = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            **fields,
        }
        if self.include_usage and "usage" not in body:
            body["usage"] = None
        return event(body)

    def role(self) -> bytes:
        """The role's event, unless it has gone out already (then nothing)."""
        if self.begun:
            return b""
        return self._choice({"role": "assistant", "content": ""}, None)

    def content(self, text: str) -> bytes:
        return self.event({"content": text})

    def reasoning(self, text: str) -> bytes:
        return self.event({"reasoning_content": text})

    def call(self, call: Call) -> Iterator[bytes]:
        """A call as OpenAI streams one: its index (the calls sent before it), id and name,
        then its arguments in pieces."""
        yield self.begin_call(call.tool.name)
        text = arguments_text(call)
        for at in range(0, len(text), ARGUMENT_PIECE):
            yield self.arguments(text[at : at + ARGUMENT_PIECE])

    def begin_call(self, name: str) -> bytes:
        """A call's first event: its index (the calls sent before it), id and name; its
        arguments follow (`arguments`), whole or as the model writes them."""
        index, self.calls_sent = self.calls_sent, self.calls_sent + 1
        start = {"index": index, "id": call_id(), "type": "function"}
        start["function"] = {"name": name, "arguments": ""}
        return self.event({"tool_calls": [start]})

    def arguments(self, piece: str) -> bytes:
        """A piece of the arguments of the call begun last."""
        index = self.calls_sent - 1
        return self.event({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})

    def finish(self, reason: str, usage: Usage) -> Iterator[bytes]:
        """The last events: the finish reason, the usage when asked for, `[DONE]`."""
        yield self.event({}, reason)
        if self.include_usage:
            yield self._data({"choices": [], "usage": usage_body(usage)})
        yield DONE
