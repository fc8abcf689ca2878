"""Older leftovers (issue 29): a reply with no text at all is a model error that names it, not
three format errors; nonsense token counts never cost an answer; an output file in a folder
that does not exist is refused before any request; a key in the base URL's query is never
shown; the advice after a dropped reply or a long Retry-After says what happened and how many
tries were made; a long run of blanks before a step does not hide it. Real HTTP to a loopback
fake server throughout."""

from __future__ import annotations

import asyncio
import inspect
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeServer, Reply, chat_completion, error_body

from textreact import Agent, AsyncOpenAICompatModel, OpenAICompatModel, ScriptedModel, parse
from textreact.cli import EXIT_MODEL, EXIT_USAGE, main
from textreact.errors import ModelError
from textreact.steps import Usage

MESSAGES = [{"role": "user", "content": "What is 2+2?"}]


def _empty(finish_reason: str) -> Reply:
    return Reply(body=chat_completion(None, finish_reason=finish_reason))


@pytest.mark.parametrize("finish_reason", ["stop", "tool_calls", "eos"])
@pytest.mark.parametrize("protocol", ["text", "native"])
def test_a_reply_with_no_text_is_one_model_error_not_format_errors(finish_reason, protocol):
    with FakeServer([_empty(finish_reason)] * 3) as server:
        model = OpenAICompatModel("m", server.base_url, max_retries=0)
        result = Agent(model, protocol=protocol).run("What is 2+2?")
    assert result.stop_reason == "model_error" and len(server.posts) == 1
    assert "content null" in (result.error or "") and "produced nothing" in (result.error or "")


def test_json_output_says_why_the_run_ended(capsys) -> None:
    with FakeServer([_empty("stop")]) as server:
        code = main(["run", "q", "--base-url", server.base_url, "--model", "m", "--json"])
    assert code == EXIT_MODEL
    report = json.loads(capsys.readouterr().out)
    assert report["stop_reason"] == "model_error" and "content null" in report["error"]


@pytest.mark.parametrize(
    ("usage", "kept"),
    [
        ({"prompt_tokens": "abc", "completion_tokens": 7}, Usage(0, 7)),
        ({"prompt_tokens": -5, "completion_tokens": 7}, Usage(0, 7)),
        ({"prompt_tokens": 11, "completion_tokens": 1e30}, Usage(11, 0)),
        ({"prompt_tokens": 11, "completion_tokens": [3]}, Usage(11, 0)),
        ({"prompt_tokens": True, "completion_tokens": 7.0}, Usage(0, 7)),
    ],
)
def test_nonsense_token_counts_are_dropped_and_the_answer_kept(usage: Any, kept: Usage) -> None:
    body = chat_completion("Final Answer: 4")
    body["usage"] = usage
    with FakeServer([Reply(body=body)]) as server:
        result = Agent(OpenAICompatModel("m", server.base_url, max_retries=0)).run("2+2?")
    assert (result.answer, result.stop_reason) == ("4", "final_answer")
    assert result.usage == kept


@pytest.mark.parametrize(
    "flags",
    [["--json"], ["--markdown"]],
)
def test_compare_output_into_a_missing_folder_is_refused_before_any_request(
    capsys, tmp_path: Path, flags: list[str]
) -> None:
    target = tmp_path / "no-such-folder" / "report.out"
    with FakeServer([Reply(body=chat_completion("Final Answer: 4"))] * 50) as server:
        argv = ["compare", "--base-url", server.base_url, "--model", "m", *flags, str(target)]
        code = main(argv)
    assert code == EXIT_USAGE and server.posts == []
    err = capsys.readouterr().err
    assert "does not exist" in err and "no-such-folder" in err
    assert not target.parent.exists()  # and no folder was made of a mistyped path


def test_run_transcript_into_a_missing_folder_is_refused_too(capsys, tmp_path: Path) -> None:
    target = tmp_path / "missing" / "t.jsonl"
    with FakeServer([Reply(body=chat_completion("Final Answer: 4"))]) as server:
        argv = ["run", "q", "--base-url", server.base_url, "--model", "m"]
        code = main([*argv, "--transcript", str(target)])
    assert code == EXIT_USAGE and server.posts == []


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("query", ["?api_key=sk-SECRET1", "?key=sk-SECRET1&v=2", "?sk-SECRET1"])
def test_a_key_in_the_base_urls_query_is_masked_when_unreachable(capsys, query: str) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1{query}"
    with pytest.raises(ModelError) as caught:
        OpenAICompatModel("m", url, max_retries=0).complete(MESSAGES)
    assert "cannot reach" in str(caught.value) and "SECRET1" not in str(caught.value)
    assert main(["run", "q", "--base-url", url, "--model", "m"]) == EXIT_MODEL
    assert "SECRET1" not in capsys.readouterr().err


def _fault(url: str, **options: Any) -> str:
    with pytest.raises(ModelError) as caught:
        OpenAICompatModel("m", url, timeout=10.0, **options).complete(MESSAGES)
    return str(caught.value)


@pytest.mark.parametrize("broken", [{"cut": 0}, {"cut": 120}, {"end_body": 10}])
def test_a_dropped_reply_says_so_and_counts_every_try(broken: dict[str, int]) -> None:
    with FakeServer([Reply(body=chat_completion("x" * 200), **broken)] * 2) as server:
        message = _fault(server.base_url, max_retries=1)
    assert len(server.posts) == 2
    assert "dropped it before the reply was complete" in message and "2 tries" in message


@pytest.mark.parametrize("model_class", [OpenAICompatModel, AsyncOpenAICompatModel])
@pytest.mark.parametrize("status", [429, 503])
def test_a_retry_after_past_the_sdks_wait_says_so_with_the_tries_made(status, model_class):
    refusal = Reply(status, error_body("busy", type="server"), {"retry-after": "3600"})
    with FakeServer([refusal] * 3) as server:
        model = model_class("m", server.base_url, timeout=10.0, max_retries=2)
        with pytest.raises(ModelError) as caught:
            reply = model.complete(MESSAGES)
            if inspect.isawaitable(reply):
                asyncio.run(reply)
    message = str(caught.value)
    assert len(server.posts) == 1  # the SDK does not wait an hour, and says so
    assert f"HTTP {status}" in message and "3600 s (Retry-After)" in message
    assert "1 try" in message and "wait that long" in message


@pytest.mark.parametrize(
    "blanks", ["\x00" * 100_000, " \n\t" * 40_000, "\x00\u200b\ufeff" * 30_000, "\x00" * 1_000_000]
)
def test_a_long_run_of_blanks_does_not_hide_the_step(blanks: str) -> None:
    answer = parse(blanks + "Final Answer: 42")
    assert answer.kind == "final" and answer.answer == "42"  # type: ignore[union-attr]
    action = parse(blanks + 'Action: calculator\nAction Input: {"expression": "2+2"}')
    assert action.kind == "action" and action.input == {"expression": "2+2"}  # type: ignore[union-attr]


def test_the_loop_takes_the_answer_after_the_blanks() -> None:
    result = Agent(ScriptedModel(["\x00" * 100_000 + "Final Answer: 42"])).run("q")
    assert (result.answer, result.stop_reason) == ("42", "final_answer")
