"""AnthropicModel against a loopback Messages API endpoint, through the real anthropic SDK."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator

import pytest
from fakeserver import FakeServer, Reply, anthropic_message

from textreact.errors import MissingExtraError, ModelError
from textreact.models.anthropic import AnthropicModel, to_anthropic
from textreact.steps import Completion, ToolCall, Usage

needs_sdk = pytest.mark.skipif(
    importlib.util.find_spec("anthropic") is None,
    reason="the anthropic SDK is not installed: pip install 'textreact[anthropic]'",
)

MESSAGES = [
    {"role": "system", "content": "Use tools."},
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "Thought: add\nAction: calculator\nAction Input: 2+2"},
    {"role": "user", "content": "Observation: 4"},
    {"role": "user", "content": "Remember the format."},
]


def test_system_is_split_out_and_same_role_turns_merge() -> None:
    system, turns = to_anthropic(MESSAGES)
    assert system == "Use tools."
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[-1]["content"] == "Observation: 4\n\nRemember the format."


def test_content_blocks_merge_as_lists() -> None:
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "4"}
    _, turns = to_anthropic(
        [{"role": "user", "content": [result]}, {"role": "user", "content": "go"}]
    )
    assert turns == [{"role": "user", "content": [result, {"type": "text", "text": "go"}]}]


def test_a_missing_sdk_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)  # makes `import anthropic` fail
    with pytest.raises(MissingExtraError, match=r"pip install 'textreact\[anthropic\]'"):
        AnthropicModel("claude-x")


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def model_for(server: FakeServer, **options) -> AnthropicModel:
    options.setdefault("max_retries", 0)
    options.setdefault("timeout", 10.0)
    return AnthropicModel("fake-claude", base_url=server.url, **options)


@needs_sdk
def test_a_completion_goes_through_the_messages_api(server: FakeServer) -> None:
    server.add(Reply(200, anthropic_message("Final Answer: 4", stop_reason="stop_sequence")))
    with model_for(server, api_key="sk-ant-test", max_tokens=99) as model:
        completion = model.complete(MESSAGES, stop=["\nObservation:"])
    assert completion == Completion("Final Answer: 4", "stop", Usage(13, 5))
    sent = server.posts[0]
    assert sent.path == "/v1/messages"
    credentials = sent.headers.get("x-api-key", "") + sent.headers.get("authorization", "")
    assert "sk-ant-test" in credentials  # x-api-key in older SDKs, a bearer token in newer
    assert sent.body["model"] == "fake-claude"
    assert sent.body["system"] == "Use tools."
    assert sent.body["stop_sequences"] == ["\nObservation:"]
    assert sent.body["max_tokens"] == 99
    assert sent.body["temperature"] == 0.0
    assert sent.body["messages"] == to_anthropic(MESSAGES)[1]


@needs_sdk
def test_max_tokens_maps_to_length(server: FakeServer) -> None:
    server.add(Reply(200, anthropic_message("Thought: I", stop_reason="max_tokens")))
    with model_for(server) as model:
        assert model.complete(MESSAGES).finish_reason == "length"


@needs_sdk
def test_a_429_is_retried(server: FakeServer) -> None:
    overloaded = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}
    server.add(Reply(429, overloaded, {"retry-after": "1"}), Reply(200, anthropic_message("ok")))
    with model_for(server, max_retries=1) as model:
        assert model.complete(MESSAGES).text == "ok"
    assert len(server.posts) == 2


@needs_sdk
def test_401_names_the_key_variable_and_hides_the_key(server: FakeServer) -> None:
    body = {"type": "error", "error": {"type": "authentication_error", "message": "bad sk-x"}}
    server.add(Reply(401, body))
    with model_for(server, api_key="sk-x") as model, pytest.raises(ModelError) as info:
        model.complete(MESSAGES)
    assert "ANTHROPIC_API_KEY" in str(info.value)
    assert "sk-x" not in str(info.value)


@needs_sdk
def test_tools_are_sent_and_tool_use_blocks_come_back_as_tool_calls(server: FakeServer) -> None:
    tool = {"name": "calculator", "description": "math", "input_schema": {"type": "object"}}
    body = anthropic_message("Let me compute.", stop_reason="tool_use")
    body["content"].append(
        {"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {"expression": "2+2"}}
    )
    server.add(Reply(200, body))
    with model_for(server) as model:
        completion = model.complete(MESSAGES, tools=[tool])
    assert completion.finish_reason == "tool_calls"
    assert completion.text == "Let me compute."
    assert completion.tool_calls == (ToolCall("toolu_1", "calculator", '{"expression": "2+2"}'),)
    assert server.posts[0].body["tools"] == [tool]


@needs_sdk
def test_nonsense_token_counts_are_dropped_and_the_reply_kept(server: FakeServer) -> None:
    body = anthropic_message("ok")
    body["usage"] = {"input_tokens": "13", "output_tokens": -1}
    server.add(Reply(200, body))
    with model_for(server) as model:
        completion = model.complete(MESSAGES)
    assert completion.text == "ok" and completion.usage == Usage(0, 0)


@needs_sdk
@pytest.mark.parametrize(
    "change",
    [
        lambda b: b["content"].__setitem__(0, {"type": "text", "text": None}),
        lambda b: b["content"].__setitem__(0, "a bare string"),
        lambda b: b.__setitem__("content", "not a list"),
    ],
    ids=["text-null", "bare-string-block", "content-string"],
)
def test_a_reply_of_the_wrong_shape_is_a_model_error(server: FakeServer, change) -> None:
    body = anthropic_message("ok")
    change(body)
    server.add(Reply(200, body))
    with model_for(server) as model, pytest.raises(ModelError) as info:
        model.complete(MESSAGES)
    assert server.base_url.split("/v1")[0].rstrip("/") in str(info.value)
