"""A timeout that is a deadline: a loopback server that drips one byte every 0.25 s would take
well over a minute to finish each reply here, so a test that completes instead of raising a
timeout shows the deadline did not hold (no clock is asserted)."""

from __future__ import annotations

import asyncio
import threading

import openai
import pytest
from fakeserver import FakeServer, Reply, chat_completion

from textreact.errors import ConfigError
from textreact.models.deadline import (
    AsyncDeadlineTransport,
    DeadlineTransport,
    async_deadline_client,
    deadline_client,
    httpx,
)

BODY = chat_completion("a reply long enough to drip for a while " * 4)
DRIPS = [
    pytest.param({"drip": 0.25}, id="status-and-headers-drip"),
    pytest.param({"drip": 0.25, "drip_headers": False}, id="body-drips"),
    pytest.param({"drip": 60, "drip_headers": False}, id="silent-after-headers"),
]


@pytest.mark.parametrize("fault", DRIPS)
def test_a_dripping_server_ends_in_a_timeout(fault: dict) -> None:
    with (
        FakeServer([Reply(body=BODY, **fault)]) as server,
        deadline_client(0.6) as client,
        pytest.raises(httpx.ReadTimeout, match="deadline"),
    ):
        client.post(server.base_url + "/chat/completions", json={"q": 1})


@pytest.mark.parametrize("fault", DRIPS)
def test_a_dripping_server_ends_in_a_timeout_async(fault: dict) -> None:
    async def post() -> None:
        async with async_deadline_client(0.6) as client:
            await client.post(server.base_url + "/chat/completions", json={"q": 1})

    with (
        FakeServer([Reply(body=BODY, **fault)]) as server,
        pytest.raises(httpx.ReadTimeout, match="deadline"),
    ):
        asyncio.run(post())


def test_a_prompt_server_is_answered_whole_and_the_client_is_reusable() -> None:
    replies = [Reply(body=BODY), Reply(body=chat_completion("second"), drip=0.001)]
    with FakeServer(replies) as server, deadline_client(30) as client:
        first = client.post(server.base_url + "/chat/completions", json={"n": 1})
        second = client.post(server.base_url + "/chat/completions", json={"n": 2})
    assert first.json() == BODY
    assert second.json()["choices"][0]["message"]["content"] == "second"
    assert [r.body for r in server.posts] == [{"n": 1}, {"n": 2}]


def test_a_prompt_server_is_answered_whole_async() -> None:
    async def post() -> dict:
        async with async_deadline_client(30) as client:
            response = await client.post(server.base_url + "/chat/completions", json={})
            return response.json()

    with FakeServer([Reply(body=BODY)]) as server:
        assert asyncio.run(post()) == BODY


def test_the_sdk_reports_the_deadline_as_its_timeout() -> None:
    with FakeServer([Reply(body=BODY, drip=0.25)]) as server:
        sdk = openai.OpenAI(
            api_key="k",
            base_url=server.base_url,
            max_retries=0,
            http_client=deadline_client(0.6),
        )
        with pytest.raises(openai.APITimeoutError):
            sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
        sdk.close()


def test_a_transport_that_blocks_is_left_at_the_deadline() -> None:
    """Any transport, not only httpx's: the caller stops waiting even when nothing can be shut."""
    release = threading.Event()

    def hang(request: httpx.Request) -> httpx.Response:
        release.wait(30)
        return httpx.Response(200, json={})

    transport = DeadlineTransport(0.3, httpx.MockTransport(hang))
    try:
        with httpx.Client(transport=transport) as client, pytest.raises(httpx.ReadTimeout):
            client.get("http://example.invalid/")
    finally:
        release.set()


def test_errors_of_the_inner_transport_pass_through_unchanged() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    transport = DeadlineTransport(5, httpx.MockTransport(refuse))
    with httpx.Client(transport=transport) as client, pytest.raises(httpx.ConnectError):
        client.get("http://example.invalid/")


def test_timeouts_passed_down_are_cut_to_the_time_left_and_traces_kept() -> None:
    seen: dict = {}
    events: list[str] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.update(request.extensions["timeout"])
        request.extensions["trace"]("connection.connect_tcp.complete", {"return_value": None})
        return httpx.Response(200, json={"ok": True})

    transport = DeadlineTransport(2.0, httpx.MockTransport(record))
    with httpx.Client(transport=transport, timeout=httpx.Timeout(600, connect=0.5)) as client:
        trace = lambda name, info: events.append(name)  # noqa: E731
        assert client.get("http://x.invalid/", extensions={"trace": trace}).json() == {"ok": True}
    assert set(seen) == {"connect", "read", "write", "pool"}
    assert seen["connect"] == 0.5 and 0 < seen["read"] <= 2.0
    assert events == ["connection.connect_tcp.complete"]


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), 0, -1, "2", True])
def test_a_timeout_that_is_not_a_finite_positive_number_is_refused(timeout) -> None:
    with pytest.raises(ConfigError, match="timeout"):
        DeadlineTransport(timeout)
    with pytest.raises(ConfigError, match="timeout"):
        AsyncDeadlineTransport(timeout)


class _TimesOutAtTheDeadline(httpx.BaseTransport):
    """A transport whose own read timeout fires a hair before the deadline's timer would: the
    race a busy machine runs between httpx's per-read timeout (cut to the time left) and the
    deadline."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        threading.Event().wait(self.timeout - 0.01)
        raise httpx.ReadTimeout("timed out", request=request)


def test_a_read_timing_out_at_the_deadline_is_reported_as_the_deadline() -> None:
    with (
        deadline_client(0.3, transport=_TimesOutAtTheDeadline(0.3)) as client,
        pytest.raises(httpx.ReadTimeout, match="deadline"),
    ):
        client.get("http://127.0.0.1:9/")


def test_a_read_timeout_well_before_the_deadline_stays_the_reads_own() -> None:
    with (
        deadline_client(5, transport=_TimesOutAtTheDeadline(0.2)) as client,
        pytest.raises(httpx.ReadTimeout, match=r"^timed out$"),
    ):
        client.get("http://127.0.0.1:9/")
