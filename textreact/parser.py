"""Completion text -> Step: the one action, the final answer, or a FormatError that tells the
model what to fix. Tolerant of what models really write (see docs/protocol.md for the decision
table), pure, and bounded: it never raises for a `str`, and it looks at most SCAN_LIMIT
characters past any leading reasoning, so a megabyte of garbage costs what 16 KB costs.

A completion in exactly the canonical action form is read here with one match; everything
else goes to `parsing.reader` (the parts are listed in `textreact.parsing`). Every pattern is
compiled on the first parse, so importing the parser compiles nothing."""

from __future__ import annotations

import re
from functools import cache

from textreact import grammar, jsonish
from textreact.parsing.inputs import NO_ACTION, names_final_answer
from textreact.parsing.reader import Reader as _Reader
from textreact.parsing.window import SCAN_LIMIT
from textreact.steps import Action, Step

__all__ = ["SCAN_LIMIT", "parse"]


def parse(text: str) -> Step:
    """Read one completion; never raises for a `str` (the model's mistakes are FormatErrors)."""
    return _canonical_action(text) or _Reader(text).step()


@cache
def _canonical_pattern() -> re.Pattern[str]:
    """The canonical action exactly as render_step writes it, with nothing the general reader
    would treat specially (no colon, `<` or leading `**` in the thought, a plain tool name, a
    one-line JSON object): what a well-behaved model sends on most turns."""
    thought, action, action_input = (
        re.escape(grammar.label(k)) for k in (grammar.THOUGHT, grammar.ACTION, grammar.ACTION_INPUT)
    )
    return re.compile(
        rf"(?:{thought}[ \t]*([^\n:：<]*)\n)?"
        rf"{action}[ \t]*(\w(?:[\w.\-]*\w)?)[ \t]*\n"
        rf"{action_input}[ \t]*(\{{[^\n<]*\}})[ \t]*\n?\Z"
    )


def _canonical_action(text: str) -> Action | None:
    """The fast path; None sends the text to the general reader (tests check both agree)."""
    if not text.startswith(("Thought:", "Action:")):
        return None
    match = _canonical_pattern().match(text)
    if match is None or match[2].lower() in NO_ACTION or names_final_answer(match[2]):
        return None
    try:
        value, repairs = jsonish.loads(match[3])
    except jsonish.JsonishError:
        return None
    if repairs or not isinstance(value, dict):
        return None
    thought = (match[1] or "").strip() or None
    return Action(match[2], value, thought, "", match[3], ())
