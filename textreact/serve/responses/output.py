"""The chat endpoint's answer -> a Responses answer: its deltas (a streamed completion's chunks,
or a whole completion read as one) become output items (`reasoning` for the thought,
`message` for the text, one `function_call` per tool call), the events that build them, and the
response object. A whole response and a streamed one are made by the same reading, so the two
cannot disagree."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from typing import Any, Final

#: Chat finish reasons that leave a response incomplete, and the reason OpenAI gives for each.
_INCOMPLETE: Final = {"length": "max_output_tokens", "content_filter": "content_filter"}
#: Chat error types that are OpenAI's `rate_limit_exceeded` in a failed response.
_RATE_LIMITED: Final = frozenset({"upstream_unavailable", "rate_limit_exceeded"})
#: Each kind of item that holds text: its id's prefix, its part's type, its delta event's type.
_TEXT_ITEMS: Final = {
    "message": ("msg", "output_text", "response.output_text"),
    "reasoning": ("rs", "reasoning_text", "response.reasoning_text"),
}

Event = dict[str, Any]


def _id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


class Output:
    """One response as it is written: read `chunk` by chunk; `chunk` and `end` (or `fail`)
    return the events that say what changed, `response` the object as it stands."""

    def __init__(self, echo: Mapping[str, Any], model: str) -> None:
        self.id = _id("resp")
        self.created_at = int(time.time())
        self.echo = dict(echo)
        #: The model the answer names (the upstream's, once a chunk names it).
        self.model = model
        self.items: list[dict[str, Any]] = []
        #: Each item's place in `items`, by its id.
        self._index: dict[str, int] = {}
        #: The item being written, and its text (or arguments) so far, in pieces.
        self._open: dict[str, Any] | None = None
        self._pieces: list[str] = []
        #: The function_call item of each chat tool call, by the call's index.
        self._calls: dict[int, dict[str, Any]] = {}
        #: Function calls written whole but not said done: a client runs a call once it is
        #: done, and the chat answer may still withdraw it (serve's --stream-arguments) until
        #: it finishes, so each call is said done only when the answer has.
        self._written: list[dict[str, Any]] = []
        self._sequence = 0
        self.usage: dict[str, Any] | None = None
        self.status = "in_progress"
        self.incomplete: str | None = None
        self.error: dict[str, Any] | None = None
        #: textreact's own fields of the chat answer (what was re-asked, the note).
        self.extra: Any = None

    def chunk(self, chunk: Mapping[str, Any]) -> list[Event]:
        """The events of one chat chunk (a whole completion's message is one delta), after
        `response.created` and `response.in_progress` for the first; the chat stream's error
        event fails the response."""
        if isinstance(chunk.get("error"), dict):
            return self.fail(chunk["error"])
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        events = self._start()
        if isinstance(chunk.get("usage"), dict):
            self.usage = _usage(chunk["usage"])
        if chunk.get("textreact") is not None:
            self.extra = chunk["textreact"]
        choices = chunk.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(choice, dict):
            return events
        delta = choice.get("delta", choice.get("message"))
        if isinstance(delta, dict):
            events += self._delta(delta)
        reason = choice.get("finish_reason")
        if reason:
            self.incomplete = _INCOMPLETE.get(reason) if isinstance(reason, str) else None
            events += self._close() + self._done()
        return events

    def end(self) -> list[Event]:
        """The last events of a response the chat answer finished."""
        events = [*self._start(), *self._close(), *self._done()]
        self.status = "incomplete" if self.incomplete else "completed"
        return [*events, self._lifecycle(f"response.{self.status}")]

    def fail(self, error: Mapping[str, Any]) -> list[Event]:
        """The last events of a response the chat answer broke off with `error` (OpenAI's
        error object): what was begun ends incomplete, then `response.failed`."""
        events = [*self._start(), *self._close("incomplete")]
        for item in self._written:  # never said done: no client runs them
            item["status"] = "incomplete"
        self._written = []
        kind = error.get("type") if isinstance(error.get("type"), str) else None
        self.error = {
            "code": "rate_limit_exceeded" if kind in _RATE_LIMITED else "server_error",
            "message": str(error.get("message") or "the upstream failed"),
            "type": kind,
            "param": error.get("param"),
        }
        self.status = "failed"
        return [*events, self._lifecycle("response.failed")]

    def _start(self) -> list[Event]:
        """The first two events, unless they have gone out already (then nothing)."""
        if self._sequence:
            return []
        return [self._lifecycle("response.created"), self._lifecycle("response.in_progress")]

    def response(self) -> dict[str, Any]:
        """The response object as it stands."""
        done = self.status not in ("in_progress", "failed")
        cut = {"reason": self.incomplete} if self.status == "incomplete" else None
        body = {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "completed_at": int(time.time()) if self.status == "completed" else None,
            "status": self.status,
            "error": self.error,
            "incomplete_details": cut,
            "model": self.model,
            "output": list(self.items) if self.status != "in_progress" else [],
            "usage": self.usage if done else None,
            **self.echo,
        }
        if self.extra is not None:
            body["textreact"] = self.extra
        return body

    def _delta(self, delta: Mapping[str, Any]) -> list[Event]:
        events: list[Event] = []
        for kind, field in (("reasoning", "reasoning_content"), ("message", "content")):
            text = delta.get(field)
            if isinstance(text, str) and text:
                events += self._text(kind, text)
        calls = delta.get("tool_calls")
        for position, call in enumerate(calls if isinstance(calls, list) else ()):
            if isinstance(call, dict):
                events += self._call(call, position)
        return events

    def _text(self, kind: str, text: str) -> list[Event]:
        events: list[Event] = []
        item = self._open
        if item is None or item["type"] != kind:
            events += self._close()
            item = {
                "id": _id(_TEXT_ITEMS[kind][0]),
                "type": kind,
                "status": "in_progress",
                "content": [],
            }
            if kind == "message":
                item["role"] = "assistant"
            else:
                item["summary"] = []
            events += self._begin(item)
            events.append(self._part_event("added", item, ""))
        self._pieces.append(text)
        delta = f"{_TEXT_ITEMS[kind][2]}.delta"
        events.append(self._event(delta, **self._where(item), content_index=0, delta=text))
        if kind == "message":
            events[-1]["logprobs"] = []
        return events

    def _call(self, call: Mapping[str, Any], position: int) -> list[Event]:
        """A chat tool call's delta: its first (with its id and name) begins a function_call
        item, the rest add to its arguments. A call's deltas all come before the next call's
        (the chat endpoint and OpenAI's API send them so): a piece for a call already done
        could not be sent, and is not kept."""
        index = call["index"] if isinstance(call.get("index"), int) else position
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a native upstream's object, as some servers send
            arguments = json.dumps(arguments)
        events: list[Event] = []
        item = self._calls.get(index)
        if item is None:
            events += self._close()
            item = {
                "id": _id("fc"),
                "type": "function_call",
                "status": "in_progress",
                "call_id": str(call.get("id") or _id("call")),
                "name": str(function.get("name") or ""),
                "arguments": "",
            }
            self._calls[index] = item
            events += self._begin(item)
        if isinstance(arguments, str) and arguments and item is self._open:
            self._pieces.append(arguments)
            delta = "response.function_call_arguments.delta"
            events.append(self._event(delta, **self._where(item), delta=arguments))
        return events

    def _begin(self, item: dict[str, Any]) -> list[Event]:
        self._open, self._pieces = item, []
        self._index[item["id"]] = len(self.items)
        self.items.append(item)
        return [self._event("response.output_item.added", **self._where(item), item=dict(item))]

    def _close(self, status: str | None = None) -> list[Event]:
        """The events that finish the text item being written, if any (`status`: that of a
        cut answer's item); a function call being written is kept for `_done`."""
        item = self._open
        if item is None:
            return []
        self._open = None
        text = "".join(self._pieces)
        if item["type"] == "function_call":  # said done with the answer (`_done`)
            item["arguments"] = text
            self._written.append(item)
            return []
        item["status"] = status or ("incomplete" if self.incomplete else "completed")
        where = self._where(item)
        kind = _TEXT_ITEMS[item["type"]][2]
        done = [self._event(f"{kind}.done", **where, content_index=0, text=text)]
        if item["type"] == "message":
            done[-1]["logprobs"] = []
        item["content"] = [_part(item, text)]
        done.append(self._part_event("done", item, text))
        return [*done, self._event("response.output_item.done", **where, item=dict(item))]

    def _done(self) -> list[Event]:
        """The events that say each written function call done, in order."""
        events: list[Event] = []
        for item in self._written:
            item["status"] = "incomplete" if self.incomplete else "completed"
            where = self._where(item)
            arguments = item["arguments"]
            events.append(
                self._event("response.function_call_arguments.done", **where, arguments=arguments)
            )
            events.append(self._event("response.output_item.done", **where, item=dict(item)))
        self._written = []
        return events

    def _part_event(self, what: str, item: Mapping[str, Any], text: str) -> Event:
        kind = f"response.content_part.{what}"
        return self._event(kind, **self._where(item), content_index=0, part=_part(item, text))

    def _where(self, item: Mapping[str, Any]) -> dict[str, Any]:
        return {"item_id": item["id"], "output_index": self._index[item["id"]]}

    def _lifecycle(self, kind: str) -> Event:
        return self._event(kind, response=self.response())

    def _event(self, kind: str, **fields: Any) -> Event:
        event = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return event


def _part(item: Mapping[str, Any], text: str) -> dict[str, Any]:
    part: dict[str, Any] = {"type": _TEXT_ITEMS[item["type"]][1], "text": text}
    if item["type"] == "message":
        part.update(annotations=[], logprobs=[])
    return part


def _usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """A chat usage as a Responses usage."""

    def count(value: Any) -> int:
        return value if isinstance(value, int) and value >= 0 else 0

    asked, made = count(usage.get("prompt_tokens")), count(usage.get("completion_tokens"))
    prompt = usage.get("prompt_tokens_details")
    completion = usage.get("completion_tokens_details")
    cached = count(prompt.get("cached_tokens")) if isinstance(prompt, dict) else 0
    reasoning = count(completion.get("reasoning_tokens")) if isinstance(completion, dict) else 0
    return {
        "input_tokens": asked,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "output_tokens": made,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": asked + made,
    }
