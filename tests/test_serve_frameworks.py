"""Two frameworks no one here wrote run their own tool loops through `textreact serve`:
LangChain's `ChatOpenAI(...).bind_tools(...)` and the OpenAI Agents SDK (`Runner`), in front of
the fake upstream scripted with text-protocol replies, so every run is deterministic."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest
from serve_support import proxy, sent_messages, streamed, text

langchain_openai = pytest.importorskip("langchain_openai")
agents = pytest.importorskip("agents")

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

agents.set_tracing_disabled(True)  # the SDK would send traces to OpenAI otherwise

CALL = 'Thought: I need the weather.\nAction: get_weather\nAction Input: {"city": "Paris"}'
ANSWER = "Thought: I have it.\nFinal Answer: It is 18 C in Paris."


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"18 C and sunny in {city}"


@function_tool
def weather_tool(city: str) -> str:
    """Current weather for a city."""
    return f"18 C and sunny in {city}"


def _langchain_loop(url: str, question: str) -> tuple[list, AIMessage]:
    """LangChain's own tool loop: invoke, run each tool call, send the results back."""
    model = langchain_openai.ChatOpenAI(model="m", base_url=url, api_key="k", max_retries=0)
    bound = model.bind_tools([get_weather])
    messages: list = [HumanMessage(question)]
    for _ in range(4):
        reply = bound.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return messages, reply
        for call in reply.tool_calls:
            result = get_weather.invoke(call["args"])
            messages.append(ToolMessage(result, tool_call_id=call["id"]))
    raise AssertionError("the loop did not end")


def test_langchain_bind_tools_gets_tool_calls_and_finishes_its_loop() -> None:
    with proxy([text(CALL), text(ANSWER)]) as (upstream, url):
        messages, final = _langchain_loop(url, "What is the weather in Paris?")
    first = messages[1]
    assert first.tool_calls == [
        {"name": "get_weather", "args": {"city": "Paris"}, "id": first.tool_calls[0]["id"],
         "type": "tool_call"}
    ]  # fmt: skip
    assert final.content == "It is 18 C in Paris."
    second = sent_messages(upstream, 1)
    assert second[-1] == {"role": "user", "content": "Observation: 18 C and sunny in Paris"}
    assert "tools" not in upstream.posts[0].body


def test_langchain_sees_a_repaired_call_after_a_reask() -> None:
    broken = "Action: get_weather\nAction Input: Paris, France?"
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                       "days": {"type": "integer"}}, "required": ["city", "days"]}}}]  # fmt: skip
    with proxy(
        [text(broken), text('Action: get_weather\nAction Input: {"city": "Paris", "days": "2"}')]
    ) as (
        upstream,
        url,
    ):
        model = langchain_openai.ChatOpenAI(model="m", base_url=url, api_key="k", max_retries=0)
        reply = model.bind_tools(tools).invoke("Weather in Paris for two days?")
    assert reply.tool_calls[0]["args"] == {"city": "Paris", "days": 2}
    assert len(upstream.posts) == 2


def test_langchain_streams_a_tool_call_through_the_proxy() -> None:
    with proxy([streamed(CALL, pieces=9)]) as (_, url):
        model = langchain_openai.ChatOpenAI(model="m", base_url=url, api_key="k", max_retries=0)
        merged = None
        for chunk in model.bind_tools([get_weather]).stream("What is the weather in Paris?"):
            merged = chunk if merged is None else merged + chunk
    assert merged.tool_calls[0]["name"] == "get_weather"
    assert merged.tool_calls[0]["args"] == {"city": "Paris"}


def _agent(client: openai.AsyncOpenAI) -> Agent:
    return Agent(
        name="weather",
        instructions="Answer questions about the weather.",
        tools=[weather_tool],
        model=OpenAIChatCompletionsModel(model="m", openai_client=client),
    )


async def _run(url: str):
    async with openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0) as client:
        return await Runner.run(_agent(client), "What is the weather in Paris?")


def test_the_agents_sdk_runs_an_agent_with_a_function_tool_to_its_final_output() -> None:
    with proxy([text(CALL.replace("get_weather", "weather_tool")), text(ANSWER)]) as (
        upstream,
        url,
    ):
        result = asyncio.run(_run(url))
    assert result.final_output == "It is 18 C in Paris."
    calls = [item for item in result.new_items if item.type == "tool_call_item"]
    assert len(calls) == 1
    outputs = [item.output for item in result.new_items if item.type == "tool_call_output_item"]
    assert outputs == ["18 C and sunny in Paris"]
    system = sent_messages(upstream, 0)[0]["content"]
    assert "weather_tool" in system and "Answer questions about the weather." in system


def test_the_agents_sdk_streams_its_run_through_the_proxy() -> None:
    replies = [streamed(CALL.replace("get_weather", "weather_tool")), streamed(ANSWER, pieces=8)]

    async def run(url: str) -> tuple[str, list[str]]:
        async with openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0) as client:
            result = Runner.run_streamed(_agent(client), "What is the weather in Paris?")
            kinds = [event.type async for event in result.stream_events()]
        return result.final_output, kinds

    with proxy(replies) as (upstream, url):
        final, kinds = asyncio.run(run(url))
    assert final == "It is 18 C in Paris."
    assert "raw_response_event" in kinds and "run_item_stream_event" in kinds
    assert all(post.body["stream"] is True for post in upstream.posts)
    assert json.dumps(upstream.posts[1].body["messages"]).count("Observation: 18 C") == 1


def test_the_agents_sdk_gets_its_structured_output_type_beside_tools() -> None:
    from pydantic import BaseModel

    class Weather(BaseModel):
        city: str
        temp_c: int

    prose = "Thought: I have it.\nFinal Answer: It is 18 C in Paris."
    shaped = 'Final Answer: {"city": "Paris", "temp_c": "18"}'
    replies = [text(CALL.replace("get_weather", "weather_tool")), text(prose), text(shaped)]

    async def run(url: str):
        async with openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0) as client:
            agent = _agent(client).clone(output_type=Weather)
            return await Runner.run(agent, "What is the weather in Paris?")

    with proxy(replies) as (upstream, url):
        result = asyncio.run(run(url))
    assert result.final_output == Weather(city="Paris", temp_c=18)
    system = sent_messages(upstream, 0)[0]["content"]
    assert '"temp_c"' in system and "followed only by a JSON value" in system
    assert all("response_format" not in post.body for post in upstream.posts)
    assert "not the JSON asked for" in sent_messages(upstream, 2)[-1]["content"]
