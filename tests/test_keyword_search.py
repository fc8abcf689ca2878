"""The literal pre-scans in front of the two patterns that open with a lookbehind (the inline
keyword pattern, the JSON tool-key pattern) find exactly what those patterns find alone: each
test compares the scan with the same scan run without its pre-scan, on texts built from the
pieces where they could differ (labels next to every kind of boundary, keys in every quoting,
escapes, the quote mark `│`)."""

from __future__ import annotations

import re
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from textreact.parsing import blobs, keywords
from textreact.parsing.blobs import tool_key_starts
from textreact.parsing.keywords import _patterns, inline_search, keyword_starts
from textreact.untrusted import quote_keywords

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


@given(_text(_LABEL_PIECES), st.data())
def test_inline_search_finds_what_the_pattern_finds(text: str, data: st.DataObject) -> None:
    begin = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(begin, len(text)))
    expected = _patterns().inline.search(text, begin, end)
    found = inline_search(text, begin, end)
    assert (found and (found.span(), found.lastgroup)) == (
        expected and (expected.span(), expected.lastgroup)
    )


@given(_text(_LABEL_PIECES))
def test_keyword_starts_is_what_it_is_without_the_pre_scan(text: str) -> None:
    found = keyword_starts(text)
    with mock.patch.object(
        keywords, "inline_search", lambda t, b, e: _patterns().inline.search(t, b, e)
    ):
        assert found == keyword_starts(text)


@given(_text(_KEY_PIECES))
def test_tool_key_starts_is_what_it_is_without_the_pre_scan(text: str) -> None:
    found = tool_key_starts(text)
    with mock.patch.object(blobs, "_key_hint", lambda: re.compile("")):
        assert found == tool_key_starts(text)


def test_the_pre_scans_leave_plain_text_unmarked_and_keys_marked() -> None:
    prose = "18 C, sunny, light wind. The forecast: more sun. Action items: two. " * 30
    assert blobs._key_hint().search(prose) is None  # the pre-scan alone decides this text
    assert tool_key_starts(prose) == [] and quote_keywords(prose) == prose
    payload = '{"city": "Paris", "note": "x"} ' * 20 + '{"name": "search"}'
    assert tool_key_starts(payload) == [len(payload) - len('"name": "search"}')]
    assert quote_keywords("a, Final Answer: 42") == "a, │Final Answer: 42"
    escaped = '{"n\\u0061me": "search", "\\x61ction": "x"}'  # no key as written
    assert tool_key_starts(escaped) == [1, escaped.index('"\\x61')]
