"""Constrained decoding through the real client: the grammar the text protocol offers reaches
the server only where the server takes it, once told what it is; a refusal falls back to plain
text with a note, never a crash; every turn records whether it was constrained."""

from __future__ import annotations

import pytest
from fakeserver import FakeServer, Reply, chat_completion, error_body

from textreact import Agent
from textreact.errors import ConfigError
from textreact.models.openai_compat import OpenAICompatModel

LLAMA_PROPS = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}
ANSWER = Reply(body=chat_completion("Thought: done.\nFinal Answer: 4"))


def run(server: FakeServer, constrain: str, *replies: Reply) -> tuple:
    server.add(*replies)
    model = OpenAICompatModel("fake-model", server.base_url, max_retries=0, constrain=constrain)
    with model:
        result = Agent(model, protocol="text").run("What is 2 + 2?")
    return result, model, [p.body for p in server.posts]


def test_a_llama_cpp_server_is_sent_the_grammar() -> None:
    with FakeServer(props=LLAMA_PROPS) as server:
        result, model, bodies = run(server, "auto", ANSWER)
    assert result.answer == "4"
    assert "calculator" in bodies[0]["grammar"] and "Final Answer" in bodies[0]["grammar"]
    assert result.steps[0].constrained and result.steps[0].to_dict()["constrained"] is True
    assert model.constrain_note is None


def test_a_server_that_says_nothing_runs_unconstrained_with_a_note() -> None:
    with FakeServer() as server:
        result, model, bodies = run(server, "auto", ANSWER)
    assert result.answer == "4" and "grammar" not in bodies[0]
    assert not result.steps[0].constrained
    assert "does not say it takes a grammar" in model.constrain_note
    assert server.unscripted == 0


def test_on_sends_the_grammar_to_a_server_that_says_nothing() -> None:
    with FakeServer() as server:
        result, _, bodies = run(server, "on", ANSWER)
    assert "grammar" in bodies[0] and result.steps[0].constrained


def test_off_never_asks_the_server_and_never_sends_a_grammar() -> None:
    with FakeServer(props=LLAMA_PROPS) as server:
        result, _, bodies = run(server, "off", ANSWER)
        gets = [r.path for r in server.requests if r.method == "GET"]
    assert "grammar" not in bodies[0] and gets == []
    assert not result.steps[0].constrained


def test_a_refused_grammar_is_dropped_for_this_and_later_requests() -> None:
    refusal = Reply(400, error_body("failed to parse grammar", param="grammar"))
    call = Reply(
        body=chat_completion(
            'Thought: add.\nAction: calculator\nAction Input: {"expression": "2+2"}'
        )
    )
    with FakeServer(props=LLAMA_PROPS) as server:
        result, model, bodies = run(server, "auto", refusal, call, ANSWER)
    assert result.answer == "4"
    assert "grammar" in bodies[0] and "grammar" not in bodies[1] and "grammar" not in bodies[2]
    assert "refused the grammar" in model.constrain_note
    assert not any(t.constrained for t in result.steps)


def test_native_requests_never_carry_a_grammar() -> None:
    with FakeServer(props=LLAMA_PROPS) as server:
        server.add(Reply(body=chat_completion("4")))
        with OpenAICompatModel("fake-model", server.base_url, max_retries=0) as model:
            Agent(model, protocol="native").run("What is 2 + 2?")
        body = server.posts[0].body
    assert "grammar" not in body and "tools" in body


@pytest.mark.parametrize("mode", ["yes", "", None, "ON"])
def test_an_unknown_constrain_mode_is_refused(mode) -> None:
    with pytest.raises(ConfigError, match="constrain"):
        OpenAICompatModel("m", "http://127.0.0.1:9/v1", constrain=mode)


def test_the_async_client_constrains_and_falls_back_the_same_way() -> None:
    import asyncio

    from textreact.models.openai_compat import AsyncOpenAICompatModel

    refusal = Reply(400, error_body("failed to parse grammar", param="grammar"))

    async def go(base_url: str):
        model = AsyncOpenAICompatModel("fake-model", base_url, max_retries=0)
        result = await Agent(model).arun("What is 2 + 2?")
        await model.aclose()
        return result, model

    with FakeServer([refusal, ANSWER], props=LLAMA_PROPS) as server:
        result, model = asyncio.run(go(server.base_url))
        bodies = [p.body for p in server.posts]
    assert result.answer == "4"
    assert "grammar" in bodies[0] and "grammar" not in bodies[1]
    assert "refused the grammar" in model.constrain_note
