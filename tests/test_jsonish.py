"""jsonish: each repair does what its name says, refuses what it cannot repair unambiguously,
and nothing but JsonishError ever escapes for any string."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from textreact.jsonish import MAX_DEPTH, JsonishError, decode, loads

REPAIRED = [
    ('{"q": "x", "n": 2}', {"q": "x", "n": 2}, ()),
    ('```json\n{"q": "x"}\n```', {"q": "x"}, ("code_fence",)),
    ('```json\n{"q": "a ``` b"}\n```', {"q": "a ``` b"}, ("code_fence",)),
    ('```json {"q": "x"}```', {"q": "x"}, ("code_fence",)),
    ('```\n{"q": "x"}\n```\nThat should work.', {"q": "x"}, ("code_fence", "trailing_text")),
    ('{"q": "x"} I hope this helps!', {"q": "x"}, ("trailing_text",)),
    ('Arguments: {"q": "x"}', {"q": "x"}, ("leading_text",)),
    ('{"q": "x",}', {"q": "x"}, ("trailing_comma",)),
    ('{"a": [1, 2,],\n}', {"a": [1, 2]}, ("trailing_comma",)),
    ('{"q": "a,}"}', {"q": "a,}"}, ()),
    ("{'q': 'x'}", {"q": "x"}, ("single_quotes",)),
    ("{'ok': True, 'none': None}", {"ok": True, "none": None}, ("single_quotes", "python_literal")),
    ("{'q': \"it's\"}", {"q": "it's"}, ("single_quotes",)),
    ('{query: "x", max_results: 3}', {"query": "x", "max_results": 3}, ("unquoted_keys",)),
    ('{"q": "multi\nline"}', {"q": "multi\nline"}, ("control_characters",)),
    ('{"q": "cut by the token li', {"q": "cut by the token li"}, ("truncated",)),
    ('{"a": {"b": "c"', {"a": {"b": "c"}}, ("truncated",)),
    ('{"a": "b", ', {"a": "b"}, ("truncated",)),
    ('{"a": true', {"a": True}, ("truncated",)),
    ('"just a string"', "just a string", ()),
    ("[1, 2]", [1, 2], ()),
]


@pytest.mark.parametrize(("text", "value", "repairs"), REPAIRED)
def test_repairs_are_applied_and_named(text: str, value: object, repairs: tuple[str, ...]) -> None:
    assert loads(text) == (value, repairs)


REFUSED = [
    ("", "empty"),
    ("   \n", "empty"),
    ("Paris", "no JSON"),
    ("search for [python] docs", "prose"),
    ("see {", "prose"),
    ('{"n": 12', "cut off"),
    ('{"a":', "cut off"),
    ('{"a": "b", "c', "not valid JSON"),
    ('{"a": NaN}', "NaN"),
    ('{"a": -Infinity}', "Infinity"),
    ('{"a": 1e999}', "infinity"),
    ('{"a": 1]', "unbalanced"),
    ("{'a': b'x'}", "not valid JSON"),
]


@pytest.mark.parametrize(("text", "reason"), REFUSED)
def test_ambiguous_or_prose_is_refused_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(JsonishError, match=reason):
        loads(text)


def test_jsonish_error_is_a_value_error() -> None:
    assert issubclass(JsonishError, ValueError)


def test_size_bound_is_checked_before_parsing() -> None:
    with pytest.raises(JsonishError, match="at most 10"):
        loads('{"q": "xxxxxxxx"}', max_chars=10)


def test_depth_bound() -> None:
    deep = "[" * (MAX_DEPTH + 1) + "]" * MAX_DEPTH  # not strict JSON, so the repair path runs
    with pytest.raises(JsonishError, match="nested"):
        loads(deep)
    with pytest.raises(JsonishError):
        loads("[" * 19_000)


def test_decode_reports_where_the_value_ends() -> None:
    text = 'Input: {"q": "x"} and more'
    decoded = decode(text)
    assert text[: decoded.end].endswith('"x"}')
    fenced = '```json\n{"q": 1}\n```\nObservation: 3'
    assert fenced[decode(fenced).end :] == "\nObservation: 3"


@given(st.text(max_size=80))
def test_only_jsonish_error_escapes(text: str) -> None:
    with contextlib.suppress(JsonishError):
        loads(text)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=4))
def test_strict_json_round_trips_untouched(value: dict) -> None:
    assert loads(json.dumps(value)) == (value, ())
    assert loads(json.dumps(value, indent=2, ensure_ascii=False)) == (value, ())


@given(st.dictionaries(st.text(max_size=8), json_values, min_size=1, max_size=4))
def test_fenced_and_commented_json_recovers_the_value(value: dict) -> None:
    text = f"Here you go:\n```json\n{json.dumps(value)}\n```\nLet me know."
    assert loads(text)[0] == value
