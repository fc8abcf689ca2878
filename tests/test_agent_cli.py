"""Codex CLI (`@openai/codex` from npm: OpenAI's coding agent, which nobody here wrote) through
`textreact serve`'s `POST /v1/responses`, in front of the loopback fake upstream scripted with
text-protocol replies. `codex exec` sends its own request (its own tools, streamed), runs the
shell command of each call serve returns, sends the output back and prints the final answer:
the proof that a real agent's tool loop runs on the chat endpoint's turn.

Not in the default run: marked `agent_cli`, which conftest deselects unless `-m agent_cli`
names it, because the CLI comes from npm, not from the test install. `scripts/agent-cli-check`
installs it into a scratch prefix and runs this file; selected without the CLI, each test
fails and says how to install it."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Awaitable, Callable, Iterable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeServer, Reply
from serve_support import proxy, sent_messages, streamed

pytestmark = pytest.mark.agent_cli

#: Where `scripts/agent-cli-check` installs Codex CLI unless told otherwise.
CODEX_PREFIX = Path(os.environ.get("TMPDIR", "/tmp")) / "textreact-agent-cli"
#: The environment variable that names another codex binary.
CODEX_VARIABLE = "TEXTREACT_CODEX"
#: What `codex exec` is asked; the scripted upstream answers it, whatever it says.
PROMPT = "List the files in this directory, then say which there are."
MARKER = "serve-saw-this.txt"
CALL = (
    "Thought: I will list the files.\nAction: exec_command\n"
    'Action Input: {"cmd": "ls", "login": false}'
)
ANSWER = f"Thought: I have the listing.\nFinal Answer: The directory holds {MARKER}."
#: Codex's settings that keep its request to function tools: its `web_search` (a hosted tool)
#: and its subagent tools (a `namespace` of tools) are tool types serve refuses with a 400.
FUNCTION_TOOLS_ONLY = 'web_search = "disabled"\n\n[agents]\nenabled = false\n'

ASGI = Callable[..., Awaitable[None]]


class Recorder:
    """serve's app, keeping the body of each POST Codex sent and the bytes serve answered."""

    def __init__(self, app: ASGI) -> None:
        self.app = app
        self.exchanges: list[tuple[dict[str, Any], bytes]] = []

    async def __call__(self, scope: MutableMapping[str, Any], receive: ASGI, send: ASGI) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        asked, answered = bytearray(), bytearray()

        async def receiving() -> dict[str, Any]:
            message = await receive()
            asked.extend(message.get("body", b""))
            return message

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                answered.extend(message.get("body", b""))
            await send(message)

        await self.app(scope, receiving, sending)
        self.exchanges.append((json.loads(asked), bytes(answered)))

    def requests(self) -> list[dict[str, Any]]:
        """The Responses requests Codex sent, in order."""
        return [body for body, _ in self.exchanges]

    def calls(self, index: int) -> list[dict[str, Any]]:
        """The function_call items serve's answer to request `index` ended with."""
        events = _events(self.exchanges[index][1])
        done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
        return [item for item in done if item["type"] == "function_call"]


@contextlib.contextmanager
def recorded(
    replies: Iterable[Reply], **settings: Any
) -> Iterator[tuple[FakeServer, str, Recorder]]:
    """serve_support's proxy (`settings` go to ServeConfig), recording what Codex and serve
    say to each other."""
    made: list[Recorder] = []

    def wrap(app: ASGI) -> Recorder:
        made.append(Recorder(app))
        return made[0]

    with proxy(replies, around=wrap, **settings) as (upstream, url):
        yield upstream, url, made[0]


def _events(stream: bytes) -> list[dict[str, Any]]:
    lines = stream.decode().splitlines()
    return [json.loads(line[5:]) for line in lines if line.startswith("data:")]


@pytest.fixture
def codex() -> Path:
    """The codex binary: $TEXTREACT_CODEX, or scripts/agent-cli-check's install."""
    path = Path(os.environ.get(CODEX_VARIABLE) or CODEX_PREFIX / "node_modules/.bin/codex")
    if not path.is_file():
        pytest.fail(
            f"Codex CLI is not at {path}: run scripts/agent-cli-check (it installs "
            f"@openai/codex from npm into {CODEX_PREFIX} and runs these tests), or install it "
            f"yourself (npm install --prefix DIR @openai/codex) and set {CODEX_VARIABLE} to "
            "DIR/node_modules/.bin/codex. They run only when -m names agent_cli; leave "
            "that out to deselect them.",
            pytrace=False,
        )
    return path


def run_codex(
    codex: Path, url: str, tmp_path: Path, settings: str = FUNCTION_TOOLS_ONLY
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """`codex exec` of PROMPT in a directory holding MARKER, its model provider serve at
    `url` (the Responses API), everything it keeps in `tmp_path`; its exit and its events."""
    home, work = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (work / MARKER).write_text("kept\n")
    (home / "config.toml").write_text(
        'model = "text-model"\nmodel_provider = "textreact"\n'
        f"{settings}\n"
        "[analytics]\nenabled = false\n\n"
        "[model_providers.textreact]\n"
        f'name = "textreact serve"\nbase_url = "{url}"\nwire_api = "responses"\n'
        'env_key = "TEXTREACT_SERVE_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
    )
    environment = {**os.environ, "CODEX_HOME": str(home), "TEXTREACT_SERVE_KEY": "client-key"}
    command = [str(codex), "exec", "--json", "--ephemeral", "--skip-git-repo-check"]
    command += ["--strict-config", "--sandbox", "read-only", "--cd", str(work), PROMPT]
    done = subprocess.run(
        command, env=environment, capture_output=True, text=True, stdin=subprocess.DEVNULL,
        timeout=300,
    )  # fmt: skip
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return done, events


def _items(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The items of `kind` Codex completed, from its --json events."""
    done = [e["item"] for e in events if e["type"] == "item.completed"]
    return [item for item in done if item["type"] == kind]


def test_codex_runs_the_call_serve_returns_and_prints_the_final_answer(
    codex: Path, tmp_path: Path
) -> None:
    with recorded([streamed(CALL), streamed(ANSWER)]) as (upstream, url, recorder):
        done, events = run_codex(codex, url, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    # Codex's own request: streamed, its own function tools, the prompt as a user message.
    first, second = recorder.requests()
    assert first["stream"] is True and first["store"] is False
    tools = {tool["name"]: tool for tool in first["tools"]}
    assert {tool["type"] for tool in first["tools"]} == {"function"}
    assert tools["exec_command"]["parameters"]["required"] == ["cmd"]
    assert any(PROMPT in json.dumps(item) for item in first["input"])
    # serve's answer: the text-protocol Action as one validated function_call item.
    (call,) = recorder.calls(0)
    assert call["name"] == "exec_command"
    assert json.loads(call["arguments"]) == {"cmd": "ls", "login": False}
    # Codex ran it, and sent the call and its output back in the next request's input.
    (command,) = _items(events, "command_execution")
    assert command["exit_code"] == 0 and MARKER in command["aggregated_output"]
    echoed = [item for item in second["input"] if item.get("call_id") == call["call_id"]]
    assert [item["type"] for item in echoed] == ["function_call", "function_call_output"]
    assert MARKER in json.dumps(echoed[1]["output"])
    # The upstream saw the tool in its prompt, then the output as the text protocol's result.
    assert len(upstream.posts) == 2 and upstream.unscripted == 0
    assert "exec_command" in sent_messages(upstream, 0)[0]["content"]
    result = sent_messages(upstream, 1)[-1]
    assert result["content"].startswith("Observation:") and MARKER in result["content"]
    # The final answer, as Codex printed it.
    assert [item["text"] for item in _items(events, "agent_message")] == [
        f"The directory holds {MARKER}."
    ]
    assert recorder.calls(1) == []


def test_two_calls_in_one_reply_are_two_items_codex_runs_both(codex: Path, tmp_path: Path) -> None:
    both = CALL + '\nAction: exec_command\nAction Input: {"cmd": "echo second-call"}'
    replies = [streamed(both), streamed(ANSWER)]
    with recorded(replies, parallel_calls=True) as (upstream, url, recorder):
        done, events = run_codex(codex, url, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert recorder.requests()[0]["parallel_tool_calls"] is True
    calls = recorder.calls(0)
    assert [json.loads(call["arguments"])["cmd"] for call in calls] == ["ls", "echo second-call"]
    assert len({call["call_id"] for call in calls}) == 2
    outputs = {
        item["call_id"]: json.dumps(item["output"])
        for item in recorder.requests()[1]["input"]
        if item.get("type") == "function_call_output"
    }
    assert MARKER in outputs[calls[0]["call_id"]]
    assert "second-call" in outputs[calls[1]["call_id"]]
    commands = _items(events, "command_execution")
    assert sorted(MARKER in c["aggregated_output"] for c in commands) == [False, True]
    assert len(upstream.posts) == 2


def test_a_call_of_a_tool_codex_lacks_is_reasked_and_codex_sees_only_the_good_one(
    codex: Path, tmp_path: Path
) -> None:
    wrong = 'Thought: I will list the files.\nAction: shell\nAction Input: {"command": "ls"}'
    replies = [streamed(wrong), streamed(CALL), streamed(ANSWER)]
    with recorded(replies) as (upstream, url, recorder):
        done, events = run_codex(codex, url, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(upstream.posts) == 3  # the call of `shell` was asked again, once
    reask = sent_messages(upstream, 1)
    assert "shell" in reask[-1]["content"] and "exec_command" in reask[-1]["content"]
    assert [call["name"] for call in recorder.calls(0)] == ["exec_command"]
    assert len(recorder.exchanges) == 2  # Codex made two requests, never saw `shell`
    assert len(_items(events, "command_execution")) == 1


def test_codex_defaults_send_tools_serve_refuses_and_codex_prints_why(
    codex: Path, tmp_path: Path
) -> None:
    with proxy([]) as (upstream, url):
        done, events = run_codex(codex, url, tmp_path, settings="")
    assert done.returncode != 0
    (failed,) = [e for e in events if e["type"] == "turn.failed"]
    error = json.loads(failed["error"]["message"])["error"]
    assert error["type"] == "invalid_request_error" and error["param"].startswith("tools[")
    # its subagent tools (a namespace) and web_search, each named, and the way out
    assert '"namespace"' in error["message"] and '"web_search"' in error["message"]
    assert "only function tools" in error["message"]
    assert upstream.posts == []  # refused before the upstream was asked
