"""Input the request checks accept must never fail a later stage (sending it upstream, writing
the answer): each is a 400 that names the field, or is carried through, and the client's
keep-alive connection stays usable. Driven over a real connection to the proxy in a thread."""

from __future__ import annotations

import copy
import http.client
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from serve_support import QUESTION, WEATHER, proxy, text

from textreact.errors import ConfigError
from textreact.serve import ServeConfig

BODY = {"model": "m", "messages": QUESTION, "tools": [WEATHER]}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Any, str]]:
    with proxy([text("Final Answer: fine")] * 200) as (upstream, url):
        yield upstream, url


class Connection:
    """One keep-alive HTTP/1.1 connection to the proxy, to see that it survives each reply."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.http = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        self.socket: Any = None

    def post(self, raw: bytes, headers: dict[str, Any] | None = None) -> tuple[int, Any]:
        """Status and JSON body of one POST; fails if the server closed the connection."""
        sent = {"Content-Type": "application/json", **(headers or {})}
        self.http.request("POST", "/v1/chat/completions", body=raw, headers=sent)
        reply = self.http.getresponse()
        body = json.loads(reply.read())
        assert reply.getheader("connection", "").lower() != "close", body
        if self.socket is not None:
            assert self.http.sock is self.socket, "the connection was closed and opened anew"
        self.socket = self.http.sock
        return reply.status, body


@pytest.fixture
def connect() -> Iterator[Any]:
    """Opens Connections for the test, closed when it ends."""
    opened: list[Connection] = []

    def opening(url: str) -> Connection:
        opened.append(Connection(url))
        return opened[-1]

    yield opening
    for connection in opened:
        connection.http.close()


def raw(body: dict[str, Any], old: str = "", new: str = "") -> bytes:
    return json.dumps(body).replace(old, new).encode()


def _with_field(value: str) -> bytes:
    return raw(BODY, '"messages"', f'"temperature": {value}, "messages"')


@pytest.mark.parametrize(
    ("payload", "param"),
    [
        (_with_field("NaN"), "temperature"),
        (_with_field("-Infinity"), "temperature"),
        (raw({**BODY, "logit_bias": {"5": 1.0}}, "1.0", "Infinity"), "logit_bias.5"),
        (raw(BODY, '"type": "integer"', '"type": "integer", "maximum": NaN'), None),
        (raw(BODY, "Paris?", "Paris\\ud800"), "messages[0].content"),
        (raw(BODY, "Paris?", "\\uDFFF Paris"), "messages[0].content"),
        (raw(BODY, "Current weather", "\\udc00 weather"), "tools[0].function.description"),
        (raw(BODY, '"the city"', '"\\ud83d"'), None),
        (
            raw(
                BODY,
                '"city": {',
                '"ci\\ud800ty": {',
            ),
            None,
        ),
    ],
)
def test_unsendable_json_is_a_400_naming_the_field(served, connect, payload, param) -> None:
    _, url = served
    connection = connect(url)
    status, body = connection.post(payload)
    assert status == 400, body
    where = param or "tools[0].function.parameters"
    assert body["error"]["param"] == param or body["error"]["param"].startswith(where)
    assert "bug" not in body["error"]["message"]
    assert connection.post(raw(BODY))[0] == 200  # the same connection serves the next request


def test_a_surrogate_pair_is_no_lone_surrogate(served, connect) -> None:
    upstream, url = served
    status, _ = connect(url).post(raw(BODY, "Paris?", "Paris \\ud83d\\ude00"))
    assert status == 200
    assert "Paris \U0001f600" in json.dumps(upstream.posts[-1].body, ensure_ascii=False)


@pytest.mark.parametrize("key", ["kéy-0123456789", "key\u00a0with-nbsp", "tab\tin-the-key"])
def test_a_key_no_header_can_carry_is_a_400(served, connect, key) -> None:
    _, url = served
    connection = connect(url)
    header = f"Bearer {key}".encode("latin-1")
    status, body = connection.post(raw(BODY), {"Authorization": header})
    assert status == 400 and body["error"]["param"] == "Authorization"
    assert connection.post(raw(BODY))[0] == 200


@pytest.mark.parametrize("other", ["Get-Weather", "get.weather", "GET_WEATHER", "Get_-Weather"])
def test_tool_names_equal_once_folded_are_a_400(served, connect, other) -> None:
    _, url = served
    body = copy.deepcopy(BODY)
    second = copy.deepcopy(WEATHER)
    second["function"]["name"] = other
    body["tools"] = [copy.deepcopy(WEATHER), second]
    connection = connect(url)
    status, answer = connection.post(raw(body))
    assert status == 400, answer
    assert answer["error"]["param"] == "tools[1].function.name"
    assert "get_weather" in answer["error"]["message"] and other in answer["error"]["message"]
    assert connection.post(raw(BODY))[0] == 200


@pytest.mark.parametrize("reply", ["Final Answer: a\ud800b", "Final Answer: 1\u2028two\x85three"])
def test_what_the_upstream_sends_is_carried_through(connect, reply) -> None:
    """A lone surrogate or a line separator in the upstream's reply comes back as it came."""
    with proxy([text(reply)]) as (_, url):
        connection = connect(url)
        status, body = connection.post(raw(BODY))
    assert status == 200
    assert body["choices"][0]["message"]["content"] == reply.removeprefix("Final Answer: ")


def test_an_upstream_key_no_header_can_carry_is_refused_at_start() -> None:
    with pytest.raises(ConfigError, match="printable ASCII"):
        ServeConfig("http://127.0.0.1:1/v1", upstream_api_key="sk-ключ-0123456789")
