"""A JSON Schema `pattern`, written in ECMA-262's dialect -> the same pattern for `regex`, so that
validation reads it as JSON Schema means it and not as Python would.

Where the two dialects read the same text differently, ECMA-262 wins: `$` is the end of the
text (Python's `$` also matches before a final newline, so `^[a-z]+\\.txt$` would let
`"evil.txt\\n"` through); `.` is any character but a line terminator (`\\n \\r \\u2028
\\u2029`); `\\d \\w \\b` are ASCII (Python's are Unicode: `٣` is no digit to ECMA-262); `\\s` is
ECMA-262's white space and line terminators; `[]` matches nothing and `[^]` any character; a
`{` that opens no repetition (`{,3}`) is a brace; `\\cX`, `\\u{...}`, a surrogate pair and
`\\k<name>` are read as ECMA-262 reads them. ECMA-262 (with the `u` flag that `\\p{L}` needs)
has no `\\A`, `\\Z` or `\\z`; a schema that writes them means the ends of the text, and they are
read so. Any other escape of a letter that ECMA-262 does not define is refused (PatternError),
as an ECMA-262 engine would refuse it, instead of being given Python's meaning."""

from __future__ import annotations

import functools
import re
from typing import Final

__all__ = ["PatternError", "to_regex"]


class PatternError(ValueError):
    """A pattern that is not ECMA-262 (an escape it does not define, a class left open)."""


#: ECMA-262's `\s`: WhiteSpace (tab, VT, FF, space, NBSP, BOM, Unicode Zs) and LineTerminator.
_SPACE_RANGES: Final = (
    (0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF),
)  # fmt: skip
_DIGIT_RANGES: Final = ((0x30, 0x39),)
_WORD_RANGES: Final = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_LINE_ENDS: Final = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
_LAST: Final = 0x10FFFF


def _complement(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    out, start = [], 0
    for low, high in ranges:
        if low > start:
            out.append((start, low - 1))
        start = high + 1
    return (*out, (start, _LAST)) if start <= _LAST else tuple(out)


def _members(ranges: tuple[tuple[int, int], ...]) -> str:
    """The ranges as the inside of a `regex` class, every character escaped by its code."""
    return "".join(
        _code(low) if low == high else f"{_code(low)}-{_code(high)}" for low, high in ranges
    )


def _code(point: int) -> str:
    return f"\\U{point:08x}"


#: A class escape -> the members of a `regex` class it stands for.
_CLASS_ESCAPES: Final = {
    "d": _members(_DIGIT_RANGES), "D": _members(_complement(_DIGIT_RANGES)),
    "w": _members(_WORD_RANGES), "W": _members(_complement(_WORD_RANGES)),
    "s": _members(_SPACE_RANGES), "S": _members(_complement(_SPACE_RANGES)),
}  # fmt: skip
_WORD: Final = f"[{_CLASS_ESCAPES['w']}]"
#: ECMA-262's word boundary, on ASCII word characters (`regex`'s `\b` is Unicode).
_BOUNDARY: Final = f"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))"
_NOT_BOUNDARY: Final = f"(?:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))"
_DOT: Final = f"[^{_members(_LINE_ENDS)}]"
_NOTHING: Final = f"[^{_members(((0, _LAST),))}]"
_ANYTHING: Final = f"[{_members(((0, _LAST),))}]"
#: Escapes whose meaning outside a class is another `regex` text.
_OUTSIDE: Final = {
    **{k: f"[{v}]" for k, v in _CLASS_ESCAPES.items()},
    "b": _BOUNDARY, "B": _NOT_BOUNDARY, "A": r"\A", "Z": r"\Z", "z": r"\Z",
}  # fmt: skip
_CONTROL: Final = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
_QUANTIFIER: Final = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")
_HEX: Final = re.compile(r"[0-9A-Fa-f]+")
_NAME: Final = re.compile(r"<([A-Za-z_$][\w$]*)>")
_PROPERTY: Final = re.compile(r"\{[A-Za-z0-9_=]+\}")


@functools.lru_cache(maxsize=256)
def to_regex(pattern: str) -> str:
    """`pattern` (ECMA-262) as a `regex` pattern that matches the same strings; PatternError
    where ECMA-262 would not compile it either."""
    return _Translator(pattern).run()


class _Translator:
    """One pass over the pattern, escapes and classes rewritten, everything else as written
    (groups, lookarounds, alternation and quantifiers mean the same to `regex`)."""

    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.at = 0
        self.out: list[str] = []

    def run(self) -> str:
        text = self.text
        while self.at < len(text):
            char = text[self.at]
            if char == "\\":
                self.out.append(self.escape(inside=False))
            elif char == "[":
                self.out.append(self.char_class())
            elif char == "$":
                self.out.append(r"\Z")
                self.at += 1
            elif char == ".":
                self.out.append(_DOT)
                self.at += 1
            elif char == "{":
                quantifier = _QUANTIFIER.match(text, self.at)
                piece = quantifier.group() if quantifier else r"\{"
                self.out.append(piece)
                self.at += len(quantifier.group()) if quantifier else 1
            elif char == "}":
                self.out.append(r"\}")
                self.at += 1
            else:
                self.out.append(char)
                self.at += 1
        return "".join(self.out)

    def escape(self, *, inside: bool) -> str:
        """The escape at `self.at` (its backslash) as `regex` text: a class's members where
        `inside`, else an atom."""
        text = self.text
        code = text[self.at + 1 : self.at + 2]
        self.at += 2
        if not code:
            raise PatternError("the pattern ends with a lone backslash; write \\\\ for one")
        if code in _CLASS_ESCAPES:
            return _CLASS_ESCAPES[code] if inside else _OUTSIDE[code]
        if code == "b" and inside:
            return _code(0x08)  # a backspace, in a class
        if code in _OUTSIDE and not inside:
            return _OUTSIDE[code]
        if code in _CONTROL:
            return _code(_CONTROL[code])
        if code == "c" and text[self.at : self.at + 1].isascii() and text[self.at].isalpha():
            self.at += 1
            return _code(ord(text[self.at - 1]) % 32)
        if code == "0" and not text[self.at : self.at + 1].isdigit():
            return _code(0)
        if code in "xu":
            return _code(self.hex_escape(code))
        if code in "pP" and (named := _PROPERTY.match(text, self.at)):
            self.at = named.end()
            return f"\\{code}{named.group()}"
        if code == "k" and not inside and (name := _NAME.match(text, self.at)):
            self.at = name.end()
            return f"(?P={name.group(1)})"
        if code.isdigit() and not inside:
            digits = re.match(r"[0-9]*", text[self.at :]).group()  # type: ignore[union-attr]
            self.at += len(digits)
            return f"(?:\\{code}{digits})"  # a back-reference
        if code.isalnum():
            raise PatternError(
                f"\\{code} is no escape of ECMA-262 (JSON Schema's pattern dialect); write the "
                "character itself, or a class such as [0-9]"
            )
        return _code(ord(code))  # an escaped punctuation mark is that mark

    def hex_escape(self, code: str) -> int:
        """The code point of `\\xHH`, `\\uHHHH`, `\\u{H...}` or a surrogate pair of `\\u`s."""
        text = self.text
        if code == "u" and text.startswith("{", self.at):
            close = text.find("}", self.at)
            digits = text[self.at + 1 : close] if close > 0 else ""
            if not _HEX.fullmatch(digits) or int(digits, 16) > _LAST:
                raise PatternError("\\u{...} must hold the hex digits of a code point")
            self.at = close + 1
            return int(digits, 16)
        size = 2 if code == "x" else 4
        digits = text[self.at : self.at + size]
        if len(digits) != size or not _HEX.fullmatch(digits):
            raise PatternError(f"\\{code} must be followed by {size} hex digits")
        self.at += size
        point = int(digits, 16)
        low = text[self.at + 2 : self.at + 6] if text.startswith("\\u", self.at) else ""
        if 0xD800 <= point <= 0xDBFF and _HEX.fullmatch(low) and 0xDC00 <= int(low, 16) <= 0xDFFF:
            self.at += 6
            return 0x10000 + ((point - 0xD800) << 10) + (int(low, 16) - 0xDC00)
        return point

    def char_class(self) -> str:
        text = self.text
        self.at += 1
        negated = text.startswith("^", self.at)
        self.at += negated
        if text.startswith("]", self.at):  # `[]` matches nothing, `[^]` anything
            self.at += 1
            return _ANYTHING if negated else _NOTHING
        members: list[str] = []
        after_set = False  # the last member was a class escape: a `-` next is a hyphen
        while self.at < len(text) and text[self.at] != "]":
            char = text[self.at]
            if char == "\\":
                is_set = text[self.at + 1 : self.at + 2] in _CLASS_ESCAPES
                members.append(self.escape(inside=True))
                after_set = is_set
                continue
            self.at += 1
            next_is_set = text[self.at : self.at + 2] in {f"\\{k}" for k in _CLASS_ESCAPES}
            hyphen = char == "-" and (after_set or next_is_set or not members)
            members.append(char if char == "-" and not hyphen else _code(ord(char)))
            after_set = False
        if self.at >= len(text):
            raise PatternError("a character class [ is never closed with ]")
        self.at += 1
        return f"[{'^' if negated else ''}{''.join(members)}]"
