"""Tools: what the model may call. `Tool` (spec, validation, rendering), `@tool` (a function ->
Tool), `ToolBox` (lookup and safe execution), `NotFound` (a result that found nothing), and
the two built-in tools."""

from __future__ import annotations

from textreact.tools.box import ToolBox
from textreact.tools.decorator import tool
from textreact.tools.tool import NotFound, Tool

__all__ = ["NotFound", "Tool", "ToolBox", "builtin_tools", "tool"]


def builtin_tools() -> list[Tool]:
    """The calculator (`calculator`, argument `expression`) and the fact lookup (`lookup_fact`,
    argument `query`): new Tool objects on each call."""
    from textreact.tools.calculator import calculate
    from textreact.tools.facts import lookup_fact

    calculator = Tool.from_schema(
        "calculator",
        "Use this for any arithmetic instead of computing in your head: add, subtract, multiply,"
        " divide, powers. Write the numbers themselves, not their names.",
        _one_string("expression", "an arithmetic expression with + - * / ** and parentheses"),
        calculate,
        timeout=2.0,
        example={"expression": "(12 + 30) * 4"},
    )
    facts = Tool.from_schema(
        "lookup_fact",
        "Use this to look up a fact you do not know for sure: a population, a capital city, a"
        " height, a physical constant. Ask for one fact in a few words.",
        _one_string("query", "the fact to look up, in a few words"),
        lookup_fact,
        timeout=2.0,
        example={"query": "capital of France"},
    )
    return [calculator, facts]


def _one_string(name: str, description: str) -> dict:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": description}},
        "required": [name],
        "additionalProperties": False,
    }
