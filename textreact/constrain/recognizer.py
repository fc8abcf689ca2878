"""GBNF -> does this text match? A small recogniser for the GBNF that `textreact.constrain`
writes, so that a grammar can be checked offline against the texts it must allow (each tool's
own example, the canonical rendering of a step) without a server.

It reads rules, alternatives, groups, string literals, character classes (negated, ranges,
escapes) and the repetitions `? * + {m} {m,} {m,n}`, the subset llama.cpp documents in
grammars/README.md; it does not read left-recursive rules (llama.cpp refuses those too).
Matching returns the set of end positions of each piece at each start, memoised, so a text of
n characters costs at most (grammar size x n) piece matches, not a backtracking search.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Final

_NAME: Final = re.compile(r"[a-zA-Z][a-zA-Z0-9_-]*")
_RULE_START: Final = re.compile(r"\s*([a-zA-Z][a-zA-Z0-9_-]*)\s*::=")
_ESCAPES: Final = {"n": "\n", "r": "\r", "t": "\t"}


class GrammarSyntaxError(ValueError):
    """The text is not GBNF this recogniser reads; the message says where."""


@dataclass(frozen=True, eq=False)
class Literal:
    text: str


@dataclass(frozen=True, eq=False)
class CharClass:
    negated: bool
    ranges: tuple[tuple[str, str], ...]

    def accepts(self, char: str) -> bool:
        inside = any(low <= char <= high for low, high in self.ranges)
        return inside != self.negated


@dataclass(frozen=True, eq=False)
class Ref:
    name: str


@dataclass(frozen=True, eq=False)
class Repeat:
    node: Node
    low: int
    high: int | None


@dataclass(frozen=True, eq=False)
class Sequence:
    items: tuple[Node, ...]


@dataclass(frozen=True, eq=False)
class Choice:
    options: tuple[Node, ...]


Node = Literal | CharClass | Ref | Repeat | Sequence | Choice


@dataclass
class _Reader:
    text: str
    at: int = 0
    rules: dict[str, Node] = field(default_factory=dict)

    def fail(self, expected: str) -> GrammarSyntaxError:
        line = self.text.count("\n", 0, self.at) + 1
        found = self.text[self.at : self.at + 20] or "the end"
        return GrammarSyntaxError(f"line {line}: expected {expected}, found {found!r}")

    def blank(self) -> None:
        while self.at < len(self.text):
            if self.text[self.at] in " \t\r\n":
                self.at += 1
            elif self.text[self.at] == "#":
                end = self.text.find("\n", self.at)
                self.at = len(self.text) if end < 0 else end
            else:
                break

    def grammar(self) -> dict[str, Node]:
        self.blank()
        while self.at < len(self.text):
            start = _RULE_START.match(self.text, self.at)
            if start is None:
                raise self.fail("a rule `name ::= …`")
            self.at = start.end()
            name = start.group(1)
            if name in self.rules:
                raise self.fail(f"one definition of {name!r}")
            self.rules[name] = self.choice()
            self.blank()
        for node in self.rules.values():
            self._check_refs(node)
        return self.rules

    def _check_refs(self, node: Node) -> None:
        if isinstance(node, Ref) and node.name not in self.rules:
            raise GrammarSyntaxError(f"rule {node.name!r} is used but not defined")
        for child in _children(node):
            self._check_refs(child)

    def choice(self) -> Node:
        options = [self.sequence()]
        while self._peek("|"):
            self.at += 1
            options.append(self.sequence())
        return options[0] if len(options) == 1 else Choice(tuple(options))

    def sequence(self) -> Node:
        items: list[Node] = []
        while True:
            self.blank()
            if self.at >= len(self.text) or self.text[self.at] in "|)":
                break
            if _RULE_START.match(self.text, self.at):
                break
            items.append(self.repeat(self.primary()))
        return items[0] if len(items) == 1 else Sequence(tuple(items))

    def _peek(self, char: str) -> bool:
        self.blank()
        return self.text.startswith(char, self.at)

    def primary(self) -> Node:
        char = self.text[self.at]
        if char == '"':
            return self.literal()
        if char == "[":
            return self.char_class()
        if char == "(":
            self.at += 1
            node = self.choice()
            if not self._peek(")"):
                raise self.fail("`)`")
            self.at += 1
            return node
        name = _NAME.match(self.text, self.at)
        if name is None:
            raise self.fail("a literal, a character class, a group or a rule name")
        self.at = name.end()
        return Ref(name.group())

    def repeat(self, node: Node) -> Node:
        if self.at >= len(self.text):
            return node
        char = self.text[self.at]
        if char in "?*+":
            self.at += 1
            return Repeat(node, 0 if char != "+" else 1, 1 if char == "?" else None)
        if char != "{":
            return node
        bounds = re.compile(r"\{\s*(\d+)\s*(,\s*(\d*)\s*)?\}").match(self.text, self.at)
        if bounds is None:
            raise self.fail("a repetition `{m}`, `{m,}` or `{m,n}`")
        self.at = bounds.end()
        low = int(bounds.group(1))
        high = (
            low if bounds.group(2) is None else (int(bounds.group(3)) if bounds.group(3) else None)
        )
        if high is not None and high < low:
            raise self.fail(f"a repetition with m <= n, not {{{low},{high}}}")
        return Repeat(node, low, high)

    def char(self, closing: str) -> str:
        if self.at >= len(self.text):
            raise self.fail(f"`{closing}`")
        char = self.text[self.at]
        if char != "\\":
            self.at += 1
            return char
        code = self.text[self.at + 1 : self.at + 2]
        size = {"x": 2, "u": 4, "U": 8}.get(code)
        if size is not None:
            digits = self.text[self.at + 2 : self.at + 2 + size]
            if not re.fullmatch(f"[0-9a-fA-F]{{{size}}}", digits):
                raise self.fail(f"{size} hex digits after \\{code}")
            self.at += 2 + size
            return chr(int(digits, 16))
        if not code:
            raise self.fail("a character after `\\`")
        self.at += 2
        return _ESCAPES.get(code, code)

    def literal(self) -> Node:
        self.at += 1
        out = []
        while not self.text.startswith('"', self.at):
            if self.text.startswith("\n", self.at):
                raise self.fail('`"` before the end of the line')
            out.append(self.char('"'))
        self.at += 1
        return Literal("".join(out))

    def char_class(self) -> Node:
        self.at += 1
        negated = self.text.startswith("^", self.at)
        self.at += negated
        ranges = []
        while not self.text.startswith("]", self.at):
            low = self.char("]")
            high = low
            if self.text.startswith("-", self.at) and not self.text.startswith("-]", self.at):
                self.at += 1
                high = self.char("]")
            ranges.append((low, high))
        self.at += 1
        return CharClass(negated, tuple(ranges))


def _children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, (Sequence,)):
        return node.items
    if isinstance(node, Choice):
        return node.options
    if isinstance(node, Repeat):
        return (node.node,)
    return ()


def parse_gbnf(text: str) -> dict[str, Node]:
    """The rules of a GBNF grammar; GrammarSyntaxError (a ValueError) says where it is wrong."""
    return _Reader(text).grammar()


def matches(grammar_text: str, text: str, rule: str = "root") -> bool:
    """Whether `text`, whole, is one that `grammar_text` allows from `rule`."""
    rules = parse_gbnf(grammar_text)
    if rule not in rules:
        raise GrammarSyntaxError(f"no rule {rule!r} in the grammar")
    return len(text) in _Matcher(rules, text).ends(rules[rule], 0)


class _Matcher:
    """The end positions of each piece at each start, memoised, found with a stack of its own
    rather than Python's: a grammar nests as deep as the values it allows (a recursive model
    thirty levels deep, a tool of a thousand optional members chained rule to rule), past
    Python's recursion limit. Each piece's work is a generator that yields the (piece, start)
    whose ends it needs next and is sent them back."""

    def __init__(self, rules: dict[str, Node], text: str) -> None:
        self.rules = rules
        self.text = text
        self.memo: dict[tuple[int, int], frozenset[int]] = {}

    def ends(self, node: Node, at: int) -> frozenset[int]:
        stack = [self._open(node, at)]
        found: frozenset[int] | None = None
        while stack:
            key, work = stack[-1]
            try:
                child, start = work.send(found)
            except StopIteration as done:
                self.memo[key] = found = done.value
                stack.pop()
                continue
            found = self.memo.get((id(child), start))
            if found is None:
                stack.append(self._open(child, start))
        return self.memo[(id(node), at)]

    def _open(self, node: Node, at: int) -> tuple[tuple[int, int], Work]:
        key = (id(node), at)
        self.memo[key] = frozenset()  # a rule reached again at the same place: no match
        return key, self._ends(node, at)

    def _ends(self, node: Node, at: int) -> Work:
        if isinstance(node, Literal):
            return (
                frozenset({at + len(node.text)})
                if self.text.startswith(node.text, at)
                else frozenset()
            )
        if isinstance(node, CharClass):
            ok = at < len(self.text) and node.accepts(self.text[at])
            return frozenset({at + 1}) if ok else frozenset()
        if isinstance(node, Ref):
            return (yield self.rules[node.name], at)
        if isinstance(node, Sequence):
            current = frozenset({at})
            for item in node.items:
                current = yield from self._step(item, current)
                if not current:
                    break
            return current
        if isinstance(node, Choice):
            found: set[int] = set()
            for option in node.options:
                found |= yield option, at
            return frozenset(found)
        return (yield from self._repeat(node, at))

    def _repeat(self, node: Repeat, at: int) -> Work:
        current = frozenset({at})
        for _ in range(node.low):
            current = yield from self._step(node.node, current)
        found = set(current)
        budget = node.high - node.low if node.high is not None else None
        # A place reached again later has no more repetitions left than when first reached,
        # so it can add nothing: dropping it keeps `x{0,300}` linear and ends `x*`.
        while current and (budget is None or budget > 0):
            current = (yield from self._step(node.node, current)) - found
            found |= current
            budget = None if budget is None else budget - 1
        return frozenset(found)

    def _step(self, node: Node, starts: frozenset[int]) -> Work:
        ends: set[int] = set()
        for start in starts:
            ends |= yield node, start
        return frozenset(ends)


#: A piece's work: yields (piece, start) pairs, is sent each one's ends, returns its own.
Work = Generator[tuple[Node, int], frozenset[int], frozenset[int]]
