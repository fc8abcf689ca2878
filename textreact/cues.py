"""A question's wording -> the arithmetic it asks of two things it names: "How many times
taller is A than B?" is A / B, "How many more people live in A than in B?" is A - B, "How
much shorter is A than B?" is B - A, and so in Chinese (`A是B的几倍`, `A比B多多少`).

A small model that wrote a call with two names in it ("London - Tokyo") gets the numbers for
them looked up and put in place (`textreact.needs`). Qwen 0.5B writes a difference for "how
many times" and the names in either order, and then answers with what the call gave, so the
order and the operator are taken from the question where its words fix them, and nowhere
else: a wording read here is one a reader of any skill reads one way."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import regex

#: (pattern of the words that ask, the word between the two names, operator, reversed).
#: The asking words come before the first name; the linking word lies between the names.
_RISING = "more|higher|taller|longer|larger|bigger|greater|heavier|older|farther|further|" \
    "deeper|wider|faster|hotter|warmer"  # fmt: skip
_FALLING = "less|fewer|lower|shorter|smaller|lighter|younger|nearer|closer|shallower|" \
    "narrower|slower|colder|cooler"  # fmt: skip
_ENGLISH: Final = (
    (regex.compile(r"\bhow many times\b", regex.I), regex.compile(r"\b(?:than|as)\b", regex.I),
     "/", False),
    (regex.compile(r"\bratio of\b", regex.I), regex.compile(r"\bto\b", regex.I), "/", False),
    (regex.compile(rf"\bhow (?:much|many) (?:{_RISING})\b", regex.I),
     regex.compile(r"\bthan\b", regex.I), "-", False),
    (regex.compile(rf"\bhow (?:much|many) (?:{_FALLING})\b", regex.I),
     regex.compile(r"\bthan\b", regex.I), "-", True),
)  # fmt: skip
#: Chinese puts the asking words after the names: A是B的几倍, A比B高多少, A比B少多少.
_CHINESE: Final = (
    (regex.compile(r"是"), regex.compile(r"^\s*的(?:几|多少)倍"), "/", False),
    (regex.compile(r"比"), regex.compile(r"^\s*(?:多|高|大|长|重|远|深|宽|快|老)(?:多少|几)"),
     "-", False),
    (regex.compile(r"比"), regex.compile(r"^\s*(?:少|低|小|短|轻|近|浅|窄|慢)(?:多少|几)"),
     "-", True),
)  # fmt: skip
_HAN = regex.compile(r"\p{Han}")
#: Words that do not name a thing on their own.
_LINKS: Final = frozenset(
    {"of", "the", "a", "an", "in", "on", "at", "to", "and", "for", "from", "by"}
)


@dataclass(frozen=True)
class Comparison:
    """The question asks for `first` `operator` `second`, two of the names it was given."""

    first: str
    operator: str
    second: str


def comparison(question: str, names: Sequence[str]) -> Comparison | None:
    """What the question asks of the two `names`, or None when its words do not fix it (no
    asking words, a third name, a name it does not mention, the names in some other place)."""
    if len(names) != 2:
        return None
    found = [_position(question, name) for name in names]
    if None in found:
        return None
    (a, a_end), (b, b_end) = sorted(found)  # type: ignore[type-var]
    if a_end > b:
        return None
    first, second = (names[0], names[1]) if found[0][0] == a else (names[1], names[0])  # type: ignore[index]
    between, after = question[a_end:b], question[b_end:]
    for asking, linking, operator, backwards in _ENGLISH:
        ask = asking.search(question)
        if ask is not None and ask.end() <= a and linking.search(between):
            return _ordered(first, operator, second, backwards)
    for linking, asking, operator, backwards in _CHINESE:
        if linking.search(between) and asking.search(after):
            return _ordered(first, operator, second, backwards)
    return None


def _ordered(first: str, operator: str, second: str, backwards: bool) -> Comparison:
    return Comparison(second, operator, first) if backwards else Comparison(first, operator, second)


def _position(question: str, name: str) -> tuple[int, int] | None:
    """Where the question mentions `name`: the name itself, or else the longest run of its
    words (characters, for Chinese) at one end ("population of Taipei" is
    mentioned as "Taipei"; `北京人口` as `北京`), of two characters or more and not only such
    words as "of" and "the"."""
    folded = question.casefold()
    for part in _parts(name.casefold()):
        at = folded.find(part)
        if at >= 0:
            return at, at + len(part)
    return None


def _parts(name: str) -> list[str]:
    """`name`, then its shorter runs at the end, then at the start, longest first (at the
    start first in Chinese, which names the thing before what of it is meant)."""
    han = _HAN.search(name) is not None
    units = list(name) if han else name.split()
    joiner = "" if han else " "
    ends = [units[k:] for k in range(1, len(units))]
    starts = [units[:k] for k in range(len(units) - 1, 0, -1)]
    runs = [units, *starts, *ends] if han else [units, *ends, *starts]
    return [
        joiner.join(run) for run in runs
        if len(joiner.join(run)) >= 2 and (han or any(unit not in _LINKS for unit in run))
    ]  # fmt: skip
