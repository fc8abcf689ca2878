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
from textreact.parsing.inputs import is_no_action, names_final_answer
from textreact.parsing.keywords import BLANKS
from textreact.parsing.reader import Reader as _Reader
from textreact.parsing.window import SCAN_LIMIT
from textreact.steps import Action, FinalAnswer, Step

__all__ = ["SCAN_LIMIT", "parse"]


def parse(text: str) -> Step:
    """Read one completion; never raises for a `str` (the model's mistakes are FormatErrors)."""
    return _canonical(text) or _Reader(text).step()


@cache
def _canonical_pattern(lang: str) -> re.Pattern[str]:
    """The canonical steps exactly as render_step writes them in `lang`, with nothing the
    general reader would treat specially (no colon or `<` in the thought, a plain tool name, a
    one-line JSON object, a one-line answer): what a well-behaved model sends on most turns.
    An action may be followed by a hallucinated continuation that opens with a keyword line;
    the reader cuts it there, and so does this."""
    thought, action, action_input, observation, final = (
        re.escape(grammar.label(k, lang))
        for k in (grammar.THOUGHT, grammar.ACTION, grammar.ACTION_INPUT, grammar.OBSERVATION,
                  grammar.FINAL_ANSWER)
    )  # fmt: skip
    return re.compile(
        rf"(?:{thought}[ \t]*(?P<thought>[^\n:：<]*)\n)?"
        rf"(?:{action}[ \t]*(?P<tool>\w(?:[\w.\-]*\w)?)[ \t]*\n"
        rf"{action_input}[ \t]*(?P<input>\{{[^\n<]*\}})[ \t]*"
        rf"(?:\n(?=(?:{observation}|{thought}|{action}|{final}))(?P<tail>(?s:.*))|\n?)"
        rf"|{final}[ \t]*(?P<answer>[^\n<]*)\n?)\Z"
    )


#: The first character of each language's canonical step, and the language.
_OPENING = {
    grammar.LABELS[lang][keyword][0]: lang
    for lang in grammar.LANGUAGES
    for keyword in (grammar.THOUGHT, grammar.ACTION, grammar.FINAL_ANSWER)
}


def _canonical(text: str) -> Action | FinalAnswer | None:
    """The fast path; None sends the text to the general reader (tests check both agree)."""
    lang = _OPENING.get(text[:1])
    if lang is None or len(text) > SCAN_LIMIT or "</think>" in text:
        return None
    match = _canonical_pattern(lang).match(text)
    if match is None:
        return None
    thought = (match["thought"] or "").strip(BLANKS) or None
    tool = match["tool"]
    if tool is None:
        answer = match["answer"].strip(BLANKS)
        return FinalAnswer(answer, thought) if answer else None
    if is_no_action(tool) or names_final_answer(tool):
        return None
    value = jsonish.strict_object(match["input"])
    if value is None:
        return None
    tail = match["tail"] or ""
    return Action(tool, value, thought, tail if tail.strip(BLANKS) else "", match["input"], ())
