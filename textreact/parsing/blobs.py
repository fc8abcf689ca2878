"""A segment of text -> the tool call written in it as a JSON object (`{"action": …,
"action_input": …}`, `{"name": …, "arguments": …}`, OpenAI's `function` wrapper), bare or
fenced, with where the object ends; or what makes the call unreadable (a key set twice,
arguments under a key this reader does not know), so that no argument is dropped unsaid."""

from __future__ import annotations

import ast
import json
import re
from functools import cache
from typing import NamedTuple

from textreact import jsonish
from textreact.parsing.inputs import Call, read_input
from textreact.parsing.messages import ambiguity

#: The keys that name a call's tool (the first that holds a string; `function` also wraps one).
TOOL_KEYS = ("action", "name", "tool", "tool_name", "function")
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
    tool = next((value[k] for k in TOOL_KEYS if isinstance(value.get(k), str)), None)
    if not tool or not tool.strip():
        return None
    tool = tool.strip()
    key = next((k for k in _ARG_KEYS if k in value), None)
    if key is None:
        unknown = [k for k in value if k not in _META_KEYS and k not in TOOL_KEYS]
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
    for key in TOOL_KEYS:
        at = text.find(f'"{key}"')
        if at >= 0:
            rest = text[at + len(key) + 2 :].lstrip(" \t\r\n:")
            if rest.startswith('"') and (close := rest.find('"', 1)) > 0:
                return rest[1:close].strip() or None
    return None


#: One character of a quoted string, as `jsonish` reads it (an escape, or any other but a
#: quote), after any line continuations (`\\` and a newline, which Python reads as nothing).
_PIECE = r"""(?:\\\n)*(?:[^"'\\\n]|\\[^\n])"""
#: Pieces of an escaped key looked at, at most: what `\\N{LATIN SMALL LETTER N}` and its kin
#: take to write any of TOOL_KEYS. A key opens at a quote with no backslash before it (one
#: after a backslash is escaped, or follows one, where no key can open), so each stretch
#: between two quotes is read from one start: with the bound, the search is linear.
_ESCAPED_PIECES = 256


@cache
def _tool_key() -> re.Pattern[str]:
    """A key that could name a call's tool, as the JSON reader (`jsonish`, with its repairs)
    can read one: quoted in any of its ways, or a quoted string with an escape in it, which
    `tool_key_starts` decodes to see (`"n\\u0061me"`), followed by a colon or a comment (which
    may stand before the colon); or unquoted before a colon, after the `{` or `,` that opens
    it (blanks and comments between, a comment running to its newline, so that it is read
    one way only), so that "use another tool: x" in prose is no key. Not right after a `│`,
    so that quoting twice changes nothing."""
    keys = "|".join(sorted(TOOL_KEYS, key=len, reverse=True))
    escaped = (
        rf"""(?P<escaped>(?<!\\)(?P<quote>["'])(?=[^"'\n]{{0,{_ESCAPED_PIECES}}}\\)"""
        rf"""(?:{_PIECE}){{0,{_ESCAPED_PIECES}}}(?:\\\n)*(?P=quote))"""
    )
    return re.compile(
        rf"""(?<!│)(?P<quoted>["'“](?:{keys})["'”]|{escaped})(?=[ \t\r\n]*(?::|//|\#))"""
        rf"""|[{{,](?:[ \t\r\n]|(?://|\#)[^\n]*\n)*(?P<unquoted>{keys})(?=[ \t\r\n]*:)"""
    )


@cache
def _key_hint() -> re.Pattern[str]:
    """What every tool key holds as written: one of TOOL_KEYS, or the backslash of an escape
    that may spell one. A text with neither has no key to look for: a search for these
    literals, whose first letters the regex engine skips to, costs a fraction of one for the
    key pattern, which opens with a lookbehind and so is started at every position."""
    return re.compile("|".join(map(re.escape, sorted(TOOL_KEYS))) + r"|\\")


def tool_key_starts(text: str) -> list[int]:
    """Where each key that could name the tool of a call written as JSON starts in `text`
    (its opening quote, if any): for `untrusted.quote_keywords`, whose mark there breaks
    the object for the JSON reader, so a tool's output cannot pose as a call."""
    starts: list[int] = []
    if _key_hint().search(text) is None:
        return starts
    for match in _tool_key().finditer(text):
        if match["unquoted"] is not None:
            starts.append(match.start("unquoted"))
        elif match["escaped"] is None or _decoded(match["escaped"]) in TOOL_KEYS:
            starts.append(match.start())
    return starts


def _decoded(literal: str) -> object:
    try:
        return ast.literal_eval(literal)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
