"""A pattern's compile cost is known before it is compiled: one that `regex` would write out
into megabytes (nested or large bounded repetitions) is refused by `textreact serve` with a 400
that names it, and never compiled by validation; compiled patterns are cached within a bound on
their count and their summed cost. Sizes are reasoned from the count (see
`textreact.tools.regexcost`), never timed or measured here."""

from __future__ import annotations

import httpx2 as httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from serve_support import QUESTION, proxy, text

from textreact.serve.errors import ServeError
from textreact.serve.request import request_tools
from textreact.tools import Tool
from textreact.tools.regexcost import MAX_COMPILE_COST, PatternCache, compile_cost
from textreact.tools.schema import compiled_pattern

COSTLY = [
    "^(a{1500}){1500}$",
    "(?:[a-z]{300}){300}",
    "((a{40}){40}){40}",
    "a{60000}",
    "x{,70000}",
    "(ab|c{300}){300}",
    "((a{300}){300}",  # a group left open still counts
    "[ab]{99999}",
]
CHEAP = [
    "^[a-z]+$", r"^\d{3}-\d{4}$", r"^(\w+\s?)+$", "x{1,1000}y{1,1000}", r"\p{L}{2,5}",
    "[]a]{10}", r"^[A-Z]{2}[0-9]{2}[A-Z0-9]{1,30}$", "a{2}{3}", "{", "a{,}", "(?:ab){100}",
]  # fmt: skip


@pytest.mark.parametrize("pattern", COSTLY)
def test_a_costly_pattern_counts_past_the_limit(pattern) -> None:
    assert compile_cost(pattern) > MAX_COMPILE_COST


@pytest.mark.parametrize("pattern", CHEAP)
def test_an_everyday_pattern_is_cheap(pattern) -> None:
    assert compile_cost(pattern) <= 10_000


@given(st.text(alphabet="ab(){}[]|*+?,0123456789\\^$.:", max_size=40))
def test_the_count_never_fails_and_is_bounded(pattern) -> None:
    assert 0 <= compile_cost(pattern) <= MAX_COMPILE_COST + 1


@given(st.integers(1, 300), st.integers(1, 300))
def test_nested_repetitions_multiply(inner, outer) -> None:
    cost = compile_cost(f"(a{{{inner}}}){{{outer}}}")
    assert cost == min(inner * outer, MAX_COMPILE_COST + 1)


@pytest.mark.parametrize("pattern", COSTLY)
def test_validation_never_compiles_a_costly_pattern(pattern) -> None:
    assert compiled_pattern(pattern) is None


@pytest.mark.parametrize("pattern", COSTLY[:4])
def test_serve_refuses_a_costly_pattern_with_a_400(pattern) -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}}}
    tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
    with pytest.raises(ServeError) as caught:
        request_tools([tool])
    assert caught.value.status == 400
    assert caught.value.param == "tools[0].function.parameters"
    assert "properties.code.pattern" in caught.value.message
    assert "maxLength" in caught.value.message
    named = {"type": "object", "patternProperties": {pattern: {"type": "string"}}}
    with pytest.raises(ServeError):
        request_tools([{"type": "function", "function": {"name": "g", "parameters": named}}])


def test_the_400_comes_back_over_http() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": COSTLY[0]}}}
    tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
    body = {"model": "m", "messages": QUESTION, "tools": [tool]}
    with proxy([text("Final Answer: no")]) as (upstream, url):
        reply = httpx.post(url + "/chat/completions", json=body, timeout=30)
    assert reply.status_code == 400 and "compile" in reply.json()["error"]["message"]
    assert upstream.posts == []


def test_a_tool_made_outside_serve_validates_without_the_pattern() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": COSTLY[0]}},
              "required": ["s"], "examples": [{"s": "a"}]}  # fmt: skip
    try:
        tool = Tool.from_schema("f", "d", schema)
    except ValueError:
        return  # refused when made: never compiled either
    assert tool.parse_arguments({"s": "a"}) == {"s": "a"}


def test_the_cache_is_bounded_by_count_and_by_cost() -> None:
    made: list[str] = []

    def make(pattern: str) -> str:
        made.append(pattern)
        return pattern.upper()

    cache = PatternCache(make, entries=3, total=100)
    assert [cache(p) for p in ("a", "b", "c", "a")] == ["A", "B", "C", "A"]
    assert made == ["a", "b", "c"]  # the second "a" came from the cache
    cache("d")  # four entries: the least recently used ("b") goes
    cache("b")
    assert made[-1] == "b"
    cache("x{90}")  # costs 90: the others go, to stay within 100 in all
    cache("a")
    assert made[-1] == "a"
    assert cache("(a{300}){300}") is None and made[-1] == "a"  # past the limit: never made
