"""Completion text in the canonical form -> its step, by one literal match: the form the
prompt teaches (`grammar.render_step`'s: an optional one-line Thought, then an Action and a
one-line Action Input, or a one-line Final Answer, perhaps followed by an `Observation:` the
model wrote itself), which is what a well-behaved model writes nearly every turn.
`keywords.layout` reads that form too, but its one pattern for every decoration, case and
spelling, and its checks for what this form cannot hold, cost several times this literal
match; so this check runs first, and the reply that needs no tolerance pays for none."""

from __future__ import annotations

import re
from functools import cache

from textreact import grammar, jsonish
from textreact.parsing.inputs import is_no_action, names_final_answer, read_input
from textreact.parsing.keywords import AS_BLANK, AS_NEWLINE, labelled, strip
from textreact.parsing.window import SCAN_LIMIT
from textreact.steps import Action, FinalAnswer


@cache
def _form() -> re.Pattern[str]:
    """The canonical form as `render_step` writes it in English, then blank lines and
    perhaps an `Observation:` the model wrote itself, which is cut. A value is one line that
    holds none of what the scanner treats specially: a control character, or what it reads
    as a blank or a line break; no text holds `<` (a reasoning block, a chat-template token).
    A Thought holds no `{` (a call written as JSON); a tool name only the characters a plain
    name is made of, so it has no markup to unwrap and no call syntax. Each value runs to its
    line's end (`strip` takes its blanks), so no two parts compete for a run of blanks and a
    text of another shape fails in linear time."""
    label = {keyword: re.escape(grammar.label(keyword)) for keyword in grammar.KEYWORDS}
    special = rf"\x00-\x08\x0a-\x1f<{AS_BLANK}{AS_NEWLINE}"
    value = rf"[^{special}]*"
    thought = rf"(?:{label[grammar.THOUGHT]} (?P<thought>[^{{{special}]*)\n)?"
    action = (
        rf"{label[grammar.ACTION]} (?P<tool>[A-Za-z0-9_][A-Za-z0-9_.\-]*)\n"
        rf"{label[grammar.ACTION_INPUT]} (?P<input>{value})"
    )
    answer = rf"{label[grammar.FINAL_ANSWER]} (?P<answer>{value})"
    tail = rf"\n(?P<tail>{label[grammar.OBSERVATION]}[^<]*)"
    return re.compile(rf"{thought}(?:{action}|{answer})(?:\n[ \t]*)*(?:{tail})?")


def canonical(text: str) -> Action | FinalAnswer | None:
    """The step of a text in the canonical form, exactly as the general reader reads it (the
    layout path's rules, for the parts this form can hold); None for any other text, and for
    the canonical texts the reader reads some other way: a Thought with a label in it (an
    inline keyword), a tool name that means no action or the pseudo-tool Final Answer, an
    input with a label outside one exact JSON object or read two ways, an empty input or
    answer, an answer with a fence in it."""
    if len(text) > SCAN_LIMIT:
        return None
    match = _form().fullmatch(text)
    if match is None:
        return None
    start, end = match.span("thought")
    if start >= 0 and labelled(text, start, end):
        return None
    thought = (strip(text[start:end]) or None) if start >= 0 else None
    rest = text[match.start("tail") :] if match.start("tail") >= 0 else ""
    if match.start("answer") >= 0:
        answer = strip(match["answer"])
        return FinalAnswer(answer, thought, False, rest) if answer and "```" not in answer else None
    tool = match["tool"]
    if is_no_action(tool) or names_final_answer(tool):
        return None
    start, end = match.span("input")
    raw = strip(text[start:end])
    value = jsonish.strict_object(raw) if raw.startswith("{") else None
    if value is not None:
        return Action(tool, value, thought, rest, raw, ())
    if not raw or labelled(text, start, end):
        return None
    try:
        value, repairs = read_input(raw)
    except jsonish.AmbiguousJsonError:
        return None
    return Action(tool, value, thought, rest, raw, repairs)
