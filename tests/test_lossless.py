"""A repair keeps what the model wrote, or the call is refused: never a value it did not write.
A number with a fraction or an exponent given for a string (`1.10` read as the float 1.1 would
become "1.1"), a number too small for a float (`1e-400` would become 0.0), and a key set twice
are refused, alike in the text protocol and in native calls."""

from __future__ import annotations

import json
from typing import Any

import pytest

from textreact import Agent, ScriptedModel, Tool
from textreact.errors import ToolArgumentError

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"version": {"type": "string"}, "rate": {"type": "number"}},
    "required": ["version"],
}


def _tool() -> Tool:
    return Tool.from_schema("release", "Tag a release.", SCHEMA, fn=lambda **kw: repr(kw))


@pytest.mark.parametrize("written", ["1.10", "1e2", "1E+2", "2.50", "3.0", "0.1000000000000000055"])
def test_a_float_for_a_string_is_refused_not_rewritten(written: str) -> None:
    with pytest.raises(ToolArgumentError, match='"version": expected string'):
        _tool().parse_arguments(f'{{"version": {written}}}')


@pytest.mark.parametrize("written", ["7", "12345678901234567890", "-3"])
def test_an_integer_for_a_string_is_kept_exactly_as_written(written: str) -> None:
    arguments, repairs = _tool().parse_arguments_with_repairs(f'{{"version": {written}}}')
    assert arguments == {"version": written} and repairs == ("number_to_string",)


@pytest.mark.parametrize("written", ["1e-400", "-2.5e-999", "0.1e-330"])
def test_a_number_that_underflows_to_zero_is_refused(written: str) -> None:
    with pytest.raises(ToolArgumentError, match="too small"):
        _tool().parse_arguments(f'{{"version": "v", "rate": {written}}}')
    with pytest.raises(ToolArgumentError, match='"rate": expected number'):
        _tool().parse_arguments({"version": "v", "rate": written})  # and as a string


@pytest.mark.parametrize("written", ["0e-400", "0.0", "-0", "5e-324"])
def test_zero_and_the_smallest_floats_are_numbers(written: str) -> None:
    arguments = _tool().parse_arguments(f'{{"version": "v", "rate": {written}}}')
    assert arguments["rate"] == float(written)


def _run(protocol: str, raw: str) -> Any:
    call = (
        ScriptedModel.calls(("release", raw))
        if protocol == "native"
        else f"Action: release\nAction Input: {raw}"
    )
    answer = "done" if protocol == "native" else "Final Answer: done"
    return Agent(ScriptedModel([call, answer]), [_tool()], protocol=protocol).run("Tag it")


@pytest.mark.parametrize("protocol", ["text", "native"])
@pytest.mark.parametrize(
    "raw",
    [
        '{"version": "1.0", "version": "2.0"}',
        '{"version": "1.0", "rate": 1, "rate": 2}',
        '{"version": 1.10}',
        '{"version": "v", "rate": 1e-400}',
    ],
)
def test_every_protocol_refuses_the_same_inputs(protocol: str, raw: str) -> None:
    result = _run(protocol, raw)
    turn = result.steps[0]
    assert turn.is_error and "'version':" not in (turn.observation or "")  # the tool never ran
    assert turn.result is None or turn.result.error_kind == "arguments"  # None: a format error


@pytest.mark.parametrize("protocol", ["text", "native"])
def test_every_protocol_runs_a_clean_call(protocol: str) -> None:
    result = _run(protocol, json.dumps({"version": "1.10", "rate": 0.5}))
    assert "'version': '1.10'" in (result.steps[0].observation or "")


@pytest.mark.parametrize(
    "completion",
    [
        "Action: release(version='v', rate=1e-400)",
        "Action: release\nAction Input: version='v', rate=1e-400",
        "Action: release\nAction Input: version='v', rate=-5e-999",
    ],
)
def test_call_syntax_never_turns_an_underflow_into_zero(completion: str) -> None:
    """The text stays as written (a plain string, as for `1e999`), never a rate of 0.0."""
    result = Agent(ScriptedModel([completion, "Final Answer: done"]), [_tool()]).run("Tag it")
    turn = result.steps[0]
    assert turn.result is not None and "rate" not in turn.result.arguments
    assert "'rate': 0.0" not in (turn.observation or "")


def test_call_syntax_keeps_small_numbers_that_a_float_holds() -> None:
    result = Agent(
        ScriptedModel(["Action: release(version='v', rate=1e-300)", "Final Answer: done"]),
        [_tool()],
    ).run("Tag it")
    assert "'rate': 1e-300" in (result.steps[0].observation or "")
