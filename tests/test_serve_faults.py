"""`textreact serve` when the upstream fails after its headers: a body that breaks off or
stalls past `--timeout`, streamed (an error event, then `[DONE]`) or whole (a 502 or a 504 in
OpenAI's shape), with the text protocol and passed through; whichever httpx the SDK uses."""

from __future__ import annotations

import json

import httpx2 as httpx
import openai
import pytest
from fakeserver import Reply, chat_completion
from serve_support import QUESTION, WEATHER, proxy, streamed

from textreact.serve.upstream import _read_failures, broken_off

ANSWER = "Thought: I know it now.\nFinal Answer: It is 18 C and sunny in Paris, with light wind."
SSE = {"content-type": "text/event-stream"}


def _events(url: str, **request) -> list[dict]:
    """The data of every SSE event the proxy sent, `[DONE]` as the string."""
    body = {"model": "m", "messages": QUESTION, "stream": True, **request}
    with httpx.stream("POST", url + "/chat/completions", json=body, timeout=30) as response:
        assert response.status_code == 200
        lines = [line[5:].strip() for line in response.iter_lines() if line.startswith("data:")]
    return [data if data == "[DONE]" else json.loads(data) for data in lines]


def _half(reply: Reply) -> Reply:
    """`reply` whose body ends (the connection closed) halfway through."""
    body = reply.body.encode()
    return Reply(200, body, SSE, end_body=len(body) // 2)


def test_the_read_failures_are_those_of_the_sdks_httpx() -> None:
    timeouts, failures = _read_failures()
    assert issubclass(httpx.ReadTimeout, timeouts)
    assert issubclass(httpx.ReadError, failures) and issubclass(httpx.RemoteProtocolError, failures)
    assert not issubclass(httpx.ReadError, timeouts)


def test_a_failure_without_words_is_still_described() -> None:
    error = broken_off(httpx.ReadError(""), "http://user:pw@h/v1", 1.0)
    assert error.message == "the upstream at http://***@h/v1 broke off its reply: ReadError: " + (
        "the connection closed"
    )
    assert broken_off(httpx.ReadTimeout(""), "http://h/v1", 2.5).status == 504


def test_the_one_broken_off_error_blanks_the_keys_it_is_given() -> None:
    said = httpx.ReadError("reset while sending sk-client-key-12345")
    error = broken_off(said, "http://h/v1", 1.0, ["sk-client-key-12345", "short", None])
    assert error.message.endswith("ReadError: reset while sending ***")


def test_a_stream_that_breaks_off_ends_with_an_error_event_then_done() -> None:
    with proxy([_half(streamed(ANSWER, pieces=8))]) as (_, url):
        events = _events(url, tools=[WEATHER])
    assert events[-1] == "[DONE]"
    error = events[-2]["error"]
    assert error["type"] == "upstream_error" and "broke off" in error["message"]
    assert events[0]["choices"][0]["delta"]["role"] == "assistant"


def test_the_sdk_sees_a_broken_stream_as_an_api_error_with_the_upstreams_story() -> None:
    with (
        proxy([_half(streamed(ANSWER, pieces=8))]) as (_, url),
        openai.OpenAI(base_url=url, api_key="client-key", max_retries=0) as client,
        pytest.raises(openai.APIError, match="broke off its reply"),
    ):
        list(
            client.chat.completions.create(
                model="m", messages=QUESTION, tools=[WEATHER], stream=True
            )
        )


def test_a_stream_that_stalls_past_the_timeout_is_a_timeout_event() -> None:
    stalled = Reply(200, streamed(ANSWER).body, SSE, drip=5.0, drip_headers=False)
    with proxy([stalled], timeout=0.3) as (_, url):
        events = _events(url, tools=[WEATHER])
    assert events[-1] == "[DONE]"
    error = events[-2]["error"]
    assert error["type"] == "timeout" and "nothing came for 0.3 s" in error["message"]


def _post_whole(url: str) -> httpx.Response:
    """A whole (not streamed) request with a tool, sent raw so the status and body are seen."""
    return httpx.post(
        url + "/chat/completions",
        json={"model": "m", "messages": QUESTION, "tools": [WEATHER]},
        timeout=30,
    )


def test_a_whole_reply_that_stalls_past_the_timeout_is_a_504() -> None:
    payload = json.dumps(chat_completion(ANSWER))
    stalled = Reply(200, payload, drip=5.0, drip_headers=False)
    with proxy([stalled], timeout=0.3) as (_, url):
        reply = _post_whole(url)
    assert reply.status_code == 504
    assert reply.json()["error"]["type"] == "timeout"


def test_a_whole_reply_that_breaks_off_is_a_502() -> None:
    payload = json.dumps(chat_completion(ANSWER))
    with proxy([Reply(200, payload, end_body=len(payload) // 2)]) as (_, url):
        reply = _post_whole(url)
    assert reply.status_code == 502
    assert reply.json()["error"]["type"] == "upstream_error"


def test_a_passed_through_stream_that_breaks_off_ends_with_an_error_event() -> None:
    with proxy([_half(streamed("Hello there, my friend, how are you?", pieces=8))]) as (_, url):
        events = _events(url)
    assert events[-1] == "[DONE]" and "broke off" in events[-2]["error"]["message"]
    sent = [e for e in events[:-2] if "choices" in e]  # whole events only, none cut in half
    assert sent and sent[0]["choices"][0]["delta"]["role"] == "assistant"


def test_a_passed_through_body_that_breaks_off_is_a_502() -> None:
    payload = json.dumps(chat_completion("plain words"))
    with proxy([Reply(200, payload, end_body=len(payload) // 2)]) as (_, url):
        reply = httpx.post(
            url + "/chat/completions", json={"model": "m", "messages": QUESTION}, timeout=30
        )
    assert reply.status_code == 502 and "broke off" in reply.json()["error"]["message"]
