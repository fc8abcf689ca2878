"""Every BFCL function schema converts, renders for all three targets, and accepts its
ground-truth call as a dict, as JSON text and as Python-literal text."""

from __future__ import annotations

import json

import pytest
from conftest import SHARED_DATA

from textreact.tools import Tool

BFCL = SHARED_DATA / "bfcl"
CATEGORIES = ("BFCL_v4_simple_python", "BFCL_v4_multiple")

pytestmark = pytest.mark.skipif(
    not BFCL.is_dir(), reason=f"BFCL sample data not found at {BFCL} (kept outside the project)"
)


def _cases() -> list[tuple[str, dict, dict]]:
    """(id, function definition, ground-truth arguments) for every entry."""
    cases = []
    for category in CATEGORIES:
        questions = {}
        with open(BFCL / f"{category}.json", encoding="utf-8") as lines:
            for line in lines:
                entry = json.loads(line)
                questions[entry["id"]] = {f["name"]: f for f in entry["function"]}
        with open(BFCL / f"possible_answer_{category}.json", encoding="utf-8") as lines:
            for line in lines:
                answer = json.loads(line)
                for call in answer["ground_truth"]:
                    for name, arguments in call.items():
                        function = questions[answer["id"]][name]
                        cases.append((answer["id"], function, _first_values(function, arguments)))
    return cases


def _first_values(function: dict, arguments: dict) -> dict:
    """The first acceptable value of each parameter; "" means "may be omitted"."""
    required = function["parameters"].get("required", [])
    chosen = {}
    for name, values in arguments.items():
        usable = [v for v in values if v != ""] if name in required else values
        if usable and usable[0] != "":
            chosen[name] = _first_nested(usable[0])
    return chosen


def _first_nested(value: object) -> object:
    """Nested objects list the acceptable values of each field too."""
    if isinstance(value, list):
        return [_first_nested(item) for item in value]
    if not isinstance(value, dict):
        return value
    return {k: _first_nested(v[0]) for k, v in value.items() if isinstance(v, list) and v[0] != ""}


def _functions() -> list[dict]:
    seen: dict[tuple[str, str], dict] = {}
    for category in CATEGORIES:
        with open(BFCL / f"{category}.json", encoding="utf-8") as lines:
            for line in lines:
                for function in json.loads(line)["function"]:
                    seen[(function["name"], json.dumps(function, sort_keys=True))] = function
    return list(seen.values())


def _tool(function: dict) -> Tool:
    return Tool.from_schema(function["name"], function["description"], function["parameters"])


@pytest.fixture(scope="module")
def cases() -> list[tuple[str, dict, dict]]:
    return _cases()


def test_every_schema_converts_and_renders() -> None:
    functions = _functions()
    assert len(functions) > 550
    for function in functions:
        tool = _tool(function)
        text = tool.text_spec()
        assert text.startswith(f"{function['name']}: ")
        assert all(f"  {name} (" in text for name in function["parameters"]["properties"])
        assert "Example input: {" in text
        openai = tool.openai_spec()["function"]
        assert openai["name"] == function["name"].replace(".", "_")
        assert openai["parameters"]["type"] == "object"
        assert tool.anthropic_spec()["input_schema"] is tool.parameters
        assert '"dict"' not in json.dumps(tool.parameters)
        assert tool.parse_arguments(dict(tool.example)) == tool.example


def test_every_ground_truth_call_validates_as_dict_json_and_python_literal(cases) -> None:
    assert len(cases) >= 600
    for case_id, function, arguments in cases:
        tool = _tool(function)
        for raw in (arguments, json.dumps(arguments), repr(arguments)):
            parsed = tool.parse_arguments(raw)
            assert parsed.keys() == arguments.keys(), case_id
            for name, value in arguments.items():
                assert parsed[name] == value, (case_id, name, raw)


def test_ground_truth_with_values_as_strings_is_coerced_back(cases) -> None:
    """A model that quotes every number and boolean still gets through, with the types fixed."""
    coerced = 0
    for case_id, function, arguments in cases:
        tool = _tool(function)
        quoted = {
            name: json.dumps(value) if isinstance(value, (bool, int, float)) else value
            for name, value in arguments.items()
        }
        if quoted == arguments:
            continue
        parsed, repairs = tool.parse_arguments_with_repairs(quoted)
        assert parsed == arguments, case_id
        assert set(repairs) <= {"string_to_integer", "string_to_number", "string_to_boolean"}
        coerced += 1
    assert coerced > 300


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_every_example_shows_schema_values_or_a_named_placeholder() -> None:
    """No `"text"` a model copies as data: each string of each example is the schema's own
    (enum, default, a value its description gives) or the parameter's name in angle brackets."""
    from_schema = 0
    for function in _functions():
        tool = _tool(function)
        schema_text = json.dumps(tool.parameters, ensure_ascii=False)
        for value in _strings(dict(tool.example)):
            assert value != "text", tool.name
            if value.startswith("<") and value.endswith(">"):
                continue
            assert value in schema_text or value in _FORMAT_VALUES, (tool.name, value)
            from_schema += 1
    assert from_schema > 150


_FORMAT_VALUES = ("2024-01-31", "2024-01-31T12:00:00Z")


def test_every_example_is_a_call_its_own_grammar_allows() -> None:
    """Offline, with the recogniser; the server's own acceptance is in test_constrain."""
    from textreact.constrain import matches, tools_grammar
    from textreact.grammar import render_step
    from textreact.steps import Action

    for function in _functions():
        tool = _tool(function)
        text = tools_grammar([tool], tool_choice="required")
        step = render_step(Action(tool=tool.name, input=dict(tool.example), thought="Call it."))
        assert matches(text, step), (tool.name, step)
        wrong = render_step(Action(tool=tool.name, input={"not_a_parameter": 1}, thought="x"))
        assert not matches(text, wrong), tool.name
