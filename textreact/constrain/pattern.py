"""A string's JSON Schema `pattern` -> GBNF for the JSON text of a string it matches, so that a
grammar holds a string argument to its tool's pattern instead of letting a weak model write
any text for the validator to refuse afterwards. The pattern is read by
`textreact.tools.pattern`; outside its subset there is no grammar of it (None), and the caller
keeps the plain string: a grammar narrower than the pattern would forbid a value the tool
takes.

The text written is JSON as the canonical form writes it (`grammar.render_input`): `"`, `\\`,
control characters, NEL and the line and paragraph separators escaped, everything else raw. A
negated class or `.` takes no control character (nor DEL, which the JSON string rule leaves out
too): a tool's argument never wants one its pattern does not name, and one it names is written
as its escape."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Final

from textreact import jsonline
from textreact.tools.pattern import Alt, Branch, Chars, Node, Rep, Seq, least, read

_QUOTING: Final = frozenset('"\\')
#: NEL and the line and paragraph separators: the parser reads them as line breaks, so the
#: canonical JSON text writes them as escapes (`textreact.jsonline`).
_BREAKS: Final = frozenset("\x85\u2028\u2029")
#: Characters the canonical JSON text never holds raw.
_SPECIAL: Final = _QUOTING | _BREAKS | frozenset(map(chr, range(0x20)))
_LITERAL: Final = re.compile(r'"(?:[^"\\]|\\.)*"')


class _Unwritable(Exception):
    """A pattern read whole that has no grammar llama.cpp can run."""


def pattern_grammar(pattern: object, char: str, most: int) -> str | None:
    """A GBNF expression for the JSON text between the quotes of a string that `pattern`
    matches, searched as JSON Schema does (an unanchored end takes any `char`s: the name of
    the rule of one JSON string character); "" where only the empty string matches; None
    where the pattern is outside the subset `textreact.tools.pattern` reads. A repetition
    without a bound, and each unanchored end, takes at most `most`: a weak model wrote `-`
    under `[-]+` until the token limit."""
    branches = read(pattern)
    if branches is None or min(least(b.node) for b in branches) > most:
        return None  # a value longer than any string the grammar bounds
    try:
        return _options([_branch(b, char, most) for b in branches])
    except _Unwritable:
        return None


def _branch(branch: Branch, char: str, most: int) -> str:
    free = f"({char}){{0,{most}}}"
    pieces = [] if branch.start else [free]
    pieces.append(_expression(branch.node, most))
    pieces += [] if branch.end else [free]
    return " ".join(p for p in pieces if p)


def _expression(node: Node, most: int) -> str:
    if isinstance(node, Chars):
        return _class(node)
    if isinstance(node, Alt):
        return _options([_expression(o, most) for o in node.options])
    if isinstance(node, Seq):
        items: list[str] = []
        for item in (_expression(i, most) for i in node.items):
            if items and _LITERAL.fullmatch(item) and _LITERAL.fullmatch(items[-1]):
                items[-1] = items[-1][:-1] + item[1:]  # "a" "b" -> "ab"
            elif item:
                items.append(item)
        return " ".join(items)
    node = _flattened(node)
    inner = _expression(node.node, most)
    if not inner:
        return ""
    if least(node.node) == 0 and node.high != 1:
        raise _Unwritable  # a repetition of what may be empty: llama.cpp's paths explode
    if _ambiguous(node):
        raise _Unwritable  # one text, many ways through: llama.cpp tracks every one
    high = max(node.low, most) if node.high is None else node.high
    bounds = "?" if (node.low, high) == (0, 1) else f"{{{node.low},{high}}}"
    return f"({inner}){{{node.low}}}" if high == node.low else f"({inner}){bounds}"


def _flattened(rep: Rep) -> Rep:
    """`(x{a,}){c,}` as `x{a*c,}`, the same strings (any count past a*c splits into c runs of
    at least a) with one way through instead of one for each split."""
    inner = rep.node
    if isinstance(inner, Rep) and isinstance(inner.node, Chars) and None is inner.high is rep.high:
        return Rep(inner.node, inner.low * rep.low, None)
    return rep


def _ambiguous(rep: Rep) -> bool:
    """Whether a text may pass through `rep` in more than one way: it repeats a body that
    holds a repetition of varying length (`(\\w+\\s?)+`: "ab" is one run of two or two of
    one), unless each round of the body begins or ends with a character that no varying
    repetition in it takes (`(\\d{1,3}\\.){3}`: a round ends at its dot), which fixes where
    the rounds meet. llama.cpp follows every way at once: thousands of parse stacks where an
    everyday pattern needs a few."""
    if rep.high == 1:
        return False
    varying = list(_varying(rep.node))
    if not varying:
        return False
    items = rep.node.items if isinstance(rep.node, Seq) else (rep.node,)
    ends = [item for item in (items[0], items[-1]) if isinstance(item, Chars)]
    return not any(all(_disjoint(end, chars) for chars in varying) for end in ends)


def _varying(node: Node, inside: bool = False) -> Iterator[Chars]:
    """The classes in `node` under a repetition whose count may vary (`+`, `{1,3}`)."""
    if isinstance(node, Chars):
        if inside:
            yield node
    elif isinstance(node, (Seq, Alt)):
        for child in node.items if isinstance(node, Seq) else node.options:
            yield from _varying(child, inside)
    else:
        yield from _varying(node.node, inside or node.low != node.high)


def _disjoint(one: Chars, other: Chars) -> bool:
    """Whether no character is in both classes."""
    if one.negated and other.negated:
        return False  # each takes nearly everything
    if one.negated or other.negated:
        negated, plain = (one, other) if one.negated else (other, one)
        return all(  # every character of the plain class is one the negated class leaves out
            any(low <= p_low and p_high <= high for low, high in negated.ranges)
            for p_low, p_high in plain.ranges
        )
    return all(
        high < o_low or o_high < low for low, high in one.ranges for o_low, o_high in other.ranges
    )


def _options(options: list[str]) -> str:
    """One of `options` (GBNF expressions; "" matches the empty string)."""
    written = list(dict.fromkeys(o for o in options if o))
    if not written:
        return ""
    group = written[0] if len(written) == 1 else "(" + " | ".join(written) + ")"
    return f"({group})?" if not all(options) else group


def _class(chars: Chars) -> str:
    """One character as JSON text: the ones written raw in one GBNF class (or a literal),
    each special one (quote, backslash, a line break of the parser's, a control character
    the class names) as its escape."""
    escaped = _QUOTING | _BREAKS if chars.negated else _SPECIAL
    specials = sorted(c for c in escaped if chars.takes(c))
    options = [_literal(c) for c in specials]
    if chars.negated:
        members = "".join(_member(low, high) for low, high in chars.ranges)
        options.insert(0, f'[^{members}"\\\\\\x00-\\x1F\\x7F\\x85\\u2028\\u2029]')
    else:
        plain = _without_specials(chars.ranges)
        if len(plain) == 1 and plain[0][0] == plain[0][1]:
            options.insert(0, _literal(plain[0][0]))  # a literal joins its neighbours
        elif plain:
            options.insert(0, "[" + "".join(_member(low, high) for low, high in plain) + "]")
    return options[0] if len(options) == 1 else "(" + " | ".join(options) + ")"


def _literal(char: str) -> str:
    """The JSON text of `char` as a GBNF literal: that text holds no raw control character,
    so a JSON string of it is a GBNF literal too."""
    return json.dumps(jsonline.dumps(char)[1:-1], ensure_ascii=False)


def _without_specials(ranges: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
    """The ranges cut around the characters JSON escapes."""
    out = []
    for low, high in ranges:
        first = ord(low)
        for cut in [*sorted(ord(c) for c in _SPECIAL if low <= c <= high), ord(high) + 1]:
            if first < cut:
                out.append((chr(first), chr(cut - 1)))
            first = cut + 1
    return out


def _member(low: str, high: str) -> str:
    return _class_char(low) if low == high else f"{_class_char(low)}-{_class_char(high)}"


def _class_char(char: str) -> str:
    """One character inside a GBNF class: `\\xHH` for the ones a class gives a meaning to
    (llama.cpp reads few escapes) and for control characters."""
    if char in "]\\^-[" or ord(char) < 0x20 or ord(char) == 0x7F:
        return f"\\x{ord(char):02X}"
    return char
