"""Completion text -> the calls of a reply that may make several, where the caller allows
parallel calls (`TextProtocol(parallel_calls=True)`, `textreact serve --parallel-calls`).

The form is the single call's, repeated: `Action:` / `Action Input:` pairs one after another,
before the `Observation:` the engine supplies; each pair is read by `parse`, as one call is.
After a call, the next is read only when what the call left opens with an `Action:` line (one
`Thought:` line may come before it); an observation, an answer, prose or anything else ends the
calls, and is discarded as it is after a single call. So does a call that repeats one the reply
has already made (the same tool and arguments): it would have the same result, a tool with
effects must not run twice on it, and a reply that starts repeating one call tends to repeat it
until the bound. A pair written wrong among them is read as the FormatError `parse` gives it,
and ends the calls too, so that the caller can say which one it was. At most `limit` pairs are
read (MAX_CALLS unless told): a reply of a million pairs costs `limit` parses, each of them
bounded as `parse` is."""

from __future__ import annotations

import re
from functools import cache
from typing import Final

from textreact import grammar
from textreact.parser import parse
from textreact.parsing.blanks import BLANKS
from textreact.steps import Action, FinalAnswer, Step

__all__ = ["MAX_CALLS", "parse_calls"]

#: The most calls one reply may make: what the prompt tells, the grammar allows and the
#: parser reads. A model that needs more makes them in the next reply.
MAX_CALLS: Final = 8
#: Characters of a line read for its keyword: a label and its decoration fit in far fewer.
_HEAD: Final = 64


def parse_calls(text: str, limit: int = MAX_CALLS) -> tuple[Step, ...]:
    """The reply's steps in order: its first step as `parse` reads it, then each call that
    follows it (see the module), at most `limit` steps. Every step but the last is an Action;
    the last may be an Action, or a FormatError for a call written wrong (or, alone, whatever
    `parse` reads). Each step's `discarded_text` is what follows it (the later calls included),
    a suffix of `text`; the last one's is what the reply discards. Never raises for a `str`."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1 call, got {limit}")
    steps = [parse(text)]
    while len(steps) < limit and isinstance(steps[-1], Action):
        rest = steps[-1].discarded_text
        if not _opens_call(rest):
            break
        step = parse(rest)
        if isinstance(step, FinalAnswer) or getattr(step, "problem", None) == "no_action":
            break
        if isinstance(step, Action) and any(_same_call(step, made) for made in steps):
            break
        steps.append(step)
    return tuple(steps)


def _same_call(step: Action, made: Step) -> bool:
    return isinstance(made, Action) and (made.tool, made.input) == (step.tool, step.input)


def _opens_call(rest: str) -> bool:
    """Whether `rest` opens with an Action line, after blank lines and at most one Thought
    line."""
    kind, after = _first_keyword(rest, 0)
    if kind == grammar.THOUGHT:
        kind, after = _first_keyword(rest, after)
    return kind == grammar.ACTION


def _first_keyword(text: str, start: int) -> tuple[str | None, int]:
    """The keyword of the first line of `text[start:]` that is not blank (None when it holds
    none), and where the line after it starts."""
    at = len(text) - len(text[start:].lstrip(BLANKS))
    end = text.find("\n", at)
    end = len(text) if end < 0 else end + 1
    match = _keyword_line().match(grammar.fold(text[at : min(end, at + _HEAD)]))
    return (None if match is None else match.lastgroup), end


@cache
def _keyword_line() -> re.Pattern[str]:
    """A keyword line's head, matched on folded text (as the scanner matches it)."""
    return re.compile(grammar.KEYWORD_LINE_PATTERN)
