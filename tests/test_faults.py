"""The advice in a model error matches what happened: how many tries were really made, and
whether the server was unreachable or dropped a connection it had accepted."""

from __future__ import annotations

import pytest
from fakeserver import FakeServer, Reply, chat_completion, error_body

from textreact.errors import ModelError
from textreact.models.openai_compat import OpenAICompatModel

MESSAGES = [{"role": "user", "content": "What is 2+2?"}]


def _fault(server_url: str, **options: object) -> str:
    options.setdefault("timeout", 10.0)
    with (
        OpenAICompatModel("fake-model", server_url, **options) as model,
        pytest.raises(ModelError) as caught,
    ):
        model.complete(MESSAGES)
    return str(caught.value)


@pytest.mark.parametrize("header", [{"retry-after": "600"}, {"retry-after-ms": "900000"}])
def test_a_retry_after_beyond_the_sdks_wait_says_one_try_and_the_wait(header) -> None:
    refusal = Reply(429, error_body("slow down", type="rate_limit"), header)
    with FakeServer([refusal]) as server:
        message = _fault(server.base_url, max_retries=2)
    assert len(server.posts) == 1
    assert "1 try" in message and "3 tries" not in message
    assert "Retry-After" in message and ("600 s" in message or "900 s" in message)


def test_a_503_asking_to_wait_long_is_reported_the_same_way() -> None:
    refusal = Reply(503, error_body("maintenance", type="server"), {"retry-after": "3600"})
    with FakeServer([refusal]) as server:
        message = _fault(server.base_url, max_retries=3)
    assert len(server.posts) == 1 and "1 try" in message and "3600 s" in message


def test_retries_that_ran_are_counted_from_the_requests() -> None:
    refusal = Reply(429, error_body("slow down", type="rate_limit"), {"retry-after": "0.01"})
    with FakeServer([refusal] * 3) as server:
        message = _fault(server.base_url, max_retries=2)
    assert len(server.posts) == 3 and "after 3 tries" in message and "Retry-After" not in message


def test_a_500_counts_its_tries_and_a_single_try_is_singular() -> None:
    boom = Reply(500, error_body("boom", type="server"))
    with FakeServer([boom, boom]) as server:
        message = _fault(server.base_url, max_retries=1)
    assert len(server.posts) == 2 and "HTTP 500 after 2 tries" in message
    with FakeServer([boom]) as server:
        assert "after 1 try:" in _fault(server.base_url, max_retries=0)


@pytest.mark.parametrize("cut", [0, 20, 120])  # before any byte, in the headers, in the body
def test_a_connection_dropped_mid_reply_is_not_called_unreachable(cut: int) -> None:
    with FakeServer([Reply(body=chat_completion("x" * 200), cut=cut)]) as server:
        message = _fault(server.base_url, max_retries=0)
    assert "cannot reach" not in message and "is it running" not in message
    assert "dropped" in message and "1 try" in message


def test_a_dropped_connection_is_retried_and_the_tries_counted() -> None:
    dropped = Reply(body=chat_completion("x"), cut=10)
    with FakeServer([dropped, dropped]) as server:
        message = _fault(server.base_url, max_retries=1)
    assert len(server.posts) == 2 and "dropped" in message and "2 tries" in message


def test_a_refused_connection_still_says_to_start_the_server() -> None:
    message = _fault("http://127.0.0.1:9/v1", max_retries=0)
    assert "cannot reach" in message and "is it running" in message
    assert "refused" in message.lower()


def test_a_timeout_counts_the_tries_made() -> None:
    slow = Reply(body=chat_completion("late"), delay=3)
    with FakeServer([slow, slow]) as server:
        message = _fault(server.base_url, max_retries=1, timeout=0.3)
    assert "did not answer within 0.3 s (2 tries)" in message
