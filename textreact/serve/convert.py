"""OpenAI chat request -> what one text-protocol turn needs: the request checked (400s that
name the field), the request's own tools as `Tool`s, and the conversation rendered in the
text protocol: the tools and format rules in the system prompt (the client's system messages
follow them), earlier `tool_calls` as `Action` / `Action Input` turns, and each `role: "tool"`
message as the `Observation:` user turn of the call it answers, quoted as untrusted text."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from textreact import grammar, observation, prompt
from textreact.errors import ConfigError
from textreact.models import Message
from textreact.serve.answers import AnswerFormat, answer_format
from textreact.serve.errors import ServeError, bad_request
from textreact.serve.schemas import SchemaProblem, checked_schema
from textreact.steps import Action, FinalAnswer
from textreact.tools import Tool

#: Fields the text protocol handles itself; every other field goes to the upstream as sent.
HANDLED = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "stream",
        "stream_options",
        "stop",
        "n",
        "functions",
        "function_call",
        "response_format",
    }
)
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


@dataclass(frozen=True)
class ChatRequest:
    """One `POST /v1/chat/completions`, checked."""

    #: The body exactly as the client sent it (a pass-through sends this).
    body: dict[str, Any]
    #: The model asked of the upstream (the server's `--model` when it has one).
    model: str
    messages: list[dict[str, Any]]
    #: The request's own tools; () with no `tool_history`: the request passes through.
    tools: tuple[Tool, ...] = ()
    #: "auto", "required", "none", or one tool's name ("none" when there are no tools).
    tool_choice: str = "auto"
    #: Whether the conversation holds earlier tool calls or results: without tools it is still
    #: a text-protocol turn (an upstream with no tool calls cannot read them raw).
    tool_history: bool = False
    #: What `response_format` asks the final answer to be (text-protocol turns); None: text.
    answer_format: AnswerFormat | None = None
    stream: bool = False
    include_usage: bool = False
    #: The client's own stop sequences, sent beside the protocol's.
    stop: tuple[str, ...] = ()
    #: The other fields (temperature, max_tokens, seed, server-specific ones), sent upstream.
    options: dict[str, Any] = field(default_factory=dict)


def parse_request(body: Any, *, model: str | None = None) -> ChatRequest:
    """The checked request; raises ServeError (400) naming what is wrong."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    chosen = model or body.get("model")
    if not isinstance(chosen, str) or not chosen:
        raise bad_request('model must be a non-empty string, e.g. "gpt-4o"', "model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad_request("messages must be a non-empty array of message objects", "messages")
    for i, message in enumerate(messages):
        _check_message(message, i)
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise bad_request(f"stream must be true or false, got {_shown(stream)}", "stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise bad_request("stream_options must be an object", "stream_options")
    for legacy in ("functions", "function_call"):
        if body.get(legacy) is not None:
            raise bad_request(
                f"{legacy} is the legacy function-calling API, which this server does not take: "
                'send tools=[{"type": "function", "function": {name, description, parameters}}] '
                "(and tool_choice) instead",
                legacy,
            )
    tools = request_tools(body.get("tools"))
    choice = tool_choice(body.get("tool_choice"), tools)
    if not tools:
        choice = "none"  # no call to make: a text-protocol turn without tools is an answer
    history = any(
        m["role"] == "tool" or (m["role"] == "assistant" and m.get("tool_calls")) for m in messages
    )
    if (tools or history) and body.get("n", 1) not in (1, None):
        raise bad_request(
            "n must be 1 when tools or tool results are given (one reply is parsed per request)",
            "n",
        )
    return ChatRequest(
        body=body,
        model=chosen,
        messages=messages,
        tools=tools,
        tool_choice=choice,
        tool_history=history,
        answer_format=answer_format(body.get("response_format")) if tools or history else None,
        stream=stream,
        include_usage=bool(options.get("include_usage")),
        stop=_stops(body.get("stop")),
        options={k: v for k, v in body.items() if k not in HANDLED},
    )


def _check_message(message: Any, i: int) -> None:
    """A 400 for a message that is not an object with a known role and readable content."""
    if not isinstance(message, dict):
        raise bad_request(
            f'messages[{i}] must be an object such as {{"role": "user", "content": "..."}}, '
            f"got {_shown(message)}",
            f"messages[{i}]",
        )
    role = message.get("role")
    if role == "function":
        raise bad_request(
            f'messages[{i}] has role "function", the legacy function-calling API, which this '
            'server does not take: send tools, and each result as role "tool" with the '
            "tool_call_id of the call it answers",
            f"messages[{i}].role",
        )
    if not isinstance(role, str) or role not in _ROLES:
        raise bad_request(
            f"messages[{i}].role must be one of {', '.join(sorted(_ROLES))}, got {_shown(role)}",
            f"messages[{i}].role",
        )
    content = message.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise bad_request(
            f"messages[{i}].content must be a string or an array of content parts, got "
            f"{_shown(content)}",
            f"messages[{i}].content",
        )


def request_tools(specs: Any) -> tuple[Tool, ...]:
    """The request's `tools` as Tools, each function's schema normalised and checked once per
    distinct definition (a framework sends the same tools on every turn)."""
    if specs is None:
        return ()
    if not isinstance(specs, list):
        raise bad_request("tools must be an array of {type: function, function: {...}}", "tools")
    tools = []
    for i, spec in enumerate(specs):
        function = spec.get("function") if isinstance(spec, dict) else None
        if not isinstance(spec, dict) or spec.get("type", "function") != "function":
            raise bad_request(
                f'tools[{i}] must be a function tool ({{"type": "function", "function": '
                f"{{name, description, parameters}}}}), got {_shown(spec)}",
                f"tools[{i}]",
            )
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise bad_request(f"tools[{i}].function must be an object with a name", f"tools[{i}]")
        where = f"tools[{i}].function"
        try:
            tools.append(_tool(json.dumps(function, sort_keys=True)))
        except SchemaProblem as exc:
            raise bad_request(f"{where}.{exc}", f"{where}.parameters") from None
        except ConfigError as exc:
            raise _tool_problem(exc, where) from None
        except Exception:  # passed the checks, yet unusable: say so, not Python's words
            raise bad_request(
                f"{where}.parameters could not be used as a JSON Schema: check that every "
                "keyword holds what JSON Schema says it holds (properties: an object of schemas, "
                "type: a type name, required: an array of names, anyOf: an array of schemas)",
                f"{where}.parameters",
            ) from None
    names = [t.name for t in tools]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise bad_request(f"tool names must be unique; given twice: {', '.join(twice)}", "tools")
    return tuple(tools)


def _tool_problem(exc: ConfigError, where: str) -> ServeError:
    """The 400 for a function textreact refused, in the client's terms."""
    said = str(exc)
    if said.startswith("tool name"):
        return bad_request(f"{where}.name: {said}", f"{where}.name")
    if "its example" in said:  # no example call fits: a pattern or a bound it cannot guess
        problems = said.partition("(")[2].rpartition(")")[0] or said
        return bad_request(
            f"{where}.parameters: no example call could be made that fits it ({problems}); "
            'add "examples": [a value that fits] to each parameter named there',
            f"{where}.parameters",
        )
    return bad_request(f"{where}: {said}", f"{where}.parameters")


@lru_cache(maxsize=512)
def _tool(function_json: str) -> Tool:
    function = json.loads(function_json)
    name = function["name"]
    description = function.get("description")
    if not isinstance(description, str) or not description.strip():
        description = name  # the name is all the client said of it
    parameters = function.get("parameters")
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    return Tool.from_schema(name, description, checked_schema(parameters, "parameters"))


def tool_choice(value: Any, tools: Sequence[Tool]) -> str:
    """OpenAI's `tool_choice` as "auto", "required", "none" or a tool's name."""
    if value is None:
        return "auto"
    if value in ("auto", "required", "none"):
        if value == "required" and not tools:
            raise bad_request('tool_choice "required" needs tools', "tool_choice")
        return value
    function = value.get("function") if isinstance(value, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str):
        raise bad_request(
            'tool_choice must be "auto", "required", "none" or {"type": "function", '
            f'"function": {{"name": ...}}}}, got {_shown(value)}',
            "tool_choice",
        )
    if name not in {t.name for t in tools}:
        offered = ", ".join(t.name for t in tools) or "no tools"
        raise bad_request(
            f"tool_choice names {name!r}, which is not among the tools ({offered})",
            "tool_choice",
        )
    return name


def _stops(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return tuple(value)
    raise bad_request("stop must be a string or an array of strings", "stop")


def text_messages(
    request: ChatRequest, *, lang: str = "en", limit: int | None = None
) -> list[Message]:
    """The conversation in the text protocol; `limit` cuts each tool result to that many
    characters (head and tail kept), None sends them whole."""
    instructions = [_system_prompt(request.tools, lang)]
    if request.answer_format is not None:
        instructions.append(request.answer_format.instruction(lang))
    out: list[Message] = []
    messages = request.messages
    answered = _results(messages)
    for i, message in enumerate(messages):
        role = message["role"]
        if role in ("system", "developer"):
            instructions.append(content_text(message.get("content"), f"messages[{i}]"))
        elif role == "user":
            _append(out, {"role": "user", "content": message.get("content") or ""})
        elif role == "assistant":
            for reply in _assistant(message, i, answered, lang, limit):
                _append(out, reply)
    system = "\n\n".join(part for part in instructions if part.strip())
    return [{"role": "system", "content": system}, *out]


@lru_cache(maxsize=256)
def _system_prompt(tools: tuple[Tool, ...], lang: str) -> str:
    """The tools' system prompt, rendered once per tool set (the tools themselves are made
    once per definition, so a framework's every turn finds it here)."""
    return prompt.system_prompt(tools, lang)


def earlier_calls(request: ChatRequest) -> list[tuple[str, dict[str, Any] | str, str]]:
    """(tool name, arguments, result) of each earlier call that has its result, in order, the
    result quoted as the model was shown it: what a repeated call is answered from."""
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
                found.append((function["name"], arguments, untrusted(result)))
    return found


def untrusted(text: str) -> str:
    """A tool's result made safe to show the model, as `observe` makes one."""
    return observation.quote_keywords(observation.neutralise_control_tokens(text))


def _results(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each tool result by the id of the call it answers; a result for no call is a 400."""
    calls = set()
    results = {}
    for i, message in enumerate(messages):
        if message["role"] == "assistant":
            for call in message.get("tool_calls") or ():
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    calls.add(call["id"])
        elif message["role"] == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in calls:
                raise bad_request(
                    f"messages[{i}] (role tool) has tool_call_id {_shown(call_id)}, which no "
                    "earlier assistant tool call has: send the id of the call it answers",
                    f"messages[{i}].tool_call_id",
                )
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
            shown = observation.truncate(result, limit) if limit is not None else result
            safe = untrusted(shown)
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


def _append(messages: list[Message], message: Message) -> None:
    """Add a message; two user texts in a row (an observation, then the user's next words)
    become one, so roles alternate for chat templates that require it."""
    last = messages[-1] if messages else None
    if (
        last is not None
        and last["role"] == message["role"] == "user"
        and isinstance(last["content"], str)
        and isinstance(message["content"], str)
    ):
        last["content"] = f"{last['content']}\n\n{message['content']}"
    else:
        messages.append(dict(message))


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:80] + "..."
