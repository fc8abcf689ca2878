"""OpenAI Responses request -> the chat endpoint's request body, so that one turn (its checks,
its judgement, its errors) serves both APIs: `instructions` and the `input` items become chat
messages (`function_call` items an assistant's `tool_calls`, `function_call_output` items
`tool` messages), function tools chat tools, `tool_choice` and `text.format` their chat
forms, `max_output_tokens` `max_tokens`. The server keeps nothing between requests, so what
needs a stored response (`previous_response_id`, `conversation`, `background`, a stored
`prompt`, an `item_reference`) is a 400 that says to send the whole input. A chat-path error
that names a chat field is renamed to the Responses field it came from (`Translated.renamed`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from textreact.serve.errors import ServeError, bad_request
from textreact.serve.request import MAX_MESSAGES, shown

#: Fields this translation reads; they do not go to the upstream as they are.
_READ: Final = frozenset(
    {
        "model",
        "instructions",
        "input",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "max_output_tokens",
        "temperature",
        "top_p",
        "text",
        "stream",
    }
)
#: Responses fields that mean nothing to one chat turn of an upstream: taken, and not sent on
#: (`store` is answered as false: nothing is kept). Any other field goes to the upstream, as
#: the chat endpoint sends the fields it does not handle (`seed`, `top_k`, `cache_prompt`...).
_IGNORED: Final = frozenset(
    {
        "access_programs",
        "background",
        "client_metadata",  # Codex CLI's own field, beside metadata
        "context_management",
        "image",
        "include",
        "max_tool_calls",
        "metadata",
        "moderation",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "reasoning",
        "safety_identifier",
        "service_tier",
        "store",
        "stream_options",
        "top_logprobs",
        "truncation",
    }
)
#: What to do instead of each request that needs state kept on the server.
_STATEFUL: Final = {
    "previous_response_id": "send the whole conversation in input (the earlier messages, "
    "function_call and function_call_output items) and leave previous_response_id out",
    "conversation": "send the whole conversation in input and leave conversation out",
    "prompt": "send the prompt's text as instructions and input",
}
_ROLES: Final = frozenset({"user", "assistant", "system", "developer"})
#: How many of the tools it cannot take a 400 names.
_NAMED: Final = 4
_FUNCTION_TOOL: Final = '{"type": "function", "name": ..., "description": ..., "parameters": {...}}'
#: A chat field in an error's words, for `renamed`.
_CHAT_FIELD: Final = re.compile(
    r"messages\[(\d+)\]|tools\[(\d+)\]\.function|response_format(?:\.json_schema)?"
)
#: Chat words for what a Responses request calls otherwise.
_CHAT_WORDS: Final = (
    ("(role tool) has tool_call_id", "(function_call_output) has call_id"),
    ("(role tool) answers the call", "(function_call_output) answers the call"),
    ("no earlier assistant tool call has", "no earlier function_call item has"),
    (".tool_call_id", ".call_id"),
)


@dataclass(frozen=True)
class Translated:
    """A Responses request as the chat endpoint takes it, and what the response repeats."""

    #: The chat endpoint's request body.
    chat: dict[str, Any]
    #: The response object's fields that repeat the request (`tools`, `tool_choice`...).
    echo: dict[str, Any]
    #: For each chat message, the Responses field it was made from (`instructions`, `input[3]`).
    origins: tuple[str, ...]

    def renamed(self, error: ServeError) -> ServeError:
        """`error`, naming the Responses fields where it names the chat fields made from them
        (`messages[2]` -> `input[1]`, `tools[0].function.name` -> `tools[0].name`)."""

        def field(match: re.Match[str]) -> str:
            message, tool = match.group(1), match.group(2)
            if message is not None:
                index = int(message)
                return self.origins[index] if index < len(self.origins) else "input"
            return f"tools[{tool}]" if tool is not None else "text.format"

        def words(text: str) -> str:
            text = _CHAT_FIELD.sub(field, text)
            for chat, responses in _CHAT_WORDS:
                text = text.replace(chat, responses)
            return text

        param = words(error.param) if error.param else error.param
        return ServeError(
            error.status,
            words(error.message),
            type=error.type,
            param=param,
            code=error.code,
            headers=error.headers,
        )


def translate(body: Any) -> Translated:
    """The chat request for a Responses request body; raises ServeError (400) naming the
    Responses field where the body cannot be one."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    for name, instead in _STATEFUL.items():
        if body.get(name) is not None:
            raise _stateless(name, instead)
    if body.get("background"):
        raise _stateless("background", "leave background out and wait for the response")
    messages, origins = _messages(body.get("instructions"), body.get("input"))
    chat = {k: v for k, v in body.items() if k not in _READ and k not in _IGNORED}
    chat.update(model=body.get("model"), messages=messages)
    stream = body.get("stream")
    if stream is not None:  # the chat endpoint checks it
        chat["stream"] = stream
    if stream is True:
        chat["stream_options"] = {"include_usage": True}  # the last event carries the usage
    tools = _tools(body.get("tools"))
    if tools is not None:
        chat["tools"] = tools
    if body.get("tool_choice") is not None:
        chat["tool_choice"] = _tool_choice(body["tool_choice"])
    for name, chat_name in (
        ("parallel_tool_calls", "parallel_tool_calls"),
        ("max_output_tokens", "max_tokens"),
        ("temperature", "temperature"),
        ("top_p", "top_p"),
    ):
        if body.get(name) is not None:
            chat[chat_name] = body[name]
    answer = _answer_format(body.get("text"))
    if answer is not None:
        chat["response_format"] = answer
    return Translated(chat, _echo(body), tuple(origins))


def _stateless(name: str, instead: str) -> ServeError:
    return bad_request(
        f"{name} needs a response or conversation kept on the server, and textreact serve "
        f"keeps none (it is stateless, so that any number of workers can serve it): {instead}",
        name,
    )


def _messages(instructions: Any, items: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """The chat messages of `instructions` and `input`, and the field each was made from."""
    messages: list[dict[str, Any]] = []
    origins: list[str] = []
    if instructions is not None:
        if not isinstance(instructions, str):
            raise bad_request(
                f"instructions must be a string, got {shown(instructions)}", "instructions"
            )
        messages.append({"role": "system", "content": instructions})
        origins.append("instructions")
    if isinstance(items, str):
        messages.append({"role": "user", "content": items})
        origins.append("input")
        return messages, origins
    if not isinstance(items, list) or not items:
        raise bad_request(
            'input must be a string or a non-empty array of items such as {"role": "user", '
            f'"content": "..."}}, got {shown(items)}',
            "input",
        )
    if len(items) > MAX_MESSAGES:
        raise bad_request(
            f"input holds {len(items)} items; at most {MAX_MESSAGES} are taken: summarise or "
            "drop the oldest turns",
            "input",
        )
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise bad_request(
                f'{where} must be an item object such as {{"role": "user", "content": "..."}}, '
                f"got {shown(item)}",
                where,
            )
        kind = item.get("type", "message")
        if kind == "message":
            message = {"role": _role(item, where), "content": _content(item, where)}
        elif kind == "function_call":
            call = _call(item, where)
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":  # the same reply's calls
                last.setdefault("tool_calls", []).append(call)
                continue
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        elif kind == "function_call_output":
            message = _output(item, where)
        elif kind == "reasoning":
            continue  # the model's thoughts are not shown to it again, as in the chat endpoint
        elif kind == "item_reference":
            raise _stateless(where, "send the item itself instead of its reference")
        else:
            raise bad_request(
                f"{where} is an item of type {shown(kind)}, which this server does not take: "
                "it takes message, function_call, function_call_output and reasoning items "
                "(it runs function tools only)",
                f"{where}.type",
            )
        messages.append(message)
        origins.append(where)
    return messages, origins


def _role(item: Mapping[str, Any], where: str) -> str:
    role = item.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        raise bad_request(
            f"{where}.role must be one of {', '.join(sorted(_ROLES))}, got {shown(role)}",
            f"{where}.role",
        )
    return role


def _content(item: Mapping[str, Any], where: str) -> str | list[dict[str, Any]]:
    """A message's content as the chat endpoint takes it: a string (text parts joined, which
    every upstream reads), or chat parts where it holds an image."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise bad_request(
            f"{where}.content must be a string or an array of parts such as "
            f'{{"type": "input_text", "text": "..."}}, got {shown(content)}',
            f"{where}.content",
        )
    parts = [_part(part, f"{where}.content[{k}]") for k, part in enumerate(content)]
    if all(part["type"] == "text" for part in parts):
        return "\n".join(part["text"] for part in parts)
    return parts


def _part(part: Any, where: str) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, dict) else None
    if _is_text(part):
        return {"type": "text", "text": part["text"]}
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return {"type": "text", "text": part["refusal"]}
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        image = {"url": part["image_url"], "detail": part.get("detail") or "auto"}
        return {"type": "image_url", "image_url": image}
    raise bad_request(
        f'{where} must be a text part ({{"type": "input_text", "text": "..."}}) or an '
        f'image by URL ({{"type": "input_image", "image_url": "..."}}), got {shown(part)}: '
        "files and images by file_id live in OpenAI's storage, which this server cannot read",
        where,
    )


def _is_text(part: Any) -> bool:
    """Whether `part` is a text part (`input_text`, `output_text`) with its text."""
    return (
        isinstance(part, dict)
        and part.get("type") in ("input_text", "output_text", "text")
        and isinstance(part.get("text"), str)
    )


def _call(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A `function_call` item as a chat tool call; its `call_id` is the call's id."""
    for name in ("call_id", "name"):
        if not isinstance(item.get(name), str) or not item[name]:
            raise bad_request(
                f"{where} (function_call) needs {name}, a non-empty string, got "
                f"{shown(item.get(name))}",
                f"{where}.{name}",
            )
    arguments = item.get("arguments", "")
    if not isinstance(arguments, str):
        raise bad_request(
            f"{where}.arguments must be the call's arguments as a JSON string, got "
            f"{shown(arguments)}",
            f"{where}.arguments",
        )
    function = {"name": item["name"], "arguments": arguments}
    return {"id": item["call_id"], "type": "function", "function": function}


def _output(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A `function_call_output` item as the chat `tool` message that answers its call."""
    if not isinstance(item.get("call_id"), str):
        raise bad_request(
            f"{where} (function_call_output) needs call_id, the call_id of the function_call "
            f"it answers, got {shown(item.get('call_id'))}",
            f"{where}.call_id",
        )
    output = item.get("output")
    if isinstance(output, list):
        texts = []
        for k, part in enumerate(output):
            if not _is_text(part):
                raise bad_request(
                    f"{where}.output[{k}] must be a text part "
                    f'({{"type": "input_text", "text": "..."}}): a tool\'s result reaches the '
                    f"model as text, got {shown(part)}",
                    f"{where}.output[{k}]",
                )
            texts.append(part["text"])
        output = "\n".join(texts)
    if not isinstance(output, str):
        raise bad_request(
            f"{where}.output must be the result as a string (or an array of input_text "
            f"parts), got {shown(output)}",
            f"{where}.output",
        )
    return {"role": "tool", "tool_call_id": item["call_id"], "content": output}


def _tools(specs: Any) -> list[dict[str, Any]] | None:
    """Function tools as chat tools; the chat endpoint checks their names and schemas."""
    if specs is None:
        return None
    if not isinstance(specs, list):
        raise bad_request(f"tools must be an array of function tools ({_FUNCTION_TOOL})", "tools")
    tools = []
    refused: dict[str, str] = {}  # each tool that is not a function tool: what it is
    for i, spec in enumerate(specs):
        kind = spec.get("type") if isinstance(spec, dict) else None
        if kind != "function":
            refused[f"tools[{i}]"] = shown(spec if kind is None else kind)
            continue
        function = {k: spec[k] for k in ("name", "description", "parameters") if k in spec}
        tools.append({"type": "function", "function": function})
    if refused:  # each named (a few), so that one change of the client's settings mends all
        named = [f"{field} is {kind}" for field, kind in list(refused.items())[:_NAMED]]
        if len(refused) > _NAMED:
            named.append(f"{len(refused) - _NAMED} more are not function tools")
        raise bad_request(
            f"{'; '.join(named)}: this server runs no hosted tools (web_search, file_search, "
            "computer_use, mcp, custom...) and takes no namespace of tools, only function tools "
            f"({_FUNCTION_TOOL}) whose calls the client runs: leave the others out",
            next(iter(refused)),
        )
    return tools


def _tool_choice(value: Any) -> Any:
    if value in ("auto", "required", "none"):
        return value
    if (
        isinstance(value, dict)
        and value.get("type") == "function"
        and isinstance(value.get("name"), str)
    ):
        return {"type": "function", "function": {"name": value["name"]}}
    raise bad_request(
        'tool_choice must be "auto", "required", "none" or {"type": "function", "name": ...}, '
        f"got {shown(value)} (this server runs function tools only)",
        "tool_choice",
    )


def _answer_format(text: Any) -> dict[str, Any] | None:
    """`text.format` as the chat endpoint's `response_format`; None for plain text."""
    if text is None:
        return None
    form = text.get("format") if isinstance(text, dict) else None
    kind = form.get("type") if isinstance(form, dict) else None
    if (form is None and isinstance(text, dict)) or kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        spec = {k: form[k] for k in ("name", "description", "schema", "strict") if k in form}
        return {"type": "json_schema", "json_schema": spec}
    raise bad_request(
        'text.format must be {"type": "text"}, {"type": "json_object"} or {"type": '
        f'"json_schema", "name": ..., "schema": {{...}}}}, got {shown(text)}',
        "text.format",
    )


def _echo(body: Mapping[str, Any]) -> dict[str, Any]:
    """What the response object says of the request, as OpenAI's repeats it."""
    tools: Sequence[Any] = body.get("tools") or ()
    return {
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "metadata": body.get("metadata") or {},
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": None,
        "reasoning": body.get("reasoning"),
        "store": False,  # nothing is kept, whatever was asked
        "temperature": body.get("temperature"),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice") or "auto",
        "tools": [{"strict": None, "description": None, **spec} for spec in tools],
        "top_p": body.get("top_p"),
        "truncation": "disabled",
        "user": body.get("user"),
    }
