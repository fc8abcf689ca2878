"""A segment of text -> the tool call written in it as a JSON object (`{"action": …,
"action_input": …}`, `{"name": …, "arguments": …}`, OpenAI's `function` wrapper), bare or
fenced, with where the object ends; or what makes the call unreadable (a key set twice,
arguments under a key this reader does not know), so that no argument is dropped unsaid."""

from __future__ import annotations

import json
from typing import NamedTuple

from textreact import jsonish
from textreact.parsing.inputs import Call, read_input
from textreact.parsing.messages import ambiguity

_TOOL_KEYS = ("action", "name", "tool", "tool_name", "function")
_ARG_KEYS = (
    "action_input", "arguments", "parameters", "args", "input", "tool_input", "params",
    "kwargs", "inputs", "tool_args", "tool_arguments", "function_args", "argument",
)  # fmt: skip
#: Keys that carry no arguments: a call's id and type, the model's reasoning.
_META_KEYS = frozenset({"type", "id", "call_id", "tool_call_id", "index", "thought", "reasoning"})


class Blob(NamedTuple):
    """A call found in `segment`: it starts at `begin` (the fence or the brace), ends at `end`.
    `problem` (with `call` None) says why the call named `tool` cannot be read: a
    FormatError's problem code, the notes section for its message, and that message's slots."""

    call: Call | None
    begin: int
    end: int
    repairs: tuple[str, ...]
    problem: tuple[str, str, dict[str, str]] | None = None
    tool: str | None = None


def find_blob(segment: str, opener: int) -> Blob | None:
    """The call whose object opens at `segment[opener]`, with a fence just before it if any."""
    fence = segment.rfind("```", 0, opener)
    tag = segment[fence + 3 : opener].strip() if fence >= 0 else "-"
    begin = fence if not tag or tag.isalpha() else opener
    try:
        decoded = jsonish.decode(segment[begin:])
    except jsonish.AmbiguousJsonError as ambiguous:
        tool = _tool_named(segment[begin : begin + ambiguous.end])
        if tool is None:
            return None
        return Blob(None, begin, begin + ambiguous.end, (), ambiguity(ambiguous), tool)
    except jsonish.JsonishError:
        return None
    end = begin + decoded.end
    value = decoded.value
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # OpenAI's {"type": "function", "function": {…}}
        value = value["function"]
    tool = next((value[k] for k in _TOOL_KEYS if isinstance(value.get(k), str)), None)
    if not tool or not tool.strip():
        return None
    tool = tool.strip()
    key = next((k for k in _ARG_KEYS if k in value), None)
    if key is None:
        unknown = [k for k in value if k not in _META_KEYS and k not in _TOOL_KEYS]
        if unknown:
            keys = {"keys": ", ".join(f"“{k}”" for k in unknown)}
            return Blob(None, begin, end, (), ("lost_arguments", "arguments_key", keys), tool)
        return Blob((tool, "{}", {}, ()), begin, end, decoded.repairs, tool=tool)
    arguments = value[key]
    if isinstance(arguments, str):
        try:
            parsed, repairs = read_input(arguments.strip()) if arguments.strip() else ({}, ())
        except jsonish.AmbiguousJsonError as ambiguous:
            return Blob(None, begin, end, (), ambiguity(ambiguous), tool)
        return Blob((tool, arguments, parsed, repairs), begin, end, decoded.repairs, tool=tool)
    raw = json.dumps(arguments, ensure_ascii=False)
    # A list, a number, true or null: not an object, so the tool, which knows its schema,
    # decides what it means, as it does for the same value written on an Action Input line.
    parsed = arguments if isinstance(arguments, dict) else raw
    return Blob((tool, raw, parsed, ()), begin, end, decoded.repairs, tool=tool)


def _tool_named(text: str) -> str | None:
    """The tool an object that could not be decoded names, read leniently enough to say so."""
    for key in _TOOL_KEYS:
        at = text.find(f'"{key}"')
        if at >= 0:
            rest = text[at + len(key) + 2 :].lstrip(" \t\r\n:")
            if rest.startswith('"') and (close := rest.find('"', 1)) > 0:
                return rest[1:close].strip() or None
    return None
