"""A chat completion -> an Anthropic message: the content as a text block, each `tool_calls`
entry as a `tool_use` block (its id `toolu_...`, its arguments the `input` object), the
finish reason as a `stop_reason`, the usage as input and output tokens.

The client's stop sequences are applied here, to the answer's text, and not sent upstream:
an OpenAI-compatible upstream does not say which stop ended a reply, and a Messages reply
must (`stop_sequence`); in the text protocol a stop in the thought or in a call's input
would also end the reply before its answer. The text ends where the first of them begins,
and nothing after it (a call) is sent."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from typing import Any, Final

from textreact.serve.errors import ServeError
from textreact.serve.stops import Stops

#: A chat finish reason -> the Messages API's stop reason.
_STOP_REASONS: Final = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def message_id() -> str:
    return f"msg_{secrets.token_hex(12)}"


def tool_use_id(call_id: Any) -> str:
    """A call's id in Anthropic's style: the chat's `call_<hex>` made `toolu_<hex>`."""
    if isinstance(call_id, str) and call_id:
        return "toolu_" + call_id.removeprefix("call_")
    return f"toolu_{secrets.token_hex(12)}"


def stop_reason(finish_reason: Any, called: bool) -> str:
    """The stop reason of a reply that no stop sequence ended; one with a call is `tool_use`
    whatever the upstream said (a native call may come with "stop")."""
    return "tool_use" if called else _STOP_REASONS.get(finish_reason, "end_turn")


def usage(counted: Any) -> dict[str, int]:
    """The chat's usage as the Messages API counts it."""
    counted = counted if isinstance(counted, Mapping) else {}

    def count(value: Any) -> int:  # an upstream's odd count is none, not a failed reply
        return value if isinstance(value, int) and value >= 0 else 0

    return {
        "input_tokens": count(counted.get("prompt_tokens")),
        "output_tokens": count(counted.get("completion_tokens")),
    }


def stopped_at(text: str, stops: Stops, start: int = 0) -> tuple[str, str | None]:
    """`text` up to the first of the client's stops (looked for from `start`), and which one
    (None: none is in it)."""
    kept, found = stops.cut(text, start)
    if not found:
        return text, None
    return kept, next(stop for stop in stops.local if text.startswith(stop, len(kept)))


def message_body(completion: Any, stops: tuple[str, ...], model: str) -> dict[str, Any]:
    """The message for a whole `chat.completion` (the chat path's, or the upstream's passed
    through); `model`: the name asked for, where the completion gives none."""
    choices = completion.get("choices") if isinstance(completion, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ServeError(
            502, "the upstream sent a reply with no choices[0].message", type="upstream_error"
        )
    content = message.get("content")
    text, stop = stopped_at(content if isinstance(content, str) else "", Stops((), stops))
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    if stop is None:
        blocks += [_tool_use(call) for call in message.get("tool_calls") or ()]
    called = any(block["type"] == "tool_use" for block in blocks)
    body = {
        "id": message_id(),
        "type": "message",
        "role": "assistant",
        "model": completion.get("model") or model,
        "content": blocks,
        "stop_reason": "stop_sequence"
        if stop
        else stop_reason(choice.get("finish_reason"), called),
        "stop_sequence": stop,
        "usage": usage(completion.get("usage")),
    }
    if isinstance(completion.get("textreact"), dict):  # what was re-asked, the note
        body["textreact"] = completion["textreact"]
    return body


def _tool_use(call: Any) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    arguments = function.get("arguments") if isinstance(function, dict) else None
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        value = None
    if not isinstance(name, str) or not isinstance(value, dict):
        raise ServeError(
            502,
            f"the upstream sent a tool call that is not a name with a JSON object of "
            f"arguments: {json.dumps(call, default=str)[:200]}",
            type="upstream_error",
        )
    return {"type": "tool_use", "id": tool_use_id(call.get("id")), "name": name, "input": value}
