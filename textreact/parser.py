"""Completion text -> Step: the one action, the final answer, or a FormatError that tells the
model what to fix. Tolerant of what models really write (see docs/protocol.md for the decision
table), pure, and bounded: it never raises for a `str`, and it looks at most SCAN_LIMIT
characters past any leading reasoning, so a megabyte of garbage costs what 16 KB costs.

A completion in exactly the canonical action form is read here with one match; everything
else goes to `parsing.reader` (the parts are listed in `textreact.parsing`). Every pattern is
compiled on the first parse, so importing the parser compiles nothing."""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

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


class _Labels(NamedTuple):
    thought: str
    action: str
    action_input: str
    final: str
    #: The keyword lines a hallucinated continuation may open with.
    continuation: tuple[str, ...]


def _labels(lang: str) -> _Labels:
    label = functools.partial(grammar.label, lang=lang)
    keywords = (grammar.THOUGHT, grammar.ACTION, grammar.ACTION_INPUT, grammar.FINAL_ANSWER)
    continuation = (grammar.OBSERVATION, grammar.THOUGHT, grammar.ACTION, grammar.FINAL_ANSWER)
    return _Labels(*map(label, keywords), tuple(map(label, continuation)))


_CANONICAL = {lang: _labels(lang) for lang in grammar.LANGUAGES}
#: The first character of each language's canonical step, and the language.
_OPENING = (
    {labels.thought[0]: lang for lang, labels in _CANONICAL.items()}
    | {labels.action[0]: lang for lang, labels in _CANONICAL.items()}
    | {labels.final[0]: lang for lang, labels in _CANONICAL.items()}
)
_PLAIN_TOOL = re.compile(r"\w(?:[\w.\-]*\w)?")
#: Bold closed right after a label's colon is decoration to the reader (`**Action:** x`).
_BOLD = ("**", "__")


def _canonical(text: str) -> Action | FinalAnswer | None:
    """The fast path: the canonical steps exactly as render_step writes them, with nothing the
    general reader would treat specially (no colon or `<` in the thought, a plain tool name, a
    one-line JSON object, a one-line answer), what a well-behaved model sends on most turns;
    an action may be followed by a hallucinated continuation that opens with a keyword line,
    which the reader cuts there, and so does this. Line by line with `str` methods: a regex
    that fails late backtracks through every line. None sends the text to the general reader
    (tests check both agree)."""
    lang = _OPENING.get(text[:1])
    if lang is None or len(text) > SCAN_LIMIT or "</think>" in text:
        return None
    labels = _CANONICAL[lang]
    thought, rest = None, text
    if text.startswith(labels.thought):
        line, newline, rest = text.partition("\n")
        line = line[len(labels.thought) :]
        if not newline or ":" in line or "：" in line or "<" in line or line.startswith(_BOLD):
            return None
        thought = line.strip(BLANKS) or None
    if rest.startswith(labels.final):
        answer = rest[len(labels.final) :]
        answer = answer[:-1] if answer.endswith("\n") else answer
        if "\n" in answer or "<" in answer or answer.startswith(_BOLD) or not answer.strip(BLANKS):
            return None
        return FinalAnswer(answer.strip(BLANKS), thought)
    if not rest.startswith(labels.action):
        return None
    line, _, rest = rest.partition("\n")
    tool = line[len(labels.action) :]
    tool = "" if tool.startswith(_BOLD) else tool.strip(" \t")
    if not rest.startswith(labels.action_input) or not _PLAIN_TOOL.fullmatch(tool):
        return None
    line, _, tail = rest.partition("\n")
    raw = line[len(labels.action_input) :].strip(" \t")
    if tail and not tail.startswith(labels.continuation):
        return None
    if not raw.endswith("}") or "<" in raw or is_no_action(tool) or names_final_answer(tool):
        return None
    value = jsonish.strict_object(raw)
    if value is None:
        return None
    return Action(tool, value, thought, tail, raw, ())
