"""A JSON Schema `pattern` -> a small tree of what it matches, for the subset tool schemas use:
the grammar writes GBNF from it (`textreact.constrain.pattern`), so a weak model cannot write
a string its tool refuses, and a tool's example takes the shortest string it matches, so a
required argument with a pattern needs no example written by hand.

Read: literals and escapes, classes (ranges, negation, `\\d \\w \\s` as ASCII, as in ECMA-262,
JSON Schema's dialect, which the validator follows: `textreact.tools.ecma`), `.` (no line
terminator), groups (plain, non-capturing, named), alternation, and the
repetitions `* + ? {m} {m,} {m,n}`, lazy or not; `^` and `$` only at the ends of a top-level
alternative (a pattern is a search: an end without its anchor takes any characters).
Anything else reads as None: lookarounds, back-references, `\\b`, `\\p{..}`, inline flags,
POSIX classes, `\\D \\W \\S`, `{,n}`, octal and surrogate escapes, lone surrogates written as
they are, a repetition over MAX_REPEAT, nesting deeper than Python's stack. The caller does
without, and the validator, which reads all of it, still checks every value."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Final, Union

#: The longest pattern read, and the largest bound of one repetition: past them a grammar
#: would be big for little gain (llama.cpp expands repetitions into rules).
MAX_PATTERN: Final = 2000
MAX_REPEAT: Final = 256
_SURROGATE: Final = re.compile(r"[\ud800-\udfff]")
#: The longest example `shortest` makes; a pattern that needs more has none.
MAX_SHORTEST: Final = 1000


@dataclass(frozen=True)
class Chars:
    """One character of `ranges` (inclusive), or with `negated` of none of them."""

    ranges: tuple[tuple[str, str], ...]
    negated: bool = False

    def takes(self, char: str) -> bool:
        return any(low <= char <= high for low, high in self.ranges) != self.negated


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Node, ...]


@dataclass(frozen=True)
class Rep:
    node: Node
    low: int
    high: int | None


Node = Union[Chars, Seq, Alt, Rep]  # noqa: UP007 (a runtime alias works on 3.10)


@dataclass(frozen=True)
class Branch:
    """A top-level alternative: what it matches, and whether it is anchored at each end."""

    node: Node
    start: bool
    end: bool


_DIGIT: Final = (("0", "9"),)
_WORD: Final = (("0", "9"), ("A", "Z"), ("_", "_"), ("a", "z"))
_SPACE: Final = (("\t", "\r"), (" ", " "))
#: `\d \w` as the validator reads them (ECMA-262's ASCII); `\s` narrower than its (no Unicode
#: spaces). Their negations are not read.
_CLASS_ESCAPES: Final = {"d": Chars(_DIGIT), "w": Chars(_WORD), "s": Chars(_SPACE)}
_CHAR_ESCAPES: Final = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "v": "\v", "0": "\0"}
#: ECMA-262's `.`: any character but a line terminator.
_DOT: Final = Chars((("\n", "\n"), ("\r", "\r"), ("\u2028", "\u2029")), negated=True)
#: What a negated class's shortest string tries first: a plain letter, digit or space.
_PLAIN: Final = "axz0 -_."


class _Unsupported(Exception):
    """The pattern uses something this subset does not read."""


def read(pattern: object) -> tuple[Branch, ...] | None:
    """The pattern's top-level alternatives, or None where it is outside the subset (or no
    pattern at all: a schema from outside may hold any value there)."""
    if not isinstance(pattern, str) or not pattern or len(pattern) > MAX_PATTERN:
        return None
    if _SURROGATE.search(pattern):  # no value may hold one, and no grammar could be sent
        return None
    return _read(pattern)


@functools.lru_cache(maxsize=256)
def _read(pattern: str) -> tuple[Branch, ...] | None:
    try:
        return tuple(_branch(text) for text in _top_level(pattern))
    except (_Unsupported, RecursionError):  # nesting deeper than Python's stack
        return None


def shortest(pattern: object) -> str | None:
    """The shortest string the pattern matches (plain characters where it leaves a choice);
    None where it is outside the subset."""
    branches = read(pattern)
    if branches is None or min(least(b.node) for b in branches) > MAX_SHORTEST:
        return None
    return min((_shortest(b.node) for b in branches), key=len)


def least(node: Node) -> int:
    """The length of the shortest string `node` matches, saturating past MAX_SHORTEST."""
    if isinstance(node, Chars):
        return 1
    if isinstance(node, Seq):
        return min(sum(least(i) for i in node.items), MAX_SHORTEST + 1)
    if isinstance(node, Alt):
        return min(least(o) for o in node.options)
    return min(least(node.node) * node.low, MAX_SHORTEST + 1)


def _shortest(node: Node) -> str:
    if isinstance(node, Chars):
        plain = next((c for c in _PLAIN if node.takes(c)), None)
        if plain is None and node.negated:
            plain = next((chr(c) for c in range(0x21, 0x3000) if node.takes(chr(c))), "")
        return plain if plain is not None else node.ranges[0][0]
    if isinstance(node, Seq):
        return "".join(_shortest(item) for item in node.items)
    if isinstance(node, Alt):
        return min((_shortest(option) for option in node.options), key=len)
    return _shortest(node.node) * node.low


def _top_level(text: str) -> list[str]:
    """The pattern split at its top-level `|`: anchors belong to each part."""
    parts: list[str] = []
    depth = start = i = 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i = _class_end(text, i)
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "|" and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    return [*parts, text[start:]]


def _class_end(text: str, i: int) -> int:
    """The index after the class that opens at `i` (a `]` first in it is a member)."""
    i += 1
    i += text.startswith("^", i)
    i += text.startswith("]", i)
    while i < len(text) and text[i] != "]":
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _branch(text: str) -> Branch:
    start = text.startswith("^")
    end = len(text) > start and text.endswith("$") and not _escaped_end(text)
    body = text[1 if start else 0 : len(text) - 1 if end else len(text)]
    reader = _Reader(body)
    node = reader.alternation()
    if reader.at != len(body):
        raise _Unsupported(body[reader.at :])
    return Branch(node, start, end)


def _escaped_end(text: str) -> bool:
    """Whether the last character is escaped (`\\$` is a dollar sign, `\\\\$` an anchor)."""
    before = text[:-1]
    return (len(before) - len(before.rstrip("\\"))) % 2 == 1


class _Reader:
    """Recursive descent over one top-level alternative, without its anchors."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def alternation(self) -> Node:
        options = [self.sequence()]
        while self.peek() == "|":
            self.at += 1
            options.append(self.sequence())
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def sequence(self) -> Node:
        items: list[Node] = []
        while self.at < len(self.text) and self.peek() not in "|)":
            items.append(self.repeated(self.atom()))
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def atom(self) -> Node:
        char = self.text[self.at]
        if char == "(":
            return self.group()
        if char == "[":
            return self.char_class()
        if char == ".":
            self.at += 1
            return _DOT
        if char in "^$*+?" or (char == "{" and self.bounds() is not None):
            raise _Unsupported(char)  # an anchor inside, or a repetition of nothing
        if char == "\\":
            code = self.text[self.at + 1 : self.at + 2]
            self.at += 2
            return _CLASS_ESCAPES.get(code) or _one(self.escaped_char(code))
        self.at += 1
        return _one(char)

    def group(self) -> Node:
        self.at += 1
        rest = self.text[self.at :]
        if rest.startswith("?:"):
            self.at += 2
        elif rest.startswith("?P<") or (rest.startswith("?<") and rest[2:3] not in ("=", "!")):
            close = self.text.find(">", self.at)
            if close < 0:
                raise _Unsupported("a group's name")
            self.at = close + 1
        elif rest.startswith("?"):
            raise _Unsupported("(?")  # lookarounds, flags, conditionals
        inner = self.alternation()
        if self.peek() != ")":
            raise _Unsupported("(")
        self.at += 1
        return inner

    def escaped_char(self, code: str) -> str:
        """The character after a backslash (the backslash and `code` already read)."""
        if code == "0" and self.text[self.at : self.at + 1].isdigit():
            raise _Unsupported("an octal escape")
        if code in _CHAR_ESCAPES:
            return _CHAR_ESCAPES[code]
        size = {"x": 2, "u": 4}.get(code)
        if size is not None:
            digits = self.text[self.at : self.at + size]
            if len(digits) != size or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise _Unsupported("\\" + code)
            if 0xD800 <= int(digits, 16) <= 0xDFFF:
                raise _Unsupported("a surrogate")
            self.at += size
            return chr(int(digits, 16))
        if not code or code.isalnum():
            raise _Unsupported("\\" + code)  # \b, \p{..}, back-references, ...
        return code

    def char_class(self) -> Node:
        self.at += 1
        negated = self.peek() == "^"
        self.at += negated
        ranges: list[tuple[str, str]] = []
        first = True
        while self.at < len(self.text) and (self.peek() != "]" or first):
            first = False
            if self.text.startswith("[:", self.at):
                raise _Unsupported("[:")  # POSIX classes, and set operations
            code = self.text[self.at + 1 : self.at + 2] if self.peek() == "\\" else ""
            if code in _CLASS_ESCAPES:
                if negated:
                    raise _Unsupported("a class escape in a negated class")
                ranges.extend(_CLASS_ESCAPES[code].ranges)
                self.at += 2
                continue
            low = self.class_char()
            if self.peek() == "-" and self.text[self.at + 1 : self.at + 2] not in ("]", ""):
                self.at += 1
                high = self.class_char()
                if high < low:
                    raise _Unsupported("a range out of order")
                ranges.append((low, high))
            else:
                ranges.append((low, low))
        if self.peek() != "]":
            raise _Unsupported("[")
        self.at += 1
        return Chars(tuple(ranges), negated)

    def class_char(self) -> str:
        char = self.text[self.at]
        self.at += 1
        if char != "\\":
            return char
        code = self.text[self.at : self.at + 1]
        self.at += 1
        return "\b" if code == "b" else self.escaped_char(code)

    def bounds(self) -> tuple[int, int | None, int] | None:
        """(low, high, length) of a `{m}`, `{m,}` or `{m,n}` here; None: a literal brace."""
        close = self.text.find("}", self.at)
        if close < 0:
            return None
        low, comma, high = self.text[self.at + 1 : close].partition(",")
        if not low and comma and high.isdigit():
            raise _Unsupported("{,n}")  # `regex` reads {0,n}, ECMA-262 a literal
        if not low.isdigit() or (high and not high.isdigit()):
            return None
        top = (int(high) if high else None) if comma else int(low)
        return int(low), top, close + 1 - self.at

    def repeated(self, node: Node) -> Node:
        char = self.peek()
        if char in ("*", "+", "?"):
            self.at += 1
            low, high = (0 if char != "+" else 1), (1 if char == "?" else None)
        elif char == "{" and (bounds := self.bounds()) is not None:
            low, high, length = bounds
            if low > MAX_REPEAT or (high is not None and (high > MAX_REPEAT or high < low)):
                raise _Unsupported("a repetition's bound")
            self.at += length
        else:
            return node
        if self.peek() == "?":
            self.at += 1  # lazy: the same strings
        elif self.peek() == "+":
            raise _Unsupported("a possessive repetition")
        return Rep(node, low, high)


def _one(char: str) -> Chars:
    return Chars(((char, char),))
