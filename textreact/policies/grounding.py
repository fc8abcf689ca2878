"""`grounding`: once a model has copied an argument of the worked example's call (the
`copied_example` policy sent it back), that argument of that tool is held, in the next
requests' grammar, to the run's own words (the question's and its results'), with punctuation
and spaces between them (failure class: sent back for a copy, a small model sends the same
copy again). Only the copied argument is held: a language code or an id beside it stays free.

The hold is only a grammar, on a copy of the tool the protocol renders: a server that cannot
constrain decoding never sees it, native tools= never carries it (`holds_arguments`), and the
tool itself validates arguments against its own schema as always. A held value must begin with
a word, which keeps an all-punctuation-and-numbers copy out; allowed an opening bracket, a
small model filled the argument with brackets and filler words instead of the question's
phrase (measured)."""

from __future__ import annotations

import copy
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Final

import regex

from textreact.policy import Offer, Policy, RunView, results
from textreact.tools.pattern import MAX_PATTERN

if TYPE_CHECKING:
    from textreact.tools import Tool

__all__ = ["Grounding", "Hold", "held", "vocabulary"]

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
    """The arguments one run holds to its words (by tool name), and the held copies of their
    tools: the same object while the words are the same, so the protocol builds each grammar
    once."""

    def __init__(self) -> None:
        self.names: dict[str, frozenset[str]] = {}
        self._copies: dict[str, tuple[tuple[str, ...], Tool]] = {}

    def add(self, name: str, arguments: Sequence[str]) -> None:
        self.names[name] = self.names.get(name, frozenset()) | frozenset(arguments)

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
                    copy_ = held(tool, words, self.names[tool.name])
                    last = self._copies[tool.name] = (words, copy_)
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


def held(tool: Tool, words: tuple[str, ...], arguments: Collection[str] | None = None) -> Tool:
    """`tool` as the grammar sees it with its plain string `arguments` (all, for None) held to
    `words`. The copy is not a tool to run: its example, a copy, does not fit the held schema,
    so it is not built through the constructor that checks it."""
    properties = dict(tool.parameters.get("properties") or {})
    plain = [
        k for k, v in properties.items()
        if _plain_string(v) and (arguments is None or k in arguments)
    ]  # fmt: skip
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


class Grounding(Policy):
    """Holds each argument the `copied_example` policy found copied to the run's words, on the
    text protocol's grammar, from the next request on."""

    name = "grounding"

    def reset(self, run: RunView) -> None:
        self.hold = Hold()
        self.seen = 0  # turns already read for copies

    def steer(self, run: RunView, offer: Offer) -> Offer:
        for turn in run.turns[self.seen :]:
            for note in turn.policy_notes:
                if note.policy == "copied_example" and note.action == "not_run" and turn.result:
                    self.hold.add(turn.result.tool, note.arguments)
        self.seen = len(run.turns)
        if not self.hold.names or not run.protocol.holds_arguments:
            return offer
        held = self.hold.offer(offer.tools, run.question, results(run.turns))
        return Offer(tuple(held), offer.tool_choice)
