"""A browser page must not spend the proxy (which may hold an upstream key): a Host that is not
this machine's (DNS rebinding), an Origin of another site, or a body a page may send without a
preflight (`text/plain`, a form) is refused before anything reaches the upstream. The hosts an
operator allows (`--allow-host`) are served. Driven over real HTTP to the proxy in a thread."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2 as httpx
import pytest
from serve_support import QUESTION, proxy, text

from textreact.cli import build_parser
from textreact.serve.cli import config_from

BODY = json.dumps({"model": "m", "messages": QUESTION}).encode()
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Any, str]]:
    with proxy([text("fine")] * 100, allowed_hosts=("proxy.internal",)) as (upstream, url):
        yield upstream, url


def _post(url: str, headers: dict[str, str], path: str = "/chat/completions") -> httpx.Response:
    return httpx.post(url + path, content=BODY, headers=headers, timeout=10)


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:8765", "127.0.0.1.evil.example", "localhost.evil"]
)
def test_a_host_not_this_machine_is_refused(served, host) -> None:
    upstream, url = served
    before = len(upstream.posts)
    reply = _post(url, {**JSON, "Host": host})
    assert reply.status_code == 403
    assert reply.json()["error"]["code"] == "host_not_allowed"
    assert "--allow-host" in reply.json()["error"]["message"]
    health = httpx.get(url.removesuffix("/v1") + "/health", headers={"Host": host})
    assert health.status_code == 403
    assert len(upstream.posts) == before  # nothing reached the upstream


@pytest.mark.parametrize(
    "host", ["localhost", "LOCALHOST:8765", "127.0.0.1:1", "[::1]:8765", "proxy.internal:80"]
)
def test_loopback_and_allowed_hosts_are_served(served, host) -> None:
    _, url = served
    assert _post(url, {**JSON, "Host": host}).status_code == 200


@pytest.mark.parametrize(
    "origin", ["https://evil.example", "null", "http://127.0.0.1.evil.example:8765"]
)
def test_a_page_of_another_site_is_refused(served, origin) -> None:
    upstream, url = served
    before = len(upstream.posts)
    reply = _post(url, {**JSON, "Origin": origin})
    assert reply.status_code == 403 and reply.json()["error"]["code"] == "origin_not_allowed"
    assert len(upstream.posts) == before


@pytest.mark.parametrize("origin", ["http://localhost:3000", "https://proxy.internal"])
def test_a_page_of_an_allowed_host_is_served(served, origin) -> None:
    _, url = served
    assert _post(url, {**JSON, "Origin": origin}).status_code == 200


@pytest.mark.parametrize(
    "kind",
    ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
     "multipart/form-data; boundary=x"],
)  # fmt: skip
def test_a_body_a_page_sends_without_preflight_is_refused(served, kind) -> None:
    upstream, url = served
    before = len(upstream.posts)
    reply = _post(url, {"Content-Type": kind})
    assert reply.status_code == 415 and reply.json()["error"]["param"] == "Content-Type"
    assert "application/json" in reply.json()["error"]["message"]
    assert len(upstream.posts) == before


@pytest.mark.parametrize("kind", ["application/json", "application/json; charset=utf-8", None])
def test_json_bodies_are_served(served, kind) -> None:
    _, url = served
    headers = {} if kind is None else {"Content-Type": kind}
    assert _post(url, headers).status_code == 200


def test_any_host_serves_every_host_but_not_every_origin() -> None:
    with proxy([text("fine")] * 3, allowed_hosts=("*",)) as (_, url):
        assert _post(url, {**JSON, "Host": "anything.example"}).status_code == 200
        refused = _post(url, {**JSON, "Origin": "https://anything.example"})
        assert refused.status_code == 403


@pytest.mark.parametrize(
    ("flags", "allowed"),
    [
        ([], ()),
        (["--host", "0.0.0.0"], ()),
        (["--host", "10.0.0.5", "--allow-host", "proxy.lan"], ("proxy.lan", "10.0.0.5")),
        (["--allow-host", "*"], ("*", "127.0.0.1")),
    ],
)
def test_allow_host_and_host_flags(flags, allowed) -> None:
    args = build_parser().parse_args(["serve", "--upstream", "http://127.0.0.1:1/v1", *flags])
    hosts = config_from(args, {}).allowed_hosts
    assert set(hosts) - {"127.0.0.1"} == set(allowed) - {"127.0.0.1"}
