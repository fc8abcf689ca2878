"""Tool-call arguments streamed as the model writes them (`--stream-arguments`), through
`textreact serve` with the official SDKs in front of the loopback fake upstream, which
streams a grammar-shaped reply in several deltas: under a grammar (`constrain="on"`) each
call's name goes out at the end of its line and its arguments in the pieces the upstream
sends, in all three APIs; they concatenate to JSON that is the validated arguments. A reply
that fails its check after part of it went out is not re-asked: the stream ends with an error
that withdraws the call. An unconstrained request, or a server without the switch, keeps
sending each call once it has been checked."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest
from fakeserver import Reply
from hypothesis import given
from hypothesis import strategies as st
from serve_support import (
    CLOCK,
    QUESTION,
    WEATHER,
    anthropic_tool,
    client,
    closing_clients,
    proxy,
    streamed,
)

from textreact import grammar
from textreact.cli import build_parser
from textreact.constrain import matches, tools_grammar
from textreact.serve.cli import config_from
from textreact.serve.request import request_tools
from textreact.serve.stream import Committer
from textreact.serve.turn import Calls, Judge

close_clients = pytest.fixture(autouse=True)(closing_clients)

ARGUMENTS = '{"city":"Paris","days":3}'
CALL = f"Thought: I need the weather.\nAction: get_weather\nAction Input: {ARGUMENTS}"
TIME_ARGUMENTS = '{"zone":"CET"}'
TWO = f"{CALL}\nAction: get_time\nAction Input: {TIME_ARGUMENTS}"
#: A forecast of at least one day: a bound the grammar does not hold (it allows any natural).
BOUNDED = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
            "required": ["city"],
        },
    },
}
NO_DAYS = (
    'Thought: I need the weather.\nAction: get_weather\nAction Input: {"city":"Paris","days":0}'
)
PIECES = 12
EARLY = {"constrain": "on", "stream_arguments": True}


def _starts(reply: str) -> list[int]:
    """Where each of the upstream's deltas of `reply` begins in it."""
    size = -(-len(reply) // PIECES)
    return list(range(0, len(reply), size))


def _written(reply: str, arguments: str) -> list[str]:
    """The pieces of `arguments` (one call's JSON in `reply`) as the upstream's deltas cut it."""
    start, pieces = reply.index(arguments), []
    for at, end in zip(starts := _starts(reply), [*starts[1:], len(reply)], strict=True):
        low, high = max(at, start), min(end, start + len(arguments))
        if low < high:
            pieces.append(reply[low:high])
    return pieces


def _chunks(
    url: str, tools: list[dict[str, Any]], into: list[Any] | None = None, **request: Any
) -> list[Any]:
    """The chunks of a streamed chat completion, as the SDK parses them, kept in `into` as
    they come (what came before an error event, which the SDK raises)."""
    chunks = [] if into is None else into
    made = client(url).chat.completions.create(
        model="m", messages=QUESTION, tools=tools, stream=True, **request
    )
    for chunk in made:
        chunks.append(chunk)
    return chunks


def _deltas(chunks: list[Any]) -> list[tuple[int, str | None, str]]:
    """(index, name or None, arguments piece) of each tool-call delta, in order."""
    return [
        (call.index, call.function.name, call.function.arguments)
        for chunk in chunks if chunk.choices
        for call in chunk.choices[0].delta.tool_calls or ()
    ]  # fmt: skip


def test_the_arguments_go_out_in_the_pieces_the_model_writes_them_in() -> None:
    """The SDK's stream helper assembles the call; its argument deltas are the upstream's
    deltas of the JSON, one for one, and their concatenation validates as the call."""
    with proxy([streamed(CALL, pieces=PIECES)], **EARLY) as (upstream, url):
        stream = client(url).chat.completions.stream(model="m", messages=QUESTION, tools=[WEATHER])
        with stream as events:
            seen = [event for event in events]
            final = events.get_final_completion()
    written = _written(CALL, ARGUMENTS)
    assert len(written) > 2
    pieces = [e.arguments_delta for e in seen if e.type == "tool_calls.function.arguments.delta"]
    assert pieces == ["", *written]  # the call's first delta, with its name, has none
    chunks = [event.chunk for event in seen if event.type == "chunk"]
    deltas = _deltas(chunks)
    assert deltas[0][:2] == (0, "get_weather") and [d[2] for d in deltas[1:]] == written
    reasoning = [i for i, c in enumerate(chunks) if c.choices and c.choices[0].delta.model_extra]
    assert reasoning and chunks[reasoning[0]].choices[0].delta.model_extra == {
        "reasoning_content": "I need the weather."
    }  # the thought first, before the call
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.function.arguments == ARGUMENTS  # as written, not re-serialised
    assert json.loads(call.function.arguments) == {"city": "Paris", "days": 3}
    assert "grammar" in upstream.posts[0].body and len(upstream.posts) == 1


def test_pieces_go_out_before_the_reply_ends() -> None:
    """An upstream that breaks off in the middle of the arguments: what it wrote of them has
    already gone out (then the stream's error); a server that holds calls sent nothing."""
    whole = streamed(CALL, pieces=PIECES).body
    middle = CALL.index(ARGUMENTS) + len(ARGUMENTS) // 2
    deltas = 1 + next(k for k, at in enumerate(_starts(CALL)) if at > middle)  # the role's too
    end = sum(len(event) + 2 for event in whole.split("\n\n")[:deltas])
    broken = Reply(200, whole, {"content-type": "text/event-stream"}, end_body=end)
    early: list[Any] = []
    held: list[Any] = []
    with proxy([broken], **EARLY) as (_, url), pytest.raises(openai.APIError, match="broke off"):
        _chunks(url, [WEATHER], early)
    with proxy([broken], constrain="on") as (_, url), pytest.raises(openai.APIError):
        _chunks(url, [WEATHER], held)
    deltas = _deltas(early)
    assert deltas[0][:2] == (0, "get_weather")
    sent = "".join(piece for _, _, piece in deltas)
    assert sent and ARGUMENTS.startswith(sent) and len(sent) < len(ARGUMENTS)
    assert _deltas(held) == []


def test_a_call_that_fails_its_check_after_it_went_out_is_withdrawn_not_reasked() -> None:
    """`days: 0` fits the grammar (it cannot hold `minimum`) and streams as written; the
    reply read whole is a re-ask, which a stream that sent the call cannot take: it ends
    with an error that withdraws the call, and the upstream is asked once."""
    tools = request_tools([BOUNDED])
    assert matches(tools_grammar(tools), NO_DAYS)  # a reply a constrained model may write
    with proxy([streamed(NO_DAYS, pieces=PIECES)], **EARLY) as (upstream, url):
        chunks: list[Any] = []
        with pytest.raises(openai.APIError) as raised:
            _chunks(url, [BOUNDED], chunks)
    message = raised.value.message
    assert "withdrew the tool call(s) it had begun to stream (get_weather)" in message
    assert ">= 1" in message and "Do not run them" in message
    assert raised.value.body["type"] == "tool_call_withdrawn"  # type: ignore[index]
    assert "".join(piece for _, _, piece in _deltas(chunks)) == '{"city":"Paris","days":0}'
    assert not [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(upstream.posts) == 1


def test_without_the_switch_the_same_reply_is_reasked_and_the_client_sees_one_call() -> None:
    """The default: a call is sent once it has been checked, so the failed one is re-asked
    unseen and the client gets the corrected call, whole."""
    fixed = NO_DAYS.replace('"days":0', '"days":1')
    replies = [streamed(NO_DAYS, pieces=PIECES), streamed(fixed, pieces=PIECES)]
    with proxy(replies, constrain="on") as (upstream, url):
        chunks = _chunks(url, [BOUNDED])
    deltas = _deltas(chunks)
    assert [name for _, name, _ in deltas if name] == ["get_weather"]
    assert "".join(piece for _, _, piece in deltas) == '{"city": "Paris", "days": 1}'
    assert len(upstream.posts) == 2


def test_an_unconstrained_request_keeps_sending_each_call_once_checked() -> None:
    """With the switch on but no grammar, the call goes out whole, after the reply: its
    arguments are the validated value re-serialised, not the pieces the model wrote."""
    with proxy([streamed(CALL, pieces=PIECES)], stream_arguments=True) as (upstream, url):
        chunks = _chunks(url, [WEATHER])
    sent = "".join(piece for _, _, piece in _deltas(chunks))
    assert sent == json.dumps({"city": "Paris", "days": 3}) != ARGUMENTS
    assert "grammar" not in upstream.posts[0].body


def test_several_calls_each_stream_as_written_and_a_bad_later_one_withdraws_them_all() -> None:
    """With parallel calls (`--parallel-calls` and OpenAI's default), each call streams in
    turn; a later call that cannot be used makes the reply a re-ask, so the calls already
    complete are withdrawn."""
    bad = f'{CALL}\nAction: get_time\nAction Input: {{"zone":""}}'
    replies = [streamed(TWO, pieces=PIECES), streamed(bad, pieces=PIECES)]
    with proxy(replies, **EARLY, parallel_calls=True) as (_, url):
        good = _chunks(url, [WEATHER, CLOCK])
        withdrawn: list[Any] = []
        with pytest.raises(openai.APIError, match=r"withdrew .* \(get_weather, get_time\)"):
            _chunks(url, [WEATHER, CLOCK], withdrawn)
    deltas = _deltas(good)
    assert [(i, name) for i, name, _ in deltas if name] == [(0, "get_weather"), (1, "get_time")]
    by_call = ["".join(p for i, _, p in deltas if i == k) for k in (0, 1)]
    assert by_call == [ARGUMENTS, TIME_ARGUMENTS]
    assert [c.choices[0].finish_reason for c in good if c.choices][-1] == "tool_calls"
    sent = _deltas(withdrawn)
    assert "".join(p for i, _, p in sent if i == 0) == ARGUMENTS  # whole, and still withdrawn


def test_a_later_call_of_a_tool_already_called_is_held_and_a_copy_never_goes_out() -> None:
    """A copy of the reply's earlier call is dropped by the reading (`parse_calls`), so a
    later call of the same tool is held until the reply ends: a copy never goes out (and
    nothing is withdrawn), a call with other arguments goes out once the reply is judged."""
    copy = f"{TWO}\nAction: get_weather\nAction Input: {ARGUMENTS}"
    other_arguments = ARGUMENTS.replace("Paris", "Lyon")
    other = f"{TWO}\nAction: get_weather\nAction Input: {other_arguments}"
    replies = [streamed(copy, pieces=PIECES), streamed(other, pieces=PIECES)]
    with proxy(replies, **EARLY, parallel_calls=True) as (_, url):
        copied = _deltas(_chunks(url, [WEATHER, CLOCK]))
        held = _deltas(_chunks(url, [WEATHER, CLOCK]))
    assert [(i, name) for i, name, _ in copied if name] == [(0, "get_weather"), (1, "get_time")]
    assert [(i, name) for i, name, _ in held if name][2:] == [(2, "get_weather")]
    later = "".join(p for i, _, p in held if i == 2)  # sent once checked, as any whole call
    assert json.loads(later) == json.loads(other_arguments)
    assert len([p for i, _, p in held if i == 0]) > 1  # the first still went out as written


def test_one_call_allowed_streams_one_and_it_stands() -> None:
    """`parallel_tool_calls: false`: the reply's second call is discarded by the reading, so
    it never goes out early, and the first, sent as written, stands."""
    with proxy([streamed(TWO, pieces=PIECES)], **EARLY) as (_, url):
        chunks = _chunks(url, [WEATHER, CLOCK], parallel_tool_calls=False)
    deltas = _deltas(chunks)
    assert [(i, name) for i, name, _ in deltas if name] == [(0, "get_weather")]
    assert "".join(p for _, _, p in deltas) == ARGUMENTS
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"


def test_an_answer_streams_as_before() -> None:
    answer = "Thought: I know it.\nFinal Answer: It is 18 C and sunny in Paris today."
    with proxy([streamed(answer, pieces=PIECES)], **EARLY) as (_, url):
        chunks = _chunks(url, [WEATHER])
    content = [c.choices[0].delta.content for c in chunks if c.choices]
    assert "".join(p or "" for p in content) == "It is 18 C and sunny in Paris today."
    assert len([p for p in content if p]) > 2 and _deltas(chunks) == []


def test_a_repeated_call_that_went_out_stands() -> None:
    """A call that repeats an earlier one is answered with the earlier result by a re-ask;
    once it went out, it stands (it validates), as it does when its re-ask fails."""
    earlier = [
        *QUESTION,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ARGUMENTS},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C"},
    ]
    with proxy([streamed(CALL, pieces=PIECES)], **EARLY) as (upstream, url):
        made = client(url).chat.completions.create(
            model="m", messages=earlier, tools=[WEATHER], stream=True
        )
        chunks = list(made)
    assert "".join(p for _, _, p in _deltas(chunks)) == ARGUMENTS
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert len(upstream.posts) == 1


def test_anthropic_input_json_deltas_carry_the_pieces_as_written() -> None:
    tool = anthropic_tool(WEATHER)
    with proxy([streamed(CALL, pieces=PIECES)], **EARLY) as (_, url):
        base = url.removesuffix("/v1")
        with anthropic.Anthropic(base_url=base, api_key="k", max_retries=0) as claude:
            asked = {"model": "m", "max_tokens": 256, "messages": QUESTION, "tools": [tool]}
            with claude.messages.stream(**asked) as events:
                seen = list(events)
                message = events.get_final_message()
    pieces = [
        e.delta.partial_json
        for e in seen
        if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    ]
    assert pieces == _written(CALL, ARGUMENTS)
    (block,) = message.content
    assert (block.type, block.name, block.input) == (
        "tool_use",
        "get_weather",
        {"city": "Paris", "days": 3},
    )
    assert message.stop_reason == "tool_use"


def test_responses_function_call_argument_deltas_carry_the_pieces_as_written() -> None:
    tool = {"type": "function", **WEATHER["function"]}
    with proxy([streamed(CALL, pieces=PIECES)], **EARLY) as (_, url):
        asked = client(url).responses.stream(model="m", input="Weather?", tools=[tool])
        with asked as events:
            seen = list(events)
            response = events.get_final_response()
    pieces = [e.delta for e in seen if e.type == "response.function_call_arguments.delta"]
    assert pieces == _written(CALL, ARGUMENTS)
    done = [e.arguments for e in seen if e.type == "response.function_call_arguments.done"]
    assert done == [ARGUMENTS]
    (item,) = response.output[1:]  # after the thought's reasoning item
    assert (item.type, item.name, json.loads(item.arguments)) == (
        "function_call",
        "get_weather",
        {"city": "Paris", "days": 3},
    )


def test_a_responses_client_is_never_told_a_withdrawn_call_is_done() -> None:
    """A Responses client runs a function call at its `output_item.done`: a first call
    written whole, then withdrawn with the reply for its bad second call, is never said done
    (it ends `incomplete` in `response.failed`); the calls of a good reply are, once it ends."""
    tools = [{"type": "function", **tool["function"]} for tool in (WEATHER, CLOCK)]
    bad = f'{CALL}\nAction: get_time\nAction Input: {{"zone":""}}'
    seen: dict[str, list[Any]] = {}
    for name, reply in (("good", TWO), ("bad", bad)):
        with proxy([streamed(reply, pieces=PIECES)], **EARLY, parallel_calls=True) as (_, url):
            asked = client(url).responses.create(model="m", input="W?", tools=tools, stream=True)
            seen[name] = list(asked)
    done = [e.item for e in seen["good"] if e.type == "response.output_item.done"]
    assert [i.name for i in done if i.type == "function_call"] == ["get_weather", "get_time"]
    assert done[-1].type == "function_call" and seen["good"][-1].type == ("response.completed")
    kinds = [e.type for e in seen["bad"]]
    assert "response.function_call_arguments.delta" in kinds and kinds[-1] == "response.failed"
    assert not [e for e in seen["bad"] if e.type == "response.output_item.done"
                and e.item.type == "function_call"]  # fmt: skip
    calls = [i for i in seen["bad"][-1].response.output if i.type == "function_call"]
    assert calls and {i.status for i in calls} == {"incomplete"}


def test_the_switch_is_a_flag_of_the_command_line() -> None:
    parser = build_parser()
    on = parser.parse_args(["serve", "--upstream", "http://x/v1", "--stream-arguments"])
    off = parser.parse_args(["serve", "--upstream", "http://x/v1"])
    assert config_from(on, {}).stream_arguments and not config_from(off, {}).stream_arguments


def test_arguments_the_judgement_repairs_after_they_went_out_are_withdrawn() -> None:
    """A model the grammar did not hold writes `"days":"3"`: the judgement repairs it to 3,
    which is not what the client has, so the call is withdrawn rather than finished."""
    loose = CALL.replace('"days":3', '"days":"3"')
    with proxy([streamed(loose, pieces=PIECES)], **EARLY) as (upstream, url):
        chunks: list[Any] = []
        with pytest.raises(openai.APIError, match="are not the ones that validate") as raised:
            _chunks(url, [WEATHER], chunks)
    assert '"days": 3' in raised.value.message
    assert "".join(p for _, _, p in _deltas(chunks)) == '{"city":"Paris","days":"3"}'
    assert len(upstream.posts) == 1


def test_a_reply_out_of_the_grammar_s_shape_keeps_sending_the_call_once_checked() -> None:
    """No Thought line: not the grammar's shape, so nothing goes out early, and the call is
    sent whole after the reply, as without the switch."""
    bare = CALL.split("\n", 1)[1]
    with proxy([streamed(bare, pieces=PIECES)], **EARLY) as (_, url):
        chunks = _chunks(url, [WEATHER])
    sent = "".join(piece for _, _, piece in _deltas(chunks))
    assert sent == json.dumps({"city": "Paris", "days": 3})


@given(
    st.sampled_from(grammar.LANGUAGES),
    st.sets(st.integers(1, len(TWO)), max_size=24),
    st.integers(0, len(TIME_ARGUMENTS) - 1),
)
def test_however_the_reply_is_cut_into_deltas_each_call_goes_out_as_written(
    lang: str, cuts: set[int], held: int
) -> None:
    """Whatever the upstream's deltas (a label, a name or a line break split anywhere), the
    thought comes first, each call begins once its name's line has ended, and its pieces,
    with what `finish` adds of the end held back (`held` characters, as a local stop's start
    is), are its JSON as written."""
    label = {k: grammar.label(k, lang) + " " for k in grammar.KEYWORDS}
    reply = (
        f"{label[grammar.THOUGHT]}I need both.\n{label[grammar.ACTION]}get_weather\n"
        f"{label[grammar.ACTION_INPUT]}{ARGUMENTS}\n{label[grammar.ACTION]}get_time\n"
        f"{label[grammar.ACTION_INPUT]}{TIME_ARGUMENTS}"
    )
    judge = Judge(request_tools([WEATHER, CLOCK]), lang=lang, parallel_calls=True)
    committer = Committer(judge, early=True)
    ends = [end for end in sorted(cuts) if end < len(reply) - held] + [len(reply) - held]
    events = [event for end in ends for event in committer.feed(reply[:end])]
    verdict, left = committer.finish(reply, "stop")
    events += left
    assert isinstance(verdict, Calls) and events[0] == ("reasoning", "I need both.")
    begins = [k for k, (kind, _) in enumerate(events) if kind == "begin"]
    assert [events[k][1] for k in begins] == ["get_weather", "get_time"]
    assert begins[0] == 1 and all(kind in ("begin", "arguments") for kind, _ in events[1:])
    written = ["".join(str(v) for _, v in events[k + 1 : end]) for k, end in
               zip(begins, [*begins[1:], len(events)], strict=True)]  # fmt: skip
    assert written == [ARGUMENTS, TIME_ARGUMENTS]
