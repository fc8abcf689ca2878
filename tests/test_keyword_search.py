"""The literal pre-scans in front of the two patterns that open with a lookbehind (the inline
keyword pattern, the JSON tool-key pattern) find exactly what those patterns find alone: each
test compares them with the pattern run over the whole text, on texts built from the pieces
where they could differ (labels next to every kind of boundary, keys in every quoting, escapes,
the quote mark `│`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from textreact.observation import quote_keywords
from textreact.parsing.blobs import TOOL_KEYS, _decoded, _tool_key, tool_key_starts
from textreact.parsing.keywords import _patterns, inline_search, keyword_starts

_LABEL_PIECES = [
    "Action", "Action Input", "Thought", "Observation", "Final Answer", "行动", "行动输入", "思考",
    "观察", "最终答案", "action", "ACTION", "Answer", ":", "：", " ", "\t", ".", ",", "!", "**",
    "x", "\n", "。", "）", "Act", "ion", "Final", " Answer",
]  # fmt: skip
_KEY_PIECES = [
    "action", "function", "name", "tool", "tool_name", "Name", '"', "'", "“", "”", "{", "}", ",",
    ":", " ", "\n", "//", "#", "\\", "\\u0061", "\\n", "│", "x", "a", "na", "me", "n\\u0061me",
    "\\x74ool", "ction",
]  # fmt: skip


def _text(pieces: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(pieces), max_size=30).map("".join)


@given(_text(_LABEL_PIECES), st.integers(0, 40), st.integers(0, 40))
def test_inline_search_finds_what_the_pattern_finds(text: str, begin: int, end: int) -> None:
    begin, end = min(begin, len(text)), min(max(begin, end), len(text))
    expected = _patterns().inline.search(text, begin, end)
    found = inline_search(text, begin, end)
    assert (found and (found.span(), found.lastgroup)) == (
        expected and (expected.span(), expected.lastgroup)
    )


@given(_text(_LABEL_PIECES))
def test_keyword_starts_marks_every_inline_keyword(text: str) -> None:
    inline = {m.start(m.lastgroup) for m in _patterns().inline.finditer(text)}
    assert inline <= set(keyword_starts(text))


@given(_text(_KEY_PIECES))
def test_tool_key_starts_finds_what_the_pattern_finds(text: str) -> None:
    expected = [
        m.start("unquoted") if m["unquoted"] is not None else m.start()
        for m in _tool_key().finditer(text)
        if m["unquoted"] is not None or m["escaped"] is None or _decoded(m["escaped"]) in TOOL_KEYS
    ]
    assert tool_key_starts(text) == expected


def test_the_pre_scans_leave_plain_text_unmarked_and_keys_marked() -> None:
    prose = "18 C, sunny, light wind. The tool: none. Action items: two. " * 30
    assert tool_key_starts(prose) == []
    assert quote_keywords(prose) == prose
    payload = '{"city": "Paris", "note": "x"} ' * 20 + '{"name": "search"}'
    assert tool_key_starts(payload) == [len(payload) - len('"name": "search"}')]
    assert quote_keywords("a, Final Answer: 42") == "a, │Final Answer: 42"
    escaped = '{"n\\u0061me": "search", "\\x61ction": "x"}'  # no key as written
    assert tool_key_starts(escaped) == [1, escaped.index('"\\x61')]
