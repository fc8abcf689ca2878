"""A question's wording -> the arithmetic it asks of two things it names: "How many times
taller is A than B?" is A / B, "How many more people live in A than in B?" is A - B, "How
much shorter is A than B?" is B - A, and so in Chinese (`A是B的几倍`, `A比B高多少`).

A small model that wrote a call with two names in it ("London - Tokyo") gets the numbers for
them looked up and put in place (`textreact.policies.needs`). Qwen 0.5B writes a difference for "how
many times" and the names in either order, and then answers with what the call gave, so the
order and the operator are taken from the question where its words fix them, and nowhere
else: a wording read here is one that every reader reads one way. "How many times smaller"
(A / B, or B / A?), `A比B高几倍`, "how much older" (of two years, the older is the smaller)
and a question longer than a sentence or two fix nothing."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

import regex

#: Comparatives whose difference is the first named less the second, and the second less
#: the first. Words of time are in neither: "older" of two founding years is the smaller.
_RISING = "more|higher|taller|longer|larger|bigger|greater|heavier|farther|further|deeper|" \
    "wider|faster|hotter|warmer"  # fmt: skip
_FALLING = "less|fewer|lower|shorter|smaller|lighter|nearer|closer|shallower|narrower|" \
    "slower|colder|cooler|small|little|few|low|short|light|near|close|shallow|narrow|" \
    "slow|cold|cool|young|younger"  # fmt: skip
_AGO = r"(?!\s+ago\b)"  # "how much longer ago": of two years, the earlier is the smaller
#: (the asking words, before the first name; what links the names, between them; the
#: operator; whether the second name comes first). "How many times" asks a ratio only with
#: a rising comparative right after it ("times taller ... than"), or "as tall as" between
#: the names; "how many times has A won more than B" is a count.
_ENGLISH: Final = (
    (regex.compile(rf"\bhow many times (?:{_RISING})\b{_AGO}", regex.I),
     regex.compile(r"\bthan\b", regex.I), "/", False),
    (regex.compile(r"\bhow many times\b", regex.I),
     regex.compile(r"\bas (?!well\b)\w+ as\b", regex.I), "/", False),
    (regex.compile(r"\bratio of\b", regex.I), regex.compile(r"\bto\b", regex.I), "/", False),
    (regex.compile(rf"\bhow (?:much|many) (?:{_RISING})\b{_AGO}", regex.I),
     regex.compile(r"\bthan\b", regex.I), "-", False),
    (regex.compile(rf"\bhow (?:much|many) (?:{_FALLING})\b", regex.I),
     regex.compile(r"\bthan\b", regex.I), "-", True),
)  # fmt: skip
#: A falling word after the asking words of a ratio ("how many times is London smaller
#: than Tokyo", "as small as"): some readers divide one way, some the other.
_FALLS = regex.compile(rf"\b(?:{_FALLING})\b", regex.I)
#: Chinese puts the asking words after the names: A是B的几倍, A比B高多少, A比B矮多少. A
#: multiple after 比 (`A比B高几倍`) is read both as A / B and as A / B - 1: no cue.
_CHINESE: Final = (
    (regex.compile(r"是"), regex.compile(r"\s*的(?:几|多少)倍"), "/", False),
    (regex.compile(r"比"),
     regex.compile(r"\s*(?:多|高|大|长|重|远|深|宽|快|热)(?:多少|几)(?!\s*倍)"), "-", False),
    (regex.compile(r"比"),
     regex.compile(r"\s*(?:少|低|矮|小|短|轻|近|浅|窄|慢|冷)(?:多少|几)(?!\s*倍)"), "-", True),
)  # fmt: skip
_HAN = regex.compile(r"\p{Han}")
#: Words that do not name a thing on their own.
_LINKS: Final = frozenset(
    {"of", "the", "a", "an", "in", "on", "at", "to", "and", "for", "from", "by"}
)
#: Characters of the longest question read: a comparison is asked in a sentence.
_LONGEST: Final = 1000


@dataclass(frozen=True)
class Comparison:
    """The question asks for `first` `operator` `second`, two of the names it was given."""

    first: str
    operator: str
    second: str


def comparison(question: str, names: Sequence[str]) -> Comparison | None:
    """What the question asks of the two `names`, or None when its words do not fix it (no
    asking words, a third name, a name it does not mention, the names in some other place).
    Each way the question may mention a name is tried: `富士山高度` is mentioned as `富士山`
    in `珠穆朗玛峰比富士山高多少米`, where `富士山高` would take the `高` that asks."""
    if len(names) != 2 or len(question) > _LONGEST or _asks_twice(question):
        return None
    for one in _mentions(question, names[0]):
        for other in _mentions(question, names[1]):
            (a, a_end, first), (b, b_end, second) = sorted([(*one, names[0]), (*other, names[1])])
            if a_end <= b:
                asked = _asked(question, (a, a_end), (b, b_end))
                if asked is not None:
                    operator, backwards = asked
                    return Comparison(*((second, operator, first) if backwards else
                                        (first, operator, second)))  # fmt: skip
    return None


def _asks_twice(question: str) -> bool:
    """Whether the question asks more than one comparison ("how many times bigger ..., and
    how many more ..."): which of them a call is for, its words do not say."""
    asked = [m for asking, *_ in _ENGLISH for m in asking.finditer(question)]
    asked += [m for _, asking, *_ in _CHINESE for m in asking.finditer(question)]
    return len({m.start() for m in asked}) > 1


def _asked(
    question: str, first: tuple[int, int], second: tuple[int, int]
) -> tuple[str, bool] | None:
    """The operator, and whether it is the second name's less the first's, that the words
    around two names (their spans) ask for."""
    between, after = question[first[1] : second[0]], question[second[1] :]
    for asking, linking, operator, backwards in _ENGLISH:
        ask = next((m for m in asking.finditer(question) if m.end() <= first[0]), None)
        if ask is None or not linking.search(between):
            continue
        if operator == "/" and _FALLS.search(question, ask.start(), second[1]):
            return None
        return operator, backwards
    for linking, asking, operator, backwards in _CHINESE:
        if linking.search(between) and asking.match(after):
            return operator, backwards
    return None


def _mentions(question: str, name: str) -> Iterator[tuple[int, int]]:
    """Where the question mentions `name`, most likely first: the name itself, then each
    run of its words (characters, for Chinese) at one end ("population of Taipei" is
    mentioned as "Taipei"; `北京人口` as `北京`), of two characters or more and not only such
    words as "of" and "the"; whole words, case aside, in the question's own offsets."""
    han = _HAN.search(name) is not None
    for part in _parts(name):
        word = regex.escape(part) if han else rf"(?<!\w){regex.escape(part)}(?!\w)"
        found = regex.search(word, question, regex.I)
        if found is not None:
            yield found.span()


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
        if len(joiner.join(run)) >= 2 and (han or any(u.casefold() not in _LINKS for u in run))
    ]  # fmt: skip
