"""The window -> keyword tokens: each keyword line, and the keywords written mid-line, with the
text each one owns. One C-level pass finds every keyword spelling in the case-folded window;
a spelling starts a keyword line when only decoration stands before it on its line and a colon
follows, and any other spelling is tried as an inline keyword. Prose and blank lines cost
nothing past that pass."""

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
    any_spelling: re.Pattern[str]
    spellings: re.Pattern[str]
    lead: re.Pattern[str]
    tail: re.Pattern[str]
    inline: re.Pattern[str]
    line: re.Pattern[str]


@cache
def _patterns() -> _Patterns:
    """Compiled on the first parse, not on import."""
    return _Patterns(
        *(re.compile(p) for p in (grammar.ANY_SPELLING_PATTERN, grammar.SPELLINGS_PATTERN)),
        *(re.compile(p) for p in (grammar.LEAD_PATTERN, grammar.TAIL_PATTERN)),
        re.compile(grammar.KEYWORD_INLINE_PATTERN),
        re.compile(grammar.KEYWORD_LINE_PATTERN, re.MULTILINE),
    )


class Scanner:
    """The keyword tokens of one window, produced lazily: a parse stops at its decision."""

    def __init__(self, text: str, window: Window) -> None:
        self.text = text
        self.window = window
        #: Inline keywords seen so far, in order: (start, value, kind, lang).
        self._inline: list[tuple[int, int, str, str]] = []
        self._inline_starts: list[int] = []

    def tokens(self) -> Iterator[Token]:
        """Line-led segments, split at inline keywords. A spelling's keyword is the named
        group that matches there: the keyword-line pattern tries the same alternatives in the
        same order, and no tail that fails after a longer spelling succeeds after a shorter."""
        window = self.window
        offset = window.start or 0
        folded = grammar.fold(self.text[offset : window.stop])
        patterns = _patterns()
        lead_limit = len(folded) if len(folded) <= _SHORT else _MAX_LEAD
        kind, start, value, lang = None, offset, offset, "en"
        line_end = -1
        for spelling in patterns.any_spelling.finditer(folded):
            at = spelling.start()
            if at > line_end:  # the first spelling on its line: does the line start with it?
                line_start = folded.rfind("\n", 0, at) + 1
                line_end = folded.find("\n", at)
                line_end = len(folded) if line_end < 0 else line_end
                after = None
                if at == line_start or (
                    at - line_start <= lead_limit
                    and patterns.lead.fullmatch(folded, line_start, at) is not None
                ):
                    tail = patterns.tail.match(folded, spelling.end())
                    after = tail.end() if tail else _heading(folded, line_start, at, line_end)
                if after is not None:
                    if not window.masks or not window.masked(offset + line_start):
                        yield from self._split(kind, start, value, offset + line_start, lang)
                        kind = patterns.spellings.match(folded, at).lastgroup
                        start = offset + line_start
                        value, lang = offset + after, "en" if folded[at] < "\x80" else "zh"
                    continue
            self._note_inline(offset + at, patterns.inline)
        yield from self._split(kind, start, value, window.stop, lang)

    def _note_inline(self, at: int, inline: re.Pattern[str]) -> None:
        match = inline.match(self.text, at, self.window.stop)
        if match is not None:
            kind = match.lastgroup
            lang = "en" if self.text[at] < "\x80" else "zh"
            self._inline.append((at, match.end(), kind, lang))
            self._inline_starts.append(at)

    def _split(
        self, kind: str | None, start: int, value: int, end: int, lang: str
    ) -> Iterator[Token]:
        """Split one line-led segment at keywords written inline (`… Action: x Action Input: …`).
        An Action Input's JSON is skipped first, so a keyword inside one of its strings stays.
        Every inline keyword before `end` has been noted by the time this runs."""
        starts = self._inline_starts
        while kind != grammar.FINAL_ANSWER and starts and starts[-1] >= value:
            first = bisect_left(starts, value)
            if kind == grammar.ACTION_INPUT:
                first = bisect_left(starts, value + _json_end(self.text[value:end]))
            while first < len(starts) and self.window.masked(starts[first]):
                first += 1
            if first == len(starts):
                break
            at, after, inline_kind, inline_lang = self._inline[first]
            yield Token(kind, start, value, at, lang)
            kind, start, value, lang = inline_kind, at, after, inline_lang
        yield Token(kind, start, value, end, lang)


_HEADING_REST = re.compile(r"[ \t]*(?:\*\*|__)?[ \t]*")


def _heading(folded: str, line_start: int, at: int, line_end: int) -> int | None:
    """Where the value of a keyword written as a heading starts (`## Final Answer` or
    `**Final Answer**` alone on its line, no colon): the next line. None for a bare word."""
    match = _patterns().spellings.match(folded, at)
    rest_start = match.end() if match else at
    if _HEADING_REST.fullmatch(folded, rest_start, line_end) is None:
        return None
    lead, rest = folded[line_start:at], folded[rest_start:line_end]
    if "#" in lead or any(m in lead and m in rest for m in ("**", "__")):
        return min(line_end + 1, len(folded))
    return None


def _json_end(segment: str) -> int:
    try:
        return jsonish.decode(segment).end
    except jsonish.JsonishError:
        return 0


def spelled_keyword(text: str) -> str | None:
    """The keyword that `text` is, whole (`Final Answer:`, `**Action**:`), or None."""
    match = _patterns().line.fullmatch(grammar.fold(text))
    return None if match is None else match.lastgroup
