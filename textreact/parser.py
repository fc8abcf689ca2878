"""Completion text -> Step: the one action, the final answer, or a FormatError that tells the
model what to fix. Tolerant of what models really write (see docs/protocol.md for the decision
table), pure, and bounded: it never raises for a `str`, and it looks at most SCAN_LIMIT
characters past any leading reasoning, so a megabyte of garbage costs what 16 KB costs.

A completion in the canonical form, as the prompt teaches it, is read by one literal match
(`parsing.canonical`); one of the shapes nearly every reply takes (`keywords.layout`: prose,
a Thought, an Action and its input or a Final Answer, a continuation to cut) is read here
with one match; everything else goes to `parsing.reader` (the parts are listed in
`textreact.parsing`). The general reader makes a few dozen small steps for any reply, which
is what these paths save.
The parser's patterns are compiled on the first parse, so importing it compiles almost nothing."""

from __future__ import annotations

import re

from textreact import grammar, jsonish
from textreact.parsing import inputs
from textreact.parsing.canonical import canonical
from textreact.parsing.inputs import is_no_action, names_final_answer, read_input
from textreact.parsing.keywords import labelled, layout, strip
from textreact.parsing.reader import Reader as _Reader
from textreact.parsing.window import SCAN_LIMIT, reasoning_end, residue_start
from textreact.steps import Action, FinalAnswer, Step

__all__ = ["SCAN_LIMIT", "parse"]


def parse(text: str) -> Step:
    """Read one completion; never raises for a `str` (the model's mistakes are FormatErrors).
    The canonical form is read by one literal match, the shapes most replies take by one
    match of the layout pattern, and the rest by the general reader: each is tried only when
    the one before it does not answer, and each that answers gives the reader's step."""
    return canonical(text) or _fast(text) or _Reader(text).step()


def _fast(text: str) -> Action | FinalAnswer | None:
    """The fast path: the general reader's step for a text of `keywords.layout`'s shapes, or
    None, which sends the text to the reader (tests check that both agree wherever this one
    answers). What the reader treats specially sends a text there too: a reasoning block
    after the reply began, chat-template tokens (`<`), characters it reads as blanks or line
    breaks, a label written mid-line outside a JSON object, a JSON object in the text before
    the keywords (a call written as JSON), an action it passes over, an input read two ways,
    and a fence or a second line in an answer followed by more keyword lines (its own rules
    for where an answer ends). A leading reasoning block is no part of the step, as for the
    reader, so what follows it is read here. A group's span in the matched text is one past
    its span in `text`."""
    if "think>" in text:
        reasoned = reasoning_end(text)
        if not reasoned or text.find("think>", reasoned) >= 0:
            return None
        text = text[reasoned:]  # the step's values and the discarded text are in this suffix
    if len(text) > SCAN_LIMIT:
        return None
    match = layout().fullmatch("\n" + grammar.fold(text))
    if match is None:
        return None
    stop = _stop(text, match)
    thought = _thought(text, match)
    if stop is None or thought is False:
        return None
    rest = text[stop:]
    if match.start("answer") >= 0:
        answer = strip(text[match.start("answer") - 1 : stop])
        if not answer or "```" in answer or (match.start("tail") >= 0 and "\n" in answer):
            return None
        return FinalAnswer(answer, thought, False, rest)
    has_input = match.start("input") >= 0
    start, end = match.start("tool") - 1, match.end("tool" if has_input else "below") - 1
    written = strip(text[start:end])
    if (
        not written
        or written.startswith(("{", "```"))
        or labelled(text, start, end)
        or is_no_action(written)
    ):
        return None
    try:
        call = _input(text, match, written) if has_input else inputs.call(written)
    except jsonish.AmbiguousJsonError:
        return None
    if call is None or not call[0] or names_final_answer(call[0]):
        return None
    tool, raw, value, repairs = call
    return Action(tool, value, thought, rest, raw, repairs)


def _stop(text: str, match: re.Match[str]) -> int | None:
    """Where the deciding value ends and the discarded text begins: at the continuation's
    keyword line, at a stop-word residue, or at the end; None when the last line the match
    set apart as a residue is none (the reader would read it as the value's)."""
    if match.start("tail") >= 0:
        return match.start("tail")
    if match.start("residue") >= 0:
        residue = residue_start(text, len(text))
        return residue if residue == match.start("residue") - 1 else None
    # only an answer's own lines can end in a residue: a value's open with JSON or a fence
    return len(text) if match.start("answer") < 0 else residue_start(text, len(text))


def _input(text: str, match: re.Match[str], written: str) -> inputs.Call | None:
    """The call an Action line `written` and its Action Input make, as the reader reads them
    (`inputs.read_input`); None when the reader would not take it so: an empty input, or one
    with a label outside one exact JSON object (an exact object, most inputs, needs no
    repair)."""
    start, end = match.start("input") - 1, match.end("input") - 1
    raw = strip(text[start:end])
    tool = inputs.tool_name(inputs.called_name(written))
    value = jsonish.strict_object(raw) if raw.startswith("{") else None
    if value is not None:
        return tool, raw, value, ()
    if not raw or labelled(text, start, end):
        return None
    return (tool, raw, *read_input(raw))


def _thought(text: str, match: re.Match[str]) -> str | bool | None:
    """The step's thought as the reader takes it: the Thought line's value, else the prose
    before the first keyword; False when either holds a label, which the reader would split
    at. The prose runs to the line break before the first keyword: its own end in `text`."""
    prose = match.end("prose")
    if prose and labelled(text, 0, prose):
        return False
    if match.start("thought") < 0:
        return strip(text[:prose]) or None
    start, end = match.start("thought") - 1, match.end("thought") - 1
    if labelled(text, start, end):
        return False
    return strip(text[start:end]) or None
