"""Helpers for the `textreact serve` tests: the proxy running in a thread in front of the
loopback fake upstream, tool specs in OpenAI's shape, and streamed upstream replies."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import openai
from fakeserver import FakeServer, Reply, chat_completion

from textreact import prompt
from textreact.serve import ServeConfig, create_app, serving
from textreact.serve.connections import uvicorn_options

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "the city"},
                "days": {"type": "integer", "description": "forecast days"},
            },
            "required": ["city"],
        },
    },
}
CLOCK = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "The time now in a time zone.",
        "parameters": {
            "type": "object",
            "properties": {"zone": {"type": "string"}},
            "required": ["zone"],
        },
    },
}
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


def anthropic_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI function tool of this module as Anthropic's Messages API writes it."""
    function = tool["function"]
    return {
        "name": function["name"],
        "description": function["description"],
        "input_schema": function["parameters"],
    }


def text(reply: str, **fields: Any) -> Reply:
    """An upstream reply whose message content is `reply`."""
    return Reply(body=chat_completion(reply, **fields))


def streamed(
    reply: str,
    *,
    pieces: int = 5,
    finish_reason: str = "stop",
    usage: tuple[int, int] | None = (11, 7),
) -> Reply:
    """An upstream SSE stream that sends `reply` in `pieces` content deltas, then the finish
    and (when given) the usage chunk, then [DONE]."""
    size = max(1, -(-len(reply) // pieces))
    parts = [reply[i : i + size] for i in range(0, len(reply), size)]
    events: list[dict[str, Any]] = [_chunk({"role": "assistant", "content": ""})]
    events += [_chunk({"content": part}) for part in parts]
    events.append(_chunk({}, finish_reason))
    if usage is not None:
        counts = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
        events.append(
            {**_chunk({}), "choices": [], "usage": {**counts, "total_tokens": sum(usage)}}
        )
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    return Reply(body=body, headers={"content-type": "text/event-stream"})


def _chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-up",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


@contextlib.contextmanager
def proxy(
    replies: Iterable[Reply] = (), *, around: Callable[[Any], Any] | None = None, **settings: Any
) -> Iterator[tuple[FakeServer, str]]:
    """(the fake upstream, the proxy's base URL) for the block; `settings` go to ServeConfig,
    and `around`, when given, wraps the app (an ASGI middleware that records the exchanges)."""
    settings.setdefault("constrain", "off")
    settings.setdefault("max_retries", 0)
    with FakeServer(replies) as upstream:
        config = ServeConfig(upstream.base_url, **settings)
        app = create_app(config) if around is None else around(create_app(config))
        with serving(app, options=uvicorn_options(config)) as url:
            yield upstream, url


def sent_messages(upstream: FakeServer, index: int = -1) -> list[dict[str, Any]]:
    """The messages of one chat request the upstream received, less the worked example's turns
    after the system prompt (sent by default; `test_serve` checks that they are)."""
    messages = upstream.posts[index].body["messages"]
    for lang in ("en", "zh"):
        example = prompt.example_messages(lang)
        if messages[1 : 1 + len(example)] == example:
            return [messages[0], *messages[1 + len(example) :]]
    return messages


#: The clients a test made, closed when it ends: a pooled connection left open is a
#: ResourceWarning in whichever later test the collector runs in.
_CLIENTS: list[openai.OpenAI] = []


def client(url: str, api_key: str = "client-key", **options: Any) -> openai.OpenAI:
    made = openai.OpenAI(base_url=url, api_key=api_key, max_retries=0, **options)
    _CLIENTS.append(made)
    return made


def closing_clients() -> Iterator[None]:
    """A test module's autouse fixture: `close_clients = pytest.fixture(autouse=True)(...)`."""
    yield
    while _CLIENTS:
        _CLIENTS.pop().close()
