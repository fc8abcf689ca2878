"""An Anthropic Messages request -> the chat endpoint's request, checked in Anthropic's terms.

`system` becomes the first system message; each assistant message's text and `tool_use`
blocks one assistant message with `tool_calls` (a `thinking` block is dropped: it is the
model's own, and the text protocol's thought is not sent back); each user message's
`tool_result` blocks `role: "tool"` messages (a result with `is_error` in the words the loop
shows a failed tool in), then its text as one user message. An image or a document cannot be
shown to a text protocol: it is a placeholder that says what was there. `tools` become
functions, `tool_choice` the chat's (`any` -> `required`, `tool` -> that function), and
`disable_parallel_tool_use` `parallel_tool_calls: false`. `stop_sequences` are not sent:
they are applied to the answer's text (`textreact.serve.messages.reply`), so that the reply
can say which one ended it. What the chat request's own checks refuse about a tool is said
with the Messages API's field names (`tools[0].input_schema`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from textreact import templates
from textreact.serve.errors import ServeError, bad_request
from textreact.serve.request import MAX_STOP_CHARS, MAX_STOPS, ChatRequest, parse_request, shown

#: The chat's names for a tool's fields, and the Messages API's.
_TOOL_FIELDS: Final = re.compile(r"(tools\[\d+\])\.function(\.parameters|\.name)?")
_RENAMED: Final = {".parameters": ".input_schema", ".name": ".name", None: ""}
#: What `tool_choice`'s type becomes in a chat request (a named tool is the chat's function).
_CHOICES: Final = {"auto": "auto", "any": "required", "none": "none"}
#: Options sent upstream as the client gave them; the other fields (`metadata`, `thinking`,
#: `service_tier`...) are Anthropic's own and are not sent.
_OPTIONS: Final = ("temperature", "top_p", "top_k")
_MEDIA: Final = frozenset({"image", "document"})


def chat_request(
    body: Any, *, model: str | None = None, lang: str = "en", counting: bool = False
) -> tuple[ChatRequest, tuple[str, ...]]:
    """The chat request that answers `body` (a Messages request, or with `counting` a
    count_tokens request, which has no `max_tokens`), and its stop sequences; raises
    ServeError (400) naming the Messages field that is wrong. `model`: the server's `--model`."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    chat: dict[str, Any] = {
        "model": body.get("model"),
        "messages": [*_system(body.get("system")), *_messages(body.get("messages"), lang)],
    }
    if not counting:
        chat["max_tokens"] = _max_tokens(body.get("max_tokens"))
        stream = body.get("stream", False)
        if not isinstance(stream, bool):
            raise bad_request(f"stream must be true or false, got {shown(stream)}", "stream")
        if stream:
            chat.update(stream=True, stream_options={"include_usage": True})
    chat.update({name: body[name] for name in _OPTIONS if body.get(name) is not None})
    tools = _tools(body.get("tools"))
    if tools:
        chat["tools"] = tools
    choice, parallel = _tool_choice(body.get("tool_choice"), bool(tools))
    if choice is not None:
        chat["tool_choice"] = choice
    if tools:  # OpenAI refuses parallel_tool_calls without tools
        chat["parallel_tool_calls"] = parallel
    try:
        call = parse_request(chat, model=model)
    except ServeError as error:
        raise _in_messages_terms(error) from None
    return call, () if counting else _stops(body.get("stop_sequences"))


def _system(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    text = value if isinstance(value, str) else _texts(value, "system", media=False)
    return [{"role": "system", "content": text}] if text else []


def _messages(value: Any, lang: str) -> list[dict[str, Any]]:
    """The conversation as chat messages; each tool_result must answer an earlier tool_use
    of the conversation, once (it is matched to its call by id)."""
    if not isinstance(value, list) or not value:
        raise bad_request(
            'messages must be a non-empty array such as [{"role": "user", "content": "..."}]',
            "messages",
        )
    calls: set[str] = set()
    answered: set[str] = set()
    chat: list[dict[str, Any]] = []
    for i, message in enumerate(value):
        where = f"messages[{i}]"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            raise bad_request(
                f'{where} must be {{"role": "user" or "assistant", "content": ...}} (the system '
                f"prompt goes in the top-level system field), got {shown(message)}",
                f"{where}.role",
            )
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            raise bad_request(
                f"{where}.content must be a string or an array of content blocks, got "
                f"{shown(content)}",
                f"{where}.content",
            )
        if role == "assistant":
            chat.append(_assistant(content, where, calls))
        else:
            chat.extend(_user(content, where, calls, answered, lang))
    return chat


def _assistant(blocks: list[Any], where: str, calls: set[str]) -> dict[str, Any]:
    texts, tool_calls = [], []
    for k, block in enumerate(blocks):
        at = f"{where}.content[{k}]"
        kind = _kind(block, at)
        if kind == "text":
            texts.append(_text(block, at))
        elif kind == "tool_use":
            call_id, name, arguments = block.get("id"), block.get("name"), block.get("input")
            if not isinstance(call_id, str) or not call_id or call_id in calls:
                raise bad_request(
                    f"{at}.id must be the tool_use's own id (a string used once in the "
                    f"conversation), got {shown(call_id)}",
                    f"{at}.id",
                )
            if not isinstance(name, str) or not isinstance(arguments, dict):
                raise bad_request(
                    f'{at} must be {{"type": "tool_use", "id", "name": a string, "input": an '
                    f"object}}, got {shown(block)}",
                    at,
                )
            calls.add(call_id)
            function = {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}
            tool_calls.append({"id": call_id, "type": "function", "function": function})
        elif kind not in ("thinking", "redacted_thinking"):
            raise bad_request(
                f"{at} is a {kind} block; an assistant message holds text, tool_use and "
                "thinking blocks",
                f"{at}.type",
            )
    message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts)}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


def _user(
    blocks: list[Any], where: str, calls: set[str], answered: set[str], lang: str
) -> list[dict[str, Any]]:
    """The results first (each answers an earlier tool_use), then the user's words, if
    any."""
    results, texts = [], []
    for k, block in enumerate(blocks):
        at = f"{where}.content[{k}]"
        kind = _kind(block, at)
        if kind == "tool_result":
            call_id = block.get("tool_use_id")
            known = isinstance(call_id, str) and call_id in calls
            if not known or call_id in answered:
                said = "was answered before" if known else "is no earlier tool_use's"
                raise bad_request(
                    f"{at}.tool_use_id {shown(call_id)} {said}: send one tool_result per "
                    "tool_use, with its id",
                    f"{at}.tool_use_id",
                )
            answered.add(call_id)
            results.append(
                {"role": "tool", "tool_call_id": call_id, "content": _result(block, at, lang)}
            )
        elif kind == "text" or kind in _MEDIA:
            texts.append(_texts([block], f"{where}.content", media=True, start=k))
        else:
            raise bad_request(
                f"{at} is a {kind} block; a user message holds text, image, document and "
                "tool_result blocks",
                f"{at}.type",
            )
    if texts or not results:
        return [*results, {"role": "user", "content": "\n".join(texts)}]
    return results


def _result(block: Mapping[str, Any], at: str, lang: str) -> str:
    """A tool_result's content as text; an error in the words the loop shows one in."""
    content = block.get("content") or ""
    text = content if isinstance(content, str) else _texts(content, f"{at}.content", media=True)
    is_error = block.get("is_error", False)
    if not isinstance(is_error, bool):
        raise bad_request(f"{at}.is_error must be true or false", f"{at}.is_error")
    return templates.note("tool_error", lang, error=text, hint="").strip() if is_error else text


def _texts(blocks: Any, where: str, *, media: bool, start: int = 0) -> str:
    """Text blocks' text, joined by line breaks; with `media`, an image or a document as a
    placeholder that says what the model is not shown."""
    if not isinstance(blocks, list):
        raise bad_request(f"{where} must be a string or an array of text blocks", where)
    texts = []
    for k, block in enumerate(blocks, start):
        at = f"{where}[{k}]"
        kind = _kind(block, at)
        if kind == "text":
            texts.append(_text(block, at))
        elif media and kind in _MEDIA:
            source = block.get("source")
            what = source.get("media_type") if isinstance(source, dict) else None
            texts.append(f"[{kind}{f' ({what})' if isinstance(what, str) else ''}: not shown]")
        else:
            allowed = "text, image and document" if media else "text"
            raise bad_request(f"{at} is a {kind} block; only {allowed} blocks go here", at)
    return "\n".join(texts)


def _kind(block: Any, at: str) -> str:
    kind = block.get("type") if isinstance(block, dict) else None
    if not isinstance(kind, str):
        raise bad_request(
            f'{at} must be a content block such as {{"type": "text", "text": "..."}}, got '
            f"{shown(block)}",
            at,
        )
    return kind


def _text(block: Mapping[str, Any], at: str) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise bad_request(f"{at}.text must be a string, got {shown(text)}", f"{at}.text")
    return text


def _max_tokens(value: Any) -> int:
    if value is None:
        raise bad_request(
            "max_tokens is required: the most tokens the reply may hold, e.g. 1024 (a text "
            "protocol reply spends some on its thought and its call)",
            "max_tokens",
        )
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise bad_request(
            f"max_tokens must be a whole number of 1 or more, got {shown(value)}", "max_tokens"
        )
    return value


def _tools(value: Any) -> list[dict[str, Any]]:
    """Client tools as chat functions; a server tool (a `type` such as `web_search_...`) is
    Anthropic's to run, not the model's to call, and is refused."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad_request("tools must be an array of {name, description, input_schema}", "tools")
    functions = []
    for i, tool in enumerate(value):
        kind = tool.get("type", "custom") if isinstance(tool, dict) else None
        if kind not in ("custom", None):
            raise bad_request(
                f"tools[{i}] is {shown(kind)}, a tool type Anthropic defines (run by its "
                "servers, or with no schema to show the model): give a client tool "
                "{name, description, input_schema} that your code runs",
                f"tools[{i}].type",
            )
        if not isinstance(tool, dict) or "input_schema" not in tool:
            raise bad_request(
                f"tools[{i}] must be {{name, description, input_schema}} (input_schema: the "
                f'JSON Schema of its input, e.g. {{"type": "object", "properties": {{...}}}}), '
                f"got {shown(tool)}",
                f"tools[{i}].input_schema",
            )
        function = {"name": tool.get("name"), "parameters": tool["input_schema"]}
        if tool.get("description") is not None:
            function["description"] = tool["description"]
        functions.append({"type": "function", "function": function})
    return functions


def _tool_choice(value: Any, tools: bool) -> tuple[Any, bool]:
    """The chat's `tool_choice` (None: none given) and whether several calls may come in one
    reply (they may, as Anthropic's API allows, unless `disable_parallel_tool_use`)."""
    if value is None:
        return None, True
    kind = value.get("type") if isinstance(value, dict) else None
    if kind not in ("auto", "any", "tool", "none"):
        raise bad_request(
            'tool_choice must be {"type": "auto"}, {"type": "any"}, {"type": "none"} or '
            f'{{"type": "tool", "name": ...}}, got {shown(value)}',
            "tool_choice",
        )
    single = value.get("disable_parallel_tool_use", False)
    if not isinstance(single, bool):
        raise bad_request(
            "tool_choice.disable_parallel_tool_use must be true or false",
            "tool_choice.disable_parallel_tool_use",
        )
    if kind in ("any", "tool") and not tools:
        raise bad_request(f'tool_choice {{"type": "{kind}"}} needs tools', "tool_choice")
    if kind != "tool":
        return _CHOICES[kind], not single
    name = value.get("name")
    if not isinstance(name, str):
        raise bad_request(
            'tool_choice {"type": "tool"} needs the tool\'s "name"', "tool_choice.name"
        )
    return {"type": "function", "function": {"name": name}}, not single


def _stops(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if (
        not isinstance(value, list)
        or not all(isinstance(stop, str) and stop for stop in value)
        or len(value) > MAX_STOPS
        or any(len(stop) > MAX_STOP_CHARS for stop in value)
    ):
        raise bad_request(
            f"stop_sequences must be an array of at most {MAX_STOPS} non-empty strings of at "
            f"most {MAX_STOP_CHARS} characters each, got {shown(value)}",
            "stop_sequences",
        )
    return tuple(value)


def _in_messages_terms(error: ServeError) -> ServeError:
    """A refusal of the chat request's checks, naming a tool's field as the Messages API
    names it (`tools[0].function.parameters` -> `tools[0].input_schema`)."""

    def renamed(text: str) -> str:
        return _TOOL_FIELDS.sub(lambda m: m[1] + _RENAMED[m[2]], text)

    error.message = renamed(error.message)
    if error.param is not None:
        error.param = renamed(error.param)
    return error
