"""Grounding: once a model has copied a tool's example call, that tool's free-text arguments
are held, in the next requests' grammar, to the run's own words (the question's and its
results'), with punctuation and spaces between them.

Sent back for a copy, a small model often sends the same copy again: Qwen 0.5B, asked for the
combined population of Taipei and New York City, sent the calculator the example's
`(12 + 30) * 4` twice. Held to the question's words it wrote `population of Taipei +
population of New York City`, which the calculator sent back for numbers; it looked both
up and added them. The hold is only a grammar: a server that cannot constrain decoding never
sees it, and the tool itself validates arguments against its own schema as always. A string
that must begin with a word keeps the calculator's example out even though it is all
punctuation and numbers; it also keeps a held expression from opening with a bracket, which
was measured: allowed one, Qwen wrote `(and) (and) (and)…` instead of the question's phrase."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import regex

from textreact.tools.pattern import MAX_PATTERN

if TYPE_CHECKING:
    from textreact.tools import Tool

__all__ = ["Hold", "held", "vocabulary"]

_SCRIPTS: Final = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}"
#: A word: a run of letters and digits, or one character of a script written without spaces
#: (a model composes its own phrase from those one at a time).
_WORD: Final = regex.compile(rf"[{_SCRIPTS}]|[^\W_{_SCRIPTS}]+")
#: What may stand between words: ASCII punctuation (a quote and a backslash aside, which JSON
#: escapes), the space, and CJK punctuation; each escaped for a pattern's character class.
_BETWEEN: Final = (
    "["
    + "".join(
        "\\" + c if c in "]\\^-[" else c
        for c in " !#$%&'()*+,./:;<=>?@[]^_`{|}~-，。？！：；、（）《》「」"
    )
    + "]"
)
#: The pieces after the first word: enough for a query or an expression of several terms.
MOST_PIECES: Final = 60
#: The longest word taken: a held argument stays a few hundred characters at most.
LONGEST_WORD: Final = 32
#: The most words held to: each is an alternative the server's grammar tracks at every
#: character. Measured on the embedded server (bench/constrain_bench.py), a held step cost
#: 1.08x the tokens/s of a plain one with 48 words, 1.28x with 96 and 2.91x with 238 (the
#: target is at most 1.5x); the held runs measured on both models used at most 47.
MOST_WORDS: Final = 64
#: Schema keywords that already narrow a string more than words would, or differently.
_NARROWED: Final = frozenset({"enum", "const", "pattern", "format", "minLength", "maxLength"})


class Hold:
    """The tools one run holds to its words (by name), and their held copies: the same object
    while the words are the same, so the protocol builds each grammar once."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self._copies: dict[str, tuple[tuple[str, ...], Tool]] = {}

    def add(self, name: str) -> None:
        self.names.add(name)

    def offer(self, tools: Sequence[Tool], question: str, results: str) -> list[Tool]:
        """`tools`, each held one replaced by its copy held to the words of `question` and
        `results` (what the run's calls found: never an error's text, which shows the
        tool's example)."""
        words = vocabulary(question, results)
        offered = []
        for tool in tools:
            if tool.name in self.names:
                last = self._copies.get(tool.name)
                if last is None or last[0] != words:
                    last = self._copies[tool.name] = (words, held(tool, words))
                tool = last[1]
            offered.append(tool)
        return offered


def vocabulary(question: str, found: str) -> tuple[str, ...]:
    """The words a held argument may use: the question's, then the results' (`found`), each
    once and at most LONGEST_WORD long, at most MOST_WORDS of them and as many as a pattern
    of MAX_PATTERN characters holds; the question's take at most half of either bound, so a
    long question leaves room for the numbers its calls found."""
    words: dict[str, None] = {}
    size = len(_pattern(()))
    for text, share in ((question, 2), (found, 1)):
        for word in _WORD.findall(text):
            grows = 2 * (len(word) + bool(words))  # the pattern names each word twice
            fits = size + grows <= MAX_PATTERN // share and len(words) < MOST_WORDS // share
            if fits and word not in words and len(word) <= LONGEST_WORD:
                words[word] = None
                size += grows
    return tuple(words)


def held(tool: Tool, words: tuple[str, ...]) -> Tool:
    """`tool` as the grammar sees it with its plain string arguments held to `words`. The
    copy is not a tool to run: its example, a copy, does not fit the held schema, so it is
    not built through the constructor that checks it."""
    properties = dict(tool.parameters.get("properties") or {})
    plain = [k for k, v in properties.items() if _plain_string(v)]
    if not words or not plain:
        return tool
    pattern = _pattern(words)
    for name in plain:
        properties[name] = {**properties[name], "pattern": pattern}
    grounded = copy.copy(tool)
    object.__setattr__(grounded, "parameters", {**tool.parameters, "properties": properties})
    return grounded


def _plain_string(schema: Any) -> bool:
    return (
        isinstance(schema, dict)
        and schema.get("type") == "string"
        and not _NARROWED & schema.keys()
    )


def _pattern(words: Sequence[str]) -> str:
    """A pattern for text that begins with one of `words` and goes on with words, spaces and
    punctuation, at most MOST_PIECES of them."""
    some = "|".join(words)
    return f"^(?:{some})(?:{some}|{_BETWEEN}){{0,{MOST_PIECES}}}$"
