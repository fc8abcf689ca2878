"""`textreact serve` against OpenAI's Chat Completions contract, through the official SDK:
finish reasons (length after a failed re-ask, content_filter), stop sequences that fit a
four-stop upstream, tool history without tools, short keys, routes, response_format."""

from __future__ import annotations

import contextlib

import httpx2 as httpx
import openai
import pytest
from fakeserver import FakeServer, Reply, error_body
from serve_support import (
    CLOCK,
    QUESTION,
    WEATHER,
    client,
    closing_clients,
    proxy,
    sent_messages,
    streamed,
    text,
)

from textreact import grammar
from textreact.serve import ServeConfig, create_app, serving
from textreact.serve.errors import secret_keys
from textreact.serve.request import request_tools
from textreact.serve.stops import stops_for
from textreact.serve.turn import Answer, Judge
from textreact.steps import Completion

CALL = 'Thought: I need the weather.\nAction: get_weather\nAction Input: {"city": "Paris"}'
CUT = 'Thought: x\nAction: get_weather\nAction Input: {"city": "Par'

#: Closes the clients each test made (see serve_support.client).
close_clients = pytest.fixture(autouse=True)(closing_clients)


def _ask(url: str, **request):
    return client(url).chat.completions.create(
        model="m", messages=QUESTION, tools=[WEATHER], **request
    )


def _chunks(url: str, **request) -> list:
    return list(_ask(url, stream=True, **request))


# finish_reason


def test_giving_up_on_a_reply_cut_by_the_token_limit_says_length() -> None:
    with proxy([text(CUT, finish_reason="length")] * 2) as (upstream, url):
        reply = _ask(url, max_tokens=10)
    choice = reply.choices[0]
    assert choice.finish_reason == "length" and not choice.message.tool_calls
    assert "[textreact:" in choice.message.content and len(upstream.posts) == 2


def test_a_streamed_reply_cut_twice_by_the_token_limit_says_length() -> None:
    with proxy([streamed(CUT, finish_reason="length")] * 2) as (_, url):
        chunks = _chunks(url, max_tokens=10)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"


def test_a_cut_reply_followed_by_one_that_fails_otherwise_says_stop() -> None:
    with proxy([text(CUT, finish_reason="length"), text("Thought: hmm.")]) as (_, url):
        reply = _ask(url)
    assert reply.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("reply", ["Final Answer: I cannot say more about", CALL, "half a"])
def test_the_upstreams_content_filter_comes_back_as_content_filter_without_a_reask(
    reply,
) -> None:
    with proxy([text(reply, finish_reason="content_filter")]) as (upstream, url):
        answer = _ask(url)
    choice = answer.choices[0]
    assert choice.finish_reason == "content_filter" and not choice.message.tool_calls
    assert choice.message.content and len(upstream.posts) == 1
    with proxy([streamed(reply, finish_reason="content_filter")]) as (upstream, url):
        chunks = _chunks(url)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "content_filter"
    assert len(upstream.posts) == 1


def test_the_judge_reads_a_filtered_answer_as_its_answer() -> None:
    judge = Judge(request_tools([WEATHER, CLOCK]))
    verdict = judge.read(Completion("Thought: t\nFinal Answer: partly", "content_filter"))
    assert verdict == Answer("partly", "t", "content_filter")


# stop sequences


@contextlib.contextmanager
def four_stop_proxy(replies, **settings):
    """The proxy in front of an upstream that refuses more than four stops, as OpenAI does."""
    with FakeServer(replies, max_stops=4) as upstream:
        config = ServeConfig(upstream.base_url, constrain="off", max_retries=0, **settings)
        with serving(create_app(config)) as url:
            yield upstream, url


def test_a_client_stop_works_against_an_upstream_that_takes_four() -> None:
    answer = "Thought: t\nFinal Answer: It is 18 C"
    with four_stop_proxy([text(answer), streamed(answer)]) as (upstream, url):
        reply = _ask(url, stop=["END"])
        chunks = _chunks(url, stop="END")
    assert reply.choices[0].message.content == "It is 18 C"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "It is 18 C"
    for post in upstream.posts:
        assert len(post.body["stop"]) == 4
        assert post.body["stop"][0] == "\nObservation:" and post.body["stop"][-1] == "END"


def test_four_client_stops_send_three_and_the_proxy_cuts_at_the_fourth() -> None:
    said = "Thought: t\nFinal Answer: It is 18 C. STOP and more the model should not have said"
    stops = ["A1", "B2", "C3", "STOP"]
    with four_stop_proxy([text(said), streamed(said, pieces=20)]) as (upstream, url):
        reply = _ask(url, stop=stops)
        chunks = _chunks(url, stop=stops)
    assert reply.choices[0].message.content == "It is 18 C."
    streamed_content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed_content == "It is 18 C."
    assert upstream.posts[0].body["stop"] == ["\nObservation:", "A1", "B2", "C3"]


def test_at_the_proxys_stop_the_upstream_stream_is_closed_not_read_to_its_end() -> None:
    """Closing the connection is what stops the upstream generating what no one will read."""
    said = "Thought: t\nFinal Answer: It is 18 C. STOP" + " and more" * 150
    dripping = streamed(said, pieces=40)
    slow = Reply(200, dripping.body, dripping.headers, drip=0.002, drip_headers=False)
    with four_stop_proxy([slow]) as (upstream, url):
        chunks = _chunks(url, stop=["A1", "B2", "C3", "STOP"])
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "It is 18 C."
    assert upstream.unsent and upstream.unsent[0] > len(slow.body) // 2  # read to the end: []


def test_a_client_that_asks_for_the_usage_after_the_proxy_s_stop_gets_the_upstream_s() -> None:
    said = "Thought: t\nFinal Answer: It is 18 C. STOP and more"
    with four_stop_proxy([streamed(said, pieces=8, usage=(40, 30))]) as (_, url):
        options = {"stop": ["A1", "B2", "C3", "STOP"], "stream_options": {"include_usage": True}}
        chunks = _chunks(url, **options)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "It is 18 C."
    usage = chunks[-1].usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (40, 30, 70)


def test_the_usage_read_after_the_proxy_s_stop_is_bounded_by_the_upstream_timeout() -> None:
    """An upstream that goes on generating past the stop must not hold the finish back."""
    said = "Thought: t\nFinal Answer: It is 18 C. STOP" + " and more" * 2000
    endless = streamed(said, pieces=400)
    slow = Reply(200, endless.body, endless.headers, drip=0.001, drip_headers=False)
    with four_stop_proxy([slow], timeout=0.5) as (upstream, url):
        options = {"stop": ["A1", "B2", "C3", "STOP"], "stream_options": {"include_usage": True}}
        chunks = _chunks(url, **options)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "It is 18 C."
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert upstream.unsent and upstream.unsent[0] > len(slow.body) // 2


def test_an_upstream_that_breaks_off_after_the_proxy_s_stop_leaves_the_answer_whole() -> None:
    said = "Thought: t\nFinal Answer: It is 18 C. STOP and more and more"
    whole = streamed(said, pieces=8)
    broken = Reply(200, whole.body, whole.headers, end_body=len(whole.body) - 40)
    with four_stop_proxy([broken]) as (_, url):
        options = {"stop": ["A1", "B2", "C3", "STOP"], "stream_options": {"include_usage": True}}
        chunks = _chunks(url, **options)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "It is 18 C."
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None  # the usage chunk still closes the stream


def test_the_stops_put_the_protocols_first_and_its_language_first_of_all() -> None:
    assert stops_for(()).upstream == tuple(
        sorted(grammar.STOP_SEQUENCES, key=lambda s: not s.startswith("\nObservation"))
    )
    assert stops_for(("END",), "zh").upstream[0] == "\n观察"
    assert stops_for(("END", "END", ""), "en").upstream[-1] == "END"
    held = stops_for(("a", "b", "c", "STOP"))
    assert held.local == ("STOP",)
    assert held.readable("x ST") == "x " and held.readable("x STOP y") == "x "
    assert held.readable("x STAR") == "x STAR"


# tool history without tools

HISTORY = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_a", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_a", "content": "18C sunny"},
]  # fmt: skip


def test_tool_history_without_tools_is_rendered_as_actions_and_observations() -> None:
    lyon = 'Action: get_weather\nAction Input: {"city": "Lyon"}'
    with proxy([text("Thought: t\nFinal Answer: 18C and sunny."), text(lyon)]) as (upstream, url):
        reply = client(url).chat.completions.create(model="m", messages=HISTORY)
        with_tools = client(url).chat.completions.create(
            model="m", messages=HISTORY, tools=[WEATHER]
        )
    assert reply.choices[0].message.content == "18C and sunny."
    assert reply.choices[0].finish_reason == "stop" and with_tools.choices[0].message.tool_calls
    without = upstream.posts[0].body
    assert "tools" not in without and "tool_calls" not in str(without["messages"])
    # no worked example either: its calls would contradict "answer directly"
    assert [m["role"] for m in without["messages"]] == ["system", "user", "assistant", "user"]
    assert without["messages"][2:] == sent_messages(upstream)[2:]
    assert without["messages"][2]["content"].startswith("Action: get_weather")
    assert without["messages"][3]["content"] == "Observation: 18C sunny"
    assert "(no tools: answer directly)" in without["messages"][0]["content"]


def test_without_tools_a_call_in_the_reply_is_reasked_as_no_call_to_make() -> None:
    with proxy([streamed(CALL), streamed("Final Answer: It is sunny.")]) as (upstream, url):
        chunks = list(client(url).chat.completions.create(model="m", messages=HISTORY, stream=True))
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == "It is sunny." and len(upstream.posts) == 2
    assert "Do not call a tool" in upstream.posts[1].body["messages"][-1]["content"]


def test_a_plain_conversation_still_passes_through_untouched() -> None:
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    with proxy([text("Thought: x")]) as (upstream, url):
        reply = client(url).chat.completions.create(model="m", messages=plain)
    assert reply.choices[0].message.content == "Thought: x"
    assert upstream.posts[0].body == {"model": "m", "messages": plain}


# keys blanked in messages


def test_a_short_key_is_not_blanked_inside_other_words_and_a_long_one_is() -> None:
    leak = "bad key sk-live-0123456789 for this fake model"
    replies = [Reply(401, error_body(leak)), Reply(401, error_body(leak))]
    with proxy(replies, upstream_api_key="sk-live-0123456789") as (_, url):
        for key in ("k", "sk-live-0123456789"):
            shown = client(url, api_key=key)
            with pytest.raises(openai.AuthenticationError) as caught:
                shown.chat.completions.create(model="m", messages=QUESTION, tools=[WEATHER])
            assert caught.value.body["message"] == "bad key *** for this fake model"
    assert secret_keys(["k", None, "", "1234567", "12345678"]) == ["12345678"]


def test_a_short_client_key_leaves_the_upstreams_words_whole() -> None:
    with proxy([Reply(500, error_body("the fake upstream broke"))]) as (_, url):
        shown = client(url, api_key="k")
        with pytest.raises(openai.APIStatusError) as caught:
            shown.chat.completions.create(model="m", messages=QUESTION, tools=[WEATHER])
    assert "the fake upstream broke" in caught.value.body["message"]


# routes


def test_unknown_routes_and_wrong_methods_are_json_errors_in_openais_shape() -> None:
    with proxy() as (_, url):
        root = url.removesuffix("/v1")
        missing = httpx.post(root + "/v1/embeddings", json={})
        wrong = httpx.get(url + "/chat/completions")
    assert missing.status_code == 404 and missing.headers["content-type"] == "application/json"
    assert "Invalid URL (POST /v1/embeddings)" in missing.json()["error"]["message"]
    assert wrong.status_code == 405 and wrong.headers["allow"] == "POST"
    assert wrong.json()["error"]["type"] == "invalid_request_error"
    assert "use POST" in wrong.json()["error"]["message"]


def test_one_model_is_retrieved_by_its_id() -> None:
    with proxy(model="served/model-7b") as (_, url):
        listed = client(url).models.retrieve("fake-model")
        served = client(url).models.retrieve("served/model-7b")
        with pytest.raises(openai.NotFoundError) as missing:
            client(url).models.retrieve("gpt-nothing")
    assert (listed.id, listed.owned_by) == ("fake-model", "fake")
    assert served.id == "served/model-7b" and served.object == "model"
    assert missing.value.body["code"] == "model_not_found"
    assert "served/model-7b" in missing.value.body["message"]


def test_a_fault_of_the_server_itself_is_still_a_json_error() -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        raise RuntimeError("a bug in a transport")

    transport = httpx.AsyncClient(transport=httpx.MockTransport(broken))
    app = create_app(ServeConfig("http://127.0.0.1:9/v1", constrain="off"), http_client=transport)
    with serving(app) as url:
        reply = httpx.post(
            url + "/chat/completions", json={"model": "m", "messages": QUESTION, "tools": [WEATHER]}
        )
    assert reply.status_code == 500 and reply.json()["error"]["type"] == "server_error"
    assert "a bug in the server" in reply.json()["error"]["message"]


# response_format beside tools

WEATHER_FORMAT = {
    "type": "json_schema",
    "json_schema": {
        "name": "weather",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "temp_c": {"type": "integer"}},
            "required": ["city", "temp_c"],
            "additionalProperties": False,
        },
    },
}


def test_a_json_schema_answer_is_asked_for_checked_reasked_and_sent_as_json() -> None:
    shaped = 'Final Answer: {"city": "Paris", "temp_c": "18"}'
    replies = [text("Final Answer: It is 18 C in Paris."), text(shaped)]
    with proxy(replies) as (upstream, url):
        reply = _ask(url, response_format=WEATHER_FORMAT)
    assert reply.choices[0].message.content == '{"city": "Paris", "temp_c": 18}'
    assert reply.choices[0].finish_reason == "stop"
    first, second = (post.body for post in upstream.posts)
    assert "response_format" not in first
    assert '"temp_c": {"type": "integer"}' in first["messages"][0]["content"]
    assert second["messages"][-1]["content"].startswith("Observation: What you wrote after")


def test_a_call_beside_a_response_format_is_still_a_call() -> None:
    with proxy([text(CALL)]) as (_, url):
        reply = _ask(url, response_format=WEATHER_FORMAT)
    assert reply.choices[0].message.tool_calls[0].function.name == "get_weather"


def test_a_shaped_answer_is_streamed_whole_once_it_is_checked() -> None:
    with proxy([streamed('Final Answer: {"city": "Paris", "temp_c": 18}', pieces=10)]) as (_, url):
        chunks = _chunks(url, response_format={"type": "json_object"})
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    contents = [delta.content for delta in deltas if delta.content]
    assert contents == ['{"city": "Paris", "temp_c": 18}']


def test_an_answer_that_never_fits_comes_back_with_the_note() -> None:
    with proxy([text("Final Answer: sunny")] * 2) as (_, url):
        reply = _ask(url, response_format={"type": "json_object"})
    content = reply.choices[0].message.content
    assert content.startswith("sunny") and "[textreact:" in content and "not JSON" in content


@pytest.mark.parametrize(
    ("response_format", "param"),
    [
        ({"type": "yaml"}, "response_format"),
        ({"type": "json_schema", "json_schema": "x"}, "response_format.json_schema"),
        ({"type": "json_schema", "json_schema": {"name": "n", "schema": {"properties": [1]}}},
         "response_format.json_schema.schema"),
    ],
)  # fmt: skip
def test_a_malformed_response_format_beside_tools_is_a_400(response_format, param) -> None:
    with proxy() as (upstream, url), pytest.raises(openai.BadRequestError) as caught:
        _ask(url, response_format=response_format)
    assert caught.value.body["param"] == param and not upstream.posts


def test_without_tools_response_format_passes_through_untouched() -> None:
    with proxy([text('{"city": "Paris", "temp_c": 18}')]) as (upstream, url):
        client(url).chat.completions.create(
            model="m", messages=QUESTION, response_format=WEATHER_FORMAT
        )
    assert upstream.posts[0].body["response_format"] == WEATHER_FORMAT


# the model named


def test_streamed_and_whole_replies_name_the_same_model_the_upstreams() -> None:
    with proxy([text(CALL), streamed(CALL)]) as (_, url):
        whole = client(url).chat.completions.create(
            model="my-model", messages=QUESTION, tools=[WEATHER]
        )
        chunks = list(
            client(url).chat.completions.create(
                model="my-model", messages=QUESTION, tools=[WEATHER], stream=True
            )
        )
    assert whole.model == "fake-model"
    assert {chunk.model for chunk in chunks} == {"fake-model"}


def test_a_stream_begins_with_the_role_even_when_the_upstream_sends_no_events() -> None:
    with proxy([Reply(body="", headers={"content-type": "text/event-stream"})] * 2) as (_, url):
        chunks = _chunks(url)
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert deltas[0].role == "assistant" and "[textreact:" in deltas[1].content


def test_an_upstream_that_answers_a_stream_request_whole_is_read_whole() -> None:
    with proxy([text(CALL)]) as (_, url):
        chunks = _chunks(url)
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert deltas[0].role == "assistant"
    assert next(d.tool_calls[0].function.name for d in deltas if d.tool_calls) == "get_weather"
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
