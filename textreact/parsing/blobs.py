"""A segment of text -> the tool call written in it as a JSON object (`{"action": …,
"action_input": …}`, `{"name": …, "arguments": …}`, OpenAI's `function` wrapper), bare or
fenced, with where the object ends."""

from __future__ import annotations

import json
from typing import NamedTuple

from textreact import jsonish
from textreact.parsing.inputs import Call, read_input

_TOOL_KEYS = ("action", "name", "tool", "tool_name", "function")
_ARG_KEYS = ("action_input", "arguments", "parameters", "args", "input", "tool_input")


class Blob(NamedTuple):
    """A call found in `segment`: it starts at `begin` (the fence or the brace), ends at `end`."""

    call: Call
    begin: int
    end: int
    repairs: tuple[str, ...]


def find_blob(segment: str, opener: int) -> Blob | None:
    """The call whose object opens at `segment[opener]`, with a fence just before it if any."""
    fence = segment.rfind("```", 0, opener)
    tag = segment[fence + 3 : opener].strip() if fence >= 0 else "-"
    begin = fence if not tag or tag.isalpha() else opener
    try:
        decoded = jsonish.decode(segment[begin:])
    except jsonish.JsonishError:
        return None
    found = _blob_call(decoded.value)
    return None if found is None else Blob(found, begin, begin + decoded.end, decoded.repairs)


def _blob_call(value: object) -> Call | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # OpenAI's {"type": "function", "function": {…}}
        value = value["function"]
    tool = next((value[k] for k in _TOOL_KEYS if isinstance(value.get(k), str)), None)
    if not tool or not tool.strip():
        return None
    arguments = next((value[k] for k in _ARG_KEYS if k in value), {})
    if isinstance(arguments, str):
        raw = arguments
        parsed, repairs = read_input(arguments.strip()) if arguments.strip() else ({}, ())
        return tool.strip(), raw, parsed, repairs
    if not isinstance(arguments, dict):
        return None
    return tool.strip(), json.dumps(arguments, ensure_ascii=False), arguments, ()
