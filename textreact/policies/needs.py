"""`needs`: what a call refused for needing other things found first (a WrongToolError with
needs) still waits for, and that call once everything is found (failure class: a small model
that has found the parts does not put them together).

A small model that sent "Mount Everest - Mount Fuji" to the calculator and then looked both
heights up still does not know what to do with them: it answers with the last height, writes
the names again, or swaps the numbers. So the policy keeps the refused call, says after each
result what is still missing, and once nothing is, shows the refused call with each name
replaced by the number found for it, in the model's own order: `8849 - 3776`. A number is put
in only where each need's result begins with one, all in the same unit or none: "384400 km"
and "299792458 m/s" need a conversion the engine cannot know, so then the model is only told
to call the tool again. Where the question's words fix the order and the operator of a call
that is two names and a difference or a ratio (`textreact.policies.cues`), the call is written
as the question asks: "How many more people live in Tokyo than in London?" makes
"London - Tokyo" the numbers of Tokyo - London."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import regex

from textreact.policies.cues import Comparison, comparison
from textreact.policies.notes import unfinished, waiting
from textreact.policy import Offer, Policy, RunView, SendBack
from textreact.steps import ToolResult, Turn

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


class Needs(Policy):
    """After a refused call with needs: a line after each result that answers one of them
    (what is still missing, or the call to make now with the numbers in place); the next
    request steered to a call while something is missing (only where another tool can find
    it), to the refused tool once nothing is, and to no tool once it has run as shown (only
    ever a tool choice still "auto"); and an answer given before the call has run again sent
    back once for each state of what is missing, while a tool is offered."""

    name = "needs"

    def reset(self, run: RunView) -> None:
        self.unfinished: Turn | None = None  # the refused call, while its tool has not run since
        self.steered: str | None = None  # the next request's tool choice, once
        self.told: set[str] = set()

    def steer(self, run: RunView, offer: Offer) -> Offer:
        steered, self.steered = self.steered, None
        if steered is None or offer.tool_choice != "auto":  # the user's, or another's steering
            return offer
        return Offer(offer.tools, steered)

    def after_call(self, run: RunView, turn: Turn) -> str | None:
        result, failed = turn.result, self.unfinished
        if result is None:
            return None
        if result.needs:
            self.unfinished = turn
            if any(t.name != result.tool for t in run.tools):  # another tool can find them
                self.steered = "required"
            return None
        if failed is None or failed.result is None or result.is_error:
            return None
        if result.tool == failed.result.tool:  # the refused call's tool ran again
            self.unfinished = None
            filled = self._progress(run, failed).filled
            if filled is None or filled != result.arguments:
                return None
            self.steered = "none"  # the model's own plan, done with the numbers in place
            return run.protocol.note("finished", run.lang, step=str(failed.index))
        progress = self._progress(run, failed, turn)
        if progress.found[-1][0] is None:  # this result answers none of the needs
            return None
        if progress.missing:
            self.steered = "required"
        else:
            self.steered = failed.result.tool
            self._news(failed, progress)
        return waiting(failed.result, failed.index, progress, run.lang)

    def check_answer(self, run: RunView, answer: str) -> SendBack | None:
        failed = self.unfinished
        if failed is None or failed.result is None or run.offered.tool_choice == "none":
            return None  # nothing refused, or no tool to finish it with
        progress = self._progress(run, failed)
        if not self._news(failed, progress):
            return None  # told this already: once for each thing found, at most
        text = unfinished(failed.result, failed.index, progress, run.question, run.lang)
        return SendBack(text, "unfinished")

    def _progress(self, run: RunView, failed: Turn, last: Turn | None = None) -> Progress:
        """What the results since the refused call (and `last`, not recorded yet) found."""
        assert failed.result is not None
        later = [*run.turns[failed.index :], *([last] if last else [])]
        return progress(failed.result, [t.result for t in later if t.result], run.question)

    def _news(self, failed: Turn, progress: Progress) -> bool:
        """Whether this state of the refused call is news to the model (now it is not)."""
        told = f"{failed.index}: {progress.missing}"
        if told in self.told:
            return False
        self.told.add(told)
        return True
