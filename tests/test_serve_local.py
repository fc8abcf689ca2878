"""`textreact serve` in front of the embedded model (SmolLM2 in llama.cpp's server, marked
local_model; skipped with the reason when xllamacpp or the weights are absent): the official
openai SDK, sync, async and streaming, and LangChain's bind_tools, get real tool calls from a
model that has no native ones. llama.cpp says what it is, so replies are grammar-constrained."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import openai
import pytest
from serve_support import QUESTION, WEATHER
from test_local_model import GGUF, TIMEOUT, needs_model

from textreact.models import local
from textreact.serve import ServeConfig, create_app, serving

REQUEST = {"max_tokens": 96, "temperature": 0, "extra_body": {"cache_prompt": False}}

pytestmark = needs_model


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with (
        local.local_server(GGUF, ready_timeout=TIMEOUT) as upstream,
        serving(create_app(ServeConfig(upstream, timeout=TIMEOUT, max_retries=0))) as proxied,
    ):
        yield proxied


def _arguments(call) -> dict:
    arguments = json.loads(call.function.arguments)
    assert isinstance(arguments.get("city"), str) and arguments["city"].strip()
    return arguments


def test_the_sync_sdk_gets_a_real_tool_call(url: str) -> None:
    with openai.OpenAI(base_url=url, api_key="k", timeout=TIMEOUT, max_retries=0) as client:
        reply = client.chat.completions.create(
            model=local.MODEL_NAME, messages=QUESTION, tools=[WEATHER], tool_choice="required",
            **REQUEST,
        )  # fmt: skip
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls[0].function.name == "get_weather"
    _arguments(choice.message.tool_calls[0])
    assert reply.model_extra["textreact"]["constrained"] is True
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0


def test_the_async_sdk_gets_a_call_or_an_answer_in_openais_shape(url: str) -> None:
    async def ask() -> openai.types.chat.ChatCompletion:
        async with openai.AsyncOpenAI(base_url=url, api_key="k", timeout=TIMEOUT) as client:
            return await client.chat.completions.create(
                model=local.MODEL_NAME, messages=QUESTION, tools=[WEATHER], **REQUEST
            )

    choice = asyncio.run(ask()).choices[0]
    if choice.finish_reason == "tool_calls":
        assert choice.message.tool_calls[0].function.name == "get_weather"
        _arguments(choice.message.tool_calls[0])
    else:
        assert choice.finish_reason in ("stop", "length") and choice.message.content


def test_the_streaming_sdk_gets_the_call_as_deltas(url: str) -> None:
    with openai.OpenAI(base_url=url, api_key="k", timeout=TIMEOUT, max_retries=0) as client:
        chunks = list(
            client.chat.completions.create(
                model=local.MODEL_NAME, messages=QUESTION, tools=[WEATHER],
                tool_choice="required", stream=True, stream_options={"include_usage": True},
                **REQUEST,
            )
        )  # fmt: skip
    calls = [
        c.choices[0].delta.tool_calls[0]
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls
    ]
    assert calls[0].function.name == "get_weather"
    assert json.loads("".join(c.function.arguments for c in calls))["city"]
    assert chunks[-1].usage.completion_tokens > 0


def test_langchain_bind_tools_gets_a_tool_call_from_the_embedded_model(url: str) -> None:
    langchain_openai = pytest.importorskip("langchain_openai")
    model = langchain_openai.ChatOpenAI(
        model=local.MODEL_NAME, base_url=url, api_key="k", timeout=TIMEOUT, max_retries=0,
        temperature=0, max_tokens=96,
    )  # fmt: skip
    reply = model.bind_tools([WEATHER], tool_choice="required").invoke(QUESTION[0]["content"])
    assert reply.tool_calls[0]["name"] == "get_weather"
    assert isinstance(reply.tool_calls[0]["args"]["city"], str)


def test_the_anthropic_sdk_gets_a_tool_use_block_whole_and_streamed(url: str) -> None:
    import anthropic

    function = WEATHER["function"]
    tool = {"name": function["name"], "description": function["description"],
            "input_schema": function["parameters"]}  # fmt: skip
    root = url.removesuffix("/v1")
    with anthropic.Anthropic(base_url=root, api_key="k", timeout=TIMEOUT, max_retries=0) as client:
        asked = {"model": local.MODEL_NAME, "max_tokens": 96, "messages": QUESTION,
                 "tools": [tool], "tool_choice": {"type": "any"},
                 "extra_body": {"temperature": 0, "cache_prompt": False}}  # fmt: skip
        message = client.messages.create(**asked)
        with client.messages.stream(**asked) as stream:
            streamed = stream.get_final_message()
    for reply in (message, streamed):
        assert reply.stop_reason == "tool_use"
        use = next(block for block in reply.content if block.type == "tool_use")
        assert use.name == "get_weather" and isinstance(use.input["city"], str)


def test_the_responses_api_gets_a_function_call_item_whole_and_streamed(url: str) -> None:
    function = WEATHER["function"]
    tool = {"type": "function", "name": function["name"], "parameters": function["parameters"],
            "description": function["description"]}  # fmt: skip
    asked = {"model": local.MODEL_NAME, "input": QUESTION[0]["content"], "tools": [tool],
             "tool_choice": "required", "temperature": 0, "max_output_tokens": 96,
             "extra_body": {"cache_prompt": False}}  # fmt: skip
    with openai.OpenAI(base_url=url, api_key="k", timeout=TIMEOUT, max_retries=0) as client:
        whole = client.responses.create(**asked)
        with client.responses.stream(**asked) as stream:
            streamed = stream.get_final_response()
    for response in (whole, streamed):
        call = next(item for item in response.output if item.type == "function_call")
        assert call.name == "get_weather" and json.loads(call.arguments)["city"]
        assert response.status == "completed"
