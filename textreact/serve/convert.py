"""ChatRequest -> the conversation in the text protocol: the tools and format rules in the
system prompt (the client's system messages follow them), earlier `tool_calls` as `Action` /
`Action Input` turns, and each `role: "tool"` message as the `Observation:` user turn of the
call it answers, quoted as untrusted text."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from textreact import grammar, prompt
from textreact.models import Message
from textreact.parsing.calls import MAX_CALLS
from textreact.serve.errors import bad_request
from textreact.serve.request import ChatRequest, parse_request, request_tools, shown
from textreact.steps import Action, FinalAnswer
from textreact.tools import Tool
from textreact.untrusted import defuse

# parse_request and request_tools moved to textreact.serve.request; still importable here.
__all__ = [
    "ChatRequest",
    "content_text",
    "earlier_calls",
    "parse_request",
    "request_tools",
    "text_messages",
]


def text_messages(
    request: ChatRequest, *, lang: str = "en", limit: int | None = None, example: bool = True
) -> list[Message]:
    """The conversation in the text protocol; `limit` cuts each tool result to that many
    characters (head and tail kept), None sends them whole. `example` sends the bundled worked
    example after the system prompt when the request has tools, as the loop does
    (`textreact.prompt` says why)."""
    instructions = [_system_prompt(request.tools, lang, request.parallel_calls)]
    if request.answer_format is not None:
        instructions.append(request.answer_format.instruction(lang))
    out = _Turns()
    messages = request.messages
    answered = _results(messages)
    for i, message in enumerate(messages):
        role = message["role"]
        if role in ("system", "developer"):
            instructions.append(content_text(message.get("content"), f"messages[{i}]"))
        elif role == "user":
            out.add("user", message.get("content") or "")
        elif role == "assistant":
            for reply in _assistant(message, i, answered, lang, limit):
                out.add(reply["role"], reply["content"])
    system = "\n\n".join(part for part in instructions if part.strip())
    # A request without tools is told to answer directly: an example of calls would contradict it.
    shown = [dict(message) for message in _example(lang)] if example and request.tools else []
    return [{"role": "system", "content": system}, *shown, *out.messages()]


@lru_cache(maxsize=256)
def _system_prompt(tools: tuple[Tool, ...], lang: str, parallel: bool) -> str:
    """The tools' system prompt, rendered once per tool set (the tools themselves are made
    once per definition, so a framework's every turn finds it here); with `parallel`, its
    format says that a reply may make several calls (`ChatRequest.parallel_calls`)."""
    return prompt.system_prompt(tools, lang, MAX_CALLS if parallel else 1)


@lru_cache(maxsize=8)
def _example(lang: str) -> tuple[Message, ...]:
    """The worked example's turns, rendered once per language."""
    return tuple(prompt.example_messages(lang))


def earlier_calls(request: ChatRequest) -> list[tuple[str, dict[str, Any] | str, str]]:
    """(tool name, arguments, result) of each earlier call that has its result, in order, the
    result as the client sent it: what a repeated call is answered from. It is shown
    (`untrusted.defuse`) only when a call repeats it: most turns repeat none, and a framework
    resends every earlier result on every turn."""
    answered = _results(request.messages)
    found = []
    for message in request.messages:
        if message["role"] != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            result = answered.get(call.get("id")) if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str) and result:
                arguments = _arguments(function.get("arguments"))
                found.append((function["name"], arguments, result))
    return found


def _results(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each tool result by the id of the call it answers; a result for no call is a 400."""
    calls = set()
    results: dict[str, str] = {}
    first: dict[str, int] = {}
    for i, message in enumerate(messages):
        if message["role"] == "assistant":
            for call in message.get("tool_calls") or ():
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    calls.add(call["id"])
        elif message["role"] == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in calls:
                raise bad_request(
                    f"messages[{i}] (role tool) has tool_call_id {shown(call_id)}, which no "
                    "earlier assistant tool call has: send the id of the call it answers",
                    f"messages[{i}].tool_call_id",
                )
            if call_id in results:  # keeping one would drop the other's meaning unseen
                raise bad_request(
                    f"messages[{i}] (role tool) answers the call {shown(call_id)}, which "
                    f"messages[{first[call_id]}] answers already: send one result per call "
                    "(join the two into one content if both belong to it)",
                    f"messages[{i}].tool_call_id",
                )
            first[call_id] = i
            results[call_id] = content_text(message.get("content"), f"messages[{i}]")
    return results


def _assistant(
    message: Mapping[str, Any],
    index: int,
    answered: Mapping[str, str],
    lang: str,
    limit: int | None,
) -> list[Message]:
    """An earlier assistant message as the model would have written it: each call as one
    Action turn followed by its Observation; plain text as a Final Answer."""
    content = content_text(message.get("content"), f"messages[{index}]").strip()
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise bad_request(f"messages[{index}].tool_calls must be an array", f"messages[{index}]")
    if not calls:
        if not content:
            return []
        return [{"role": "assistant", "content": grammar.render_step(FinalAnswer(content), lang)}]
    turns: list[Message] = []
    for k, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise bad_request(
                f"messages[{index}].tool_calls[{k}] must have function.name and function.arguments",
                f"messages[{index}].tool_calls[{k}]",
            )
        thought = content if k == 0 and content else None
        action = Action(function["name"], _arguments(function.get("arguments")), thought)
        turns.append({"role": "assistant", "content": grammar.render_step(action, lang)})
        result = answered.get(call.get("id"))
        if result is not None:
            safe = defuse(result, limit)
            turns.append({"role": "user", "content": grammar.render_observation(safe, lang)})
    return turns


def _arguments(raw: Any) -> dict[str, Any] | str:
    """A call's arguments as the Action Input shows them: the object when they are JSON."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return ""
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if isinstance(value, dict) else raw


def content_text(content: Any, where: str) -> str:
    """A message's content as text: a string, or the text of its parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") in ("text", "input_text"):
                texts.append(str(part.get("text", "")))
            elif isinstance(part, str):
                texts.append(part)
        return "\n".join(texts)
    raise bad_request(f"{where}.content must be a string or an array of parts", where)


class _Turns:
    """The conversation as it is written: user texts in a row (an observation, then the user's
    next words) become one message, so roles alternate for chat templates that require it.
    Their texts are joined once, at the end: joined as each came, every join copied all the
    text before it, and time grew with the square of the messages."""

    def __init__(self) -> None:
        #: (role, content, the texts of a user message that may still grow, else None).
        self._turns: list[tuple[str, Any, list[str] | None]] = []

    def add(self, role: str, content: Any) -> None:
        texts = [content] if role == "user" and isinstance(content, str) else None
        if texts is not None and self._turns and (last := self._turns[-1][2]) is not None:
            last.append(content)
        else:
            self._turns.append((role, content, texts))

    def messages(self) -> list[Message]:
        return [
            {"role": role, "content": content if texts is None else "\n\n".join(texts)}
            for role, content, texts in self._turns
        ]
