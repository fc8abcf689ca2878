"""Completion text -> Step: the one action, the final answer, or a FormatError that tells the
model what to fix. Tolerant of what models really write (see docs/protocol.md for the decision
table), pure, and bounded: it never raises for a `str`, and it looks at most SCAN_LIMIT
characters past any leading reasoning, so a megabyte of garbage costs what 16 KB costs.

A completion of the shapes nearly every reply takes (`keywords.layout`: prose, a Thought, an
Action and its input or a Final Answer, a continuation to cut) is read here with one match;
everything else goes to `parsing.reader` (the parts are listed in `textreact.parsing`). The
general reader makes a few dozen small steps for any reply, which is what this path saves.
The parser's patterns are compiled on the first parse, so importing it compiles almost nothing."""

from __future__ import annotations

import re

from textreact import grammar, jsonish
from textreact.parsing.inputs import is_no_action, names_final_answer, read_input
from textreact.parsing.keywords import labelled, layout, plain, strip
from textreact.parsing.reader import Reader as _Reader
from textreact.parsing.window import SCAN_LIMIT, residue_start
from textreact.steps import Action, FinalAnswer, Step

__all__ = ["SCAN_LIMIT", "parse"]


def parse(text: str) -> Step:
    """Read one completion; never raises for a `str` (the model's mistakes are FormatErrors)."""
    return _fast(text) or _Reader(text).step()


def _fast(text: str) -> Action | FinalAnswer | None:
    """The fast path: the general reader's step for a text of `keywords.layout`'s shapes, or
    None, which sends the text to the reader (tests check that both agree wherever this one
    answers). What the reader treats specially sends a text there too: reasoning blocks and
    chat-template tokens (`<`), characters it reads as blanks or line breaks, a label written
    mid-line outside a JSON object, a JSON object in the text before the keywords (a call
    written as JSON), an input read two ways, a stop-word residue, and a fence or a second
    line in an answer followed by more keyword lines (its own rules for where it ends)."""
    if len(text) > SCAN_LIMIT or "think>" in text or plain(text) is not text:
        return None
    match = layout().fullmatch("\n" + grammar.fold(text))
    if match is None:
        return None
    # a group's span in the matched text is one past its span in `text`
    tail = match.start("tail") if match["tail"] is not None else len(text) + 1
    rest = text[tail:]  # the continuation opens with a keyword line, so it is never blank
    thought = _thought(text, match)
    if thought is False:
        return None
    if match["tool"] is None:
        start, end = match.span("answer")
        answer = strip(text[start - 1 : end - 1])
        if not answer or "```" in answer:
            return None
        if "\n" in answer and (rest or residue_start(text, len(text)) < len(text)):
            return None  # only an answer's own lines can end in a residue
        return FinalAnswer(answer, thought, False, rest)
    tool = text[match.start("tool") - 1 : match.end("tool") - 1]
    start, end = match.span("input")
    raw = strip(text[start - 1 : end - 1])
    if not raw or is_no_action(tool) or names_final_answer(tool):
        return None
    # an exact object (most inputs) needs no repair, and its strings may hold labels
    value = jsonish.strict_object(raw) if raw[0] == "{" else None
    if value is not None:
        return Action(tool, value, thought, rest, raw, ())
    if labelled(text, start - 1, end - 1):
        return None
    try:
        value, repairs = read_input(raw)
    except jsonish.AmbiguousJsonError:
        return None
    return Action(tool, value, thought, rest, raw, repairs)


def _thought(text: str, match: re.Match[str]) -> str | None | bool:
    """The step's thought as the reader takes it: the Thought line's value, else the prose
    before the first keyword; False when either holds a label, which the reader would split
    at."""
    if match["thought"] is not None:
        start, end = match.start("thought") - 1, match.end("thought") - 1
    else:  # the prose runs to the line break before the first keyword: its own end in `text`
        start, end = 0, match.end("prose")
    if labelled(text, start, end):
        return False
    return strip(text[start:end]) or None
