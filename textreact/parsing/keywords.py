"""The window -> keyword tokens: each keyword line, and the keywords written mid-line, with the
text each one owns. One regex pass over the case-folded window, anchored at line starts (so
prose and blank lines cost one C-level skip each), finds every keyword line: decoration, a
spelling, and a colon after it, or a heading. Mid-line keywords are looked for only inside
the values that could hold one (those with a colon), and never inside a Final Answer."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import NamedTuple

from textreact import grammar, jsonish
from textreact.parsing.blanks import AS_BLANK, AS_NEWLINE, BLANKS, JUNK
from textreact.parsing.window import Window

#: LlamaIndex's answer keyword, `Answer:`. It is read as a Final Answer only at the start of a
#: line, written with a capital A, and before any Action (in the text before any keyword or in
#: a Thought), so `answer:` as a JSON key, a `Q:`/`Answer:` list inside a Final Answer, and
#: "the answer: 42" mid-sentence all stay text.
ANSWER = "answer"
_PLAIN = str.maketrans({**dict.fromkeys(AS_BLANK, " "), **dict.fromkeys(AS_NEWLINE, "\n")})


def strip(text: str) -> str:
    """`text` without BLANKS at either end. `str.strip()` first: with no argument it is a
    table lookup per character, where a set of characters costs a search per character, which
    a megabyte of blank lines would feel."""
    stripped = text.strip()
    if stripped and (stripped[0] in JUNK or stripped[-1] in JUNK):
        return stripped.strip(BLANKS)
    return stripped


class Token(NamedTuple):
    """One keyword and its value: `text[value:end]`. `kind` None is the text before any keyword."""

    kind: str | None
    start: int
    value: int
    end: int
    lang: str


#: Tokens are made in the scan's inner loop; tuple.__new__ skips NamedTuple's Python-level
#: constructor (same object, a third of the cost).
_token = tuple.__new__


#: Lines that read as an observation the model wrote itself though they are no keyword line:
#: the label without its colon (`Observation 4`, a bare `Observation`), with a note
#: (`Observation (simulated):`), in the plural, abbreviated (`Obs:`), another tool's-output
#: label (`Tool Output:`), Qwen's `观察结果：`. Each ends an Action's or an Action Input's
#: value, and is cut as a hallucinated observation is. Matched ignoring case; `_patterns`
#: knows its first letters.
_OBSERVED = (
    r"(?P<observed>observations?\b|obs\b|tool[ _-]?(?:output|result|response)s?\b|观察"
    r"|工具(?:输出|结果))"
)


class _Patterns(NamedTuple):
    line: re.Pattern[str]
    labels: re.Pattern[str]
    inline: re.Pattern[str]
    spelled: re.Pattern[str]
    observed: re.Pattern[str]


@cache
def _patterns() -> _Patterns:
    """Compiled on the first parse, not on import. The line pattern starts with a newline (the
    window is scanned with one put in front), which lets the regex engine skip to line starts;
    its only groups are the keywords', so `lastgroup` names the keyword, and the tail is
    optional so that a heading (no colon) is still found and checked in Python. `labels` is
    the cheap test for an inline keyword: a canonical label, as plain literals."""
    firsts = {spelling[0] for spellings in grammar.ALIASES.values() for spelling in spellings}
    line = (
        rf"{_line_start(firsts | {ANSWER[0]})}"
        rf"(?:{grammar.SPELLINGS_PATTERN}|(?P<{ANSWER}>answer))(?:{grammar.TAIL_PATTERN})?"
    )
    labels = {grammar.LABELS[lang][k] for lang in grammar.LANGUAGES for k in grammar.KEYWORDS}
    labels = {a for a in labels if not any(b != a and a.startswith(b) for b in labels)}
    return _Patterns(
        re.compile(line),
        re.compile("|".join(sorted(map(re.escape, labels)))),
        re.compile(grammar.KEYWORD_INLINE_PATTERN),
        re.compile(grammar.KEYWORD_LINE_PATTERN, re.MULTILINE),
        re.compile(_line_start(set("ot观工")) + _OBSERVED, re.IGNORECASE),
    )


def labelled(text: str, start: int, end: int) -> bool:
    """Whether `text[start:end]` could hold a keyword written mid-line (`… Action: x`),
    which needs a canonical label and a colon: the cheap test, for the scanner's inline split
    and for the fast path. Most values have no colon, and a `find` costs less than a search
    for the labels."""
    if text.find(":", start, end) < 0 and text.find("：", start, end) < 0:
        return False
    return _patterns().labels.search(text, start, end) is not None


#: A search of `text[begin:end]`, as `re.Pattern.search` takes its arguments.
_Search = Callable[[str, int, int], "re.Match[str] | None"]


def inline_search(text: str, begin: int, end: int) -> re.Match[str] | None:
    """The first keyword written mid-line in `text[begin:end]`: the inline pattern tried only
    where a canonical label starts. A pattern that opens with a lookbehind gives the regex
    engine no prefix to skip to, so it starts its full matcher at every position; the labels
    are literals, whose first letters it skips to, and each inline keyword starts with one."""
    patterns = _patterns()
    while (label := patterns.labels.search(text, begin, end)) is not None:
        match = patterns.inline.match(text, label.start(), end)
        if match is not None:
            return match
        begin = label.start() + 1
    return None


@cache
def layout() -> re.Pattern[str]:
    """The shapes nearly every reply takes, matched on `"\\n" + fold(text)` as the scanner
    reads it, for the parser's fast path: lines of prose with no keyword in them, an optional
    one-line Thought, then an Action line (`tool`) with an Action Input (`input`), or with
    lines of JSON or a fence below it (`below`) and no Action Input, or a Final Answer over
    lines with no keyword in them (`answer`); then blank lines, and a continuation that opens
    with a keyword line (`tail`) or a last line that may be a stop-word residue (`residue`).
    A value runs on over lines that open with a quote, a bracket or a fence. Its keyword
    lines are the scanner's own (`_line_start`, the grammar's spellings and TAIL_PATTERN), and
    a line that the scanner could read as any keyword, heading or word (`any_keyword`) is
    never prose, answer or a value's, so each group is the value the scanner would give that
    keyword. No part can take a blank run another wants, so a text that is not of these
    shapes fails in linear time."""
    firsts = {spelling[0] for spellings in grammar.ALIASES.values() for spelling in spellings}
    start = _line_start(firsts | {ANSWER[0]})
    any_keyword = rf"{start}(?:{grammar.ANY_SPELLING_PATTERN}|{ANSWER})"
    other_line = rf"(?!{any_keyword})\n"
    # What a line holds: not `<`, nor what the scanner writes as a blank or a line break
    # (`plain`), which the scanner could then read a keyword line behind.
    rest = f"[^\n<{AS_BLANK}{AS_NEWLINE}]*"
    prose = f"[^\n<{{{AS_BLANK}{AS_NEWLINE}]*"  # nor a JSON object: a call written as JSON
    value_line = rf"\n[ \t]*(?:[\"{{}}\[\]]|```){rest}"
    blank_lines = r"(?:\n[ \t]*)*"

    def line(*kinds: str) -> str:
        """A keyword line of `kinds`. A plain one (`\\nAction: `) is tried first, as the
        decorated pattern would read it (no decoration, no bold after the colon): the
        decorated one costs a step per optional part, the plain one a literal."""
        spellings = "|".join(s for kind in kinds for s in grammar.ALIASES[kind])
        plain = rf"\n(?:{spellings}):(?!\*\*|__)[ \t]*"
        return rf"(?:{plain}|{start}(?:{spellings}){grammar.TAIL_PATTERN})"

    def once(name: str, body: str) -> str:
        """`body`, matched once and never given back (an atomic group: a lookahead captures,
        a backreference consumes), so a text of none of these shapes fails in a step or two
        per line, not once per way to split its blanks between a label and a value."""
        return rf"(?=(?P<{name}>{body}))(?P={name})"

    thought = line(grammar.THOUGHT) + rf"(?P<thought>{prose})"
    action = line(grammar.ACTION) + rf"(?P<tool>{rest})"
    action_input = line(grammar.ACTION_INPUT) + rf"(?P<input>{rest}(?:{value_line})*)"
    below = once("below", rf"(?:{value_line})*")
    answer = line(grammar.FINAL_ANSWER) + rf"(?P<answer>{rest}(?:{other_line}{rest})*)"
    return re.compile(
        once("prose", rf"(?:{other_line}{prose})*")
        + rf"(?:{once('thought_line', thought)})?"
        + rf"(?:{once('action', action)}(?:{once('action_input', action_input)}"
        + rf"|{below}(?!{blank_lines}{line(grammar.ACTION_INPUT)}))"
        + rf"|{once('final_answer', answer)})"
        + rf"{blank_lines}(?:(?={line(*grammar.KEYWORDS)})(?P<tail>\n(?s:.*))"
        + rf"|(?P<residue>\n{rest}))?"
    )


def _line_start(firsts: set[str]) -> str:
    """A line start and its decoration, before a word that starts with one of `firsts`: the
    grammar's, after a list number (`1.`, `2)`) if any, as models number the steps of a plan.
    What the line's first non-blank character can be (a digit, decoration, or one of
    `firsts`) is tested first, which rejects a blank line or a line of JSON in a step or two.
    A number must be followed by a blank, which the grammar's lead then takes: no two runs of
    blanks can meet, so the pattern stays linear."""
    opening = "".join(map(re.escape, sorted(firsts | set(">+-#*_`0123456789"))))
    number = r"(?:[ \t]*[0-9]{1,3}[.)](?=[ \t]))?"
    return rf"\n(?=[ \t]*[{opening}]){number}{grammar.LEAD_PATTERN}"


@cache
def _unplain() -> re.Pattern[str]:
    return re.compile(f"[{AS_BLANK}{AS_NEWLINE}]")


def plain(text: str, start: int = 0, stop: int | None = None) -> str:
    """`text` (up to `stop`) as the scanner reads it, index for index: AS_BLANK written as a
    space, AS_NEWLINE as `\n`. The same text when `text[start:stop]` holds none of them
    (most replies: one scan in C)."""
    stop = len(text) if stop is None else stop
    if _unplain().search(text, start, stop) is None:
        return text
    return text[:stop].translate(_PLAIN)


class Scanner:
    """The keyword tokens of one window. With `bare`, a keyword alone on its line with no colon
    and no decoration (`Action`) is a keyword too, its value on the next line; `bare_lines`
    counts the ones seen (in either mode, so the reader knows when a rescan could help)."""

    def __init__(self, text: str, window: Window, *, bare: bool = False) -> None:
        #: Read as `plain` writes it (values are sliced from the original by the reader).
        self.text = plain(text, window.start or 0, window.stop)
        self.window = window
        self.bare = bare
        self.bare_lines = 0

    def tokens(self) -> list[Token]:
        """Every token of the window, in order: the text before the first keyword (kind None),
        then one per keyword. One regex pass; Python runs once per keyword line found."""
        text, window = self.text, self.window
        offset = window.start or 0
        folded = "\n" + grammar.fold(text[offset : window.stop])
        shift = offset - 1  # folded[i] is text[i + shift]
        found: list[Token] = []
        kind, start, value, lang = None, offset, offset, "en"
        for match in _patterns().line.finditer(folded):
            spelled = match.lastgroup
            at, spelled_end = match.span(spelled)
            after = match.end()
            if after == spelled_end:  # no colon: a heading, a bare keyword, or a word
                after = self._heading(folded, match.start() + 1, at, spelled_end)
                if after is None:
                    continue
            line_start = match.start() + offset
            if spelled == ANSWER:
                if kind not in (None, grammar.THOUGHT) or text[at + shift] != "A":
                    continue
                spelled = grammar.FINAL_ANSWER
            if window.masks and window.masked(line_start):
                continue
            self._split(found, _token(Token, (kind, start, value, line_start, lang)), spelled)
            kind, start, value = spelled, line_start, after + shift
            lang = "en" if folded[at] < "\x80" else "zh"
        self._split(found, _token(Token, (kind, start, value, window.stop, lang)), None)
        return found

    def _heading(self, folded: str, line_start: int, at: int, spelled_end: int) -> int | None:
        """Where the value of a keyword written as a heading starts (`## Final Answer` or
        `**Final Answer**` alone on its line, or, when bare, `Final Answer`): the next line.
        None for a keyword word in a line of prose."""
        found = _heading(folded, line_start, at, spelled_end)
        if found is None:
            return None
        after, bare = found
        if bare:
            self.bare_lines += 1
            if not self.bare:
                return None
        return after

    def _split(self, found: list[Token], segment: Token, ending: str | None) -> None:
        """One line-led segment, split at keywords written inline (`… Action: x Action Input:
        …`), into `found`. Inline keywords at the end of the segment stay prose while the
        keyword line that ends it (`ending`) is of their kind, an Action and a Final Answer
        counting as one (each decides the step): the model named in a sentence what it then
        wrote on a line of its own ("the previous Action: search failed", `Action: calculator`
        below). A segment with no canonical label and no call to cut (most) is appended as it
        is, after one literal search."""
        kind, start, value, end, lang = segment
        has_label = labelled(self.text, value, end)
        if kind not in _CALLS and (kind == grammar.FINAL_ANSWER or not has_label):
            found.append(segment)
            return
        hits = []
        hit = self._next(kind, value, end) if has_label else None
        while hit is not None:
            hits.append(hit)
            hit = self._next(hit[2], hit[1], end)
        ending = _DECIDES.get(ending, ending)
        while hits and _DECIDES.get(hits[-1][2], hits[-1][2]) == ending:
            hits.pop()
        for at, after, inline_kind in hits:
            self._add(found, kind, start, value, at, lang)
            kind, start, value = inline_kind, at, after
            lang = "en" if self.text[at] < "\x80" else "zh"
        self._add(found, kind, start, value, end, lang)

    def _add(
        self, found: list[Token], kind: str | None, start: int, value: int, end: int, lang: str
    ) -> None:
        """Appends a token; an Action's or Action Input's value ends at a line that reads as
        an observation (_OBSERVED), which opens an Observation token there, so that it is cut
        as the model's own observation always is."""
        if kind in _CALLS and (seen := self._find(_patterns().observed.search, kind, value, end)):
            found.append(_token(Token, (kind, start, value, seen.start() + 1, lang)))
            kind, start, value = grammar.OBSERVATION, seen.start() + 1, seen.end()
        found.append(_token(Token, (kind, start, value, end, lang)))

    def _next(self, kind: str | None, begin: int, end: int) -> tuple[int, int, str] | None:
        """The inline keyword that ends a `kind` value starting at `begin` (none in a Final
        Answer)."""
        if kind == grammar.FINAL_ANSWER:
            return None
        match = self._find(inline_search, kind, begin, end)
        return None if match is None else (match.start(), match.end(), match.lastgroup)

    def _find(
        self, search: _Search, kind: str | None, begin: int, end: int
    ) -> re.Match[str] | None:
        """The first match `search` finds in the `kind` value `text[begin:end]`, outside
        reasoning blocks and, in an Action Input, past its JSON, so that what its strings
        hold stays in them."""
        match = self._search(search, begin, end)
        if match is not None and kind == grammar.ACTION_INPUT:
            skip = begin + _json_end(self.text[begin:end])
            match = match if match.start() >= skip else self._search(search, skip, end)
        return match

    def _search(self, search: _Search, begin: int, end: int) -> re.Match[str] | None:
        window = self.window
        while (match := search(self.text, begin, end)) is not None:
            if not (window.masks and window.masked(match.start())):
                return match
            begin = match.end()
        return None


_HEADING_REST = re.compile(r"[ \t\r]*(?:\*\*|__)?[ \t\r]*")


def _heading(folded: str, line_start: int, at: int, spelled_end: int) -> tuple[int, bool] | None:
    """For a keyword with no colon: where its value starts (the next line) when it is a
    heading (`## X`, `**X**` alone on its line) or bare (alone on its line, no decoration,
    which a Scanner reads only in bare mode), and whether it is bare; None in prose."""
    line_end = folded.find("\n", spelled_end)
    line_end = len(folded) if line_end < 0 else line_end
    if _HEADING_REST.fullmatch(folded, spelled_end, line_end) is None:
        return None
    lead, rest = folded[line_start:at], folded[spelled_end:line_end]
    heading = "#" in lead or any(m in lead and m in rest for m in ("**", "__"))
    bare = not heading and not lead.strip() and not rest.strip()
    return (min(line_end + 1, len(folded)), bare) if heading or bare else None


#: For the inline rule, a Final Answer is of the Action's kind: either decides the step.
_DECIDES = {grammar.FINAL_ANSWER: grammar.ACTION}
#: The values that an observation-like line ends (_OBSERVED): a call's.
_CALLS = frozenset({grammar.ACTION, grammar.ACTION_INPUT})


def _json_end(segment: str) -> int:
    try:
        return jsonish.decode(segment).end
    except jsonish.AmbiguousJsonError as ambiguous:
        return ambiguous.end
    except jsonish.JsonishError:
        return 0


def spelled_keyword(text: str) -> str | None:
    """The keyword that `text` is, whole (`Final Answer:`, `**Action**:`), or None."""
    match = _patterns().spelled.fullmatch(grammar.fold(text))
    return None if match is None else match.lastgroup


def keyword_starts(text: str) -> list[int]:
    """Where every keyword that a Scanner could read in `text` starts, in any mode and any
    context: keyword lines, headings and bare keyword lines, `Answer:` in any case, numbered
    steps, mid-line labels, observation-like lines; JSON strings not skipped. For
    `untrusted.quote_keywords`, which marks each one, so that what the parser reads as a
    keyword and what tool output may not hold are one definition. One pass of each of the
    scanner's patterns, unsorted."""
    text = plain(text)
    patterns = _patterns()
    folded = "\n" + grammar.fold(text)
    starts = []
    for match in patterns.line.finditer(folded):
        at, spelled_end = match.span(match.lastgroup)
        if match.end() > spelled_end or _heading(folded, match.start() + 1, at, spelled_end):
            starts.append(at - 1)
    at = 0
    while (inline := inline_search(text, at, len(text))) is not None:
        starts.append(inline.start(inline.lastgroup))
        at = inline.end()
    starts.extend(m.start("observed") - 1 for m in patterns.observed.finditer("\n" + text))
    return starts
