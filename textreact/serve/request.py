"""OpenAI chat request -> ChatRequest: the body checked, each problem a 400 that names the
field and says what to write there; the request's tools made `Tool`s once per distinct
definition (their schemas checked first, see `textreact.serve.schemas`); `response_format`,
`tool_choice` and `stop` read."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

from textreact.errors import ConfigError, ToolExampleError
from textreact.serve.answers import AnswerFormat, answer_format
from textreact.serve.errors import ServeError, bad_request
from textreact.serve.schemas import SchemaProblem, checked_schema
from textreact.tools import Tool, ToolBox

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
#: The most a request may ask for: past these, its checking, rendering and reading would cost
#: time that grows with what it asks, on the server's event loop. OpenAI takes 128 tools.
MAX_TOOLS: Final = 128
MAX_MESSAGES: Final = 10_000
MAX_STOPS: Final = 16
MAX_STOP_CHARS: Final = 256
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
    #: Whether one reply may make several calls (`parallel_tool_calls`, which OpenAI takes as
    #: true unless the client says false): the text protocol's format, grammar and reading
    #: then allow up to `parsing.calls.MAX_CALLS`. False also where the request can make no
    #: call (no tools, `tool_choice` none).
    parallel_calls: bool = False
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
    if len(messages) > MAX_MESSAGES:
        raise bad_request(
            f"messages holds {len(messages)} messages; at most {MAX_MESSAGES} are taken: "
            "summarise or drop the oldest turns",
            "messages",
        )
    for i, message in enumerate(messages):
        _check_message(message, i)
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise bad_request(f"stream must be true or false, got {shown(stream)}", "stream")
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
    parallel = body.get("parallel_tool_calls")
    if parallel is not None and not isinstance(parallel, bool):
        raise bad_request(
            f"parallel_tool_calls must be true or false, got {shown(parallel)}",
            "parallel_tool_calls",
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
        parallel_calls=choice != "none" and parallel is not False,
    )


def _check_message(message: Any, i: int) -> None:
    """A 400 for a message that is not an object with a known role and readable content."""
    if not isinstance(message, dict):
        raise bad_request(
            f'messages[{i}] must be an object such as {{"role": "user", "content": "..."}}, '
            f"got {shown(message)}",
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
            f"messages[{i}].role must be one of {', '.join(sorted(_ROLES))}, got {shown(role)}",
            f"messages[{i}].role",
        )
    content = message.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise bad_request(
            f"messages[{i}].content must be a string or an array of content parts, got "
            f"{shown(content)}",
            f"messages[{i}].content",
        )
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise bad_request(
            f"messages[{i}] (role tool) needs tool_call_id, the id (a string) of the call it "
            f"answers, got {shown(message.get('tool_call_id'))}",
            f"messages[{i}].tool_call_id",
        )
    if role == "assistant":
        _check_calls(message.get("tool_calls"), f"messages[{i}].tool_calls")


def _check_calls(calls: Any, where: str) -> None:
    """A 400 for an assistant's tool_calls that are not an array of function calls."""
    if calls is None:
        return
    if not isinstance(calls, list):
        raise bad_request(
            f'{where} must be an array of calls such as [{{"id": "call_1", "type": "function", '
            f'"function": {{"name": ..., "arguments": "{{...}}"}}}}], got {shown(calls)}',
            where,
        )
    for k, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise bad_request(
                f"{where}[{k}] must be an object with function.name and function.arguments, got "
                f"{shown(call)}",
                f"{where}[{k}]",
            )
        if not isinstance(call.get("id", ""), str):
            raise bad_request(
                f"{where}[{k}].id must be a string, got {shown(call['id'])}", f"{where}[{k}].id"
            )


def request_tools(specs: Any) -> tuple[Tool, ...]:
    """The request's `tools` as Tools, each function's schema normalised and checked once per
    distinct definition (a framework sends the same tools on every turn)."""
    if specs is None:
        return ()
    if not isinstance(specs, list):
        raise bad_request("tools must be an array of {type: function, function: {...}}", "tools")
    if len(specs) > MAX_TOOLS:
        raise bad_request(
            f"tools holds {len(specs)} tools; at most {MAX_TOOLS} are taken (as OpenAI takes): "
            "offer the ones this turn may need",
            "tools",
        )
    tools = []
    for i, spec in enumerate(specs):
        function = spec.get("function") if isinstance(spec, dict) else None
        if not isinstance(spec, dict) or spec.get("type", "function") != "function":
            raise bad_request(
                f'tools[{i}] must be a function tool ({{"type": "function", "function": '
                f"{{name, description, parameters}}}}), got {shown(spec)}",
                f"tools[{i}]",
            )
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise bad_request(f"tools[{i}].function must be an object with a name", f"tools[{i}]")
        where = f"tools[{i}].function"
        try:
            tools.append(_tool(json.dumps(function)))  # in the client's order: it is meaning
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
    _distinct(tools)
    return tuple(tools)


def _distinct(tools: Sequence[Tool]) -> None:
    """A 400 for two names the model could not tell apart (`get_weather`, `Get-Weather`): the
    tool box that reads the reply looks names up with case and separators folded, and refuses
    such a pair. Checked with the box itself, so the two cannot disagree."""
    try:
        ToolBox(tools)
    except ConfigError as exc:
        last = next(k for k in range(1, len(tools) + 1) if not _fits(tools[:k]))  # only on error
        where = f"tools[{last - 1}].function.name"
        raise bad_request(f"{where}: {exc}", where) from None


def _fits(tools: Sequence[Tool]) -> bool:
    try:
        ToolBox(tools)
    except ConfigError:
        return False
    return True


def _tool_problem(exc: ConfigError, where: str) -> ServeError:
    """The 400 for a function textreact refused, in the client's terms: the field is the one
    the error names (`ConfigError.field`), the parameters where it names none."""
    if isinstance(exc, ToolExampleError):  # made from the schema: a pattern or a bound to guess
        return bad_request(
            f"{where}.parameters: no example call could be made that fits it ({exc.problems}); "
            'add "examples": [a value that fits] to each parameter named there',
            f"{where}.parameters",
        )
    if exc.field == "name":
        return bad_request(f"{where}.name: {exc}", f"{where}.name")
    return bad_request(f"{where}: {exc}", f"{where}.{exc.field or 'parameters'}")


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
            f'"function": {{"name": ...}}}}, got {shown(value)}',
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
    """The client's stops, at most MAX_STOPS of at most MAX_STOP_CHARS each: those past the
    upstream's four are looked for in every streamed delta."""
    stops = (value,) if isinstance(value, str) else value
    if value is None:
        return ()
    if not isinstance(stops, (tuple, list)) or not all(isinstance(s, str) for s in stops):
        raise bad_request("stop must be a string or an array of strings", "stop")
    if len(stops) > MAX_STOPS or any(len(s) > MAX_STOP_CHARS for s in stops):
        raise bad_request(
            f"stop takes at most {MAX_STOPS} sequences of at most {MAX_STOP_CHARS} characters "
            f"each (OpenAI takes 4), got {len(stops)} of up to {max(map(len, stops))}",
            "stop",
        )
    return tuple(stops)


def shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:80] + "..."
