"""Schema keywords in parse_arguments: numbers of any size turned into text exactly, the
numeric, length and item-count bounds, and `pattern` matched by `regex` under a time limit."""

from __future__ import annotations

import sys
from typing import Annotated

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from textreact.errors import ToolArgumentError
from textreact.tools import Tool, builtin_tools, tool

CALCULATOR, FACTS = builtin_tools()


def _tool(properties: dict, required: list[str] | None = None, **options) -> Tool:
    schema = {"type": "object", "properties": properties, "required": required or []}
    return Tool.from_schema("t", "Use it.", schema, **options)


def _problems(t: Tool, raw) -> list[str]:
    with pytest.raises(ToolArgumentError) as caught:
        t.parse_arguments(raw)
    lines = str(caught.value).splitlines()
    assert lines[0] == f"Invalid Action Input for {t.name}:"
    assert lines[-1].startswith("Correct example: ")
    return [line.removeprefix("- ") for line in lines[1:-1]]


# --- finding 1: a number too large for a float becomes text, exactly ---------------------------


def test_a_bare_400_digit_number_is_the_expression_as_written() -> None:
    raw = "1" + "0" * 400
    assert CALCULATOR.parse_arguments_with_repairs(raw) == (
        {"expression": raw},
        ("bare_value", "number_to_string"),
    )


def test_a_400_digit_number_inside_json_is_kept_digit_for_digit() -> None:
    raw = '{"expression": 1' + "0" * 400 + "}"
    assert CALCULATOR.parse_arguments_with_repairs(raw) == (
        {"expression": "1" + "0" * 400},
        ("number_to_string",),
    )


def test_a_309_digit_query_from_a_program_is_its_digits() -> None:
    assert FACTS.parse_arguments({"query": int("9" * 309)}) == {"query": "9" * 309}


def test_an_integer_past_pythons_digit_limit_is_refused_by_name() -> None:
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(4300)
    try:
        problems = _problems(FACTS, {"query": 10**5000})
    finally:
        sys.set_int_max_str_digits(limit)
    assert problems == ['"query": expected string, received an integer of 16610 bits (an integer)']


@given(st.integers(min_value=-(10**1000), max_value=10**1000))
def test_any_integer_given_for_text_is_its_decimal_digits(number: int) -> None:
    assert FACTS.parse_arguments({"query": number}) == {"query": str(number)}
    assert CALCULATOR.parse_arguments(str(number)) == {"expression": str(number)}


# --- finding 3: bounds and counts --------------------------------------------------------------


BOUNDED = _tool(
    {
        "p": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "old": {"type": "integer", "minimum": 1, "exclusiveMinimum": True, "maximum": 9,
                "exclusiveMaximum": True},
        "step": {"type": "number", "multipleOf": 0.1},
        "five": {"type": "integer", "multipleOf": 5},
        "code": {"type": "string", "minLength": 3, "maxLength": 5},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 3},
    },
    ["p"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"p": 0}, '"p": expected a number > 0, received 0 (an integer)'),
        ({"p": 1.0}, '"p": expected a number < 1, received 1.0 (a number)'),
        ({"p": 0.5, "old": 1}, '"old": expected a number > 1, received 1 (an integer)'),
        ({"p": 0.5, "old": 9}, '"old": expected a number < 9, received 9 (an integer)'),
        ({"p": 0.5, "step": 0.35}, '"step": expected a multiple of 0.1, received 0.35 (a number)'),
        ({"p": 0.5, "five": 12}, '"five": expected a multiple of 5, received 12 (an integer)'),
        ({"p": 0.5, "code": "ab"}, '"code": expected at least 3 characters, received "ab" (a '
         "string)"),
        ({"p": 0.5, "code": "abcdef"}, '"code": expected at most 5 characters, received "abcdef" '
         "(a string)"),
        ({"p": 0.5, "tags": ["a"]}, '"tags": expected an array of at least 2 items, received '
         '["a"] (an array)'),
        ({"p": 0.5, "tags": list("abcd")}, '"tags": expected an array of at most 3 items, '
         'received ["a", "b", "c", "d"] (an array)'),
    ],
)  # fmt: skip
def test_each_bound_is_checked_and_named(raw: dict, problem: str) -> None:
    assert _problems(BOUNDED, raw) == [problem]


def test_values_inside_the_bounds_pass_unchanged() -> None:
    raw = {"p": 0.999, "old": 2, "step": 0.3, "five": -15, "code": "abc", "tags": ["a", "b"]}
    assert BOUNDED.parse_arguments_with_repairs(raw) == (raw, ())
    assert BOUNDED.parse_arguments({"p": "0.5", "step": "1e3"}) == {"p": 0.5, "step": 1000.0}


def test_a_multiple_is_decided_in_decimal_as_written() -> None:
    t = _tool({"x": {"type": "number", "multipleOf": 0.01}})
    for value in (0.07, 1.1, 19.99, 1e300, -0.3):  # 0.07 / 0.01 == 7.000000000000001 in binary
        assert t.parse_arguments({"x": value}) == {"x": value}
    assert _problems(t, {"x": 0.005}) == [
        '"x": expected a multiple of 0.01, received 0.005 (a number)'
    ]


@pytest.mark.parametrize(
    ("spec", "example"),
    [
        ({"type": "integer", "exclusiveMinimum": 1}, 2),
        ({"type": "integer", "minimum": 7, "multipleOf": 5}, 10),
        ({"type": "number", "exclusiveMinimum": 0.5, "exclusiveMaximum": 0.75}, 0.625),
        ({"type": "number", "multipleOf": 0.25, "minimum": 0.6}, 0.75),
        ({"type": "integer", "minimum": 1, "exclusiveMinimum": True}, 2),
        ({"type": "array", "items": {"type": "integer"}, "minItems": 10}, [1] * 10),
        ({"type": "array", "items": {"type": "integer"}, "maxItems": 0}, []),
        ({"type": "string", "minLength": 12}, "x" * 12),
    ],
)
def test_the_made_up_example_fits_the_new_checks(spec: dict, example) -> None:
    assert _tool({"v": spec}, ["v"]).example == {"v": example}


@pytest.mark.parametrize(
    ("spec", "example"),
    [
        ({"type": "number", "exclusiveMaximum": 10**400}, 0.5),
        ({"type": "integer", "minimum": -(10**400), "maximum": 10**400}, 1),
    ],
)
def test_an_integer_bound_past_any_float_is_read_exactly_for_the_example(spec, example) -> None:
    # The example's numbers read the bounds as validation does (`schema.bounds`), exactly: a
    # 401-digit bound made an OverflowError when they were read through a float.
    t = _tool({"v": spec}, ["v"])
    assert t.example == {"v": example}
    assert t.parse_arguments({"v": 2}) == {"v": 2}


# --- finding 4: patterns by `regex`, bounded ----------------------------------------------------


@tool
def tagged(q: str, tag: Annotated[str | None, Field(pattern=r"^\p{L}+$")] = None) -> str:
    """Use this to search by tag."""
    return f"{q}:{tag}"


def test_a_unicode_property_pattern_works_as_pydantic_reads_it() -> None:
    assert tagged.parse_arguments('{"q":"x","tag":"abc"}') == {"q": "x", "tag": "abc"}
    assert tagged.parse_arguments({"q": "x", "tag": "日本"}) == {"q": "x", "tag": "日本"}
    assert _problems(tagged, {"q": "x", "tag": "ab1"}) == [
        r'"tag": expected text matching the pattern ^\p{L}+$, received "ab1" (a string)'
    ]


@tool(example={"tag": "aaa"})
def nested(tag: Annotated[str, Field(pattern="^(a+)+$")]) -> str:
    """Use this with a tag of a's."""
    return tag


def test_the_audits_backtracking_pattern_answers_at_once() -> None:
    # `re` took 1.7 s at 24 a's and 4.5 times longer for every 2 more; this is 200.
    assert _problems(nested, {"tag": "a" * 200 + "!"}) == [
        f'"tag": expected text matching the pattern ^(a+)+$, received "{"a" * 59}... (a string)'
    ]
    assert nested.parse_arguments({"tag": "a" * 200}) == {"tag": "a" * 200}


#: Backtracks in `regex` too: 2 ** 40 steps on 40 a's and a "!".
SLOW = "^(a|a)*$"


def test_a_pattern_that_runs_out_of_time_is_left_to_pydantic() -> None:
    @tool(example={"tag": "aa"})
    def slow(tag: Annotated[str, Field(pattern=SLOW)]) -> str:
        """Use this with a tag."""
        return tag

    (problem,) = _problems(slow, {"tag": "a" * 40 + "!"})
    assert problem.startswith("tag: String should match pattern '^(a|a)*$'")  # pydantic's
    assert slow.parse_arguments_with_repairs({"tag": "a" * 40}) == ({"tag": "a" * 40}, ())


def test_a_pattern_that_runs_out_of_time_is_left_to_a_schema_tool_and_noted() -> None:
    t = _tool({"tag": {"type": "string", "pattern": SLOW}}, ["tag"], example={"tag": "aa"})
    assert t.parse_arguments_with_repairs({"tag": "a" * 40 + "!"}) == (
        {"tag": "a" * 40 + "!"},
        ("pattern_unchecked",),
    )
    assert _problems(t, {"tag": "b"}) == [
        '"tag": expected text matching the pattern ^(a|a)*$, received "b" (a string)'
    ]


def test_the_time_for_patterns_is_shared_by_all_values_of_one_input() -> None:
    t = _tool(
        {"tags": {"type": "array", "items": {"type": "string", "pattern": SLOW}}},
        ["tags"],
        example={"tags": ["a"]},
    )
    tags = [f"{'a' * 40}!{i}" for i in range(100)]  # hours each, if each had its own limit
    assert t.parse_arguments_with_repairs({"tags": tags}) == (
        {"tags": tags},
        ("pattern_unchecked",),
    )


@pytest.mark.parametrize("pattern", ["(unclosed", "a{99999999999}", "x\\", r"\d{2,1}"])
def test_a_pattern_that_does_not_compile_is_left_to_the_tool(pattern: str) -> None:
    t = _tool({"tag": {"type": "string", "pattern": pattern}}, ["tag"])
    assert t.example == {"tag": "<tag>"}
    assert t.parse_arguments_with_repairs({"tag": "x"}) == ({"tag": "x"}, ("pattern_unchecked",))
