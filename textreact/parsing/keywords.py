"""The window -> keyword tokens: each keyword line, and the keywords written mid-line, with the
text each one owns. One pass finds every keyword spelling in the case-folded window; only the
lines where one occurs are matched against the keyword-line pattern, and only spellings inside
a line are tried as inline keywords, so prose and blank lines cost one C-level scan."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator
from functools import cache
from typing import NamedTuple

from textreact import grammar, jsonish
from textreact.parsing.window import Window

#: Windows longer than this only take keywords led by at most _MAX_LEAD characters of
#: indentation and decoration (`> - ### **`), which bounds the work on a line of junk.
_SHORT = 2_000
_MAX_LEAD = 40


class Token(NamedTuple):
    """One keyword and its value: `text[value:end]`. `kind` None is the text before any keyword."""

    kind: str | None
    start: int
    value: int
    end: int
    lang: str


class _Patterns(NamedTuple):
    spellings: re.Pattern[str]
    line: re.Pattern[str]
    inline: re.Pattern[str]


@cache
def _patterns() -> _Patterns:
    """Compiled on the first parse, not on import."""
    spellings = "|".join(s for group in grammar.ALIASES.values() for s in group)
    return _Patterns(
        re.compile(spellings),
        re.compile(grammar.KEYWORD_LINE_PATTERN, re.MULTILINE),
        re.compile(grammar.KEYWORD_INLINE_PATTERN),
    )


def _lang(label: str) -> str:
    return "en" if label.isascii() else "zh"  # a folded spelling is ASCII or Chinese


class Scanner:
    """The keyword tokens of one window, produced lazily: a parse stops at its decision."""

    def __init__(self, text: str, window: Window) -> None:
        self.text = text
        self.window = window
        #: Inline keywords seen so far, in order: (start, value, kind, lang).
        self._inline: list[tuple[int, int, str, str]] = []
        self._inline_starts: list[int] = []

    def tokens(self) -> Iterator[Token]:
        window, offset = self.window, self.window.start or 0
        kind, start, value, lang = None, offset, offset, "en"
        for match in self._keyword_lines():
            at = offset + match.start()
            if window.masked(at):
                continue
            yield from self._split(kind, start, value, at, lang)
            kind = match.lastgroup
            start, value, lang = at, offset + match.end(), _lang(match[kind])
        yield from self._split(kind, start, value, window.stop, lang)

    def _keyword_lines(self) -> Iterator[re.Match[str]]:
        """Keyword-line matches in the folded window (sliced, so that a line starts right after
        a closing </think>); mid-line spellings that read as inline keywords are noted."""
        offset = self.window.start or 0
        window = grammar.fold(self.text[offset : self.window.stop])
        patterns = _patterns()
        lead_limit = len(window) if len(window) <= _SHORT else _MAX_LEAD
        line_end, keyword_at = -1, -1
        for candidate in patterns.spellings.finditer(window):
            at = candidate.start()
            if at > line_end:
                line_start = window.rfind("\n", 0, at) + 1
                line_end = window.find("\n", at)
                line_end = len(window) if line_end < 0 else line_end
                match = None
                if at - line_start <= lead_limit:
                    match = patterns.line.match(window, line_start)
                if match is not None:
                    keyword_at = match.start(match.lastgroup)
                    yield match
            if at != keyword_at:
                self._note_inline(offset + at, patterns.inline)

    def _note_inline(self, at: int, inline: re.Pattern[str]) -> None:
        match = inline.match(self.text, at, self.window.stop)
        if match is not None:
            kind = match.lastgroup
            self._inline.append((at, match.end(), kind, _lang(match[kind])))
            self._inline_starts.append(at)

    def _split(
        self, kind: str | None, start: int, value: int, end: int, lang: str
    ) -> Iterator[Token]:
        """Split one line-led segment at keywords written inline (`… Action: x Action Input: …`).
        An Action Input's JSON is skipped first, so a keyword inside one of its strings stays."""
        starts = self._inline_starts
        while kind != grammar.FINAL_ANSWER:
            first = bisect_left(starts, value)
            if first == len(starts) or starts[first] >= end:
                break
            if kind == grammar.ACTION_INPUT:
                first = bisect_left(starts, value + _json_end(self.text[value:end]))
            while first < len(starts) and starts[first] < end and self.window.masked(starts[first]):
                first += 1
            if first == len(starts) or starts[first] >= end:
                break
            at, after, inline_kind, inline_lang = self._inline[first]
            yield Token(kind, start, value, at, lang)
            kind, start, value, lang = inline_kind, at, after, inline_lang
        yield Token(kind, start, value, end, lang)


def _json_end(segment: str) -> int:
    try:
        return jsonish.decode(segment).end
    except jsonish.JsonishError:
        return 0


def spelled_keyword(text: str) -> str | None:
    """The keyword that `text` is, whole (`Final Answer:`, `**Action**:`), or None."""
    match = _patterns().line.fullmatch(grammar.fold(text))
    return None if match is None else match.lastgroup
