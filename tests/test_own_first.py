"""`protocol="own-first"`: the first decision asked in the model's own tool format, the rest of
the run in the text protocol, with the first call carried into the text history; through the
loop with the strict scripted model, and through a loopback server that gives its template."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeServer, Reply, chat_completion
from test_own_format import CALL, QUESTION, QWEN, SMOLLM2

from textreact import Agent, ScriptedModel
from textreact.cli import EXIT_OK, EXIT_USAGE, main
from textreact.constrain import matches
from textreact.errors import ConfigError
from textreact.models.openai_compat import OpenAICompatModel
from textreact.protocols import OwnFirstProtocol


def own_first() -> OwnFirstProtocol:
    return OwnFirstProtocol(template=QWEN)


def test_prose_at_the_first_decision_is_the_answer_with_no_call() -> None:
    model = ScriptedModel(["Paris is the capital of France."])
    result = Agent(model, protocol=own_first()).run("What is the capital of France?")
    assert (result.answer, result.stop_reason, result.protocol) == (
        "Paris is the capital of France.",
        "final_answer",
        "own-first",
    )
    system, user = model.requests[0]  # asked as the model's template asks, no ReAct frame
    assert "<tools>" in system["content"] and "Action:" not in system["content"]
    assert user == {"role": "user", "content": "What is the capital of France?"}


def test_after_the_first_call_the_run_goes_on_in_the_text_protocol() -> None:
    model = ScriptedModel([CALL, "Thought: I now know the final answer.\nFinal Answer: 84"])
    result = Agent(model, protocol=own_first()).run(QUESTION)
    assert (result.answer, result.stop_reason) == ("84", "final_answer")
    assert (result.steps[0].tool, result.steps[0].observation) == ("calculator", "84")
    second = model.requests[1]
    assert "Action:" in second[0]["content"]  # the text protocol's system prompt
    # the own-format call is shown as the text protocol writes it, then its observation
    assert second[-2:] == [
        {
            "role": "assistant",
            "content": 'Action: calculator\nAction Input: {"expression": "12 * 7"}',
        },
        {"role": "user", "content": "Observation: 84"},
    ]
    assert "<tool_call>" not in json.dumps(second)


def test_each_phase_carries_its_own_grammar() -> None:
    model = ScriptedModel([CALL, "Final Answer: 84"])
    Agent(model, protocol=own_first()).run(QUESTION)
    first, second = (o["grammar"] for o in model.options)
    assert matches(first, CALL) and matches(first, "84 is the product.")
    final = "Thought: I now know the final answer.\nFinal Answer: 84"
    assert matches(second, final) and not matches(second, CALL)


def test_a_labelled_text_reply_at_the_first_decision_is_read_as_written() -> None:
    """A model that writes the ReAct format anyway (no grammar to hold it) is not taken to
    have answered with the words "Action: ..."."""
    model = ScriptedModel(
        ['Thought: compute it.\nAction: calculator\nAction Input: {"expression": "12 * 7"}',
         "Final Answer: 84"],
    )  # fmt: skip
    result = Agent(model, protocol=OwnFirstProtocol(template=QWEN, constrain=False)).run(QUESTION)
    assert result.answer == "84" and result.steps[0].tool == "calculator"


def test_an_unreadable_call_at_the_first_decision_is_explained_in_the_models_format() -> None:
    model = ScriptedModel(["<tool_call>\n{not json", CALL, "Final Answer: 84"])
    result = Agent(model, protocol=own_first()).run(QUESTION)
    assert result.answer == "84" and result.steps[0].is_error
    explained = model.requests[1][-1]["content"]
    assert '<tool_call>\n{"name": "calculator", "arguments": {"expression":' in explained
    assert "Action:" not in model.requests[1][0]["content"]  # still asked in the own format


def test_a_model_without_a_tool_format_is_refused_at_construction() -> None:
    with pytest.raises(ConfigError, match="no tool format"):
        OwnFirstProtocol(template=SMOLLM2)


def test_own_first_on_the_command_line_reads_the_template_from_the_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    props = {"chat_template": QWEN, "default_generation_settings": {}, "total_slots": 1}
    replies = [Reply(body=chat_completion(CALL)), Reply(body=chat_completion("Final Answer: 84"))]
    with FakeServer(replies, props=props) as server:
        argv = ["run", QUESTION, "--base-url", server.base_url, "--model", "m"]
        assert main([*argv, "--protocol", "own-first", "--json"]) == EXIT_OK
        sent = [p.body for p in server.posts]
    printed = json.loads(capsys.readouterr().out)
    assert (printed["protocol"], printed["answer"], printed["steps"][0]["tool"]) == (
        "own-first",
        "84",
        "calculator",
    )
    assert sent[0]["stop"] == ["<tool_response>"] and "\nObservation:" in sent[1]["stop"]
    with FakeServer([], props={"chat_template": SMOLLM2}) as server:
        argv = ["run", QUESTION, "--base-url", server.base_url, "--model", "m"]
        assert main([*argv, "--protocol", "own-first"]) == EXIT_USAGE
    assert "no tool format" in capsys.readouterr().err


def test_the_client_reads_the_template_once_for_the_choice() -> None:
    props = {"chat_template": QWEN, "default_generation_settings": {}, "total_slots": 1}
    with FakeServer([], props=props) as server:
        model = OpenAICompatModel("fake-model", server.base_url)
        agent = Agent(model, protocol="own-first")
    assert agent.protocol.name == "own-first"
    assert agent.protocol.own.family.name == "hermes"
