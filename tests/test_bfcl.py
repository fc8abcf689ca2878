"""The BFCL single-call scorer, checked against BFCL's own ground truth (every first possible
answer must pass; a wrong name, a missing parameter, a wrong value must not), and a BFCL entry
run through both protocols against the fake server."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import SHARED_DATA
from fakeserver import FakeServer, Reply, chat_completion

from textreact.compare.bfcl import Entry, check_call, load_bfcl, standardize
from textreact.compare.runner import run_compare
from textreact.errors import ConfigError
from textreact.models.openai_compat import OpenAICompatModel

BFCL = SHARED_DATA / "bfcl"
FILES = ["BFCL_v4_simple_python.json", "BFCL_v4_multiple.json"]


def shared(name: str) -> Path:
    path = BFCL / name
    if not path.is_file():
        pytest.skip(f"BFCL sample data not found at {path} (kept outside the project)")
    return path


def first_value(values: list, required: bool) -> Any:
    """The first possible value, built out for dicts; "" (leave out) unless required (BFCL's
    simple_python_200 lists "" first for a required parameter)."""
    value = values[0] if values[0] != "" or not required else next(v for v in values if v != "")
    if isinstance(value, dict):
        return {k: first_value(v, False) for k, v in value.items() if v[0] != ""}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [{k: first_value(v, False) for k, v in d.items() if v[0] != ""} for d in value]
    return value


def reference_call(entry: Entry) -> tuple[str, dict[str, Any]]:
    [(name, possible)] = entry.ground_truth[0].items()
    schema = next(f for f in entry.functions if f["name"] == name)["parameters"]
    required = set(schema.get("required", []))
    arguments = {
        param: first_value(values, param in required)
        for param, values in possible.items()
        if values[0] != "" or param in required
    }
    return name, arguments


@pytest.mark.parametrize("name", FILES)
def test_every_ground_truth_scores_correct(name: str) -> None:
    entries = load_bfcl(shared(name))
    failures = [(e.id, check_call(e, *reference_call(e))) for e in entries]
    assert [f for f in failures if not f[1].valid] == []


@pytest.mark.parametrize("name", FILES)
def test_wrong_name_missing_parameter_and_wrong_value_fail(name: str) -> None:
    for entry in load_bfcl(shared(name)):
        function, arguments = reference_call(entry)
        assert check_call(entry, function + "_x", arguments).error_type == "wrong_func_name"
        assert check_call(entry, None, None).error_type == "wrong_count"
        schema = next(f for f in entry.functions if f["name"] == function)["parameters"]
        for param in schema.get("required", []):
            missing = {k: v for k, v in arguments.items() if k != param}
            assert check_call(entry, function, missing).error_type == "missing_required"
        extra = {**arguments, "no_such_param": 1}
        assert check_call(entry, function, extra).error_type == "unexpected_param"
        [(_, possible)] = entry.ground_truth[0].items()
        for param, value in arguments.items():
            wrong = _wrong(value, possible[param])
            if wrong is not None:
                verdict = check_call(entry, function, {**arguments, param: wrong})
                assert not verdict.valid, (entry.id, param, wrong)


def _wrong(value: Any, possible: list) -> Any:
    """A value of the same type that none of the possible answers allows, where easy to make."""
    if isinstance(value, bool):
        return None if (not value) in possible else (not value)
    if isinstance(value, (int, float)):
        return value + 7919
    if isinstance(value, str):
        return value + " zzqx"
    return None


SIMPLE = Entry(
    id="simple_python_0",
    messages=({"role": "user", "content": "Area of a triangle, base 10 and height 5.5?"},),
    functions=(
        {
            "name": "geometry.area",
            "description": "Area of a triangle.",
            "parameters": {
                "type": "dict",
                "properties": {
                    "base": {"type": "integer", "description": "base"},
                    "height": {"type": "float", "description": "height"},
                    "unit": {"type": "string", "description": "unit"},
                    "dims": {"type": "array", "items": {"type": "integer"}, "description": "d"},
                },
                "required": ["base", "height"],
            },
        },
    ),
    ground_truth=(
        {
            "geometry.area": {
                "base": [10],
                "height": [5.0, 5.5],
                "unit": ["Square-Meters", ""],
                "dims": [[1, 2], ""],
            }
        },
    ),
)


@pytest.mark.parametrize(
    ("arguments", "valid", "error_type"),
    [
        ({"base": 10, "height": 5}, True, ""),  # an int is accepted where a float is expected
        ({"base": 10.0, "height": 5.5}, False, "type_error"),  # a float is no int
        ({"base": 10, "height": 5.5, "unit": "square meters"}, True, ""),
        ({"base": 10, "height": 5.5, "unit": "SQUARE_meters."}, True, ""),
        ({"base": 10, "height": 5.5, "unit": "square feet"}, False, "value_error:string"),
        ({"base": 10, "height": 5.5, "dims": [1, 2]}, True, ""),
        ({"base": 10, "height": 5.5, "dims": [2, 1]}, False, "value_error:list/tuple"),
        ({"base": "10", "height": 5.5}, False, "type_error"),
        ({"base": 11, "height": 5.5}, False, "value_error:others"),
    ],
)
def test_bfcl_rules(arguments: dict, valid: bool, error_type: str) -> None:
    verdict = check_call(SIMPLE, "geometry.area", arguments)
    assert (verdict.valid, verdict.error_type) == (valid, error_type)


def test_an_optional_parameter_without_a_blank_answer_must_be_given() -> None:
    entry = copy.deepcopy(SIMPLE)
    entry.ground_truth[0]["geometry.area"]["unit"] = ["meters"]
    verdict = check_call(entry, "geometry.area", {"base": 10, "height": 5.5})
    assert verdict.error_type == "missing_optional"


def test_standardize_follows_bfcl() -> None:
    assert standardize("April 1, 2024") == standardize("april 1,2024") == "april12024"
    assert standardize("it's a-b_c*d^e/f.") == 'it"sabcdef'


def _write(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


QUESTION = {
    "id": "simple_python_0",
    "question": [[{"role": "user", "content": SIMPLE.messages[0]["content"]}]],
    "function": list(SIMPLE.functions),
}
ANSWER = {"id": "simple_python_0", "ground_truth": list(SIMPLE.ground_truth)}


@pytest.mark.parametrize("layout", ["possible_answer_{}", "possible_answer/{}"])
def test_answers_are_found_beside_the_questions(tmp_path: Path, layout: str) -> None:
    questions = _write(tmp_path / "BFCL_v4_simple_python.json", [QUESTION])
    _write(tmp_path / layout.format(questions.name), [ANSWER])
    [entry] = load_bfcl(questions)
    assert entry.ground_truth == SIMPLE.ground_truth and entry.question == SIMPLE.question


def test_missing_answers_and_multi_turn_categories_are_config_errors(tmp_path: Path) -> None:
    questions = _write(tmp_path / "q.json", [QUESTION])
    with pytest.raises(ConfigError, match="--answers"):
        load_bfcl(questions)
    turns = _write(tmp_path / "m.json", [{**QUESTION, "id": "multi_turn_base_3"}])
    with pytest.raises(ConfigError, match="cannot score"):
        load_bfcl(turns, _write(tmp_path / "a.json", [{**ANSWER, "id": "multi_turn_base_3"}]))


def _native_call(name: str, arguments: dict) -> Reply:
    body = chat_completion(None, finish_reason="tool_calls")
    body["choices"][0]["message"]["tool_calls"] = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
    ]
    return Reply(body=body)


def test_an_entry_runs_through_both_protocols_and_records_the_first_call() -> None:
    text = 'Action: geometry.area\nAction Input: {"base": 10, "height": 5.5}'
    replies = [
        Reply(body=chat_completion(text)),
        _native_call("geometry_area", {"base": 10, "height": 6}),  # the API-safe name
    ]
    with FakeServer(replies) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        report = run_compare(model, [SIMPLE])
        assert len(server.posts) == 2  # one model call each: no tool is executed
    by_protocol = {o.protocol: o for o in report.outcomes}
    text_run, native_run = by_protocol["text"], by_protocol["native"]
    assert text_run.calls == ({"tool": "geometry.area", "arguments": {"base": 10, "height": 5.5}},)
    assert text_run.success
    assert native_run.calls[0]["tool"] == "geometry.area"
    assert native_run.check.error_type == "value_error:others"
    assert not native_run.success


def test_irrelevance_is_right_only_with_an_answer_and_no_call(tmp_path: Path) -> None:
    """No function fits: an answer without a call is right, a call is wrong, and a reply that
    never came (a server error, a cut reply) is no answer at all, not a right "no call"."""
    entry = {**QUESTION, "id": "irrelevance_0"}
    [irrelevant] = load_bfcl(_write(tmp_path / "BFCL_v4_irrelevance.json", [entry]))
    assert irrelevant.ground_truth == ()
    call = 'Action: geometry.area\nAction Input: {"base": 10, "height": 5}'
    replies = [
        Reply(body=chat_completion("No function here computes that.")),
        Reply(body=chat_completion(call)),
        Reply(body=chat_completion("It is", finish_reason="length")),
    ]
    with FakeServer(replies) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        report = run_compare(model, [irrelevant] * 3, protocols=["text"])
    assert [o.success for o in report.outcomes] == [True, False, False]
    assert report.outcomes[2].check.error_type == "no_answer"
