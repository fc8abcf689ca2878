"""`protocol="auto"`: the protocol a model gets is chosen from its chat template (real ones,
tests/templates/), read from a loopback server as the client reads it, and the Result and
`--json` say which protocol ran and why."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeServer, Reply, chat_completion
from test_own_format import CALL, LLAMA, MISTRAL, QUESTION, QWEN, SMOLLM2

from textreact import Agent, ScriptedModel, tool
from textreact.cli import EXIT_OK, build_parser, main
from textreact.models.openai_compat import OpenAICompatModel
from textreact.protocols import choice as protocol_choice
from textreact.protocols.choice import choose


class Templated(ScriptedModel):
    """The strict scripted model, with the chat template a server would show for it."""

    def __init__(self, replies: list[str], template: str | None) -> None:
        super().__init__(replies)
        self.template = template

    def chat_template(self) -> str | None:
        return self.template


@pytest.mark.parametrize(
    ("template", "protocol", "why"),
    [
        (QWEN, "own-first", "hermes tool format"),
        (LLAMA, "text", "llama3 tool format is not measured"),
        (MISTRAL, "text", "mistral tool format is not measured"),
        (SMOLLM2, "text", "has no tool format"),
        (None, "text", "shows no chat template"),
    ],
)
def test_the_protocol_follows_the_models_tool_format(
    template: str | None, protocol: str, why: str
) -> None:
    choice = choose(Templated([], template))
    assert choice.protocol.name == protocol and choice.reason.startswith(f"{protocol}: ")
    assert why in choice.reason


def test_a_format_taken_out_of_the_table_goes_back_to_the_text_protocol(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The table is what decides: the same template, unmeasured, keeps the text protocol."""
    monkeypatch.setattr(protocol_choice, "OWN_FAMILIES", frozenset())
    choice = choose(Templated([], QWEN))
    assert choice.protocol.name == "text" and "hermes tool format is not measured" in (
        choice.reason
    )


def test_auto_is_the_default_of_the_agent_and_of_run() -> None:
    assert Agent(Templated([], QWEN)).protocol.name == "own-first"
    assert Agent(Templated([], SMOLLM2)).protocol.name == "text"
    parsed = build_parser().parse_args(["run", QUESTION])
    assert parsed.protocol == "auto"


def test_a_model_without_a_template_to_read_gets_the_text_protocol() -> None:
    agent = Agent(ScriptedModel(["Final Answer: 4"]), protocol="auto")
    result = agent.run(QUESTION)
    assert (result.protocol, result.answer) == ("text", "4")
    assert result.protocol_reason == agent.protocol_reason and "no chat template" in (
        result.protocol_reason or ""
    )


def test_text_protocol_options_keep_the_text_protocol() -> None:
    for options in ({"examples": "built"}, {"decision_bias": 1.0}, {"examples": []}):
        agent = Agent(Templated([], QWEN), protocol="auto", **options)
        assert agent.protocol.name == "text" and "options of the text protocol" in (
            agent.protocol_reason or ""
        )


def test_a_named_protocol_is_never_second_guessed() -> None:
    for name in ("text", "native", "own"):
        agent = Agent(Templated([], QWEN), protocol=name)
        assert agent.protocol.name == name and agent.protocol_reason is None


def test_auto_reads_the_template_from_the_server_and_says_why_in_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    props = {"chat_template": QWEN, "default_generation_settings": {}, "total_slots": 1}
    replies = [Reply(body=chat_completion(CALL)), Reply(body=chat_completion("84"))]
    with FakeServer(replies, props=props) as server:
        argv = ["run", QUESTION, "--base-url", server.base_url, "--model", "m", "--json"]
        assert main(argv) == EXIT_OK
        first = server.posts[0].body
    printed = json.loads(capsys.readouterr().out)
    assert (printed["protocol"], printed["answer"], printed["steps"][0]["tool"]) == (
        "own-first",
        "84",
        "calculator",
    )
    assert "hermes" in printed["protocol_reason"] and "tools" not in first


def test_a_server_that_shows_no_template_runs_the_text_protocol() -> None:
    with FakeServer([Reply(body=chat_completion("Final Answer: 84"))], props=None) as server:
        agent = Agent(OpenAICompatModel("m", server.base_url), protocol="auto")
        result = agent.run(QUESTION)
    assert (result.protocol, result.answer) == ("text", "84")


@tool
def get_weather(city: str) -> str:
    """The weather in a city now."""
    return f"18 C in {city}"


def _opening(server: FakeServer) -> str:
    return "\n".join(str(m["content"]) for m in server.posts[0].body["messages"])


def test_where_no_grammar_holds_the_calls_the_examples_are_built_from_the_offered_tools() -> None:
    """A server that takes no grammar (it shows no /props, as OpenAI, DeepSeek and Ollama do
    not): the bundled example's tools, which the request does not offer, are never shown; with
    the built-in tools, the bundled example is theirs and stays."""
    answer = [Reply(body=chat_completion("Final Answer: 18 C"))]
    with FakeServer(answer, props=None) as server:
        agent = Agent(OpenAICompatModel("m", server.base_url), [get_weather], protocol="auto")
        result = agent.run("What is the weather in Paris?")
        opening = _opening(server)
    assert (result.protocol, result.answer) == ("text", "18 C")
    assert "worked examples built from the offered tools" in (result.protocol_reason or "")
    assert "lookup_fact" not in opening and "Action: get_weather" in opening
    with FakeServer(list(answer), props=None) as server:
        Agent(OpenAICompatModel("m", server.base_url), protocol="auto").run(QUESTION)
        assert "Action: lookup_fact" in _opening(server)  # the built-in tools' own example


def test_where_a_grammar_holds_the_calls_the_bundled_example_stays() -> None:
    """llama.cpp (its /props) with a template of no tool format: the grammar keeps every call
    to the offered tools, and the bundled example, which measured best there, is shown."""
    props = {"chat_template": SMOLLM2, "default_generation_settings": {}, "total_slots": 1}
    with FakeServer([Reply(body=chat_completion("Final Answer: 18 C"))], props=props) as server:
        agent = Agent(OpenAICompatModel("m", server.base_url), [get_weather], protocol="auto")
        result = agent.run("What is the weather in Paris?")
        opening = _opening(server)
    assert result.protocol_reason == "text: the model's chat template has no tool format"
    assert "Action: lookup_fact" in opening and "grammar" in server.posts[0].body
