"""The fact lookup tool's engine: a question -> a short, number-first answer from a bundled table.

The table (`facts.json`, inside the package) is read once, on the first lookup, through
importlib.resources so that it works from a wheel. Matching is exact on meaning-bearing words,
never fuzzy: "population of Taipei", "Taipei population", "What is the population of Taipei?"
and "台北人口" all reduce to the same key, while "population density of Taipei" does not match
(a wrong number is worse than a miss). A query whose words all belong to the queries of exactly
one fact ("Mount Everest") answers that fact, and so does one that matches once the units it
closes with are dropped ("speed of light in metres per second"), and so does one that holds a
known query of one fact whole plus words of that fact's own description ("average distance
from the Earth to the Moon", described as the average one): the answer names what it is
and its unit, so the model can tell, and a small model that leaves out the noun ("height") is
not sent round again for nothing. A query that names several facts whole ("combined population
of Taipei and New York City") answers each of them, one per line: a small model asks for
everything a question needs in one lookup, and sent round to ask for each one it answers with
the first; a calculation ("17 * 23") raises WrongToolError. A miss returns `unknown: ...` with
the closest known queries, so the model can ask again with one of them. Closeness is judged on
the words that say which fact ("Zyxtopia"), not what kind ("population"), so a query close to
nothing suggests nothing, and the model is told to answer with what it knows."""

from __future__ import annotations

import difflib
import functools
import json
import re
import unicodedata
from importlib import resources
from typing import Final

from textreact.errors import WrongToolError
from textreact.tools.tool import NotFound

#: Words that carry no meaning for the lookup (dropped), and spellings mapped to one word.
_STOPWORDS: Final = frozenset({
    "a", "an", "the", "of", "in", "on", "at", "to", "for", "is", "are", "was", "were", "be",
    "been", "what", "whats", "which", "who", "when", "how", "many", "much", "does", "do", "did",
    "tell", "me", "please", "give", "find", "look", "up", "current", "currently", "city",
    "approximately", "about", "total", "number", "value", "there", "live", "lives", "living",
    "exactly", "one", "1", "s",
})  # fmt: skip
_SYNONYMS: Final = {
    "people": "population", "inhabitants": "population", "residents": "population",
    "tall": "height", "high": "height", "elevation": "height", "mt": "mount", "fast": "speed",
    "kilometers": "km", "kilometres": "km", "centimeters": "cm", "centimetres": "cm",
    "meters": "m", "metres": "m", "kilograms": "kg",
}  # fmt: skip
#: Chinese question phrasings mapped to the noun the table uses, then particles dropped.
_ZH_PHRASES: Final = (
    ("有多少人", "人口"), ("多少人", "人口"), ("有多高", "高度"), ("多高", "高度"),
    ("是哪里", ""), ("在哪里", ""), ("是多少", ""), ("是什么", ""), ("多少", ""), ("请问", ""),
)  # fmt: skip
#: Units a question may close with ("in metres per second"); the answer states its own unit,
#: so they are dropped when the query matches no fact with them.
_UNITS: Final = frozenset({
    "m", "km", "cm", "kg", "second", "seconds", "per", "hour", "hours", "degrees", "celsius",
    "year", "years", "units", "unit",
})  # fmt: skip
_ZH_PARTICLES: Final = str.maketrans("", "", "的是吗呢有")
_TOKEN: Final = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?|[\u3400-\u9fff]")
_SUGGESTIONS: Final = 3
#: A query that is a calculation ("17 * 23"): numbers and operators only.
_ARITHMETIC: Final = re.compile(
    r"\s*[-+(]*\s*\d[\d.,]*(?:\s*(?:%\s*of|[-+*/^×÷x%]|\*\*)\s*[-+(]*\s*\d[\d.,]*\)*)+\s*[=?]?\s*"
)
#: Facts named by one query that asks for several, at most.
_PARTS: Final = 5
#: Suggestions below this closeness (a shared word, or a near spelling) are left out: a small
#: model copies an unrelated suggestion ("days in a leap year") as its answer to a question
#: the table was never meant for ("How many legs does a spider have?").
_CLOSE: Final = 0.7
#: A word in the queries of this many facts or more names a kind of fact ("population",
#: "capital", "height"), not which one.
_KIND: Final = 3
#: A question longer than this is not "a few words"; it is refused before matching, because
#: ranking suggestions by spelling costs time in the square of its length (1 MB took 40 s).
MAX_QUERY: Final = 200


def _words(query: str) -> list[str]:
    """A query's words in order, each in the table's spelling."""
    text = unicodedata.normalize("NFKC", query).casefold().replace("'s", " ")
    for phrase, noun in _ZH_PHRASES:
        text = text.replace(phrase, noun)
    return [_SYNONYMS.get(w, w) for w in _TOKEN.findall(text.translate(_ZH_PARTICLES))]


def _key(words: list[str]) -> frozenset[str]:
    """The meaning-bearing words of a query, order-free: the same for every phrasing."""
    return frozenset(w for w in words if w not in _STOPWORDS)


def _without_units(words: list[str]) -> list[str]:
    """The words before a closing "in <units>" ("speed of light in metres per second"); the
    units of "seconds in a leap year" are its subject, and stay."""
    end = len(words)
    while end and words[end - 1] in _UNITS:
        end -= 1
    return words[: end - 1] if end < len(words) and end and words[end - 1] == "in" else words


@functools.cache
def _table() -> tuple[
    dict[frozenset[str], str],
    tuple[tuple[str, frozenset[str]], ...],
    frozenset[str],
    dict[str, frozenset[str]],
]:
    """(key -> answer, every known query with its key, the words that name a kind of fact,
    answer -> the words of what it is about); built once, on first use."""
    data = json.loads(resources.files(__package__).joinpath("facts.json").read_text("utf-8"))
    answers: dict[frozenset[str], str] = {}
    queries: list[tuple[str, frozenset[str]]] = []
    about: dict[str, frozenset[str]] = {}
    for fact in data["facts"]:
        answer = f"{fact['value']} ({fact['about']})"
        about[answer] = _key(_words(fact["about"]))
        for query in fact["queries"]:
            key = _key(_words(query))
            if answers.setdefault(key, answer) != answer:
                raise ValueError(f"facts.json: {query!r} matches two different facts")
            queries.append((query, key))
    facts_with: dict[str, set[str]] = {}
    for key, answer in answers.items():
        for word in key:
            facts_with.setdefault(word, set()).add(answer)
    kinds = frozenset(w for w, found in facts_with.items() if len(found) >= _KIND)
    return answers, tuple(queries), kinds, about


def _closeness(key: frozenset[str], other: frozenset[str], kinds: frozenset[str]) -> float:
    """Shared words plus spelling, on the words that say which fact ("Taipei"), not what kind
    ("population"): "population of Zyxtopia" is close to no population the table knows."""
    key, other = key - kinds or key, other - kinds or other
    overlap = len(key & other) / len(key | other)
    spelling = difflib.SequenceMatcher(None, " ".join(sorted(key)), " ".join(sorted(other)))
    return overlap + spelling.ratio()


def _parts(
    query: str,
    key: frozenset[str],
    queries: tuple[tuple[str, frozenset[str]], ...],
    answers: dict[frozenset[str], str],
    kinds: frozenset[str],
) -> list[str]:
    """One known query for each fact a query names whole ("combined population of Taipei and
    New York City" names two), in the order the query names them: a small model asks for
    everything a question needs in one lookup."""
    found: dict[str, tuple[int, str]] = {}
    text = unicodedata.normalize("NFKC", query).casefold()
    kind = key & kinds
    for known, other in queries:
        telling = other - kinds
        fits = telling and telling <= key and (kind & other or not kind)
        if fits and answers[other] not in found:
            # where the query names it; a word it spelt otherwise ("people") sorts last
            where = min((text.find(w) for w in telling if w in text), default=len(text))
            found[answers[other]] = (where, known)
    return [known for _, known in sorted(found.values())][:_PARTS]


def lookup_fact(query: str) -> str:
    """Answer a factual question from the bundled table, e.g. "population of Taipei".

    A hit returns the value first, then what it is and when, e.g.
    "2602000 (population of Taipei, 2020)" or "299792458 m/s (speed of light in vacuum, exact)";
    the leading number parses with a plain `float(answer.split()[0])`.
    A query whose words are part of the queries of one fact only answers that fact; one that
    names several facts answers each, a line each. A calculation raises WrongToolError.
    A miss returns "unknown: ..." naming the closest known queries (one per fact); so does a
    query longer than MAX_QUERY characters, without suggestions: each a NotFound.
    """
    if len(query) > MAX_QUERY:
        return NotFound(
            f"unknown: the query is {len(query)} characters long; ask for one fact in a few "
            f"words (at most {MAX_QUERY} characters)."
        )
    if _ARITHMETIC.fullmatch(query):
        shown = " ".join(query.split())
        raise WrongToolError(f'"{shown}" is arithmetic, not a fact to look up: calculate it.')
    answers, queries, kinds, about = _table()
    key = _key(_words(query))
    for words in dict.fromkeys((key, _key(_without_units(_words(query))))):
        if words in answers:
            return answers[words]
        if not words - _UNITS:  # units alone say nothing of which fact
            continue
        containing = {answers[other] for _, other in queries if words < other}
        if len(containing) == 1:
            return containing.pop()
        described = {
            answers[other]
            for _, other in queries
            if other < words and words <= other | about[answers[other]]
        }
        if len(described) == 1:
            return described.pop()
    shown = " ".join(query.split())[:80]
    parts = _parts(query, key, queries, answers, kinds)
    if len(parts) > 1:
        found = "\n".join(f"- {lookup_fact(text)}" for text in parts)
        return f'"{shown}" names {len(parts)} facts; each one:\n{found}'
    closeness = {other: _closeness(key, other, kinds) for _, other in queries}
    ranked = sorted(queries, key=lambda item: closeness[item[1]], reverse=True)
    suggestions: list[str] = []
    seen: set[str] = set()
    for text, other in ranked:
        if closeness[other] < _CLOSE or len(suggestions) == _SUGGESTIONS:
            break
        if answers[other] not in seen:
            seen.add(answers[other])
            suggestions.append(f'"{text}"')
    if not suggestions:
        return NotFound(
            f'unknown: "{shown}" is not in the table, and nothing close to it is. If the'
            " question needs no lookup (common knowledge, a word, a translation), answer it"
            " from what you know; if it does, say that it is not known."
        )
    return NotFound(
        f'unknown: no fact matches "{shown}". Closest known queries: {", ".join(suggestions)}.'
        " Ask again with one of them if it is the fact you need; if none is, answer with what"
        " you know, or say that it is not known."
    )
