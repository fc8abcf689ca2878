"""Tool result -> observation text: formatted concisely, cut to a limit, with a recovery hint
when the result cannot help the model as it is.

Tool output is untrusted. Protocol keywords in it are quoted, so a result that says
`Final Answer: ...` reads as data to the model and can never end the run by itself; it is cut to
its limit before it is quoted, so the cut cannot bring an unquoted keyword to a line start.
Formatting is bounded in time and size and never raises, whatever the tool returned."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from textreact import grammar, templates
from textreact.steps import ToolResult

#: Default number of characters of a tool's result shown to the model.
DEFAULT_LIMIT = 500
#: Errors carry specific instructions; they get this much room whatever the limit.
ERROR_LIMIT = 1000
_QUOTE = "│"
#: Error kinds whose observation ends with a recovery hint from prompts/notes.md (a timeout's
#: message already says what to do).
_HINTED_ERRORS = frozenset({"arguments", "unknown_tool", "exception"})
#: Integers longer than this (about 3,000 digits) are shown in scientific form: str() of a
#: much longer one is slow, and past 4,300 digits it raises.
_MAX_INT_BITS = 10_000
#: Containers nested deeper than this are shown as `…`.
_MAX_NESTING = 8
_THINK_TAG = re.compile(r"</?think>", re.IGNORECASE)


def format_number(value: float) -> str:
    """Whole floats as integers; float noise (0.1 + 0.2) rounded to 12 significant digits."""
    if isinstance(value, bool) or not isinstance(value, float) or not math.isfinite(value):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.12g}"


def format_value(value: Any, limit: int = 20_000) -> str:
    """A tool's return value as short text: strings as they are, numbers cleanly, records as
    numbered lines, mappings as compact JSON.

    Bounded and never raising, whatever a tool returns: containers are shown until about
    `limit` characters (then how many items were left out), nesting to a few levels, cycles and
    huge integers without walking or converting them whole, and an object whose `__str__`
    raises by its type name. Only a top-level string comes back whole (slicing it is free)."""
    if isinstance(value, str):
        return value
    return _Render(limit).show(value, 0)


def _integer(value: int) -> str:
    if value.bit_length() <= _MAX_INT_BITS:
        return str(value)
    exponent = math.log10(abs(value))
    digits = math.floor(exponent)
    sign = "-" if value < 0 else ""
    return f"{sign}{10 ** (exponent - digits):.6f}e+{digits} (an integer of {digits + 1} digits)"


def _foreign(value: Any) -> str:
    """str() of an object that is not a builtin value; its failure is shown, not raised."""
    try:
        return str(value)
    except Exception as error:
        return f"<{type(value).__name__} object: str() failed with {type(error).__name__}>"


class _Render:
    """One rendering with a character budget shared by every piece of it."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    def show(self, value: Any, depth: int) -> str:
        """Plain text: numbered lines for sequences, JSON for mappings."""
        if depth > _MAX_NESTING:
            return self.spend("…")
        if isinstance(value, (list, tuple)):
            lines, more = self.items(value, lambda item: self.record(item, depth + 1))
            numbered = [f"{i}. {line}" for i, line in enumerate(lines, 1)]
            return "\n".join([*numbered, more] if more else numbered)
        if isinstance(value, dict):
            return self.json(value, depth) if value else ""
        return self.scalar(value)

    def scalar(self, value: Any) -> str:
        if isinstance(value, bool) or value is None:
            text = "" if value is None else str(value)
        elif isinstance(value, int):
            text = _integer(value)
        elif isinstance(value, float):
            text = format_number(value)
        elif isinstance(value, (bytes, bytearray)):
            text = repr(bytes(value[: self.left]))
        else:
            text = value if isinstance(value, str) else _foreign(value)
        return self.spend(text)

    def spend(self, text: str) -> str:
        text = text[: max(self.left, 0) + 1]
        self.left -= len(text)
        return text

    def items(self, values: Any, show: Any) -> tuple[list[str], str | None]:
        """The items shown within the budget, and the note on those left out (or None)."""
        shown: list[str] = []
        for item in values:
            if self.left <= 0:
                return shown, f"… ({len(values) - len(shown)} more)"
            shown.append(show(item))
        return shown, None

    def joined(self, values: Any, show: Any, separator: str = ", ") -> str:
        shown, more = self.items(values, show)
        return separator.join([*shown, more] if more else shown)

    def record(self, item: Any, depth: int) -> str:
        if isinstance(item, dict) and depth <= _MAX_NESTING:
            pairs = self.joined(
                item.items(), lambda pair: f"{self.key(pair[0])}: {self.show(pair[1], depth)}"
            )
            return pairs.replace("\n", " ")
        return self.show(item, depth).replace("\n", " ")

    def key(self, key: Any) -> str:
        return self.spend(key if isinstance(key, str) else self.scalar(key))

    def json(self, value: Any, depth: int) -> str:
        """Compact JSON (other types as their text), cut at the budget and at deep nesting."""
        if depth > _MAX_NESTING:
            return self.spend("…")
        if isinstance(value, dict):
            pairs = self.joined(
                value.items(),
                lambda pair: f"{self.quoted(self.key(pair[0]))}: {self.json(pair[1], depth + 1)}",
            )
            return "{" + pairs + "}"
        if isinstance(value, (list, tuple, set, frozenset)):
            return "[" + self.joined(value, lambda v: self.json(v, depth + 1)) + "]"
        if isinstance(value, float) and not math.isfinite(value):
            return self.spend(json.dumps(value))
        text = self.scalar(value)
        if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, (int, float)):
            return "null" if value is None else self.quoted(text)
        return "true" if value is True else "false" if value is False else text

    @staticmethod
    def quoted(text: str) -> str:
        return json.dumps(text, ensure_ascii=False)


def quote_keywords(text: str) -> str:
    """Mark every protocol keyword in untrusted text, at a line start or inside a line, so that
    neither the model nor the parser reads it as a step: `│` goes right before the keyword,
    where no reading of the protocol accepts it (`│Final Answer: …`, `**│Action:**`), and
    inside a reasoning tag (`<│/think>`), which would make what precedes it read as reasoning."""
    starts = {m.start(m.lastgroup) for m in grammar.KEYWORD_LINE.finditer(text)}
    starts.update(m.start(m.lastgroup) for m in grammar.KEYWORD_INLINE.finditer(text))
    starts.update(m.start() + 1 for m in _THINK_TAG.finditer(text))
    if not starts:
        return text
    pieces, at = [], 0
    for start in sorted(starts):
        pieces += (text[at:start], _QUOTE)
        at = start
    return "".join(pieces) + text[at:]


def truncate(text: str, limit: int = DEFAULT_LIMIT) -> str:
    """Keep the head and the tail, and say how much was left out between them."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    left_out = len(text) - head - tail
    return f"{text[:head]}\n… [{left_out} characters left out] …\n{text[len(text) - tail :]}"


def observe(result: ToolResult, *, limit: int = DEFAULT_LIMIT, lang: str = "en") -> str:
    """The observation text for one tool call (without the `Observation:` label), with a
    recovery hint in `lang` when the result cannot help the model as it is."""
    if result.is_error:
        kind = result.error_kind
        hint = templates.note(f"hint_{kind}", lang) if kind in _HINTED_ERRORS else ""
        text = templates.note("tool_error", lang, error=result.error or "", hint=hint)
        return quote_keywords(truncate(text.strip(), ERROR_LIMIT))
    text = format_value(result.value, limit=4 * limit).strip()
    if not text:
        return templates.note("empty_result", lang)
    return quote_keywords(truncate(text, limit))


def repeated_call(
    tool: str, step: int, earlier: str, lang: str = "en", *, again: bool = False
) -> str:
    """Shown instead of calling a tool again with the same arguments; `again` when the model
    repeated itself on the turn before too: a model in a loop is asked to answer instead."""
    if again:
        return templates.note("repeated_call_again", lang, tool=tool, step=str(step))
    return templates.note("repeated_call", lang, tool=tool, step=str(step), earlier=earlier)
