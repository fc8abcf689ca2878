"""Tool result -> observation text: formatted concisely, cut to a limit, with a recovery hint
when the result cannot help the model as it is.

Tool output is untrusted. Lines in it that look like protocol keywords are quoted, so a result
that says `Final Answer: ...` reads as data to the model and can never end the run by itself."""

from __future__ import annotations

import json
import math
from typing import Any

from textreact import grammar
from textreact.steps import ToolResult

#: Default number of characters of a tool's result shown to the model.
DEFAULT_LIMIT = 500
#: Errors carry specific instructions; they get this much room whatever the limit.
ERROR_LIMIT = 1000
_QUOTE = "│ "

EMPTY_HINT = (
    "The tool returned an empty result. Try other keywords or another tool, "
    "or give your Final Answer if you already know it."
)
_ERROR_HINTS = {
    "arguments": "Fix the Action Input as shown and call the tool again.",
    "unknown_tool": "Use one of the listed tool names exactly.",
    "exception": "The tool failed. Check the input, or try another tool.",
}


def format_number(value: float) -> str:
    """Whole floats as integers; float noise (0.1 + 0.2) rounded to 12 significant digits."""
    if isinstance(value, bool) or not isinstance(value, float) or not math.isfinite(value):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.12g}"


def format_value(value: Any) -> str:
    """A tool's return value as short text: strings as they are, numbers cleanly, records as
    numbered lines, mappings as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return format_number(value)
    if isinstance(value, (list, tuple)):
        return "\n".join(f"{i}. {_record(item)}" for i, item in enumerate(value, 1))
    if isinstance(value, dict):
        if not value:
            return ""
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    return "" if value is None else str(value)


def _record(item: Any) -> str:
    if isinstance(item, dict):
        return ", ".join(f"{key}: {format_value(val)}" for key, val in item.items())
    return format_value(item).replace("\n", " ")


def quote_keywords(text: str) -> str:
    """Quote lines that a parser would read as protocol keywords."""
    return grammar.KEYWORD_LINE.sub(lambda m: _QUOTE + m.group(0), text)


def truncate(text: str, limit: int = DEFAULT_LIMIT) -> str:
    """Keep the head and the tail, and say how much was left out between them."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    left_out = len(text) - head - tail
    return f"{text[:head]}\n… [{left_out} characters left out] …\n{text[len(text) - tail :]}"


def observe(result: ToolResult, *, limit: int = DEFAULT_LIMIT) -> str:
    """The observation text for one tool call (without the `Observation:` label)."""
    if result.is_error:
        hint = _ERROR_HINTS.get(result.error_kind or "", "")
        return truncate(quote_keywords(f"Error: {result.error}\n{hint}".strip()), ERROR_LIMIT)
    text = quote_keywords(format_value(result.value)).strip()
    if not text:
        return EMPTY_HINT
    return truncate(text, limit)


def repeated_call(tool: str, step: int, earlier: str) -> str:
    """Shown instead of calling a tool again with the same arguments."""
    return (
        f"You already called {tool} with these arguments in step {step}, and the result was:\n"
        f"{earlier}\nDo not repeat the call: use this result, try different arguments, "
        "or give your Final Answer."
    )
