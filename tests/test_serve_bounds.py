"""What one request may ask for is bounded, and what the proxy does with it is linear: too many
tools, messages, stops, schemas or bytes are refused with a status that names the limit; user
texts in a row are joined once; a streamed reply is held back only for the end that may begin a
client's stop; grammar rule names are found without probing every number taken before; a large
request is read off the event loop and answered the same. Time itself is measured by
`bench/serve_bench.py`, not asserted here."""

from __future__ import annotations

import json
from typing import Any

import httpx2 as httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from serve_support import QUESTION, WEATHER, proxy, sent_messages, text

from textreact.constrain.gbnf import Rules
from textreact.serve.app import OFF_LOOP_BYTES
from textreact.serve.body import MAX_BODY_BYTES
from textreact.serve.request import MAX_MESSAGES, MAX_STOP_CHARS, MAX_STOPS, MAX_TOOLS
from textreact.serve.schemas import MAX_SCHEMAS
from textreact.serve.stops import Stops

BODY: dict[str, Any] = {"model": "m", "messages": QUESTION, "tools": [WEATHER]}


@pytest.fixture(scope="module")
def served():
    with proxy([text("Final Answer: fine")] * 20) as (upstream, url):
        yield upstream, url


def _post(url: str, body: Any) -> httpx.Response:
    return httpx.post(url + "/chat/completions", json=body, timeout=60)


def _tool(i: int, properties: int = 1) -> dict[str, Any]:
    props = {f"p{k}": {"type": "string"} for k in range(properties)}
    function = {"name": f"t{i}", "parameters": {"type": "object", "properties": props}}
    return {"type": "function", "function": function}


@pytest.mark.parametrize(
    ("change", "param", "said"),
    [
        ({"tools": [_tool(i) for i in range(MAX_TOOLS + 1)]}, "tools", f"at most {MAX_TOOLS}"),
        ({"messages": QUESTION * (MAX_MESSAGES + 1)}, "messages", f"at most {MAX_MESSAGES}"),
        ({"stop": ["x"] * (MAX_STOPS + 1)}, "stop", f"at most {MAX_STOPS}"),
        ({"stop": "y" * (MAX_STOP_CHARS + 1)}, "stop", f"at most {MAX_STOP_CHARS}"),
        ({"tools": [_tool(0, MAX_SCHEMAS)]}, "tools[0].function.parameters", "at most"),
    ],
)
def test_what_a_request_asks_for_is_bounded(served, change, param, said) -> None:
    upstream, url = served
    before = len(upstream.posts)
    reply = _post(url, {**BODY, **change})
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["param"] == param and said in reply.json()["error"]["message"]
    assert len(upstream.posts) == before


def test_up_to_the_bounds_is_served(served) -> None:
    _, url = served
    tools = [_tool(i) for i in range(MAX_TOOLS - 1)] + [_tool(999, MAX_SCHEMAS - 1)]
    body = {**BODY, "tools": tools, "stop": ["z" * MAX_STOP_CHARS] * MAX_STOPS}
    assert _post(url, body).status_code == 200


def test_a_body_over_the_limit_is_a_413(served) -> None:
    upstream, url = served
    before = len(upstream.posts)
    big = json.dumps({**BODY, "padding": "x" * MAX_BODY_BYTES}).encode()
    reply = httpx.post(url + "/chat/completions", content=big, timeout=60)
    assert reply.status_code == 413 and reply.json()["error"]["code"] == "request_too_large"
    assert len(upstream.posts) == before


@pytest.mark.parametrize("count", [2, 7, 600])
def test_user_texts_in_a_row_are_one_message_in_order(served, count) -> None:
    upstream, url = served
    messages = [{"role": "user", "content": f"part {i}"} for i in range(count)]
    assert _post(url, {**BODY, "messages": messages}).status_code == 200
    sent = sent_messages(upstream)
    assert [m["role"] for m in sent] == ["system", "user"]
    assert sent[1]["content"] == "\n\n".join(f"part {i}" for i in range(count))


def test_a_request_read_off_the_loop_is_answered_the_same(served) -> None:
    upstream, url = served
    long = {"role": "user", "content": "w " * OFF_LOOP_BYTES}
    reply = _post(url, {**BODY, "messages": [long]})
    assert reply.json()["choices"][0]["message"]["content"] == "fine"
    assert sent_messages(upstream)[1]["content"] == long["content"]


def _held(text: str, stops: list[str]) -> int:
    """The old, quadratic rule: the longest end of the text that begins a stop."""
    return max(
        (n for stop in stops for n in range(1, len(stop)) if text.endswith(stop[:n])), default=0
    )


@given(
    st.text("ab\n", max_size=40),
    st.lists(st.text("ab\n", min_size=1, max_size=12), min_size=1, max_size=4),
)
def test_a_stream_is_held_back_only_for_the_start_of_a_stop(text, stops) -> None:
    local = Stops(("\nObservation:",), tuple(stops))
    cut, stopped = local.cut(text)
    readable = local.readable(text)
    if stopped:
        assert readable == cut
    else:
        assert readable == text[: len(text) - _held(text, stops)]


def test_rule_names_of_one_hint_stay_distinct() -> None:
    rules = Rules()
    names = [rules.name("ключ") for _ in range(3000)] + [rules.name("rule-7"), rules.name("rule")]
    assert len(set(names)) == len(names)
    assert all(name.replace("-", "").isalnum() for name in names)
