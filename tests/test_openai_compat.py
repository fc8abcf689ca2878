"""OpenAICompatModel against a real HTTP server on 127.0.0.1: the official SDK does the talking."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from fakeserver import FakeServer, Reply, chat_completion, error_body

from textreact.errors import ConfigError, ModelError
from textreact.grammar import STOP_SEQUENCES
from textreact.models import ChatModel, OpenAICompatModel
from textreact.models.openai_compat import NativeToolsUnsupportedError
from textreact.steps import Completion, ToolCall, Usage


def _with(**message: Any) -> dict[str, Any]:
    """A chat completion with fields of its message (or `usage`, `finish_reason`) replaced."""
    body = chat_completion("ok")
    for key, value in message.items():
        if key == "usage":
            body["usage"] = value
        elif key == "finish_reason":
            body["choices"][0]["finish_reason"] = value
        else:
            body["choices"][0]["message"][key] = value
    return body


MESSAGES = [
    {"role": "system", "content": "You answer with tools."},
    {"role": "user", "content": "What is 2+2?"},
]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def model_for(server: FakeServer, **options) -> OpenAICompatModel:
    options.setdefault("max_retries", 0)
    options.setdefault("timeout", 10.0)
    return OpenAICompatModel("fake-model", server.base_url, **options)


def test_a_completion_carries_text_finish_reason_and_usage(server: FakeServer) -> None:
    server.add(Reply(200, chat_completion("Thought: easy\nFinal Answer: 4", prompt_tokens=30)))
    with model_for(server, temperature=0.0, max_tokens=64, seed=7) as model:
        assert isinstance(model, ChatModel)
        completion = model.complete(MESSAGES, stop=["\nObservation:"])
    assert completion == Completion("Thought: easy\nFinal Answer: 4", "stop", Usage(30, 7))
    sent = server.posts[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.body == {
        "model": "fake-model",
        "messages": MESSAGES,
        "temperature": 0.0,
        "max_tokens": 64,
        "seed": 7,
        "stop": ["\nObservation:"],
    }
    assert sent.headers["authorization"] == "Bearer textreact-no-key"


def test_an_explicit_key_and_extra_body_are_sent(server: FakeServer) -> None:
    server.add(Reply(200, chat_completion("ok")))
    with model_for(server, api_key="sk-test", extra_body={"cache_prompt": False}) as model:
        model.complete(MESSAGES)
    assert server.posts[0].headers["authorization"] == "Bearer sk-test"
    assert server.posts[0].body["cache_prompt"] is False
    assert "stop" not in server.posts[0].body


def test_at_most_four_stop_sequences_are_sent(server: FakeServer) -> None:
    server.add(Reply(200, chat_completion("ok")))
    stops = [*STOP_SEQUENCES, "\nQuestion:", "\nUser:"]
    with model_for(server) as model:
        model.complete(MESSAGES, stop=stops)
    assert server.posts[0].body["stop"] == stops[:4]


def test_missing_usage_counts_as_zero_tokens(server: FakeServer) -> None:
    server.add(Reply(200, chat_completion("ok", prompt_tokens=None, finish_reason="length")))
    with model_for(server) as model:
        completion = model.complete(MESSAGES)
    assert completion.usage == Usage(0, 0)
    assert completion.finish_reason == "length"


def test_a_429_is_retried_after_retry_after(server: FakeServer) -> None:
    server.add(
        Reply(429, error_body("slow down", type="rate_limit"), {"retry-after": "1"}),
        Reply(200, chat_completion("after the wait")),
    )
    with model_for(server, max_retries=2) as model:
        assert model.complete(MESSAGES).text == "after the wait"
    assert len(server.posts) == 2
    assert server.posts[1].headers["x-stainless-retry-count"] == "1"


def test_persistent_500s_become_a_model_error_after_the_retries(server: FakeServer) -> None:
    server.add(*[Reply(500, error_body("boom", type="server_error"), {"retry-after": "0.01"})] * 2)
    with model_for(server, max_retries=1) as model, pytest.raises(ModelError) as info:
        model.complete(MESSAGES)
    assert len(server.posts) == 2
    assert "HTTP 500 after 2 tries: boom" in str(info.value)


def test_a_reply_slower_than_the_timeout_is_a_model_error(server: FakeServer) -> None:
    server.add(Reply(200, chat_completion("too late"), delay=5.0))
    with model_for(server, timeout=0.3) as model, pytest.raises(ModelError) as info:
        model.complete(MESSAGES)
    assert "did not answer within 0.3 s" in str(info.value)


def test_a_refused_connection_says_to_start_the_server() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    model = OpenAICompatModel("m", url, max_retries=0)
    with model, pytest.raises(ModelError) as info:
        model.complete(MESSAGES)
    assert f"cannot reach the model server at {url}" in str(info.value)
    assert "ollama serve" in str(info.value)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("{not json", "not valid JSON"),
        ("<html>proxy error</html>", "not a chat completion"),
        ({"object": "list"}, "not a chat completion"),
        ({"choices": []}, "returned no choices"),
        (chat_completion(None, finish_reason="length"), "content null"),
        (
            {"choices": [{"index": 0, "message": None, "finish_reason": "stop"}]},
            "without a message",
        ),
        ({"choices": [{"index": 0, "finish_reason": "stop"}]}, "without a message"),
        ({"choices": ["hello"]}, "without a message"),
        (
            {"choices": [{"index": 0, "message": "hi", "finish_reason": "stop"}]},
            "without a message",
        ),
        (_with(finish_reason=7), "malformed"),
        (_with(tool_calls="call it"), "malformed"),
        (_with(tool_calls=[{"id": "c", "function": {"name": 5, "arguments": "{}"}}]), "malformed"),
        (_with(content={"text": "hi"}), "not text"),
    ],
)
def test_malformed_replies_become_model_errors(server: FakeServer, body, expected: str) -> None:
    server.add(Reply(200, body, {"content-type": "text/html"} if "html" in str(body) else {}))
    with model_for(server) as model, pytest.raises(ModelError) as info:
        model.complete(MESSAGES)
    assert expected in str(info.value)


def test_401_without_a_key_says_how_to_give_one(server: FakeServer) -> None:
    server.add(Reply(401, error_body("Missing bearer token", type="auth")))
    with model_for(server) as model, pytest.raises(ModelError) as info:
        model.complete(MESSAGES)
    assert "needs an API key" in str(info.value)
    assert "OPENAI_API_KEY" in str(info.value)


def test_401_with_a_key_never_prints_the_key(server: FakeServer) -> None:
    server.add(Reply(401, error_body("Incorrect API key provided: sk-secret-123", type="auth")))
    with model_for(server, api_key="sk-secret-123") as model, pytest.raises(ModelError) as info:
        model.complete(MESSAGES)
    assert "rejected the API key" in str(info.value)
    assert "sk-secret-123" not in str(info.value)


def test_an_unknown_model_lists_what_the_server_offers() -> None:
    with FakeServer(models=["llama3.2", "qwen2.5:7b"]) as server:
        server.add(Reply(404, error_body("model 'fake-model' not found", type="not_found")))
        with model_for(server) as model, pytest.raises(ModelError) as info:
            model.complete(MESSAGES)
    assert "has no model 'fake-model'" in str(info.value)
    assert "it offers: llama3.2, qwen2.5:7b" in str(info.value)


def test_an_unknown_model_without_a_listing_still_names_the_model() -> None:
    with FakeServer(models=None) as server:
        server.add(Reply(404, error_body("The model `fake-model` does not exist.")))
        with model_for(server) as model, pytest.raises(ModelError) as info:
            model.complete(MESSAGES)
    assert "HTTP 404 for model 'fake-model'" in str(info.value)
    assert "/v1" in str(info.value)


def test_a_server_that_rejects_stop_is_asked_again_and_never_sent_stop_again(
    server: FakeServer,
) -> None:
    rejection = error_body("Unsupported parameter: 'stop' is not supported with this model.")
    server.add(Reply(400, rejection), Reply(200, chat_completion("one")))
    server.add(Reply(200, chat_completion("two")))
    with model_for(server) as model:
        assert model.complete(MESSAGES, stop=["\nObservation:"]).text == "one"
        assert model.complete(MESSAGES, stop=["\nObservation:"]).text == "two"
        assert model.sends_stop is False
    assert [("stop" in p.body) for p in server.posts] == [True, False, False]


def test_other_400s_are_not_retried(server: FakeServer) -> None:
    server.add(Reply(400, error_body("messages must alternate", param="messages")))
    with model_for(server) as model, pytest.raises(ModelError) as info:
        model.complete(MESSAGES, stop=["\nObservation:"])
    assert len(server.posts) == 1
    assert "HTTP 400: messages must alternate" in str(info.value)


def test_tools_are_sent_and_tool_calls_come_back_as_records(server: FakeServer) -> None:
    tool = {"type": "function", "function": {"name": "calculator", "parameters": {}}}
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": "{}"}},
        {"type": "function", "function": {"name": "lookup", "arguments": {"q": "x"}}},
    ]
    server.add(Reply(200, _with(content=None, tool_calls=calls, finish_reason="tool_calls")))
    with model_for(server) as model:
        completion = model.complete(MESSAGES, tools=[tool])
    assert completion.text == "" and completion.finish_reason == "tool_calls"
    # A call without an id gets one; arguments sent as an object are kept as their JSON.
    assert completion.tool_calls == (
        ToolCall("c1", "calculator", "{}"),
        ToolCall("call_1", "lookup", '{"q": "x"}'),
    )
    assert server.posts[0].body["tools"] == [tool]


def test_null_content_without_calls_is_a_model_error_that_names_it(server: FakeServer) -> None:
    """Not an empty reply for the loop to count as format errors (tests/test_leftovers.py)."""
    server.add(Reply(200, chat_completion(None)))
    with model_for(server) as model, pytest.raises(ModelError, match="content null"):
        model.complete(MESSAGES)


def test_a_server_that_refuses_tools_raises_native_unsupported(server: FakeServer) -> None:
    tool = {"type": "function", "function": {"name": "calculator", "parameters": {}}}
    server.add(Reply(400, error_body("registry.ollama.ai/library/gemma:2b does not support tools")))
    with model_for(server) as model, pytest.raises(NativeToolsUnsupportedError) as info:
        model.complete(MESSAGES, tools=[tool])
    assert str(info.value).startswith("native tool calling unsupported")


def test_content_sent_as_text_parts_is_joined(server: FakeServer) -> None:
    body = chat_completion("x")
    body["choices"][0]["message"]["content"] = [
        {"type": "text", "text": "Final "},
        {"type": "text", "text": "Answer: 4"},
    ]
    server.add(Reply(200, body))
    with model_for(server) as model:
        assert model.complete(MESSAGES).text == "Final Answer: 4"


@pytest.mark.parametrize(
    "options",
    [{"timeout": 0}, {"max_retries": -1}, {"max_tokens": 0}],
)
def test_impossible_settings_are_refused_at_construction(options) -> None:
    with pytest.raises(ConfigError, match="timeout must be > 0"):
        OpenAICompatModel("m", "http://127.0.0.1:9/v1", **options)


def test_credentials_in_the_base_url_are_never_shown(server: FakeServer) -> None:
    url = server.base_url.replace("http://", "http://bob:hunter2@")
    server.add(Reply(200, {"choices": []}))
    model = OpenAICompatModel("m", url, max_retries=0)
    with model, pytest.raises(ModelError) as info:
        model.complete(MESSAGES)
    assert "hunter2" not in str(info.value) and "hunter2" not in repr(model)
    assert "returned no choices" in str(info.value)
    # The request itself still carries the credentials as written (basic auth).
    import base64

    sent = server.posts[0].headers.get("authorization", "")
    assert sent == "Basic " + base64.b64encode(b"bob:hunter2").decode()
