"""The upstream's credentials never reach a client or a process's environment: the basic-auth
token an upstream URL's `user:password` becomes (and the password) is blanked wherever an
upstream echoes it, whole or streamed; `--workers N` hands the key to its workers in a file only
the user may read, never in the environment that every worker and its children inherit."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2 as httpx
import pytest
from fakeserver import FakeServer, Reply, error_body
from serve_support import QUESTION, WEATHER, proxy, streamed, text

from textreact.redact import userinfo_secrets
from textreact.serve.cli import CONFIG_VARIABLE

USER, PASSWORD = "alice", "s3cr3t-p@ss:word"
TOKEN = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
WRITTEN = "s3cr3t-p%40ss%3Aword"
ECHO = f"refused Authorization: Basic {TOKEN} (password {PASSWORD}, as written {WRITTEN})"
MAIN = "import sys; from textreact.cli import main; sys.exit(main(sys.argv[1:]))"
BODY = {"model": "m", "messages": QUESTION, "tools": [WEATHER]}


def _with_userinfo(url: str) -> str:
    return url.replace("http://", f"http://{USER}:{WRITTEN}@")


def test_the_secrets_of_a_url_are_its_token_and_password() -> None:
    secrets = userinfo_secrets(f"http://{USER}:{WRITTEN}@h/v1")
    assert TOKEN in secrets and PASSWORD in secrets and WRITTEN in secrets
    assert userinfo_secrets("http://h/v1") == []


def _unshown(reply: httpx.Response) -> None:
    assert TOKEN not in reply.text and PASSWORD not in reply.text and WRITTEN not in reply.text
    assert "***" in reply.text


@pytest.mark.parametrize("status", [400, 401, 403, 500, 503])
def test_an_echoed_basic_auth_token_is_blanked(status) -> None:
    with FakeServer([Reply(status, error_body(ECHO))]) as upstream:
        with proxy_of(_with_userinfo(upstream.base_url)) as url:
            reply = httpx.post(url + "/chat/completions", json=BODY, timeout=10)
        assert upstream.posts[0].headers["authorization"] == f"Basic {TOKEN}"
    assert reply.status_code >= 400
    _unshown(reply)


def test_an_echoed_token_mid_stream_is_blanked() -> None:
    event = f"data: {json.dumps({'error': {'message': ECHO}})}\n\n"
    broken = Reply(body=event, headers={"content-type": "text/event-stream"})
    with FakeServer([broken]) as upstream, proxy_of(_with_userinfo(upstream.base_url)) as url:
        reply = httpx.post(url + "/chat/completions", json={**BODY, "stream": True}, timeout=10)
    assert "error" in reply.text
    _unshown(reply)


def test_a_url_with_credentials_still_serves() -> None:
    replies = [text("Final Answer: 18 C"), streamed("Final Answer: 18 C")]
    with FakeServer(replies) as upstream, proxy_of(_with_userinfo(upstream.base_url)) as url:
        whole = httpx.post(url + "/chat/completions", json=BODY, timeout=10)
        both = httpx.post(url + "/chat/completions", json={**BODY, "stream": True})
    assert whole.json()["choices"][0]["message"]["content"] == "18 C"
    events = [json.loads(line[6:]) for line in both.text.split("\n\n") if "{" in line]
    assert "".join(e["choices"][0]["delta"].get("content") or "" for e in events) == "18 C"


def proxy_of(upstream_url: str):
    """The proxy in front of an upstream URL given whole (credentials and all)."""
    from textreact.serve import ServeConfig, create_app, serving

    config = ServeConfig(upstream_url, constrain="off", max_retries=0)
    return serving(create_app(config))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            found += [int(child), *_children(int(child))]
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
def test_workers_get_the_key_without_it_in_their_environment() -> None:
    key = "sk-upstream-0123456789abcdef"
    port = _free_port()
    with proxy([text("Final Answer: fine")]) as (upstream, _):
        command = [sys.executable, "-c", MAIN, "serve", "--upstream", upstream.base_url,
                   "--upstream-api-key", key, "--workers", "2", "--port", str(port),
                   "--constrain", "off"]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith("TEXTREACT_")}
        server = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
        try:
            reply = _first_answer(f"http://127.0.0.1:{port}/v1", server)
            assert reply.status_code == 200, reply.text
            assert upstream.posts[-1].headers["authorization"] == f"Bearer {key}"
            workers = _children(server.pid)
            environments = [Path(f"/proc/{pid}/environ").read_bytes() for pid in workers]
            assert workers and not [e for e in environments if key.encode() in e]
            named = CONFIG_VARIABLE.encode() + b"="
            handed = {e[len(named) :] for env in environments for e in env.split(b"\0")
                      if e.startswith(named)}  # fmt: skip
            assert len(handed) == 1
            path = Path(handed.pop().decode())
            assert path.stat().st_mode & 0o077 == 0  # the user's alone
        finally:
            server.terminate()
            server.wait(30)
    assert not path.exists()


def _first_answer(url: str, server: subprocess.Popen) -> httpx.Response:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server.poll() is None:
        try:
            return httpx.post(url + "/chat/completions", json=BODY, timeout=10)
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError("the server did not start")
