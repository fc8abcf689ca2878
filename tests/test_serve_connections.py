"""Connections and upstream work never outlive the client: a request head or body sent a byte
at a time is cut off at `client_timeout`; past `max_connections` a client gets a 503; a client
that leaves a whole (non-streamed) request has its upstream request closed and no retry made.
Driven over raw sockets and real HTTP to the proxy in a thread, in front of the fake upstream.
The waits below are generous upper bounds on what must happen, not measurements."""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx2 as httpx
import pytest
from fakeserver import Reply, chat_completion, error_body
from serve_support import QUESTION, WEATHER, proxy, text

BODY = {"model": "m", "messages": QUESTION, "tools": [WEATHER]}


def _socket(url: str) -> socket.socket:
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=20)


def _closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def _eventually(check: Callable[[], bool], within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


@pytest.mark.parametrize(
    "sent",
    [b"", b"P", b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Ty"],
)
def test_a_head_that_never_ends_is_cut_off(sent) -> None:
    with proxy(client_timeout=0.5) as (_, url), _socket(url) as sock:
        sock.sendall(sent)
        assert b"200 OK" not in _closed(sock)  # closed by the server, nothing served


def test_a_head_sent_a_byte_at_a_time_is_cut_off() -> None:
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n" + b"X-Pad: a\r\n" * 50
    with proxy(client_timeout=0.5) as (_, url), _socket(url) as sock:
        try:
            for byte in head:
                sock.sendall(bytes([byte]))
                time.sleep(0.02)  # every byte well within the keep-alive timer's reach
        except OSError:
            pass  # closed while sending: what is expected
        else:
            raise AssertionError("the server took a 1.5 s head with a 0.5 s limit")


def test_a_body_that_never_ends_is_a_408() -> None:
    head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n")  # fmt: skip
    head += b'{"model"'
    with proxy(client_timeout=0.5) as (upstream, url), _socket(url) as sock:
        sock.sendall(head)
        answer = _closed(sock)
    assert answer.startswith(b"HTTP/1.1 408") and b"request_timeout" in answer
    assert upstream.posts == []


def test_a_kept_alive_connection_serves_requests_in_a_row() -> None:
    replies = [text("Final Answer: a"), text("Final Answer: b")]
    with proxy(replies, client_timeout=2) as (_, url):
        parts = urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
        try:
            opened = None
            for answer in "ab":
                headers = {"Content-Type": "application/json"}
                connection.request("POST", "/v1/chat/completions", json.dumps(BODY), headers)
                reply = json.loads(connection.getresponse().read())
                assert reply["choices"][0]["message"]["content"] == answer
                assert opened in (None, connection.sock)  # the same connection throughout
                opened = connection.sock
                time.sleep(0.3)  # idle between requests, within the limit
        finally:
            connection.close()


def test_past_the_connection_cap_a_client_gets_a_503() -> None:
    with proxy([text("Final Answer: fine")], max_connections=2) as (_, url):
        held = [_socket(url), _socket(url)]
        try:
            time.sleep(0.2)  # both are accepted before the next one comes
            assert httpx.post(url + "/chat/completions", json=BODY).status_code == 503
        finally:
            for sock in held:
                sock.close()
        assert _eventually(lambda: httpx.get(url.removesuffix("/v1") + "/health").is_success)


def _leave(url: str, body: dict) -> None:
    """Send a request and leave before its answer comes."""
    with pytest.raises(httpx.TimeoutException):
        httpx.post(url + "/chat/completions", json=body, timeout=0.5)


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_that_leaves_closes_the_upstream_request(stream) -> None:
    slow = Reply(body=chat_completion("Final Answer: " + "x" * 400), drip=0.02, drip_headers=False)
    with proxy([slow]) as (upstream, url):
        _leave(url, {**BODY, "stream": stream})
        # the reply takes over 8 s to drip; the proxy lets go of it as its client leaves
        assert _eventually(lambda: bool(upstream.unsent), within=6)


def test_no_retry_is_made_for_a_client_that_left() -> None:
    failing = Reply(503, error_body("busy"), delay=1.0)
    with proxy([failing] * 3, max_retries=2) as (upstream, url):
        _leave(url, BODY)
        time.sleep(4)  # the SDK's retries would have come by now
        assert len(upstream.posts) == 1


def test_the_flags_set_the_bounds() -> None:
    from textreact.cli import build_parser
    from textreact.serve.cli import config_from
    from textreact.serve.connections import uvicorn_options
    from textreact.serve.protocol import ServeProtocol

    argv = [
        "serve",
        "--upstream",
        "http://h/v1",
        "--client-timeout",
        "2.5",
        "--max-connections",
        "9",
    ]
    config = config_from(build_parser().parse_args(argv), {})
    assert (config.client_timeout, config.max_connections) == (2.5, 9)
    options = uvicorn_options(config)
    assert options == {"http": ServeProtocol, "timeout_keep_alive": 2.5, "limit_concurrency": 9}
