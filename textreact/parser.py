"""Completion text -> Step: the one action, the final answer, or a FormatError that tells the
model what to fix. Tolerant of what models really write (see docs/protocol.md for the decision
table), pure, and bounded: it never raises for a `str`, and it looks at most SCAN_LIMIT
characters past any leading reasoning, so a megabyte of garbage costs what 16 KB costs.

A completion in exactly a canonical form (an action, possibly followed by a hallucinated
continuation, or a one-line answer, in either language) is read here with one match;
everything else goes to `parsing.reader` (the parts are listed in `textreact.parsing`). The
parser's patterns are compiled on the first parse, so importing it compiles almost nothing."""

from __future__ import annotations

import re
from functools import cache

from textreact import grammar, jsonish
from textreact.parsing.inputs import is_no_action, names_final_answer
from textreact.parsing.keywords import AS_NEWLINE, BLANKS
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
    An action may be followed by a hallucinated continuation that opens with a keyword line,
    which the reader cuts there, and so does this. The long captures are atomic (a lookahead
    captures, a backreference consumes) and the pattern has no `\\Z`, so a text that is not
    canonical fails in a step or two instead of backtracking through every line."""
    thought, action, action_input, observation, final = (
        re.escape(grammar.label(k, lang))
        for k in (grammar.THOUGHT, grammar.ACTION, grammar.ACTION_INPUT, grammar.OBSERVATION,
                  grammar.FINAL_ANSWER)
    )  # fmt: skip
    line = f"\\n{AS_NEWLINE}"  # what the reader reads as a line break ends a line here too
    return re.compile(
        rf"(?:{thought}(?=(?P<thought>[^{line}:：<]*))(?P=thought)\n)?"
        rf"(?:{action}[ \t]*(?P<tool>[^\W_](?:[\w.\-]*\w)?)[ \t]*\n"
        rf"{action_input}[ \t]*(?=(?P<input>\{{[^{line}<]*\}}))(?P=input)[ \t]*"
        rf"(?:\n(?={observation}|{thought}|{action}|{final})(?P<tail>(?s:.*))|\n?)"
        rf"|{final}(?P<answer>[^{line}<]*)\n?)"
    )


#: The first character of each language's canonical step, and the language.
_OPENING = {
    grammar.LABELS[lang][keyword][0]: lang
    for lang in grammar.LANGUAGES
    for keyword in (grammar.THOUGHT, grammar.ACTION, grammar.FINAL_ANSWER)
}
#: Bold closed right after a label's colon is decoration to the reader (`**Action:** x`).
_BOLD = ("**", "__")


def _canonical(text: str) -> Action | FinalAnswer | None:
    """The fast path; None sends the text to the general reader (tests check both agree)."""
    lang = _OPENING.get(text[:1])
    if lang is None or len(text) > SCAN_LIMIT or "</think>" in text:
        return None
    match = _canonical_pattern(lang).match(text)
    if match is None or match.end() != len(text):
        return None
    thought = match["thought"]
    if thought is not None:
        if thought.startswith(_BOLD):
            return None
        thought = thought.strip(BLANKS) or None
    tool = match["tool"]
    if tool is None:
        answer = match["answer"]
        if answer.startswith(_BOLD) or not answer.strip(BLANKS):
            return None
        return FinalAnswer(answer.strip(BLANKS), thought)
    if is_no_action(tool) or names_final_answer(tool):
        return None
    value = jsonish.strict_object(match["input"])
    if value is None:
        return None
    return Action(tool, value, thought, match["tail"] or "", match["input"], ())
