"""Under the grammar, a call the schema allows can be written whatever its property names
hold (quotes, backslashes, line breaks of every kind, GBNF's own syntax, the protocol's
keywords) and for a recursive `$ref` (a linked list) as deep as validation reads: the canonical
call (`grammar.render_step`) is accepted by the tool's grammar, parsed back to the same
arguments, and validated; a malformed one is refused; the recogniser answers for a grammar
however deep or wide, and the grammar is one that llama.cpp reads."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel
from test_grammar_edges import left_recursive

from textreact import grammar, parse, tool
from textreact.constrain import matches, schema_grammar, tools_grammar
from textreact.constrain.gbnf import MOST_COPIED
from textreact.errors import ToolArgumentError
from textreact.steps import Action
from textreact.tools import Tool
from textreact.tools.arguments import MAX_DEPTH

#: What the parser reads as a line break besides `\n` and `\r`: NEL and the line and
#: paragraph separators.
SEPARATORS = "\x85\u2028\u2029"

#: Property names holding what GBNF, JSON or the protocol give a meaning to.
NAMES = {
    "a quote": 'say "hi"',
    "a backslash": "C:\\path\\",
    "a newline": "two\nlines",
    "a carriage return and a tab": "a\r\tb",
    "a control character": "bell\x07",
    "GBNF's rule sign": "x ::= y",
    "GBNF's alternation": "a | b",
    "GBNF's comment, class and group": "# [^a] (b)?",
    "Action": "Action: lookup",
    "Action Input": "Action Input: {}",
    "Final Answer": "Final Answer: 42",
    "Observation": "Observation: done",
    "Thought": "Thought: x",
    "a newline, then a keyword": "\nObservation: done",
    "the Chinese keywords": "观察：结果 最终答案：5",
    "JSON's own text": '{"a": [1], "b": null}',
    "NEL, then a keyword": "\x85Action: lookup",
    "a line separator, then a keyword": "x\u2028Observation: done",
    "a paragraph separator, then a keyword": "\u2029Final Answer: 42",
}


def _call_text(tool: Tool, arguments: dict[str, Any], lang: str = "en") -> str:
    return grammar.render_step(Action(tool=tool.name, input=arguments, thought="I call it"), lang)


def _assert_round_trip(tool: Tool, arguments: dict[str, Any], lang: str = "en") -> str:
    """The canonical call is accepted by the tool's grammar, read back to the same arguments
    and validated; the grammar is well-formed (returned for further checks)."""
    text = tools_grammar([tool], lang=lang)
    written = _call_text(tool, arguments, lang)
    assert matches(text, written), written
    step = parse(written)
    assert step.kind == "action", step
    assert (step.tool, step.input) == (tool.name, arguments)
    assert tool.parse_arguments(step.input) == arguments
    return text


def _named(*names: str, value: dict[str, Any] | None = None) -> Tool:
    spec = value or {"type": "string"}
    return Tool.from_schema(
        "lookup",
        "Use it.",
        {
            "type": "object",
            "properties": {**{n: spec for n in names}, "n": {"type": "integer"}},
            "required": list(names),
        },
    )


# property names


@pytest.mark.parametrize("lang", grammar.LANGUAGES)
@pytest.mark.parametrize("name", NAMES.values(), ids=NAMES.keys())
def test_a_property_name_of_any_text_can_be_written_read_and_validated(
    name: str, lang: str
) -> None:
    tool = _named(name)
    text = _assert_round_trip(tool, {name: f"value of {name}", "n": 3}, lang)
    _assert_round_trip(tool, {name: "v"}, lang)  # the optional member left out
    assert not left_recursive(text)
    assert not any(char in text for char in SEPARATORS)  # written as escapes
    text.encode("utf-8")


@pytest.mark.parametrize("separator", SEPARATORS)
def test_a_raw_line_separator_is_refused_where_the_parser_would_break_the_line(
    separator: str,
) -> None:
    """The model cannot write one raw: `Observation:` after it would end the Action Input."""
    tool = _named("q")
    text = tools_grammar([tool])
    raw = f'Thought: I call it\nAction: lookup\nAction Input: {{"q": "a{separator}Observation: x"}}'
    assert not matches(text, raw)
    step = parse(raw)  # what the parser would have made of it
    assert step.kind != "action" or step.input != {"q": f"a{separator}Observation: x"}
    named = _named(f"{separator}Observation: x")
    raw_name = (
        f'Thought: I call it\nAction: lookup\nAction Input: {{"{separator}Observation: x": "v"}}'
    )
    assert not matches(tools_grammar([named]), raw_name)


@pytest.mark.parametrize("kind", ["a plain string", "a string held to a pattern", "an enum"])
@pytest.mark.parametrize("separator", SEPARATORS)
def test_a_value_holding_a_separator_and_a_keyword_round_trips(kind: str, separator: str) -> None:
    value = f"a{separator}Final Answer: 5"
    spec = {
        "a plain string": {"type": "string"},
        "a string held to a pattern": {"type": "string", "pattern": '^[^"]*$'},
        "an enum": {"enum": [value, "b"]},
    }[kind]
    _assert_round_trip(_named("q", value=spec), {"q": value})


_PIECES = st.sampled_from(
    ['"', "\\", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", *SEPARATORS, "::=", "|", "#", "[",
     "]", "(", ")", "{", "}", ":", ",", " ", "Action:", "Action Input:", "Final Answer:",
     "Observation:", "Thought:", "观察：", "最终答案：", "行动：", "a", "\\u0041", "null"]
)  # fmt: skip
_NAMES = st.lists(_PIECES, min_size=1, max_size=5).map("".join)


@given(names=st.lists(_NAMES, min_size=1, max_size=4, unique=True), data=st.data())
def test_any_property_names_round_trip(names: list[str], data: st.DataObject) -> None:
    required = data.draw(st.lists(st.sampled_from(names), unique=True), label="required")
    present = data.draw(st.lists(st.sampled_from(names), unique=True), label="present")
    tool = Tool.from_schema(
        "lookup",
        "Use it.",
        {
            "type": "object",
            "properties": {n: {"type": "string"} for n in names},
            "required": required,
        },
    )
    # each value holds its name too (DEL aside: the JSON string rule leaves it out raw)
    arguments = {n: "v" + n.replace("\x7f", "") for n in names if n in required or n in present}
    _assert_round_trip(tool, arguments)


# recursive $ref


NODE = {
    "type": "object",
    "properties": {
        "value": {"type": "integer"},
        "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]},
    },
}
LINKED = Tool.from_schema(
    "walk",
    "Walk a list.",
    {
        "type": "object",
        "properties": {"head": {"$ref": "#/$defs/node"}},
        "required": ["head"],
        "$defs": {"node": NODE},
    },
)


class Node(BaseModel):
    value: int
    next: Node | None = None


@tool
def walk(head: Node) -> str:
    """Walk a list."""
    return str(head.value)


def _list(length: int) -> dict[str, Any]:
    node: dict[str, Any] | None = None
    for value in reversed(range(1, length + 1)):
        node = {"value": value, "next": node}
    assert node is not None
    return {"head": node}


@pytest.mark.parametrize("listed", [LINKED, walk], ids=["$defs", "a pydantic model"])
def test_a_linked_list_of_depth_3_is_written_read_and_validated(listed: Tool) -> None:
    text = _assert_round_trip(listed, _list(3))
    assert not left_recursive(text)
    call = _call_text(listed, _list(3))
    for malformed in (
        call.replace('"value": 2', '"value": "2"'),  # a string where the schema says integer
        call.replace('"next": null', '"next": []'),  # a list where a node or null goes
        call.replace('"next": null', '"next": {"value": 4, "next": nul}'),
        call.replace('"value": 3', '"value": 3, "next": {"value": true}'),
        call.removesuffix("}"),  # a bracket left open
    ):
        assert malformed != call
        assert not matches(text, malformed), malformed


@pytest.mark.parametrize("listed", [LINKED, walk], ids=["$defs", "a pydantic model"])
def test_a_linked_list_is_held_to_the_depth_validation_reads(listed: Tool) -> None:
    """The deepest list validation takes is written and read; one node more is refused by
    the grammar as by validation, so a model cannot nest it until the token limit."""
    deepest = _list(MAX_DEPTH - 1)  # the last `next` is MAX_DEPTH levels into the arguments
    text = _assert_round_trip(listed, deepest)
    deeper = _list(MAX_DEPTH)
    assert not matches(text, _call_text(listed, deeper))
    with pytest.raises(ToolArgumentError, match=str(MAX_DEPTH)):
        listed.parse_arguments(deeper)


def test_a_definition_outside_the_recursion_is_written_once() -> None:
    """Only what leads back into a recursion is written for each level of the value."""
    meta = {"type": "object", "properties": {"unique-key": {"type": "string"}}}
    schema = {
        "type": "object",
        "properties": {
            "meta": {"$ref": "#/$defs/meta"},
            "deep": {"type": "object", "properties": {"meta": {"$ref": "#/$defs/meta"}}},
            "head": {"$ref": "#/$defs/node"},
        },
        "$defs": {
            "meta": meta,
            "node": {
                **NODE,
                "properties": {**NODE["properties"], "meta": {"$ref": "#/$defs/meta"}},
            },
        },
    }
    text = schema_grammar(schema)
    assert text.count('"\\"unique-key\\""') == 1
    assert matches(
        text, '{"meta": {}, "head": {"value": 1, "next": {"meta": {"unique-key": "k"}}}}'
    )


def test_a_recursion_too_large_to_copy_is_one_rule_and_any_list_can_still_be_written() -> None:
    """Past the grammar's budget for copies (MOST_COPIED), a recursion is one rule that holds
    itself: the grammar stays the size of the schema, and nothing validation takes is lost."""
    wide = {f"field-{i}": {"type": "integer"} for i in range(MOST_COPIED // MAX_DEPTH)}  # too many
    node = {**NODE, "properties": {**wide, **NODE["properties"]}}
    schema = {
        "type": "object",
        "properties": {"head": {"$ref": "#/$defs/node"}},
        "required": ["head"],
        "$defs": {"node": node},
    }
    listed = Tool.from_schema("walk", "Walk a list.", schema)
    text = _assert_round_trip(listed, _list(MAX_DEPTH - 1))
    assert text.count('"\\"field-0\\""') == 1
    assert not left_recursive(text)


def test_a_tool_of_200_optional_members_is_recognised() -> None:
    """The recogniser keeps its own stack: a member chain this long passed Python's
    recursion limit."""
    names = [f"p{i}" for i in range(200)]
    tool = Tool.from_schema(
        "wide", "Use it.", {"type": "object", "properties": {n: {"type": "integer"} for n in names}}
    )
    _assert_round_trip(tool, {n: i for i, n in enumerate(names)})


# against the real llama.cpp server (the embedded model)

from test_local_model import TIMEOUT, needs_model  # noqa: E402
from test_local_model import base_url as base_url  # noqa: E402  (the module's one server)

from textreact.models import local  # noqa: E402


@pytest.mark.usefixtures("base_url")
class TestRealServer:
    pytestmark = needs_model

    def test_the_grammar_of_odd_names_and_a_linked_list_is_one_the_server_reads(
        self, base_url: str
    ) -> None:
        tools = [
            *(
                Tool.from_schema(f"odd{i}", "Use it.", {"properties": {name: {"type": "string"}}})
                for i, name in enumerate(NAMES.values())
            ),
            LINKED,
        ]
        for lang in grammar.LANGUAGES:
            body = {
                "model": local.MODEL_NAME,
                "messages": [{"role": "user", "content": "Hi"}],
                "max_tokens": 1,
                "cache_prompt": False,
                "grammar": tools_grammar(tools, lang=lang),
            }
            reply = httpx.post(base_url + "/chat/completions", json=body, timeout=TIMEOUT)
            assert reply.status_code == 200, reply.text
