"""What the results since a refused call found of its needs (`progress`): which are still
missing, which result answers which, and, once nothing is, the refused call with each name
replaced by the number found for it, in the model's own order (`8849 - 3776` for "Mount
Everest - Mount Fuji"). The `needs` policy tells the model this; the notes render it.

A number is put in only where each need's result begins with one, all in the same unit or
none: "384400 km" and "299792458 m/s" need a conversion the engine cannot know, so then the
model is only told to call the tool again. Where the question's words fix the order and the
operator of a call that is two names and a difference or a ratio (`textreact.policies.cues`),
the call is written as the question asks: "How many more people live in Tokyo than in
London?" makes "London - Tokyo" the numbers of Tokyo - London."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import regex

from textreact.policies.cues import Comparison, comparison
from textreact.steps import ToolResult

__all__ = ["Progress", "progress"]

# A result's leading number ("8849 m (height of ...)", "- 2602000 (population ...)": a line of
# a lookup that found several facts), and the unit after it if there is one.
_LEADING = regex.compile(
    r"(?:-[ ]+)?(?P<number>[-+]?\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?)(?![\w.,]\d|\w)"
    r"(?:[ ]+(?P<unit>[^\s(),;:]+))?"
)
# What is left of a call of two names and a difference or a ratio once the names are taken
# out: the misreading the question mends is one of these for the other, or the order; a sum
# or a product the model wrote is its own ("how many times ... as well as ..." is a sum).
_OPERATOR_ONLY = regex.compile(r"[\s()]*[-/][\s()]*")


@dataclass(frozen=True)
class Progress:
    """How far the results since a refused call got: the needs not found yet, each result
    with the need it answers (None: none), and, once nothing is missing, the refused call's
    arguments with the numbers in place of the names (None where they cannot be put in), and
    what the question asks where that changed the call's order or operator."""

    missing: tuple[str, ...]
    found: tuple[tuple[str | None, str], ...]
    filled: dict[str, Any] | None = None
    asked: Comparison | None = None


def progress(refused: ToolResult, later: Sequence[ToolResult], question: str = "") -> Progress:
    """What the results `later` than the `refused` call found of its needs, for `question`. A
    need counts as found when a result or the call that got it names it ("Mount Fuji", or
    `北京` in the query `北京人口` of a result written in English)."""
    worked = [r for r in later if not r.is_error]
    where = [f"{r.text or ''} {r.arguments}".casefold() for r in worked]
    missing = tuple(n for n in refused.needs if not any(n.casefold() in text for text in where))
    found = tuple(
        (next((n for n in refused.needs if n.casefold() in text), None), r.text or "")
        for r, text in zip(worked, where, strict=True)
    )
    if missing:
        return Progress(missing, found)
    numbers = _numbers(refused, worked)
    if numbers is None:
        return Progress(missing, found)
    filled = _replaced(refused.arguments, numbers)
    asked = comparison(question, refused.needs)
    written = _replaced(refused.arguments, numbers, asked) if asked else filled
    return Progress(
        missing, found, written if written != refused.arguments else None,
        asked if written != filled else None,
    )  # fmt: skip


def _numbers(refused: ToolResult, worked: Sequence[ToolResult]) -> dict[str, str] | None:
    """The number for each need, or None. The longest need picks its line first: "New York"
    does not take the line about New York City."""
    if not isinstance(refused.arguments, dict):
        return None
    lines = [_lines(r) for r in worked]
    taken: set[tuple[int, int]] = set()
    numbers: dict[str, str] = {}  # the longest need first, as _replaced needs them
    units: set[str] = set()
    for need in sorted(refused.needs, key=len, reverse=True):
        match = _number_for(need, worked, lines, taken)
        if match is None:
            return None
        numbers[need] = match["number"].replace(",", "")
        units.add(match["unit"] or "")
    return None if len(units - {""}) > 1 else numbers


def _lines(result: ToolResult) -> list[str]:
    return [line.strip() for line in (result.text or "").splitlines() if line.strip()]


def _number_for(
    need: str, worked: Sequence[ToolResult], lines: list[list[str]], taken: set[tuple[int, int]]
) -> regex.Match[str] | None:
    """The leading number of the first line not `taken` that names `need` and begins with one
    (not the heading of a lookup that found several facts), or of a one-line result whose
    call named it; that line is taken."""
    folded = need.casefold()
    for i, result in enumerate(worked):
        named = [j for j, line in enumerate(lines[i]) if folded in line.casefold()]
        if not named and len(lines[i]) == 1 and folded in str(result.arguments).casefold():
            named = [0]
        for j in named:
            match = _LEADING.match(lines[i][j])
            if match is not None and (i, j) not in taken:
                taken.add((i, j))
                return match
    return None


def _replaced(value: Any, numbers: dict[str, str], asked: Comparison | None = None) -> Any:
    """`value` with each need in its strings replaced by its number, in the order of `numbers`:
    the longest need first (so "New York" is not replaced inside "New York City"); a string
    that is only the two names and an operator is written as the question `asked`."""
    if isinstance(value, str):
        if asked is not None and _only_operator(value, numbers):
            return f"{numbers[asked.first]} {asked.operator} {numbers[asked.second]}"
        for need, number in numbers.items():
            value = regex.sub(regex.escape(need), lambda _, n=number: n, value, flags=regex.I)
        return value
    if isinstance(value, dict):
        return {key: _replaced(item, numbers, asked) for key, item in value.items()}
    if isinstance(value, list):
        return [_replaced(item, numbers, asked) for item in value]
    return value


def _only_operator(value: str, numbers: dict[str, str]) -> bool:
    """Whether `value` is the needs, each once, and a `-` or a `/` (parentheses aside)."""
    for need in numbers:  # the longest first: "New York" is not taken out of "New York City"
        value, taken = regex.subn(regex.escape(need), "", value, count=1, flags=regex.I)
        if not taken:
            return False
    return _OPERATOR_ONLY.fullmatch(value) is not None
