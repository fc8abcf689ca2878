"""Tool, @tool, parse_arguments and ToolBox: specs, repairs, errors for the model, safe calls."""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
import threading
import time
from datetime import date
from typing import Annotated, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from textreact import jsonish, observation, templates
from textreact.errors import ConfigError, ToolArgumentError, ToolExampleError, WrongToolError
from textreact.parser import parse
from textreact.steps import ToolResult
from textreact.tools import Tool, ToolBox, builtin_tools, tool
from textreact.tools.schema import pointer


@tool
def convert(
    amount: Annotated[float, Field(examples=[12.5])],
    unit: Literal["km", "mile"] = "km",
    digits: int = 2,
) -> float:
    """Use this to convert a distance between kilometres and miles.

    Args:
        amount: the distance to convert,
            a plain number.
        unit (str): the unit `amount` is in.
        digits: how many decimals to keep.
    """
    factor = 1 / 1.609344 if unit == "km" else 1.609344
    return round(amount * factor, digits)


CALCULATOR, FACTS = builtin_tools()


# --- @tool -----------------------------------------------------------------------------------


def test_decorator_builds_schema_description_and_example() -> None:
    assert convert.name == "convert"
    assert convert.description == "Use this to convert a distance between kilometres and miles."
    properties = convert.parameters["properties"]
    assert properties["amount"]["description"] == "the distance to convert, a plain number."
    assert properties["unit"]["enum"] == ["km", "mile"]
    assert convert.parameters["required"] == ["amount"]
    assert "title" not in json.dumps(convert.parameters)
    assert convert.example == {"amount": 12.5}
    assert convert(10, "mile") == 16.09


def test_decorator_with_options() -> None:
    @tool(name="shout", timeout=5, example={"text": "hi"})
    def loud(text: str) -> str:
        """Use when the user wants text in capitals."""
        return text.upper()

    assert (loud.name, loud.timeout, loud.example) == ("shout", 5, {"text": "hi"})


def test_pydantic_converts_and_validates() -> None:
    assert convert.parse_arguments('{"amount": "3", "unit": "MILE"}') == {
        "amount": 3,
        "unit": "mile",
    }
    assert convert.invoke({"amount": 1, "unit": "mile"}) == 1.61


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: tool(lambda x: x), "cannot use a lambda"),
        (lambda: tool(_no_hints), "have no type hints"),
        (lambda: tool(_no_doc), "docstring"),
        (lambda: tool(_star_args), "not supported"),
        (lambda: tool(_bad_example, example={"n": "many"}), "does not fit"),
        (lambda: tool(name="has space")(_no_doc_ok), "tool name"),
    ],
)
def test_decorator_refuses_with_a_fix(build, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build()


@pytest.mark.parametrize(
    "name", ["none", "None", "NULL", "nothing", "na", "n_a", "N.A", "no_action", "No-Tool",
             "no_tool", "_none_", "nOtHiNg"],
)  # fmt: skip
def test_names_the_parser_reads_as_no_action_are_refused(name: str) -> None:
    schema = {"type": "object", "properties": {}}
    with pytest.raises(ConfigError, match=r"'no action'.*e\.g\. '" + re.escape(name) + "_tool'"):
        Tool.from_schema(name, "Use it.", schema)
    with pytest.raises(ConfigError, match="'no action'"):
        tool(name=name)(_no_doc_ok)
    suggested = Tool.from_schema(f"{name}_tool", "Use it.", schema)  # the suggestion is valid
    assert suggested.name == f"{name}_tool"


def test_a_function_named_like_no_action_is_refused_too() -> None:
    def null(a: int) -> int:
        """Use it."""
        return a

    with pytest.raises(ConfigError, match="tool name 'null'"):
        tool(null)


@pytest.mark.parametrize("word", ["none", "None", "null", "nothing", "n/a", "no action"])
def test_why_such_a_tool_could_never_be_called(word: str) -> None:
    assert parse(f"Thought: t\nAction: {word}\nAction Input: {{}}").kind != "action"


@pytest.mark.parametrize("name", ["nonesuch", "NoneType", "nothing_found", "null_check", "nan"])
def test_names_that_only_start_like_no_action_are_kept(name: str) -> None:
    assert Tool.from_schema(name, "Use it.", {"type": "object", "properties": {}}).name == name


def _no_hints(a, b):  # type: ignore[no-untyped-def]
    """Use to add."""
    return a + b


def _no_doc(a: int) -> int:
    return a


def _no_doc_ok(a: int) -> int:
    """Use it."""
    return a


def _star_args(*numbers: int) -> int:
    """Use to add many."""
    return sum(numbers)


def _bad_example(n: int) -> int:
    """Use it."""
    return n


# --- specs ------------------------------------------------------------------------------------


def test_builtin_tools() -> None:
    assert [t.name for t in builtin_tools()] == ["calculator", "lookup_fact"]
    assert CALCULATOR.parameters["required"] == ["expression"]
    assert FACTS.parameters["required"] == ["query"]
    assert CALCULATOR.example == {"expression": "(12 + 30) * 4"}
    assert "Use this" in CALCULATOR.description and "Use this" in FACTS.description


def test_text_spec_is_compact_and_complete() -> None:
    assert CALCULATOR.text_spec().splitlines() == [
        "calculator: " + CALCULATOR.description,
        "  expression (string, required): an arithmetic expression with + - * / ** and parentheses",
        '  Example input: {"expression": "(12 + 30) * 4"}',
    ]
    assert '  unit (one of "km", "mile", optional)' in convert.text_spec()


def test_native_specs() -> None:
    weird = Tool.from_schema("uber.ride", "Use to book a ride.", {"type": "dict", "properties": {}})
    assert weird.openai_spec()["function"]["name"] == "uber_ride"
    assert weird.anthropic_spec() == {
        "name": "uber_ride",
        "description": "Use to book a ride.",
        "input_schema": {"type": "object", "properties": {}},
    }


def test_bfcl_dialect_is_normalised() -> None:
    t = Tool.from_schema(
        "f",
        "Use it.",
        {
            "type": "dict",
            "properties": {
                "x": {"type": "float", "optional": True},
                "pair": {"type": "tuple", "items": {"type": "integer"}},
                "anything": {"type": "any"},
            },
            "required": ["x"],
        },
    )
    assert t.parameters["properties"] == {
        "x": {"type": "number"},
        "pair": {"type": "array", "items": {"type": "integer"}},
        "anything": {},
    }
    assert t.parse_arguments({"x": "2.5", "pair": "[1, 2]", "anything": [None]}) == {
        "x": 2.5,
        "pair": [1, 2],
        "anything": [None],
    }


def test_a_ref_is_read_as_a_json_pointer_in_a_uri_fragment() -> None:
    root = {"$defs": {"a/b": 1, "c~d": 2, "~1": 3, "e f": 4}, "list": [5, 6]}
    assert pointer("#", root) is root and pointer("#/$defs/a~1b", root) == 1
    assert pointer("#/$defs/c~0d", root) == 2 and pointer("#/$defs/~01", root) == 3
    assert pointer("#/$defs/e%20f", root) == 4 and pointer("#/list/1", root) == 6
    for nowhere in ("#/list/01", "#/list/2", "#/$defs/a/b", "#defs", "https://x/s.json", 5):
        assert pointer(nowhere, root) is None


def test_a_ref_to_the_root_is_followed_so_a_tree_is_validated_all_the_way_down() -> None:
    tree = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "child": {"$ref": "#"}},
        "required": ["name"],
    }
    walk = Tool.from_schema("walk", "Use it.", tree)
    assert walk.parse_arguments({"name": "a", "child": {"name": "b"}})["child"] == {"name": "b"}
    with pytest.raises(ToolArgumentError, match="name"):
        walk.parse_arguments({"name": "a", "child": {"child": {}}})


@pytest.mark.parametrize(
    "parameters",
    [[], {"type": "string"}, {"type": "object", "properties": {}, "required": ["missing"]}],
)
def test_bad_schemas_are_config_errors(parameters) -> None:
    with pytest.raises(ConfigError) as caught:
        Tool.from_schema("f", "Use it.", parameters)
    assert caught.value.field == "parameters"


def test_a_config_error_names_its_field_and_an_example_error_its_problems() -> None:
    with pytest.raises(ConfigError) as caught:
        Tool.from_schema("no name", "Use it.", {})
    assert caught.value.field == "name"
    # a lookahead: no example can be made from it (`^\\d{5}$` gets `00000`)
    zip_code = {
        "type": "object",
        "properties": {"zip": {"type": "string", "pattern": "^(?=9)\\d{5}$"}},
    }
    with pytest.raises(ToolExampleError) as caught:
        Tool.from_schema("f", "Use it.", {**zip_code, "required": ["zip"]})
    assert caught.value.field == "example" and '"zip": missing' in caught.value.problems


# --- parse_arguments --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected", "repairs"),
    [
        ('{"expression": "2+3"}', {"expression": "2+3"}, ()),
        ({"expression": "2+3"}, {"expression": "2+3"}, ()),
        ("2602000 / 8336000", {"expression": "2602000 / 8336000"}, ("plain_string",)),
        ('"2 * 3"', {"expression": "2 * 3"}, ("bare_value",)),
        ("15", {"expression": "15"}, ("bare_value", "number_to_string")),
        ('```json\n{"expression": "1+1"}\n```', {"expression": "1+1"}, ("code_fence",)),
        ("{'expression': '2*3',}", {"expression": "2*3"}, ("single_quotes", "trailing_comma")),
        ('{"Expression": "2*3"}', {"expression": "2*3"}, ("parameter_name",)),
        ('{"expression": "2*3"', {"expression": "2*3"}, ("truncated",)),
        ('{"expression": 7}', {"expression": "7"}, ("number_to_string",)),
    ],
)
def test_repairs_are_recorded(raw, expected: dict, repairs: tuple) -> None:
    assert CALCULATOR.parse_arguments_with_repairs(raw) == (expected, repairs)


def test_type_coercion_from_the_schema() -> None:
    t = Tool.from_schema(
        "f",
        "Use it.",
        {
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "x": {"type": "number"},
                "flag": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "note": {"type": "string"},
            },
            "required": ["n"],
        },
    )
    parsed, repairs = t.parse_arguments_with_repairs(
        {"n": "3", "x": "1e3", "flag": "True", "tags": '["a"]', "note": None}
    )
    assert parsed == {"n": 3, "x": 1000.0, "flag": True, "tags": ["a"]}
    assert set(repairs) == {
        "string_to_integer", "string_to_number", "string_to_boolean", "string_to_array",
        "drop_null",
    }  # fmt: skip
    assert t.parse_arguments({"n": 4.0}) == {"n": 4}


@pytest.mark.parametrize(
    ("raw", "fragments"),
    [
        ('{"expr": "2+3", "x": 1}', ['"expr": not a parameter', '"expression": missing']),
        ("", ['"expression": expected a non-empty string, received "" (a string)']),
        ('{"expression": "  "}', ["non-empty string"]),
        ('{"expression": [1, 2]}', ['"expression": expected string, received [1, 2] (an array)']),
        ('{"expression": NaN}', ["NaN is not a JSON number"]),
        ('{"expression": "\\ud800"}', ["lone surrogate"]),
        ('{"expression": "' + "1" * 10_001 + '"}', ["at most 10000 characters"]),
        ('{"expression": true}', ['"expression": expected string, received true (a boolean)']),
        ("{expression: 2+3}", ["not a JSON object"]),
    ],
)
def test_argument_errors_name_parameter_expected_received_and_example(raw, fragments) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        CALCULATOR.parse_arguments(raw)
    message = str(caught.value)
    assert message.startswith("Invalid Action Input for calculator:")
    assert message.endswith('Correct example: {"expression": "(12 + 30) * 4"}')
    for fragment in fragments:
        assert fragment in message


def test_numeric_errors() -> None:
    with pytest.raises(ToolArgumentError, match="a finite number"):
        convert.parse_arguments({"amount": float("inf")})
    with pytest.raises(ToolArgumentError, match="an integer of at most"):
        convert.parse_arguments({"amount": 1, "digits": 10**30})
    with pytest.raises(ToolArgumentError, match='"unit": expected one of "km", "mile"'):
        convert.parse_arguments({"amount": 1, "unit": "parsec"})


# --- argument errors in Chinese: every word the model reads in a zh run -----------------------

_ASCII_WORD = re.compile(r"[A-Za-z]{3,}")
#: What a zh argument error may quote in Latin letters besides the call's own names and values.
_ZH_QUOTABLE = {"JSON", "null"}


def _args_tool(properties: dict, required: list[str] | None = None) -> Tool:
    parameters = {"type": "object", "properties": properties, "required": required or []}
    return Tool.from_schema("pick", "Use it to pick.", parameters)


def _zh_observation(t: Tool, raw: object) -> str:
    """What the model reads, in a zh run, after calling `t` with `raw`."""
    result = ToolBox([t]).prepare(t.name, raw, "zh")
    assert isinstance(result, ToolResult) and result.error_kind == "arguments", result
    return observation.observe(result, lang="zh")


def _english_left(text: str, *quoted: object) -> set[str]:
    """The ASCII words of 3+ letters in `text` that are neither quoted from the call (its tool,
    names, values, example) nor JSON's own words."""
    allowed = _ZH_QUOTABLE | {w for q in quoted for w in _ASCII_WORD.findall(str(q))}
    return set(_ASCII_WORD.findall(text)) - allowed


_NUMBERS = {
    "n": {"type": "integer", "minimum": 1, "maximum": 9},
    "x": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 10, "multipleOf": 0.5},
}
_TEXTS = {
    "word": {"type": "string", "minLength": 3, "maxLength": 5},
    "code": {"type": "string", "pattern": "^[a-z]+$"},
    "name": {"type": "string"},
}
_TAGGED = {
    "target": {
        "oneOf": [
            {"type": "object", "properties": {"kind": {"const": "id"}, "key": {"type": "integer"}},
             "required": ["kind", "key"]},
            {"type": "object", "properties": {"kind": {"const": "name"}, "key": {"type": "string"}},
             "required": ["kind", "key"]},
        ]
    }
}  # fmt: skip


def _nested(depth: int) -> list:
    value: list = [1]
    for _ in range(depth):
        value = [value]
    return value


_ZH_CASES = [
    # (id, properties, required, raw, quoted, zh fragments, the English line for the same call)
    ("type", {"name": {"type": "string"}}, ["name"], '{"name": [1, 2]}', (),
     ["“name”：应为字符串，收到 [1, 2]（数组）"],
     '"name": expected string, received [1, 2] (an array)'),
    ("type_boolean", {"n": {"type": "integer"}}, ["n"], '{"n": true}', (),
     ["“n”：应为整数，收到 true（布尔值）"], '"n": expected integer, received true (a boolean)'),
    ("missing", _TEXTS, ["name", "word"], '{"name": "a"}', (),
     ["“word”：缺少这一项（应为字符串）"], '"word": missing (expected string)'),
    ("not_a_parameter", _TEXTS, [], '{"colour": "red"}', (),
     ["“colour”：不是可用的参数（应为以下之一：word, code, name）"],
     '"colour": not a parameter (expected one of: word, code, name)'),
    ("given_twice", _TEXTS, [], '{"name": "a", "Name": "b"}', (),
     ["“Name”：给出了两次（分别写作“name”和“Name”）"],
     '"Name": given twice (as "name" and "Name")'),
    ("min_length", _TEXTS, [], '{"word": "ab"}', (),
     ['“word”：应为至少 3 个字符，收到 "ab"（字符串）'],
     '"word": expected at least 3 characters, received "ab" (a string)'),
    ("max_length", _TEXTS, [], '{"word": "abcdefg"}', (),
     ['“word”：应为最多 5 个字符，收到 "abcdefg"（字符串）'],
     '"word": expected at most 5 characters, received "abcdefg" (a string)'),
    ("empty", _TEXTS, [], '{"name": " "}', (),
     ['“name”：应为非空的字符串，收到 " "（字符串）'],
     '"name": expected a non-empty string, received " " (a string)'),
    ("pattern", _TEXTS, [], '{"code": "ABC"}', ("^[a-z]+$",),
     ['“code”：应为符合模式 ^[a-z]+$ 的文本，收到 "ABC"（字符串）'],
     '"code": expected text matching the pattern ^[a-z]+$, received "ABC" (a string)'),
    ("surrogate", _TEXTS, [], '{"name": "\\ud800"}', (),
     ["“name”：应为不含孤立代理字符的文本"],
     '"name": expected text without lone surrogate characters'),
    ("minimum", _NUMBERS, [], '{"n": 0}', (),
     ["“n”：应为大于或等于 1 的数，收到 0（整数）"],
     '"n": expected a number >= 1, received 0 (an integer)'),
    ("maximum", _NUMBERS, [], '{"n": 10}', (),
     ["“n”：应为小于或等于 9 的数，收到 10（整数）"],
     '"n": expected a number <= 9, received 10 (an integer)'),
    ("exclusive_bounds", _NUMBERS, [], '{"x": 0}', (),
     ["“x”：应为大于 0 的数，收到 0（整数）"], '"x": expected a number > 0, received 0'),
    ("exclusive_maximum", _NUMBERS, [], '{"x": 10}', (),
     ["“x”：应为小于 10 的数，收到 10（整数）"], '"x": expected a number < 10, received 10'),
    ("multiple", _NUMBERS, [], '{"x": 1.25}', (),
     ["“x”：应为能被 0.5 整除的数，收到 1.25（数字）"],
     '"x": expected a multiple of 0.5, received 1.25 (a number)'),
    ("integer_limit", _NUMBERS, [], '{"n": 100000000000000000000}', (),
     ["绝对值不超过 9223372036854775807 的整数", "收到 100000000000000000000（整数）"],
     '"n": expected an integer of at most 9223372036854775807'),
    ("not_finite", _NUMBERS, [], {"x": float("inf")}, (),
     ["“x”：应为有限的数，收到 inf"], '"x": expected a finite number, received inf'),
    ("enum", {"unit": {"enum": ["km", "mile"]}}, [], '{"unit": "parsec"}', ("km", "mile"),
     ['“unit”：应为以下之一："km", "mile"，收到 "parsec"（字符串）'],
     '"unit": expected one of "km", "mile", received "parsec" (a string)'),
    ("const", {"mode": {"const": "fast"}}, [], '{"mode": "slow"}', ("fast",),
     ['“mode”：应为"fast"，收到 "slow"（字符串）'],
     '"mode": expected "fast", received "slow" (a string)'),
    ("min_items", {"tags": {"type": "array", "items": {"type": "string"}, "minItems": 2}}, [],
     '{"tags": ["a"]}', (), ['“tags”：应为至少有 2 项的数组，收到 ["a"]（数组）'],
     '"tags": expected an array of at least 2 items, received ["a"] (an array)'),
    ("max_items", {"tags": {"type": "array", "maxItems": 1}}, [], '{"tags": ["a", "b"]}', (),
     ['“tags”：应为最多有 1 项的数组，收到 ["a", "b"]（数组）'],
     '"tags": expected an array of at most 1 items, received ["a", "b"] (an array)'),
    ("item_type", {"tags": {"type": "array", "items": {"type": "string"}}}, [],
     '{"tags": ["a", {}]}', (), ["“tags[1]”：应为字符串，收到 {}（对象）"],
     '"tags[1]": expected string, received {} (an object)'),
    ("union", {"v": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}}, [],
     '{"v": [1]}', (), ["“v”：应为字符串或整数或null，收到 [1]（数组）"],
     '"v": expected string or integer or null, received [1] (an array)'),
    ("union_of_objects",
     {"v": {"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}},
                       "required": ["a"]},
                      {"type": "array", "items": {"type": "number"}}]}}, [],
     '{"v": 3}', (), ['“v”：应为含有 "a" 的对象或元素为数字的数组，收到 3（整数）'],
     '"v": expected object with "a" or array of number, received 3 (an integer)'),
    ("union_tag_missing", _TAGGED, [], '{"target": {"key": 1}}', ("id", "name"),
     ['“target.kind”：缺少这一项（应为以下之一："id", "name"）'],
     '"target.kind": missing (expected one of "id", "name")'),
    ("union_tag_wrong", _TAGGED, [], '{"target": {"kind": "uuid", "key": 1}}', ("id", "name"),
     ['“target.kind”：应为以下之一："id", "name"，收到 "uuid"（字符串）'],
     '"target.kind": expected one of "id", "name", received "uuid" (a string)'),
    ("not_an_object", _TEXTS, ["name", "word"], "[1, 2]", (),
     ["应为由参数组成的 JSON 对象，收到 [1, 2]（数组）"],
     "expected a JSON object of arguments, received [1, 2] (an array)"),
    ("prose", _TEXTS, ["name", "word"], "the word is {hello", (),
     ["“行动输入：”不是 JSON 对象（文本是普通文字，不是 JSON 对象）"],
     "the Action Input is not a JSON object (the text is prose, not a JSON object)"),
    ("nan", _NUMBERS, ["n", "x"], '{"n": 1, "x": NaN}', (),
     ["不是 JSON 对象（NaN 不是 JSON 数字：请写有限的数，或者写成字符串）"],
     "(NaN is not a JSON number: send a finite number or a string instead)"),
    ("duplicate_key", _TEXTS, ["name", "word"], '{"name": "a", "name": "b", "word": "abc"}', (),
     ["（键 'name' 写了不止一次：每个键只写一次）"],
     "(the key 'name' is set more than once: write each key once)"),
    ("unbalanced", _TEXTS, ["name", "word"], '{"name": "a"]', (),
     ["（位置 12 处的 ']' 没有配对）"], "(unbalanced ']' at character 12)"),
    ("cut_off", _TEXTS, ["name", "word"], '{"name": ', (),
     ["（JSON 在无法确定其值的位置被截断了）"],
     "(the JSON is cut off in a place where its value cannot be known)"),
    ("text_keys", _TEXTS, [], {1: "a"}, ("int",),
     ["“参数”：应为文本的键，收到 int 类型的键"],
     '"arguments": expected text keys, received a key of type int'),
    ("not_a_json_value", _TEXTS, [], {"name": {1, 2}}, ("set",),
     ["“name”：应为合法的 JSON 值，收到 set 类型的对象"],
     '"name": expected a JSON value, received an object of type set'),
    ("too_deep", {"v": {}}, [], {"v": _nested(33)}, (), ["最多 32 层嵌套、总共最多 10000 个值"],
     "expected at most 32 levels of nesting and 10000 values in all"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("properties", "required", "raw", "quoted", "fragments", "english"),
    [pytest.param(*case[1:], id=case[0]) for case in _ZH_CASES],
)
def test_a_zh_argument_error_is_chinese_and_keeps_its_specifics(
    properties: dict, required: list[str], raw: object, quoted: tuple, fragments: list[str],
    english: str,
) -> None:  # fmt: skip
    t = _args_tool(properties, required)
    text = _zh_observation(t, raw)
    shown = raw if isinstance(raw, str) else repr(raw)
    example = json.dumps(t.example, ensure_ascii=False)
    assert not _english_left(text, t.name, *properties, shown, example, *quoted), text
    assert text.startswith("错误：pick 的“行动输入：”有误：\n- "), text
    assert "\n正确示例：{" in text
    for fragment in fragments:
        assert fragment in text, text
    with pytest.raises(ToolArgumentError) as caught:  # the same call in English, as it was
        t.parse_arguments(raw)
    assert english in str(caught.value)
    assert str(caught.value).startswith("Invalid Action Input for pick:\n- ")


def test_a_zh_argument_error_lists_every_problem_in_chinese() -> None:
    text = _zh_observation(_args_tool({**_TEXTS, **_NUMBERS}), '{"word": "ab", "n": 0, "z": 1}')
    assert text.count("\n- ") == 3
    assert not _english_left(text, "pick", "word", "code", "name", "n", "x", "z", "ab"), text


def test_zh_too_complex_and_too_nested_are_chinese(monkeypatch) -> None:
    from textreact.tools import arguments as arguments_module

    tool_module = importlib.import_module("textreact.tools.tool")

    chained = _args_tool({"v": {"anyOf": [{"type": "array", "items": {"$ref": "#/properties/v"}},
                                          {"type": "integer"}]}})  # fmt: skip
    monkeypatch.setattr(arguments_module, "MAX_STEPS", 5)
    text = _zh_observation(chained, {"v": [[[[[1]]]]]})
    assert "“行动输入：”太复杂，无法按这个工具的参数检查" in text
    assert not _english_left(text, "pick", "v"), text
    monkeypatch.undo()

    @tool
    def either(v: int | str) -> str:
        """Use this to take a number or a text."""
        return str(v)

    monkeypatch.setattr(tool_module, "MAX_UNION_WORK", 0)
    text = _zh_observation(either, {"v": 1})
    assert "参数中可取多种类型的值嵌套得太深，无法检查" in text
    assert not _english_left(text, "either", "v"), text


def test_zh_pydantic_problems_are_framed_in_chinese_and_quote_what_pydantic_said() -> None:
    @tool
    def book(day: date) -> str:
        """Use this to book a day."""
        return "booked"

    text = _zh_observation(book, {"day": "2024-13-01"})
    assert "\n- day：Input should be a valid date" in text  # pydantic's words, as it said them
    assert "（收到 '2024-13-01'）" in text and "received" not in text
    with pytest.raises(ToolArgumentError) as caught:
        book.parse_arguments({"day": "2024-13-01"})
    assert "\n- day: Input should be a valid date" in str(caught.value)
    assert "(received '2024-13-01')" in str(caught.value)


_NOTES = {lang: templates._notes(lang) for lang in ("en", "zh")}


def test_every_argument_and_json_section_is_in_both_languages_and_chinese_in_zh() -> None:
    assert set(_NOTES["en"]) == set(_NOTES["zh"])
    words = [name for name in _NOTES["zh"] if name.startswith(("argument_", "json_"))]
    assert len(words) > 60
    for name in words:
        body = re.sub(r"\$[a-z_]+", "", _NOTES["zh"][name])
        assert not _english_left(body), (name, body)


#: An Action Input for each reason `jsonish` gives why a text is not JSON, by its problem code.
_JSON_REASONS = {
    "not_a_number": '{"a": NaN}', "overflow": '{"a": 1e999}', "duplicate_key": '{"a": 1, "a": 2}',
    "two_objects": '{"a": 1} {"a": 2}', "too_long": "x" * 20_001, "empty": "   ",
    "too_deep": '{"a": [' * 70, "no_value": "the word is hello", "prose": "the word is {hello",
    "cut_off_early": "{", "invalid": '{"a": 1 "b": 2}',
    "invalid_value": "{'a': " + "1" * 5_000 + "}", "unbalanced": '{"a": 1]',
    "cut_off": 'hi {"a": 1', "unreadable_string": "{'a': '\\N{NO SUCH NAME}'}",
}  # fmt: skip


@pytest.mark.parametrize(("problem", "text"), list(_JSON_REASONS.items()), ids=list(_JSON_REASONS))
def test_every_json_reason_reads_in_chinese(problem: str, text: str) -> None:
    with pytest.raises(jsonish.JsonishError) as caught:
        jsonish.loads(text)
    zh, en = caught.value.say("zh"), str(caught.value)
    assert caught.value.problem == problem
    assert en == caught.value.say("en") and zh != en
    assert not _english_left(zh, text), zh


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(st.one_of(st.text(max_size=200), st.dictionaries(st.text(max_size=12), _JSON, max_size=5)))
def test_parse_arguments_raises_only_tool_argument_error(raw) -> None:
    for t in (CALCULATOR, convert):
        try:
            parsed = t.parse_arguments(raw)
        except ToolArgumentError:
            continue
        assert set(parsed) <= set(t.parameters["properties"])


@given(
    st.text(min_size=1, max_size=80).filter(lambda s: s.strip() and s.strip()[0] not in "{[\"'`")
)
def test_a_plain_string_is_never_lost(text: str) -> None:
    try:
        parsed = FACTS.parse_arguments(text)
    except ToolArgumentError:
        return
    assert parsed["query"] in (text.strip(), text)


# --- ToolBox ----------------------------------------------------------------------------------


def _tool(name: str, fn, timeout: float | None = 0.2) -> Tool:
    return Tool.from_schema(name, "Use it in tests.", {"type": "object", "properties": {}}, fn,
                            timeout=timeout)  # fmt: skip


def test_lookup_is_lenient_but_unique() -> None:
    box = ToolBox([CALCULATOR, FACTS, _tool("uber.ride", lambda: 1)])
    assert box.names == ("calculator", "lookup_fact", "uber.ride")
    for name in ("Calculator", "`calculator`", '"lookup-fact"', "Uber.ride", "uber_ride",
                 "UBER RIDE", "calculator()"):  # fmt: skip
        assert box.resolve(name) is not None, name
    assert box.resolve("calc") is None
    assert box.suggest("calc") == "calculator"
    assert box.suggest("lookupfacts") == "lookup_fact"
    assert box.suggest("weather") is None


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ConfigError, match="differ only in case"):
        ToolBox([_tool("uber.ride", None), _tool("Uber_Ride", None)])
    with pytest.raises(ConfigError, match="Tool objects"):
        ToolBox([len])  # type: ignore[list-item]


def test_call_success_records_arguments_repairs_and_time() -> None:
    result = ToolBox(builtin_tools()).call("Calculator", "2602000 / 8336000")
    assert (result.value, result.error, result.repairs) == (
        2602000 / 8336000, None, ("plain_string",)
    )  # fmt: skip
    assert result.arguments == {"expression": "2602000 / 8336000"}
    assert result.tool == "calculator" and result.seconds > 0


def test_unknown_tool_lists_tools_and_closest() -> None:
    result = ToolBox(builtin_tools()).call("calc", "2+2")
    assert result.error_kind == "unknown_tool"
    assert result.error == (
        'Unknown tool "calc". Available tools: calculator, lookup_fact. Did you mean "calculator"?'
    )


def test_argument_error_becomes_a_result() -> None:
    result = ToolBox(builtin_tools()).call("calculator", '{"expression": ""}')
    assert result.error_kind == "arguments"
    assert "Correct example" in result.error and result.arguments == '{"expression": ""}'


def test_tool_exception_becomes_a_result() -> None:
    result = ToolBox(builtin_tools()).call("calculator", "1/0")
    assert result.error_kind == "exception"
    assert result.error == "calculator failed: CalculatorError: division by zero"


def test_names_for_the_calculator_are_a_call_for_another_tool_with_needs() -> None:
    result = ToolBox(builtin_tools()).call("calculator", "Mount Everest - Mount Fuji")
    assert result.error_kind == "wrong_tool"
    assert result.needs == ("Mount Everest", "Mount Fuji")
    assert result.error.startswith("calculator failed: NeedsNumbersError: the expression has")


class _Hostile(str):
    def __str__(self) -> str:
        raise RuntimeError("never called")


@pytest.mark.parametrize(
    ("needs", "kept"),
    [
        (("a", "b"), ("a", "b")),
        (["a", 1, None, "b"], ("a", "b")),  # only strings
        ("ab", ()),  # a string is no list of needs
        ((n for n in "ab"), ()),  # nor a generator
        (tuple(str(i) for i in range(50)), tuple(str(i) for i in range(5))),  # the first few
        (("x" * 10_000,), ("x" * 100,)),  # each cut short
        ((" ", ""), ()),  # blanks name nothing
        ((_Hostile("city"),), ("city",)),  # a str subclass is read, never called
    ],
)
def test_what_a_wrong_tool_error_needs_is_kept_safely(needs, kept) -> None:
    def pick() -> str:
        raise WrongToolError("not for me", needs=needs)

    result = ToolBox([_tool("pick", pick)]).call("pick", "{}")
    assert result.error_kind == "wrong_tool" and result.needs == kept


def test_hung_tool_times_out_and_the_run_goes_on() -> None:
    release = threading.Event()
    box = ToolBox([_tool("hang", lambda: release.wait(60))])
    result = box.call("hang", "{}")
    release.set()
    assert result.error_kind == "timeout"
    assert "did not finish within 0.2 seconds" in result.error


def test_raising_tool_and_huge_result() -> None:
    def boom() -> None:
        raise RuntimeError("disk on fire")

    box = ToolBox([_tool("boom", boom), _tool("big", lambda: "x" * 1_000_000)])
    assert box.call("boom", "{}").error == "boom failed: RuntimeError: disk on fire"
    big = box.call("big", "")
    assert big.error is None and len(big.value) == 1_000_000


def test_keyboard_interrupt_still_propagates() -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    for timeout in (0.5, None):
        with pytest.raises(KeyboardInterrupt):
            ToolBox([_tool("stop", interrupted, timeout)]).call("stop", "{}")


def test_inline_tool_without_timeout() -> None:
    caller = threading.get_ident()
    box = ToolBox([_tool("where", threading.get_ident, None)])
    assert box.call("where", "{}").value == caller


def test_schema_only_tool_reports_instead_of_raising() -> None:
    result = ToolBox([_tool("nofn", None)]).call("nofn", "{}")
    assert result.error_kind == "exception" and "no function" in result.error


def test_sleeping_tool_is_abandoned_not_waited_for() -> None:
    box = ToolBox([_tool("sleepy", lambda: time.sleep(30))])
    assert box.call("sleepy", "{}").error_kind == "timeout"


def test_a_lone_argument_under_another_name_is_renamed_for_a_one_parameter_tool() -> None:
    lookup = next(t for t in builtin_tools() if t.name == "lookup_fact")
    parsed, repairs = lookup.parse_arguments_with_repairs('{"expression": "capital of Japan"}')
    assert (parsed, repairs) == ({"query": "capital of Japan"}, ("renamed_parameter",))
    # Two arguments, or a tool of several parameters: nothing is guessed.
    with pytest.raises(ToolArgumentError, match='"expression": not a parameter'):
        lookup.parse_arguments({"expression": "x", "other": "y"})


def test_needs_that_fake_their_type_or_hide_behind_a_property_are_no_needs() -> None:
    class Fake:
        @property
        def __class__(self):  # isinstance(Fake(), str) would say True
            return str

    class Sly(WrongToolError):
        @property
        def needs(self):  # never run: only what the constructor stored is read
            raise RuntimeError("boom")

        @needs.setter
        def needs(self, value) -> None:
            pass

    def fake() -> str:
        raise WrongToolError("not for me", needs=(Fake(), "city"))

    def sly() -> str:
        raise Sly("not for me", needs=("city",))

    box = ToolBox([_tool("fake", fake), _tool("sly", sly)])
    assert box.call("fake", "{}").needs == ("city",)
    result = box.call("sly", "{}")
    assert result.error_kind == "wrong_tool" and result.needs == ()


def test_a_config_error_keeps_its_fields_through_pickle() -> None:
    """A process pool sends a tool's error back pickled: nothing of it may be lost."""
    import pickle

    from textreact.errors import ConfigError, ToolExampleError

    for error in (ConfigError("bad name", field="name"), ToolExampleError("bad", "- n: too big")):
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and str(back) == str(error)
        assert back.field == error.field and getattr(back, "problems", None) == getattr(
            error, "problems", None
        )


def test_a_tools_own_result_limit_replaces_the_agents():
    from textreact import Agent, ScriptedModel

    text = "\n".join(f"entry {i}" for i in range(200))  # about 1,700 characters
    paged = Tool.from_schema("paged", "Use to list.", {"type": "object", "properties": {}})
    paged = dataclasses.replace(paged, fn=lambda: text, result_limit=4000)
    plain = dataclasses.replace(paged, name="plain", result_limit=None)
    script = [
        "Thought: list\nAction: paged\nAction Input: {}",
        "Thought: list\nAction: plain\nAction Input: {}",
        "Thought: done\nFinal Answer: ok",
    ]
    result = Agent(ScriptedModel(script), [paged, plain]).run("q")
    whole, cut = (step.observation for step in result.steps[:2])
    assert whole == text
    assert "characters left out" in cut and len(cut) < 600


@pytest.mark.parametrize("limit", [0, 19, 2.5, "100"])
def test_a_result_limit_must_be_an_integer_of_at_least_20(limit):
    with pytest.raises(ConfigError, match="result_limit"):
        Tool("t", "d", result_limit=limit)
