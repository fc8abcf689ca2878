"""`POST /v1/messages` (Anthropic's Messages API) through the official anthropic SDK in front of
the loopback fake upstream speaking the text protocol: the request made a chat request, the
same turn (re-ask, tool_choice), the answer made a message or Anthropic's event stream, the
stop sequences applied to the answer, faults in Anthropic's error shape, and count_tokens."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2 as httpx
import pytest
from fakeserver import Reply, chat_completion, error_body
from hypothesis import example, given
from hypothesis import strategies as st
from serve_support import QUESTION, anthropic_tool, proxy, sent_messages, streamed, text
from serve_support import WEATHER as OPENAI_WEATHER

from textreact.serve.messages.events import events as message_events
from textreact.serve.messages.reply import stopped_at
from textreact.serve.stops import Stops

CALL = 'Thought: I need the weather.\nAction: get_weather\nAction Input: {"city": "Paris"}'
ANSWER = "Thought: I know it now.\nFinal Answer: It is 18 °C and sunny in Paris."
WEATHER = anthropic_tool(OPENAI_WEATHER)
CLOCK = {
    "name": "get_time",
    "description": "The time now in a time zone.",
    "input_schema": {"type": "object", "properties": {"zone": {"type": "string"}}},
}
KEY = "client-key-0123456789"


@pytest.fixture
def clients() -> Iterator[list[anthropic.Anthropic]]:
    made: list[anthropic.Anthropic] = []
    yield made
    for client in made:
        client.close()


@pytest.fixture
def claude(clients: list[anthropic.Anthropic]):
    """Makes an anthropic client of the proxy at a base URL (…/v1, as `proxy` yields it)."""

    def make(url: str, **options: Any) -> anthropic.Anthropic:
        base = url.removesuffix("/v1")
        client = anthropic.Anthropic(base_url=base, api_key=KEY, max_retries=0, **options)
        clients.append(client)
        return client

    return make


def ask(client: anthropic.Anthropic, **fields: Any) -> Any:
    return client.messages.create(**{**_ASKED, **fields})


def stream(client: anthropic.Anthropic, **fields: Any) -> Any:
    """The SDK's `messages.stream` (a context manager) of a request like `ask`'s."""
    return client.messages.stream(**{**_ASKED, **fields})


_ASKED = {"model": "m", "max_tokens": 256, "messages": QUESTION, "tools": [WEATHER]}


# whole replies


def test_an_answer_is_a_text_block_that_ended_its_turn(claude) -> None:
    with proxy([text(ANSWER)]) as (upstream, url):
        message = ask(claude(url), system=[{"type": "text", "text": "Be brief."}])
    assert re.fullmatch(r"msg_[0-9a-f]{24}", message.id)
    assert message.type == "message" and message.role == "assistant"
    assert message.model == "fake-model"
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == "It is 18 °C and sunny in Paris."
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    assert (message.usage.input_tokens, message.usage.output_tokens) == (11, 7)
    sent = upstream.posts[0]
    assert sent.path == "/v1/chat/completions" and "tools" not in sent.body
    assert sent.body["max_tokens"] == 256 and sent.body["stop"][0] == "\nObservation:"
    system = sent_messages(upstream)[0]["content"]
    assert "get_weather: Current weather for a city." in system and system.endswith("Be brief.")


def test_a_call_is_a_tool_use_block_with_its_input_repaired_and_validated(claude) -> None:
    loose = "Thought: I need it.\nAction: get_weather\nAction Input: {city: 'Paris', days: '3',}"
    with proxy([text(loose)]) as (upstream, url):
        message = ask(claude(url), metadata={"user_id": "u1"}, extra_body={"temperature": 0.2})
    (block,) = message.content
    assert block.type == "tool_use" and block.name == "get_weather"
    assert re.fullmatch(r"toolu_[0-9a-f]{24}", block.id)
    assert block.input == {"city": "Paris", "days": 3}
    assert message.stop_reason == "tool_use"
    sent = upstream.posts[0].body
    assert sent["temperature"] == 0.2 and "metadata" not in sent


def test_a_tool_use_round_trip_ends_in_an_answer(claude) -> None:
    with proxy([text(CALL), text(ANSWER)]) as (upstream, url):
        client = claude(url)
        first = ask(client)
        (call,) = first.content
        result = {"type": "tool_result", "tool_use_id": call.id, "content": "18 °C, sunny"}
        conversation = [
            *QUESTION,
            {"role": "assistant", "content": first.content},
            {"role": "user", "content": [result]},
        ]
        final = ask(client, messages=conversation)
    assert final.stop_reason == "end_turn"
    assert final.content[0].text == "It is 18 °C and sunny in Paris."
    tail = sent_messages(upstream)[-2:]
    assert tail[0] == {
        "role": "assistant",
        "content": 'Action: get_weather\nAction Input: {"city": "Paris"}',
    }
    assert tail[1] == {"role": "user", "content": "Observation: 18 °C, sunny"}


def test_an_error_result_is_shown_as_the_loop_shows_a_failed_tool(claude) -> None:
    blocks = [{"type": "text", "text": "city not found"}, {"type": "text", "text": "try again"}]
    conversation = [
        *QUESTION,
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Pari"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": blocks,
                    "is_error": True,
                },
                {"type": "text", "text": "It is Paris, France."},
            ],
        },
    ]
    with proxy([text(ANSWER)]) as (upstream, url):
        ask(claude(url), messages=conversation)
    tail = sent_messages(upstream)[-2:]
    assert tail[0]["content"].startswith("Thought: Let me look.\nAction: get_weather")
    assert tail[1]["content"] == (
        "Observation: Error: city not found\ntry again\n\nIt is Paris, France."
    )


def test_an_image_is_a_placeholder_that_says_what_the_model_is_not_shown(claude) -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
    }
    content = [image, {"type": "text", "text": "What is this?"}]
    with proxy([text(ANSWER)]) as (upstream, url):
        ask(claude(url), messages=[{"role": "user", "content": content}])
    assert sent_messages(upstream)[-1]["content"] == "[image (image/png): not shown]\nWhat is this?"


def test_without_tools_the_chat_request_passes_through_whole_or_streamed(claude) -> None:
    """No tools and no tool history: the translated chat request goes to the upstream as it
    is, and its reply, whole or streamed, comes back as a message."""
    said = "Bonjour! Paris is in France."
    with proxy([text(said), streamed(said, pieces=4)]) as (upstream, url):
        client = claude(url)
        whole = ask(client, tools=[], system="Answer in one line.")
        with stream(client, tools=[]) as events:
            streamed_message = events.get_final_message()
    for message in (whole, streamed_message):
        assert message.content[0].text == said and message.stop_reason == "end_turn"
        assert (message.usage.input_tokens, message.usage.output_tokens) == (11, 7)
    assert upstream.posts[0].body == {
        "model": "m",
        "max_tokens": 256,
        "messages": [
            {"role": "system", "content": "Answer in one line."},
            {"role": "user", "content": "What is the weather in Paris?"},
        ],
    }
    assert upstream.posts[1].body["stream_options"] == {"include_usage": True}


def test_thinking_blocks_of_earlier_turns_are_dropped(claude) -> None:
    earlier = [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "Hello."},
    ]
    conversation = [*QUESTION, {"role": "assistant", "content": earlier}, *QUESTION]
    with proxy([text(ANSWER)]) as (upstream, url):
        ask(claude(url), messages=conversation)
    assert sent_messages(upstream)[-2]["content"] == "Final Answer: Hello."


# tool_choice


def test_tool_choice_any_re_asks_an_answer_and_returns_the_call(claude) -> None:
    with proxy([text(ANSWER), text(CALL)]) as (upstream, url):
        message = ask(claude(url), tool_choice={"type": "any"})
    assert message.stop_reason == "tool_use" and message.content[-1].name == "get_weather"
    assert len(upstream.posts) == 2
    assert sent_messages(upstream, 1)[-1]["content"].startswith("Observation:")


def test_tool_choice_tool_re_asks_another_tools_call(claude) -> None:
    other = 'Action: get_weather\nAction Input: {"city": "Tokyo"}'
    clock = 'Action: get_time\nAction Input: {"zone": "Asia/Tokyo"}'
    with proxy([text(other), text(clock)]) as (upstream, url):
        message = ask(
            claude(url), tools=[WEATHER, CLOCK], tool_choice={"type": "tool", "name": "get_time"}
        )
    assert message.content[-1].name == "get_time" and message.content[-1].input == {
        "zone": "Asia/Tokyo"
    }
    assert len(upstream.posts) == 2


def test_tool_choice_none_re_asks_a_call_and_returns_the_answer(claude) -> None:
    with proxy([text(CALL), text(ANSWER)]) as (upstream, url):
        message = ask(claude(url), tool_choice={"type": "none"})
    assert message.stop_reason == "end_turn"
    assert message.content[0].text == "It is 18 °C and sunny in Paris."
    assert len(upstream.posts) == 2


def test_passed_through_natively_the_request_is_the_chat_one_and_every_call_a_block(claude) -> None:
    """With the model's own tool calls (`--upstream-native on`) the translated chat request
    goes upstream as it is: tools as functions, `any` as required, and
    `disable_parallel_tool_use` as `parallel_tool_calls: false`; each of several tool_calls
    comes back as its own tool_use block."""
    calls = [
        {"id": "call_a1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"id": "call_b2", "type": "function",
         "function": {"name": "get_time", "arguments": '{"zone": "Europe/Paris"}'}},
    ]  # fmt: skip
    completion = {
        "id": "x", "object": "chat.completion", "created": 0, "model": "native-model",
        "choices": [{"index": 0, "finish_reason": "tool_calls",
                     "message": {"role": "assistant", "content": None, "tool_calls": calls}}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42},
    }  # fmt: skip
    choice = {"type": "any", "disable_parallel_tool_use": True}
    with proxy([Reply(body=completion)], native="on") as (upstream, url):
        message = ask(claude(url), tools=[WEATHER, CLOCK], tool_choice=choice)
    assert [(b.id, b.name, b.input) for b in message.content] == [
        ("toolu_a1", "get_weather", {"city": "Paris"}),
        ("toolu_b2", "get_time", {"zone": "Europe/Paris"}),
    ]
    assert message.stop_reason == "tool_use" and message.model == "native-model"
    sent = upstream.posts[0].body
    assert sent["tool_choice"] == "required" and sent["parallel_tool_calls"] is False
    assert sent["tools"][0] == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": WEATHER["input_schema"],
            "description": "Current weather for a city.",
        },
    }


def test_several_calls_of_one_reply_are_several_tool_use_blocks(claude) -> None:
    """Anthropic's API allows several calls per reply unless `disable_parallel_tool_use`: on
    a server started with `--parallel-calls`, the text protocol's calls in a row come back as
    one block each, whole or streamed, in the order written, each with its own id."""
    two = (
        'Thought: I need both.\nAction: get_weather\nAction Input: {"city": "Paris"}\n'
        'Action: get_time\nAction Input: {"zone": "CET"}'
    )
    with proxy([text(two), streamed(two, pieces=9)], parallel_calls=True) as (_, url):
        client = claude(url)
        whole = ask(client, tools=[WEATHER, CLOCK])
        with stream(client, tools=[WEATHER, CLOCK]) as events:
            streamed_message = events.get_final_message()
    for message in (whole, streamed_message):
        assert [(block.name, block.input) for block in message.content] == [
            ("get_weather", {"city": "Paris"}),
            ("get_time", {"zone": "CET"}),
        ]
        assert message.content[0].id != message.content[1].id
        assert message.stop_reason == "tool_use"


# stop sequences


def test_a_stop_sequence_ends_the_answer_and_is_named(claude) -> None:
    said = "Thought: t\nFinal Answer: It is 18 C. END and then more."
    with proxy([text(said), streamed(said, pieces=12)]) as (upstream, url):
        client = claude(url)
        message = ask(client, stop_sequences=["STOP", "END"])
        with stream(client, stop_sequences=["END"]) as events:
            streamed_message = events.get_final_message()
    for reply in (message, streamed_message):
        assert reply.content[0].text == "It is 18 C. "
        assert (reply.stop_reason, reply.stop_sequence) == ("stop_sequence", "END")
    assert "END" not in upstream.posts[0].body["stop"]


def test_at_a_stop_sequence_the_upstream_stream_is_closed_not_read_to_its_end(claude) -> None:
    said = "Thought: t\nFinal Answer: It is 18 C. STOP" + " and more" * 150
    dripping = streamed(said, pieces=40)
    slow = Reply(200, dripping.body, dripping.headers, drip=0.002, drip_headers=False)
    with proxy([slow]) as (upstream, url), stream(claude(url), stop_sequences=["STOP"]) as events:
        message = events.get_final_message()
    assert message.content[0].text == "It is 18 C. " and message.stop_sequence == "STOP"
    assert upstream.unsent and upstream.unsent[0] > len(slow.body) // 2


@given(st.text("ENDx \n", max_size=40), st.lists(st.integers(0, 80), max_size=12))
@example("x EN", [26, 27])  # the start of a stop, held back, then sent at the end
@example("x END more END", [26, 28, 29])  # a stop split across pieces
def test_streamed_text_is_the_whole_replys_cut_at_its_first_stop(tail, cuts) -> None:
    """However the chat stream splits the text, the text deltas add up to the text the whole
    reply is cut to, and the stop named is the same."""
    stops = ("END", "x\n")
    said = "It is 18 C. " + tail
    ends = sorted({min(cut, len(said)) for cut in cuts} | {len(said)})
    pieces = [said[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]
    sent = _events(pieces, stops)
    texts = "".join(e["delta"]["text"] for e in sent if e["type"] == "content_block_delta")
    kept, stop = stopped_at(said, Stops((), stops))
    assert texts == kept
    assert sent[-2]["delta"] == {
        "stop_reason": "stop_sequence" if stop else "end_turn",
        "stop_sequence": stop,
    }


def _events(pieces: list[str], stops: tuple[str, ...]) -> list[dict[str, Any]]:
    """The Messages events made of a chat stream whose content comes in `pieces`."""
    chunks = [
        {"model": "up", "choices": [{"index": 0, "delta": {"content": piece}}]} for piece in pieces
    ]
    chunks.append({"model": "up", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})

    async def source():
        for chunk in chunks:
            yield f"data: {json.dumps(chunk)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    async def read() -> list[bytes]:
        return [event async for event in message_events(source(), model="m", stops=stops)]

    out = []
    for event in asyncio.run(read()):
        name, data = event.decode().removesuffix("\n\n").split("\n")
        assert name == "event: " + json.loads(data[6:])["type"]
        out.append(json.loads(data[6:]))
    return out


# streams


def test_a_streamed_answer_comes_in_anthropic_s_event_sequence(claude) -> None:
    with proxy([streamed(ANSWER, pieces=6), streamed(ANSWER, pieces=6)]) as (_, url):
        with stream(claude(url)) as events:
            kinds = [event.type for event in events]
            message = events.get_final_message()
        raw = _raw_events(url, {**_ASKED, "stream": True})
    assert message.content[0].text == "It is 18 °C and sunny in Paris."
    assert message.stop_reason == "end_turn"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (11, 7)
    names = [name for name, _ in raw]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(names[3:-3]) == {"content_block_delta"}
    said = "".join(data["delta"]["text"] for name, data in raw if name == "content_block_delta")
    assert said == "It is 18 °C and sunny in Paris."
    assert raw[0][1]["message"]["model"] == "fake-model"
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop" and "text" in kinds


def test_a_streamed_call_is_one_tool_use_block_with_its_whole_input(claude) -> None:
    with proxy([streamed(CALL, pieces=7)]) as (_, url), stream(claude(url)) as events:
        sent = list(events)
        message = events.get_final_message()
    (block,) = message.content
    assert block.type == "tool_use" and block.input == {"city": "Paris"}
    assert message.stop_reason == "tool_use"
    starts = [event for event in sent if event.type == "content_block_start"]
    assert len(starts) == 1 and starts[0].content_block.id == block.id
    deltas = [event.delta for event in sent if event.type == "content_block_delta"]
    assert all(delta.type == "input_json_delta" for delta in deltas)
    assert json.loads("".join(delta.partial_json for delta in deltas)) == {"city": "Paris"}


def _raw_events(url: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of each event of a streamed `POST /v1/messages`, as sent."""
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    with httpx.Client() as http:
        reply = http.post(url + "/messages", json=body, headers=headers)
    assert reply.headers["content-type"].startswith("text/event-stream")
    out = []
    for event in reply.text.split("\n\n"):
        if event:
            name, data = event.split("\n")
            out.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out


# errors, as the SDK raises them


def test_a_missing_max_tokens_is_a_400_in_anthropic_s_shape(claude) -> None:
    """The SDK will not send a request without max_tokens: sent as another client would."""
    with proxy() as (upstream, url), pytest.raises(anthropic.BadRequestError) as raised:
        body = {"model": "m", "messages": QUESTION}
        claude(url).post("/v1/messages", body=body, cast_to=anthropic.types.Message)
    assert raised.value.body["type"] == "error"
    assert raised.value.body["error"]["type"] == "invalid_request_error"
    assert "max_tokens is required" in raised.value.body["error"]["message"]
    assert not upstream.posts


@pytest.mark.parametrize(
    ("tools", "said"),
    [
        (
            [{**WEATHER, "input_schema": {"type": "object", "properties": []}}],
            "tools[0].input_schema",
        ),
        (
            [{"name": "get_weather", "description": "no schema"}],
            "tools[0] must be {name, description, input_schema}",
        ),
        ([{"type": "web_search_20250305", "name": "web_search"}], "a tool type Anthropic defines"),
        ([WEATHER, {**WEATHER}], "tool names must be unique"),
    ],
)
def test_bad_tools_are_a_400_that_names_the_messages_field(claude, tools, said) -> None:
    with proxy() as (upstream, url), pytest.raises(anthropic.BadRequestError) as raised:
        ask(claude(url), tools=tools)
    assert said in str(raised.value) and "function" not in str(raised.value)
    assert raised.value.body["error"]["type"] == "invalid_request_error"
    assert not upstream.posts


@pytest.mark.parametrize("call_id", ["toolu_nowhere", [], {}])
def test_a_result_for_no_tool_use_is_a_400_that_names_the_block(claude, call_id) -> None:
    result = {"type": "tool_result", "tool_use_id": call_id, "content": "x"}
    with proxy() as (_, url), pytest.raises(anthropic.BadRequestError) as raised:
        ask(claude(url), messages=[*QUESTION, {"role": "user", "content": [result]}])
    assert "messages[1].content[0].tool_use_id" in str(raised.value)


@pytest.mark.parametrize(
    ("status", "raised", "kind"),
    [
        (500, anthropic.InternalServerError, "api_error"),
        (429, anthropic.InternalServerError, "overloaded_error"),
        (401, anthropic.AuthenticationError, "authentication_error"),
    ],
)
def test_an_upstream_failure_is_an_error_in_anthropic_s_shape(claude, status, raised, kind) -> None:
    failure = Reply(status, error_body("the upstream is unhappy"), {"x-should-retry": "false"})
    with proxy([failure]) as (_, url), pytest.raises(raised) as caught:
        ask(claude(url))
    assert caught.value.body["type"] == "error"
    assert caught.value.body["error"]["type"] == kind
    assert "the upstream is unhappy" in caught.value.body["error"]["message"]


def test_an_upstream_s_odd_usage_counts_nothing_and_fails_nothing(claude) -> None:
    body = chat_completion("It is 18 C.")
    body["usage"] = {"prompt_tokens": "n/a", "completion_tokens": -3}
    with proxy([Reply(body=body)]) as (_, url):
        message = ask(claude(url), tools=[])  # no tools: passed through as it came
    assert message.content[0].text == "It is 18 C."
    assert (message.usage.input_tokens, message.usage.output_tokens) == (0, 0)


def test_a_stream_that_breaks_off_ends_with_an_error_event(claude) -> None:
    whole = streamed(ANSWER, pieces=6)
    broken = Reply(200, whole.body, whole.headers, end_body=len(whole.body) // 2)
    with (
        proxy([broken]) as (_, url),
        pytest.raises(anthropic.APIStatusError) as caught,
        stream(claude(url)) as events,
    ):
        events.get_final_message()
    assert caught.value.body["type"] == "error"
    assert caught.value.body["error"]["type"] == "api_error"
    assert "broke off" in caught.value.body["error"]["message"]


def test_the_client_s_x_api_key_goes_upstream_as_its_bearer_key(claude) -> None:
    with proxy([text(ANSWER)]) as (upstream, url):
        ask(claude(url))
        with httpx.Client() as http:
            refused = http.post(
                url + "/messages", json=_ASKED, headers={"x-api-key": "clé".encode("latin-1")}
            )
    assert upstream.posts[0].headers["authorization"] == f"Bearer {KEY}"
    said = refused.json()  # a key no header can carry on: refused, in Anthropic's shape
    assert refused.status_code == 400 and said["type"] == "error"
    assert "x-api-key" in said["error"]["message"]


# count_tokens


@pytest.mark.parametrize("tools", [[WEATHER], []])
def test_count_tokens_counts_the_prompt_messages_would_send_with_the_upstreams_tokenizer(
    claude, tools
) -> None:
    """The prompt counted is the one `POST /v1/messages` sends: the text protocol's with tools,
    the client's conversation passed through without; llama.cpp's template and tokenizer
    count it."""
    template, tokens = Reply(body={"prompt": "<|im_start|>system ..."}), list(range(321))
    replies = [template, Reply(body={"tokens": tokens}), text(ANSWER)]
    with proxy(replies) as (upstream, url):
        client = claude(url)
        asked = {"model": "m", "messages": QUESTION, "tools": tools, "system": "Be brief."}
        counted = client.messages.count_tokens(**asked)
        client.messages.create(**asked, max_tokens=64)
    assert counted.input_tokens == 321
    applied, tokenized, answered = upstream.posts
    assert (applied.path, tokenized.path) == ("/apply-template", "/tokenize")
    assert applied.body["messages"] == answered.body["messages"]
    assert tokenized.body == {
        "content": "<|im_start|>system ...",
        "add_special": True,
        "parse_special": True,
    }


def test_count_tokens_where_the_upstream_cannot_count_is_a_404_that_says_so(claude) -> None:
    missing = Reply(404, error_body("File Not Found"), {"x-should-retry": "false"})
    with proxy([missing]) as (_, url), pytest.raises(anthropic.NotFoundError) as caught:
        claude(url).messages.count_tokens(model="m", messages=QUESTION)
    assert caught.value.body["error"]["type"] == "not_found_error"
    assert "cannot count tokens" in caught.value.body["error"]["message"]
