"""Several calls in one reply through `textreact serve --parallel-calls`, with the official
openai SDK in front of the loopback fake upstream: a reply of two actions is two `tool_calls`
with distinct ids, streamed and not, where the client allows parallel calls (OpenAI's
default); the format rule and the grammar say so only then; with `parallel_tool_calls=false`,
or a server started without the flag, a second call is discarded as before. Each call is
checked alone, and one that cannot be used makes the reply one re-ask whose note names it."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import openai
import pytest
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
from test_serve import ASKED  # an earlier call and its result

from textreact.cli import build_parser
from textreact.parsing.calls import MAX_CALLS
from textreact.serve.cli import config_from, handed_over
from textreact.serve.request import request_tools
from textreact.serve.stream import Committer
from textreact.serve.turn import Calls, Judge, Problem

WEATHER_CALL = 'Action: get_weather\nAction Input: {"city": "Paris"}'
TIME_CALL = 'Action: get_time\nAction Input: {"zone": "CET"}'
TWO = f"Thought: I need the weather and the time.\n{WEATHER_CALL}\n{TIME_CALL}"
ANSWER = "Thought: I know it now.\nFinal Answer: 18 C at noon."
RULE = "You may call several tools at once"
BAD_SECOND = f'{WEATHER_CALL}\nAction: get_time\nAction Input: {{"zone": 5, "city": "x"}}'
EXPECTED = [("get_weather", {"city": "Paris"}), ("get_time", {"zone": "CET"})]

close_clients = pytest.fixture(autouse=True)(closing_clients)
several = partial(proxy, parallel_calls=True)  # a server started with --parallel-calls


def _calls(message: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or ()]


def _create(url: str, **request: Any) -> Any:
    request.setdefault("tools", [WEATHER, CLOCK])
    return client(url).chat.completions.create(model="m", messages=QUESTION, **request)


def _stream(url: str, **request: Any) -> tuple[Any, list[Any]]:
    """The completion the SDK assembles from the stream, and the chunks it was made of."""
    request.setdefault("tools", [WEATHER, CLOCK])
    chunks = []
    with client(url).chat.completions.stream(model="m", messages=QUESTION, **request) as events:
        for event in events:
            if event.type == "chunk":
                chunks.append(event.chunk)
        return events.get_final_completion(), chunks


def test_two_actions_are_two_tool_calls_with_distinct_ids() -> None:
    with several([text(TWO)]) as (upstream, url):
        reply = _create(url)
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    assert _calls(choice.message) == EXPECTED
    first, second = choice.message.tool_calls
    assert first.id != second.id and first.id.startswith("call_")
    assert choice.message.reasoning_content == "I need the weather and the time."
    assert reply.model_extra["textreact"]["reasks"] == 0 and len(upstream.posts) == 1
    assert RULE in upstream.posts[0].body["messages"][0]["content"]


def test_two_actions_stream_as_two_indexed_tool_calls() -> None:
    with several([streamed(TWO, pieces=9)]) as (_, url):
        final, chunks = _stream(url)
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert _calls(choice.message) == EXPECTED
    assert len({call.id for call in choice.message.tool_calls}) == 2
    starts = [
        (call.index, call.function.name)
        for chunk in chunks
        for call in (chunk.choices[0].delta.tool_calls or ()) if chunk.choices and call.id
    ]  # fmt: skip
    assert starts == [(0, "get_weather"), (1, "get_time")]


def test_the_rule_and_the_grammar_allow_several_only_when_the_client_does() -> None:
    replies = [text(TWO), text(TWO), text(TWO)]
    with several(replies, constrain="on") as (upstream, url):
        allowed = _create(url)  # OpenAI's default: parallel calls allowed
        told = _create(url, parallel_tool_calls=True)
        one = _create(url, parallel_tool_calls=False)
    assert _calls(allowed.choices[0].message) == _calls(told.choices[0].message) == EXPECTED
    assert _calls(one.choices[0].message) == EXPECTED[:1]  # the second call is discarded
    assert one.model_extra["textreact"]["reasks"] == 0 and len(upstream.posts) == 3
    systems = [post.body["messages"][0]["content"] for post in upstream.posts]
    assert RULE in systems[0] and RULE in systems[1] and RULE not in systems[2]
    rule = next(line for line in systems[0].splitlines() if line.startswith(RULE))
    assert systems[2] == systems[0].replace("\n" + rule, "")  # that line, and nothing else
    grammars = [post.body["grammar"] for post in upstream.posts]
    assert f"next-call{{0,{MAX_CALLS - 1}}}" in grammars[0] and grammars[0] == grammars[1]
    assert "next-call" not in grammars[2]


def test_without_parallel_calls_a_streamed_reply_of_two_is_one_call() -> None:
    with several([streamed(TWO, pieces=9)]) as (_, url):
        final, _ = _stream(url, parallel_tool_calls=False)
    assert _calls(final.choices[0].message) == EXPECTED[:1]


def test_a_server_started_without_the_flag_makes_one_call_a_reply_whatever_the_client_says():
    """One call a reply is the server's default: the client's `parallel_tool_calls` cannot
    bring back the format line that costs small models their single calls."""
    with proxy([text(TWO)], constrain="on") as (upstream, url):
        reply = _create(url, parallel_tool_calls=True)
    assert _calls(reply.choices[0].message) == EXPECTED[:1]
    assert RULE not in upstream.posts[0].body["messages"][0]["content"]
    assert "next-call" not in upstream.posts[0].body["grammar"]


def test_the_switch_is_a_flag_of_the_command_line_and_reaches_the_workers() -> None:
    parser = build_parser()
    on = config_from(
        parser.parse_args(["serve", "--upstream", "http://x/v1", "--parallel-calls"]), {}
    )
    off = config_from(parser.parse_args(["serve", "--upstream", "http://x/v1"]), {})
    assert on.parallel_calls and not off.parallel_calls
    with handed_over(on) as variables:
        (path,) = variables.values()
        assert json.loads(Path(path).read_text(encoding="utf-8"))["parallel_calls"] is True


def test_parallel_tool_calls_must_be_a_boolean() -> None:
    with proxy([]) as (upstream, url), pytest.raises(openai.BadRequestError) as raised:
        _create(url, extra_body={"parallel_tool_calls": "yes"})
    assert raised.value.body["param"] == "parallel_tool_calls"  # type: ignore[index]
    assert "true or false" in raised.value.message and upstream.posts == []


def test_where_several_calls_may_come_none_is_sent_before_the_reply_ends() -> None:
    """A later call may still be unusable, and then the whole reply is re-asked: so a call
    that would go out at once when it must be the only one is held until the reply ends."""
    tools = request_tools([WEATHER, CLOCK])
    first = f"{WEATHER_CALL}\n"
    assert [kind for kind, _ in Committer(Judge(tools)).feed(first + "Act")] == ["call"]
    held = Committer(Judge(tools, parallel_calls=True))
    assert held.feed(first + "Act") == [] and held.feed(first + TIME_CALL[:20]) == []
    verdict, events = held.finish(f"{first}{TIME_CALL}", "stop")
    assert isinstance(verdict, Calls)
    assert [(c.tool.name, c.arguments) for _, c in events] == EXPECTED  # type: ignore[union-attr]
    bad = Committer(Judge(tools, parallel_calls=True))
    assert bad.feed(first + "Act") == []
    verdict, events = bad.finish(BAD_SECOND, "stop")
    assert isinstance(verdict, Problem) and events == []


@pytest.mark.parametrize("streaming", [False, True])
def test_one_unusable_call_among_several_is_one_reask_that_names_it(streaming: bool) -> None:
    replies = [BAD_SECOND, TWO]
    with several([streamed(r) if streaming else text(r) for r in replies]) as (upstream, url):
        message = (_stream(url)[0] if streaming else _create(url)).choices[0].message
    assert _calls(message) == EXPECTED  # the re-ask's two calls, none of the first reply's
    second = sent_messages(upstream, 1)
    assert second[-2] == {"role": "assistant", "content": BAD_SECOND}
    note = second[-1]["content"]
    assert note.startswith("Observation: Your reply made 2 calls, and call 2 (get_time)")
    assert "city" in note and "Reply again with every call you need" in note


def test_an_unknown_tool_among_several_fails_twice_into_content_with_a_note() -> None:
    unknown = f"{WEATHER_CALL}\nAction: get_news\nAction Input: {{}}"
    with several([text(unknown), text(unknown)]) as (_, url):
        reply = _create(url)
    message = reply.choices[0].message
    assert not message.tool_calls and reply.choices[0].finish_reason == "stop"
    assert message.content.startswith(unknown)
    assert "call 2 (get_news) of 2" in reply.model_extra["textreact"]["note"]


def test_under_a_named_tool_every_call_must_be_of_it() -> None:
    named = {"type": "function", "function": {"name": "get_weather"}}
    lyon = 'Action: get_weather\nAction Input: {"city": "Lyon"}'
    replies = [text(TWO), text(f"{WEATHER_CALL}\n{lyon}")]
    with several(replies) as (upstream, url):
        reply = _create(url, tool_choice=named)
    assert [name for name, _ in _calls(reply.choices[0].message)] == ["get_weather"] * 2
    assert "call 2 (get_time)" in sent_messages(upstream, 1)[-1]["content"]


def test_a_repeated_call_among_several_is_asked_about_once_then_passed_on() -> None:
    with several([text(TWO), text(TWO)]) as (upstream, url):
        reply = client(url).chat.completions.create(
            model="m", messages=ASKED, tools=[WEATHER, CLOCK]
        )
    assert _calls(reply.choices[0].message) == EXPECTED
    note = sent_messages(upstream, 1)[-1]["content"]
    assert "call 1 (get_weather)" in note and "already called get_weather" in note


def test_a_last_call_cut_by_the_token_limit_is_left_out() -> None:
    cut = TWO[: TWO.rindex('"CET"')]
    with several([text(cut, finish_reason="length"), streamed(cut, finish_reason="length")]) as (
        upstream,
        url,
    ):
        whole = _create(url)
        final, _ = _stream(url)
    for completion in (whole, final):
        assert completion.choices[0].finish_reason == "tool_calls"
        assert _calls(completion.choices[0].message) == EXPECTED[:1]
    assert len(upstream.posts) == 2  # no re-ask


def test_several_calls_in_the_history_are_rendered_as_before() -> None:
    history = [
        *QUESTION,
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "b2", "type": "function",
             "function": {"name": "get_time", "arguments": '{"zone": "CET"}'}},
        ]},
        {"role": "tool", "tool_call_id": "a1", "content": "18 C"},
        {"role": "tool", "tool_call_id": "b2", "content": "12:00"},
    ]  # fmt: skip
    with several([text(ANSWER)]) as (upstream, url):
        client(url).chat.completions.create(model="m", messages=history, tools=[WEATHER, CLOCK])
    sent = sent_messages(upstream)
    assert [m["content"] for m in sent[2:]] == [
        WEATHER_CALL, "Observation: 18 C", TIME_CALL, "Observation: 12:00"
    ]  # fmt: skip
