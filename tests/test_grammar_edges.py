"""Schemas at the edges never crash the grammar builder and never give a grammar a server would
refuse: a circle of `$ref`s or a union that holds itself gives no left-recursive rule, a schema
nested past reason is a clear ConfigError (or, given to `schema_grammar` directly, a looser
rule), a `type` that names no type is a clear error, and a lone surrogate anywhere leaves a
grammar that is UTF-8 and can be sent."""

from __future__ import annotations

import json
from typing import Any

import pytest

from textreact import Tool
from textreact.constrain import matches, parse_gbnf, schema_grammar, tools_grammar
from textreact.constrain.recognizer import Choice, Literal, Node, Ref, Repeat, Sequence
from textreact.errors import ConfigError


def left_recursive(grammar: str) -> set[str]:
    """The rules that can reach themselves without reading a character (llama.cpp refuses a
    grammar that has one)."""
    rules = parse_gbnf(grammar)
    empty: set[str] = set()

    def nullable(node: Node) -> bool:
        if isinstance(node, Literal):
            return node.text == ""
        if isinstance(node, Ref):
            return node.name in empty
        if isinstance(node, Repeat):
            return node.low == 0 or nullable(node.node)
        if isinstance(node, Sequence):
            return all(nullable(item) for item in node.items)
        if isinstance(node, Choice):
            return any(nullable(option) for option in node.options)
        return False

    while True:  # the nullable rules, to a fixed point
        more = {name for name, node in rules.items() if nullable(node)} - empty
        if not more:
            break
        empty |= more

    def leading(node: Node) -> set[str]:
        if isinstance(node, Ref):
            return {node.name}
        if isinstance(node, Repeat):
            return leading(node.node)
        if isinstance(node, Choice):
            return set().union(*(leading(option) for option in node.options))
        if isinstance(node, Sequence):
            found: set[str] = set()
            for item in node.items:
                found |= leading(item)
                if not nullable(item):
                    break
            return found
        return set()

    edges = {name: leading(node) for name, node in rules.items()}
    looped = set()
    for start in rules:
        seen, stack = set(), list(edges[start])
        while stack:
            name = stack.pop()
            if name == start:
                looped.add(start)
                break
            if name not in seen and name in edges:
                seen.add(name)
                stack.extend(edges[name])
    return looped


def test_the_checker_finds_left_recursion() -> None:
    assert left_recursive('root ::= a\na ::= b | "x"\nb ::= "z"? a "y"\n') == {"a", "b"}
    assert not left_recursive('root ::= a\na ::= "[" a? "]"\n')


def _with(defs: dict[str, Any], x: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"x": x}, "required": ["x"], "$defs": defs}


CIRCLES = {
    "two refs": _with(
        {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, {"$ref": "#/$defs/A"}
    ),
    "a ref to itself": _with({"A": {"$ref": "#/$defs/A"}}, {"$ref": "#/$defs/A"}),
    "a union that holds itself": _with(
        {"A": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "string"}]}}, {"$ref": "#/$defs/A"}
    ),
    "through allOf and oneOf": _with(
        {
            "A": {"allOf": [{"$ref": "#/$defs/B"}]},
            "B": {"oneOf": [{"type": "integer"}, {"$ref": "#/$defs/A"}]},
        },
        {"$ref": "#/$defs/A"},
    ),
}


@pytest.mark.parametrize("schema", CIRCLES.values(), ids=CIRCLES.keys())
def test_a_circle_of_refs_gives_no_left_recursive_rule(schema: dict[str, Any]) -> None:
    assert not left_recursive(schema_grammar(schema))
    tool = Tool.from_schema("f", "Use this.", schema, example={"x": 1})
    grammar = tools_grammar([tool], tool_choice="auto", lang="en")
    assert not left_recursive(grammar)
    assert matches(schema_grammar(schema), '{"x": 1}')  # a looser rule, not none


def test_a_recursive_schema_through_brackets_keeps_its_recursion() -> None:
    tree = _with(
        {
            "Node": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            }
        },
        {"$ref": "#/$defs/Node"},
    )
    grammar = schema_grammar(tree)
    assert not left_recursive(grammar)
    assert matches(grammar, '{"x": {"kids": [{"kids": []}, {}]}}')
    assert not matches(grammar, '{"x": {"kids": [1]}}')  # still held to the shape


def _nested(levels: int, wrap: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {
            "object": lambda s: {"type": "object", "properties": {"a": s}},
            "array": lambda s: {"type": "array", "items": s},
            "anyOf": lambda s: {"anyOf": [s]},
            "const": lambda s: {"const": s},
        }[wrap](schema)
    return schema


@pytest.mark.parametrize("wrap", ["object", "array", "anyOf", "const"])
def test_a_schema_nested_1500_deep_is_a_clear_error_or_a_looser_rule(wrap: str) -> None:
    schema = {"type": "object", "properties": {"x": _nested(1500, wrap)}}
    with pytest.raises(ConfigError, match=r"nest more than .* deep.*\$defs"):
        Tool.from_schema("f", "Use this.", schema)
    grammar = schema_grammar(schema)  # given directly: a looser rule where it gets too deep
    assert not left_recursive(grammar)


def test_a_schema_that_holds_itself_is_a_clear_error() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["me"] = schema
    with pytest.raises(ConfigError, match="hold"):
        Tool.from_schema("f", "Use this.", schema)


@pytest.mark.parametrize("declared", [5, {"a": 1}, ["string", 5], ["string", {"a": 1}], True])
def test_a_type_that_names_no_type_is_a_clear_error(declared: Any) -> None:
    schema = {"type": "object", "properties": {"x": {"type": declared}}}
    with pytest.raises(ConfigError, match=r"tool 'f' parameters: .*\"type\" must be a type name"):
        Tool.from_schema("f", "Use this.", schema)
    assert "root ::=" in schema_grammar(schema)  # the builder alone: no type, any value


SURROGATES = {
    "an enum member": {"x": {"enum": ["a\ud800", "b"]}},
    "a const": {"x": {"const": "\udc00"}},
    "a property name": {"\ud800x": {"type": "string"}, "x": {"type": "string"}},
    "a pattern": {"x": {"type": "string", "pattern": "^a\ud800$"}},
    "a default": {"x": {"type": "string", "default": "\ud83d"}},
}


@pytest.mark.parametrize("properties", SURROGATES.values(), ids=SURROGATES.keys())
def test_a_lone_surrogate_leaves_a_grammar_that_can_be_sent(properties: dict[str, Any]) -> None:
    schema = {"type": "object", "properties": properties}
    for grammar in (
        schema_grammar(schema),
        tools_grammar([Tool.from_schema("f", "Use this.", schema)], tool_choice="auto", lang="en"),
    ):
        grammar.encode("utf-8")  # raised UnicodeEncodeError before
        json.dumps({"grammar": grammar}).encode("utf-8")
        parse_gbnf(grammar)
