"""The proxy's requests to the upstream (`textreact.serve.transport`, on httpx2 without the
openai SDK) keep the SDK's contract: what is retried (a failed connection, 408, 409, 429, 5xx,
or what `x-should-retry` says), what is not (another 4xx), the upstream's own words with the
keys blanked, and the key sent (the server's, else the client's, else a placeholder)."""

from __future__ import annotations

import httpx2 as httpx
import pytest
from fakeserver import Reply, error_body
from serve_support import QUESTION, WEATHER, proxy, text

BODY = {"model": "m", "messages": QUESTION, "tools": [WEATHER]}
SOON = {"retry-after-ms": "10"}  # the wait the upstream asks for: short, so the test is too


def _post(url: str, key: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.post(url + "/chat/completions", json=BODY, headers=headers, timeout=30)


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503])
def test_a_retried_status_is_asked_again(status) -> None:
    replies = [Reply(status, error_body("busy"), SOON), text("Final Answer: fine")]
    with proxy(replies, max_retries=1) as (upstream, url):
        reply = _post(url)
    assert reply.status_code == 200 and len(upstream.posts) == 2


@pytest.mark.parametrize(
    ("status", "headers"),
    [(400, SOON), (401, SOON), (404, SOON), (503, {**SOON, "x-should-retry": "false"})],
)
def test_what_is_not_retried_is_answered_at_once(status, headers) -> None:
    replies = [Reply(status, error_body("no"), headers), text("Final Answer: fine")]
    with proxy(replies, max_retries=2) as (upstream, url):
        reply = _post(url)
    assert reply.status_code != 200 and len(upstream.posts) == 1


def test_x_should_retry_true_retries_any_status() -> None:
    replies = [Reply(400, error_body("again"), {**SOON, "x-should-retry": "true"}),
               text("Final Answer: fine")]  # fmt: skip
    with proxy(replies, max_retries=1) as (upstream, url):
        assert _post(url).status_code == 200
    assert len(upstream.posts) == 2


def test_a_wait_past_a_minute_is_not_waited_for() -> None:
    replies = [Reply(503, error_body("later"), {"retry-after": "3600"}), text("Final Answer: x")]
    with proxy(replies, max_retries=2) as (upstream, url):
        reply = _post(url)
    assert reply.status_code == 503 and reply.headers["retry-after"] == "3600"
    assert len(upstream.posts) == 1


def test_the_last_failure_is_answered_with_the_upstreams_words_blanked() -> None:
    said = "overloaded; key sk-client-0123456789 refused"
    with proxy([Reply(500, error_body(said), SOON)] * 3, max_retries=2) as (upstream, url):
        reply = _post(url, "sk-client-0123456789")
    assert reply.status_code == 502 and len(upstream.posts) == 3
    message = reply.json()["error"]["message"]
    assert "overloaded" in message and "sk-client-0123456789" not in message


@pytest.mark.parametrize(
    ("server_key", "client_key", "sent"),
    [("sk-server-key", "sk-client", "sk-server-key"), (None, "sk-client", "sk-client"),
     (None, None, "textreact-no-key")],
)  # fmt: skip
def test_the_key_sent_upstream(server_key, client_key, sent) -> None:
    with proxy([text("Final Answer: x")], upstream_api_key=server_key) as (upstream, url):
        _post(url, client_key)
    assert upstream.posts[0].headers["authorization"] == f"Bearer {sent}"


def test_a_body_that_is_not_json_is_passed_on_as_the_upstreams_words() -> None:
    with proxy([Reply(500, "<html>gateway down</html>", {"x-should-retry": "false"})]) as (_, url):
        reply = _post(url)
    assert reply.status_code == 502 and "gateway down" in reply.json()["error"]["message"]
