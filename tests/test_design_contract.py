"""The public names that DESIGN.md promises to outside callers, exercised the way they would be.
If one of these tests has to change, the contract changed: say so in the CHANGELOG."""

from __future__ import annotations

import json

import pytest

import textreact
from textreact.cli import main


def test_parse_from_both_places_returns_steps_with_kinds():
    from textreact.parser import parse

    assert parse is textreact.parse
    action = parse('Thought: t\nAction: calculator\nAction Input: {"expression": "1+2"}')
    assert (action.kind, action.tool, action.input, action.thought) == (
        "action",
        "calculator",
        {"expression": "1+2"},
        "t",
    )
    plain = parse("Action: search\nAction Input: cats")
    assert plain.kind == "action" and plain.input == "cats"
    final = parse("Thought: done\nFinal Answer: 42")
    assert (final.kind, final.answer, final.thought) == ("final", "42", "done")
    error = parse("")
    assert error.kind == "error" and error.message and error.hint


def test_calculator_and_fact_lookup():
    from textreact.tools.calculator import CalculatorError, evaluate
    from textreact.tools.facts import lookup_fact

    assert evaluate("2602000 / 8336000") == pytest.approx(0.3121401151631478)
    assert issubclass(CalculatorError, ValueError)
    with pytest.raises(CalculatorError, match="not allowed"):
        evaluate("__import__('os')")
    assert "2602000" in lookup_fact("台北人口")
    assert "8336000" in lookup_fact("population of New York")
    assert "299792458" in lookup_fact("speed of light")
    assert lookup_fact("population of Atlantis").startswith("unknown:")


def test_tools_and_argument_errors():
    from textreact.errors import ToolArgumentError
    from textreact.tools import builtin_tools

    calculator, lookup = builtin_tools()
    assert (calculator.name, lookup.name) == ("calculator", "lookup_fact")
    assert calculator.parse_arguments('{"expression": "1+2"}') == {"expression": "1+2"}
    assert calculator.parse_arguments({"expression": "1+2"}) == {"expression": "1+2"}
    assert issubclass(ToolArgumentError, ValueError)
    with pytest.raises(ToolArgumentError, match="expression"):
        calculator.parse_arguments('{"expression": 1, "other": 2}')

    @textreact.tool
    def shout(text: str) -> str:
        """Use this to shout.

        Args:
            text: what to shout
        """
        return text.upper()

    assert isinstance(shout, textreact.Tool) and shout.name == "shout"
    schema = {"type": "dict", "properties": {"n": {"type": "float"}}, "required": ["n"]}
    bfcl = textreact.Tool.from_schema("math.sqrt", "Square root.", schema)
    assert bfcl.name == "math.sqrt" and bfcl.parse_arguments('{"n": "4"}') == {"n": 4.0}


def test_agent_run_result_shape():
    from textreact.models.scripted import ScriptedModel

    model = ScriptedModel(
        [
            'Thought: t\nAction: Calculator\nAction Input: {"expression": "6*7",}',
            "Thought: done\nFinal Answer: 42",
        ]
    )
    result = textreact.Agent(model=model, tools=textreact.builtin_tools(), max_steps=4).run("q")
    assert result.answer == "42" and result.stop_reason == "final_answer"
    assert result.steps[0].tool == "calculator"
    assert result.steps[0].input == {"expression": "6*7"}
    assert isinstance(result.messages, list) and result.usage is not None
    assert all(set(m) == {"role", "content"} for request in model.requests for m in request)
    with pytest.raises(textreact.ModelError):
        model.complete([{"role": "user", "content": "again"}])


def test_openai_compat_model_signature():
    from textreact.models import OpenAICompatModel

    model = OpenAICompatModel("m", "http://127.0.0.1:9/v1", None)
    assert model.model == "m" and model.base_url == "http://127.0.0.1:9/v1"


def test_cli_run_json_fields(capsys):
    from fakeserver import FakeServer, Reply, chat_completion

    with FakeServer([Reply(body=chat_completion("Final Answer: 7"))]) as server:
        code = main(["run", "q", "--base-url", server.base_url, "--model", "m", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {"answer", "stop_reason", "steps", "usage"} <= set(data)
