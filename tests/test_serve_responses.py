"""`POST /v1/responses` (OpenAI Responses) through `textreact serve`, driven by the official
`openai` SDK (`responses.create`, `responses.stream`) and the OpenAI Agents SDK's default model
(`OpenAIResponsesModel`) over loopback, in front of the fake upstream scripted with
text-protocol replies: the request is the chat endpoint's turn (the same re-ask, tool_choice
and errors), its answer output items and the Responses event sequence."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import agents
import openai
import pytest
from agents import Agent, OpenAIProvider, OpenAIResponsesModel, RunConfig, Runner, function_tool
from fakeserver import Reply, chat_completion
from hypothesis import given
from hypothesis import strategies as st
from serve_support import CLOCK, WEATHER, client, closing_clients, proxy, sent_messages
from serve_support import streamed as chat_stream
from serve_support import text as chat_reply
from test_serve_schemas import PYTHON_WORDS

from textreact.serve import ServeConfig, responses
from textreact.serve.convert import text_messages
from textreact.serve.errors import ServeError

agents.set_tracing_disabled(True)  # the SDK would send traces to OpenAI otherwise
close_clients = pytest.fixture(autouse=True)(closing_clients)

#: The serve_support tools in the Responses API's shape (no `function` wrapper).
WEATHER_TOOL = {"type": "function", **WEATHER["function"]}
CLOCK_TOOL = {"type": "function", **CLOCK["function"]}
QUESTION = "What is the weather in Paris?"
CALL = "Thought: I need the weather.\nAction: get_weather\n" + (
    'Action Input: {"city": "Paris", "days": "2"}'
)
ANSWER = "Thought: I have it.\nFinal Answer: It is 18 C and sunny in Paris."
SSE = {"content-type": "text/event-stream"}


def _output(response: Any) -> list[dict[str, Any]]:
    """The response's output items as the SDK parsed them, as plain data."""
    return [item.model_dump(exclude_none=True) for item in response.output]


def test_a_string_input_gets_a_message_and_output_text() -> None:
    with proxy([chat_reply(ANSWER)]) as (upstream, url):
        response = client(url).responses.create(
            model="m", input=QUESTION, tools=[WEATHER_TOOL], instructions="Be brief."
        )
    assert response.output_text == "It is 18 C and sunny in Paris."
    assert response.id.startswith("resp_") and response.object == "response"
    assert response.status == "completed" and response.incomplete_details is None
    kinds = [item.type for item in response.output]
    assert kinds == ["reasoning", "message"]  # the thought, as the chat path's reasoning_content
    assert response.output[0].content[0].text == "I have it."
    message = response.output[1]
    assert message.id.startswith("msg_") and message.status == "completed"
    assert message.content[0].annotations == []
    assert response.usage.input_tokens == 11 and response.usage.output_tokens == 7
    assert response.usage.total_tokens == 18
    assert [tool.name for tool in response.tools] == ["get_weather"]
    assert response.tool_choice == "auto" and response.parallel_tool_calls is True
    assert response.model_extra["store"] is False
    assert upstream.posts[0].headers["authorization"] == "Bearer client-key"  # as chat's
    sent = sent_messages(upstream)
    assert "get_weather" in sent[0]["content"] and sent[0]["content"].endswith("Be brief.")
    assert sent[-1] == {"role": "user", "content": QUESTION}


def test_without_tools_the_request_is_passed_through_and_answered_as_a_response() -> None:
    with proxy([chat_reply("Paris.", model="upstream-model")]) as (upstream, url):
        response = client(url).responses.create(
            model="m", input=[{"role": "user", "content": "Capital of France?"}],
            max_output_tokens=64, temperature=0.2, extra_body={"seed": 7},
        )  # fmt: skip
    assert response.output_text == "Paris." and response.model == "upstream-model"
    body = upstream.posts[0].body
    assert body["messages"] == [{"role": "user", "content": "Capital of France?"}]
    assert body["max_tokens"] == 64 and body["temperature"] == 0.2 and body["seed"] == 7
    assert "max_output_tokens" not in body and "input" not in body


def test_a_function_call_item_carries_the_validated_arguments_and_a_call_id() -> None:
    with proxy([chat_reply(CALL)]) as (_, url):
        response = client(url).responses.create(
            model="m", input=QUESTION, tools=[WEATHER_TOOL, CLOCK_TOOL]
        )
    call = response.output[-1]
    assert call.type == "function_call" and call.name == "get_weather"
    assert json.loads(call.arguments) == {"city": "Paris", "days": 2}  # "2" repaired to 2
    assert call.call_id.startswith("call_") and call.id.startswith("fc_")
    assert call.status == "completed" and response.status == "completed"
    assert response.output_text == ""


def test_a_function_call_round_trip_ends_in_the_final_text() -> None:
    with proxy([chat_reply(CALL), chat_reply(ANSWER)]) as (upstream, url):
        sdk = client(url)
        first = sdk.responses.create(model="m", input=QUESTION, tools=[WEATHER_TOOL])
        call = first.output[-1]
        result = {"type": "function_call_output", "call_id": call.call_id, "output": "18 C, sunny"}
        second = sdk.responses.create(
            model="m",
            input=[{"role": "user", "content": QUESTION}, *_output(first), result],
            tools=[WEATHER_TOOL],
        )
    assert second.output_text == "It is 18 C and sunny in Paris."
    sent = sent_messages(upstream, 1)
    action = next(m["content"] for m in sent if m["role"] == "assistant")
    assert "Action: get_weather" in action and '"days": 2' in action
    assert sent[-1]["role"] == "user" and "Observation: 18 C, sunny" in sent[-1]["content"]


def test_every_item_kind_reaches_the_model_as_the_chat_path_renders_it() -> None:
    items = [
        {"type": "message", "role": "developer", "content": "Answer in Celsius."},
        {"role": "user", "content": [{"type": "input_text", "text": QUESTION}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "get_weather",
         "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "c1",
         "output": [{"type": "input_text", "text": "18 C"}]},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "It is 18 C.", "annotations": []}]},
        {"role": "user", "content": "And in Kelvin?"},
    ]  # fmt: skip
    with proxy([chat_reply("Final Answer: 291 K.")]) as (upstream, url):
        response = client(url).responses.create(
            model="m",
            input=items,
            tools=[WEATHER_TOOL],
            store=True,
            metadata={"run": "7"},
            extra_body={"client_metadata": {"app": "codex"}},  # Codex CLI's own field
        )
    assert response.output_text == "291 K." and response.metadata == {"run": "7"}
    assert not {"metadata", "client_metadata", "store"} & set(upstream.posts[-1].body)
    assert response.model_extra["store"] is False  # accepted, and said: nothing is kept
    sent = sent_messages(upstream)
    assert sent[0]["content"].endswith("Answer in Celsius.")
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "user", "assistant", "user"]
    assert sent[1]["content"] == QUESTION
    assert sent[2]["content"].startswith("Action: get_weather")
    assert sent[3]["content"] == "Observation: 18 C"
    assert sent[4]["content"] == "Final Answer: It is 18 C."
    assert sent[5]["content"] == "And in Kelvin?"


def test_a_json_schema_text_format_shapes_the_final_answer_beside_tools() -> None:
    schema = {"type": "object", "properties": {"temp_c": {"type": "integer"}}}
    shape = {"format": {"type": "json_schema", "name": "weather", "schema": schema}}
    with proxy([chat_reply('Final Answer: {"temp_c": "18"}')]) as (upstream, url):
        response = client(url).responses.create(
            model="m", input=QUESTION, tools=[WEATHER_TOOL], text=shape
        )
    assert json.loads(response.output_text) == {"temp_c": 18}  # validated as arguments are
    assert '"temp_c"' in sent_messages(upstream)[0]["content"]
    assert "response_format" not in upstream.posts[0].body


def test_a_function_call_output_for_no_call_is_a_400_naming_the_item() -> None:
    orphan = {"type": "function_call_output", "call_id": "call_nowhere", "output": "18 C"}
    with proxy() as (_, url), pytest.raises(openai.BadRequestError) as caught:
        client(url).responses.create(
            model="m", input=[{"role": "user", "content": QUESTION}, orphan], tools=[WEATHER_TOOL]
        )
    error = caught.value.body
    assert error["param"] == "input[1].call_id"
    assert "input[1] (function_call_output) has call_id" in error["message"]
    assert "no earlier function_call item has" in error["message"]


@pytest.mark.parametrize(
    ("choice", "replies", "kind"),
    [
        ("required", [ANSWER, CALL], "function_call"),
        ("none", [CALL, ANSWER], "message"),
        (
            {"type": "function", "name": "get_time"},
            [CALL, 'Action: get_time\nAction Input: {"zone": "CET"}'],
            "function_call",
        ),
    ],
)
def test_tool_choice_reasks_a_reply_that_breaks_it(choice: Any, replies: list[str], kind: str):
    with proxy([chat_reply(reply) for reply in replies]) as (upstream, url):
        response = client(url).responses.create(
            model="m", input=QUESTION, tools=[WEATHER_TOOL, CLOCK_TOOL], tool_choice=choice
        )
    assert len(upstream.posts) == 2 and response.output[-1].type == kind
    assert response.tool_choice == choice or response.tool_choice.name == "get_time"
    assert response.model_extra["textreact"]["reasks"] == 1


def test_previous_response_id_is_a_400_that_says_to_send_the_whole_input() -> None:
    with proxy() as (upstream, url), pytest.raises(openai.BadRequestError) as caught:
        client(url).responses.create(
            model="m", input="And tomorrow?", previous_response_id="resp_earlier"
        )
    assert caught.value.status_code == 400 and not upstream.posts
    error = caught.value.body
    assert error["param"] == "previous_response_id"
    assert (
        "stateless" in error["message"]
        and "send the whole conversation in input" in (error["message"])
    )


def test_a_stored_response_cannot_be_read_back() -> None:
    with proxy() as (_, url), pytest.raises(openai.NotFoundError) as caught:
        client(url).responses.retrieve("resp_earlier")
    assert "keeps no responses" in caught.value.body["message"]


@pytest.mark.parametrize(
    ("request_fields", "param"),
    [
        ({"tools": [{"type": "web_search"}]}, "tools[0]"),
        ({"tools": [{**WEATHER_TOOL, "parameters": {"type": "objekt"}}]}, "tools[0].parameters"),
        ({"tools": [WEATHER_TOOL], "tool_choice": {"type": "file_search"}}, "tool_choice"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0]"),
        ({"input": [{"role": "robot", "content": "hi"}]}, "input[0].role"),
    ],
)
def test_requests_it_cannot_serve_are_400s_naming_the_responses_field(
    request_fields: dict[str, Any], param: str
) -> None:
    fields = {"model": "m", "input": QUESTION, **request_fields}
    with proxy() as (upstream, url), pytest.raises(openai.BadRequestError) as caught:
        client(url).responses.create(**fields)
    assert caught.value.body["param"] == param and not upstream.posts
    assert "messages" not in caught.value.body["message"]


def test_every_tool_it_cannot_take_is_named_in_one_400() -> None:
    """Codex CLI's default request holds a namespace of tools and web_search beside its
    function tools (tests/test_agent_cli.py): one 400 names both, so one change mends both."""
    agents = {"type": "namespace", "name": "agents", "description": "Subagents.",
              "tools": [WEATHER_TOOL]}  # fmt: skip
    tools = [WEATHER_TOOL, agents, {"type": "web_search"}]
    with proxy() as (upstream, url), pytest.raises(openai.BadRequestError) as caught:
        client(url).responses.create(model="m", input=QUESTION, tools=tools)
    assert caught.value.body["param"] == "tools[1]" and not upstream.posts
    assert 'tools[1] is "namespace"; tools[2] is "web_search": ' in caught.value.body["message"]


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(
        ["", "x", "user", "assistant", "function", "message", "function_call", "input_text",
         "function_call_output", "reasoning", "c1", "get_weather", '{"city": "P"}']
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["type", "role", "content", "text", "call_id", "name", "arguments",
                         "output", "parameters", "image_url"]),
        inner, max_size=4,
    ),
    max_leaves=10,
)  # fmt: skip
_FIELDS = ["input", "instructions", "tools", "tool_choice", "text", "stream", "max_output_tokens"]


@given(field=st.sampled_from(_FIELDS), value=_VALUES, item=_VALUES)
def test_no_json_in_a_responses_request_escapes_as_anything_but_a_400(field, value, item):
    body: dict[str, Any] = {"model": "m", "tools": [WEATHER_TOOL], field: value}
    if field != "input":
        body["input"] = [{"role": "user", "content": QUESTION}, item]
    try:
        asked = responses.read(json.dumps(body).encode(), ServeConfig("http://127.0.0.1:9/v1"))
        text_messages(asked.call)
    except ServeError as error:
        assert error.status == 400 and error.param
        assert "messages" not in error.message and "function.parameters" not in error.message
        assert not any(word in error.message for word in PYTHON_WORDS)


_CHAT_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(
        ["", "x", "stop", "length", "tool_calls", "call_1", "get_weather", '{"a"']
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["choices", "delta", "message", "content", "reasoning_content",
                         "tool_calls", "index", "id", "function", "name", "arguments",
                         "finish_reason", "usage", "prompt_tokens", "error", "type", "model"]),
        inner, max_size=4,
    ),
    max_leaves=14,
)  # fmt: skip


@given(chunks=st.lists(_CHAT_VALUES, max_size=4))
def test_no_chat_answer_an_upstream_passes_through_breaks_the_translation(chunks):
    asked = responses.read(
        json.dumps({"model": "m", "input": QUESTION}).encode(), ServeConfig("http://h/v1")
    )
    try:
        body = asked.whole(chunks[0] if chunks else None)
        assert body["object"] == "response" and body["status"] in ("completed", "incomplete")
    except ServeError as error:
        assert error.status == 502
    stream = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks).encode()

    async def read() -> list[str]:
        async def chat():
            yield stream

        return [piece.decode() async for piece in asked.events(chat())]

    events = [piece.split("\n", 1)[0] for piece in asyncio.run(read())]
    assert events[:2] == ["event: response.created", "event: response.in_progress"]
    assert events[-1] in ("event: response." + end for end in ("completed", "incomplete", "failed"))


def test_an_upstream_failure_is_the_chat_paths_error_as_the_sdk_raises_it() -> None:
    failing = Reply(500, {"error": {"message": "model crashed", "type": "server_error"}})
    with proxy([failing]) as (_, url), pytest.raises(openai.APIStatusError) as caught:
        client(url).responses.create(model="m", input=QUESTION, tools=[WEATHER_TOOL])
    assert caught.value.status_code == 502
    assert caught.value.body["type"] == "upstream_error"
    assert "model crashed" in caught.value.body["message"]


#: Two calls in one chat reply, as a model with its own tool calls makes them.
TWO_CALLS = [
    {"id": "call_a", "type": "function",
     "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
    {"id": "call_b", "type": "function",
     "function": {"name": "get_time", "arguments": '{"zone": "CET"}'}},
]  # fmt: skip


def _native_stream() -> Reply:
    """A chat stream with the two calls, each begun by its id and name, its arguments after."""
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": None}]
    for index, call in enumerate(TWO_CALLS):
        name = {"name": call["function"]["name"], "arguments": ""}
        deltas.append({"tool_calls": [{"index": index, "id": call["id"], "function": name}]})
        arguments = call["function"]["arguments"]
        for piece in (arguments[:5], arguments[5:]):
            deltas.append({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    chunks = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    body = "".join(f"data: {json.dumps({'model': 'native', **c})}\n\n" for c in chunks)
    return Reply(body=body + "data: [DONE]\n\n", headers=SSE)


def test_several_chat_tool_calls_are_several_function_call_items() -> None:
    whole = chat_completion(None, finish_reason="tool_calls")
    whole["choices"][0]["message"]["tool_calls"] = TWO_CALLS
    with proxy([Reply(body=whole), _native_stream()], native="on") as (upstream, url):
        answer = client(url).responses.create(
            model="m", input=QUESTION, tools=[WEATHER_TOOL, CLOCK_TOOL], parallel_tool_calls=True
        )
        events, final = _streamed(url, tools=[WEATHER_TOOL, CLOCK_TOOL])
    expected = [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in TWO_CALLS]
    for response in (answer, final):
        calls = [(i.call_id, i.name, i.arguments) for i in response.output]
        assert calls == expected and len({i.id for i in response.output}) == 2
    sent = upstream.posts[0].body  # passed through natively: tools and the choice as chat's
    assert sent["tools"] == [WEATHER, CLOCK] and sent["parallel_tool_calls"] is True
    added = [e.output_index for e in events if e.type == "response.output_item.added"]
    done = [e.output_index for e in events if e.type == "response.function_call_arguments.done"]
    assert added == done == [0, 1]
    pieces = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert "".join(pieces) == '{"city": "Paris"}{"zone": "CET"}'


def test_a_reply_of_two_actions_is_two_function_call_items_where_parallel_calls_are_allowed():
    two = (
        'Thought: I need both.\nAction: get_weather\nAction Input: {"city": "Paris"}\n'
        'Action: get_time\nAction Input: {"zone": "CET"}'
    )
    replies = [chat_reply(two), chat_stream(two, pieces=7), chat_reply(two)]
    tools = [WEATHER_TOOL, CLOCK_TOOL]
    with proxy(replies, parallel_calls=True) as (_, url):
        whole = client(url).responses.create(model="m", input=QUESTION, tools=tools)
        _, final = _streamed(url, tools=tools)
        one = client(url).responses.create(
            model="m", input=QUESTION, tools=tools, parallel_tool_calls=False
        )
    expected = [("get_weather", {"city": "Paris"}), ("get_time", {"zone": "CET"})]
    for response in (whole, final):
        calls = [i for i in response.output if i.type == "function_call"]
        assert [(c.name, json.loads(c.arguments)) for c in calls] == expected
        assert len({c.call_id for c in calls}) == 2
    assert [(i.name, json.loads(i.arguments)) for i in one.output[1:]] == expected[:1]


def _streamed(url: str, **fields: Any) -> tuple[list[Any], Any]:
    """The events `responses.stream` yields, and its final response."""
    with client(url).responses.stream(model="m", input=QUESTION, **fields) as stream:
        events = list(stream)
        return events, stream.get_final_response()


def test_a_streamed_answer_has_the_responses_event_sequence() -> None:
    with proxy([chat_stream(ANSWER, pieces=8)]) as (upstream, url):
        events, final = _streamed(url, tools=[WEATHER_TOOL])
    kinds = [event.type for event in events]
    text_deltas = kinds.count("response.output_text.delta")
    assert text_deltas >= 1
    reasoning = [
        "response.output_item.added",
        "response.content_part.added",
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    message = [
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * text_deltas,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    assert kinds == [
        "response.created", "response.in_progress", *reasoning, *message, "response.completed"
    ]  # fmt: skip
    assert [event.sequence_number for event in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == final.output_text == "It is 18 C and sunny in Paris."
    assert final.status == "completed" and final.usage.output_tokens == 7
    assert final.id == events[0].response.id
    assert upstream.posts[0].body["stream_options"] == {"include_usage": True}


def test_a_streamed_function_call_sends_its_arguments_in_deltas() -> None:
    with proxy([chat_stream(CALL, pieces=6)]) as (_, url):
        events, final = _streamed(url, tools=[WEATHER_TOOL])
    kinds = [event.type for event in events]
    start = kinds.index("response.function_call_arguments.delta")
    added = events[start - 1]
    assert added.type == "response.output_item.added" and added.item.name == "get_weather"
    end = kinds.index("response.function_call_arguments.done")
    assert set(kinds[start:end]) == {"response.function_call_arguments.delta"}
    assert kinds[end + 1 :] == ["response.output_item.done", "response.completed"]
    pieces = "".join(event.delta for event in events[start:end])
    assert json.loads(pieces) == {"city": "Paris", "days": 2} == json.loads(events[end].arguments)
    call = final.output[-1]
    assert call.type == "function_call" and call.call_id == added.item.call_id
    assert json.loads(call.arguments) == {"city": "Paris", "days": 2}


def test_a_stream_that_breaks_off_ends_in_response_failed() -> None:
    body = chat_stream(ANSWER, pieces=8).body.encode()
    broken = Reply(200, body, SSE, end_body=len(body) // 2)
    with (
        proxy([broken]) as (_, url),
        client(url).responses.stream(model="m", input=QUESTION, tools=[WEATHER_TOOL]) as stream,
    ):
        events = list(stream)
        with pytest.raises(RuntimeError, match=r"response\.completed"):
            stream.get_final_response()
    assert events[0].type == "response.created"
    failed = events[-1]
    assert failed.type == "response.failed" and failed.response.status == "failed"
    assert failed.response.error.code == "server_error"
    assert "broke off" in failed.response.error.message


@function_tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"18 C and sunny in {city}"


async def _agent_run(url: str, *, streamed: bool) -> Any:
    """The Agents SDK's own loop, on the model its provider gives by default (Responses)."""
    async with openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0) as sdk:
        provider = OpenAIProvider(openai_client=sdk)
        assert isinstance(provider.get_model("m"), OpenAIResponsesModel)
        agent = Agent(name="weather", instructions="Answer about the weather.", tools=[get_weather])
        config = RunConfig(model="m", model_provider=provider)
        if not streamed:
            return await Runner.run(agent, QUESTION, run_config=config)
        result = Runner.run_streamed(agent, QUESTION, run_config=config)
        async for _ in result.stream_events():
            pass
        return result


@pytest.mark.parametrize("streamed", [False, True])
def test_the_agents_sdk_default_model_runs_a_tool_loop_to_its_final_output(streamed: bool):
    call = CALL.replace(', "days": "2"', "")
    replies = [chat_stream(call), chat_stream(ANSWER)] if streamed else [
        chat_reply(call), chat_reply(ANSWER)
    ]  # fmt: skip
    with proxy(replies) as (upstream, url):
        result = asyncio.run(_agent_run(url, streamed=streamed))
    assert result.final_output == "It is 18 C and sunny in Paris."
    outputs = [item.output for item in result.new_items if item.type == "tool_call_output_item"]
    assert outputs == ["18 C and sunny in Paris"]
    assert [post.path for post in upstream.posts] == ["/v1/chat/completions"] * 2
    system = sent_messages(upstream, 1)[0]["content"]
    assert "get_weather" in system and "Answer about the weather." in system
    assert "Observation: 18 C and sunny in Paris" in json.dumps(upstream.posts[1].body)
