"""Every path that asks a model sends a completion limit, so a rambling model cannot run for
minutes: the text and native loops, the best-effort request, compare, and the CLI."""

from __future__ import annotations

import pytest
from fakeserver import FakeServer, Reply, chat_completion

from textreact import Agent
from textreact.cli import main
from textreact.compare.runner import run_compare
from textreact.compare.suite import builtin_suite
from textreact.models.anthropic import AnthropicModel
from textreact.models.openai_compat import OpenAICompatModel

CALL = 'Thought: add.\nAction: calculator\nAction Input: {"expression": "2+2"}'


def call(protocol: str) -> Reply:
    if protocol == "text":
        return Reply(body=chat_completion(CALL))
    body = chat_completion(None, finish_reason="tool_calls")
    body["choices"][0]["message"]["tool_calls"] = [
        {"id": "c", "type": "function",
         "function": {"name": "calculator", "arguments": '{"expression": "2+2"}'}}
    ]  # fmt: skip
    return Reply(body=body)


def limits(server: FakeServer) -> list[object]:
    return [post.body.get("max_tokens") for post in server.posts]


@pytest.mark.parametrize("protocol", ["text", "native"])
def test_the_loop_and_its_best_effort_request_send_a_limit(protocol: str) -> None:
    replies = [call(protocol), Reply(body=chat_completion("4"))]
    with FakeServer(replies) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        result = Agent(model, protocol=protocol, max_steps=1).run("2+2?")
        model.close()
        sent = limits(server)
    assert result.steps[-1].note == "best_effort"
    assert sent == [1024, 1024]


def test_compare_sends_a_limit_for_every_run() -> None:
    tasks = builtin_suite()[:2]
    replies = [Reply(body=chat_completion("Final Answer: 391")) for _ in range(4)]
    with FakeServer(replies) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0, max_tokens=300)
        run_compare(model, tasks, protocols=["text", "native"])
        model.close()
        sent = limits(server)
    assert sent == [300, 300, 300, 300]


@pytest.mark.parametrize("command", [["run", "2+2?"], ["compare", "--limit", "1"]])
def test_the_cli_sends_its_default_limit(command: list[str], capsys, tmp_path) -> None:
    replies = [Reply(body=chat_completion("Final Answer: 391")) for _ in range(2)]
    with FakeServer(replies) as server:
        main([*command, "--base-url", server.base_url, "--model", "m"])
        sent = limits(server)
    assert sent and all(limit == 512 for limit in sent)


def test_no_client_leaves_the_limit_out_by_default() -> None:
    pytest.importorskip("anthropic", reason="the anthropic extra is not installed")
    assert OpenAICompatModel("m", "http://127.0.0.1:9/v1").max_tokens == 1024
    assert AnthropicModel("m").max_tokens == 1024
