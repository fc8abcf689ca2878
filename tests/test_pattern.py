"""A string's JSON Schema `pattern` in the tools' grammar (`textreact.constrain.pattern`) and
in a tool's example (`textreact.tools.pattern.shortest`): checked with the offline recogniser
here, and against the real llama.cpp server in test_constrain."""

from __future__ import annotations

import json
import re

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

from textreact.constrain import matches, schema_grammar
from textreact.constrain.pattern import pattern_grammar
from textreact.tools.pattern import MAX_REPEAT, shortest

PLAIN = schema_grammar({"type": "string"})


def held(pattern: str) -> str:
    return schema_grammar({"type": "string", "pattern": pattern})


def takes(grammar_text: str, value: str) -> bool:
    return matches(grammar_text, json.dumps(value, ensure_ascii=False))


@pytest.mark.parametrize(
    ("pattern", "taken", "refused"),
    [
        (r"^[A-Z]{3}$", ["ABC", "XYZ"], ["AB", "ABCD", "abc", ""]),
        (r"^\d{3}-\d{4}$", ["555-1234"], ["5551234", "555-12345", "abc-defg"]),
        (r"^(?:foo|bar)?$", ["foo", "bar", ""], ["foobar", "baz"]),
        (r"^[^,]+$", ['a"b', "a\\b", "日本"], ["a,b", ""]),
        (r"^a\.b$", ["a.b"], ["axb"]),
        (r"^(?P<user>\w+)@(\w+\.)+[a-z]{2,}$", ["ann@mail.example.org"], ["ann@", "@x.org"]),
        (r"^\s*\w+\s*$", [" x ", "word"], ["two words", " "]),
        (r"^[\]a-]$", ["]", "a", "-"], ["b", "\\"]),
        (
            r'^say "\\"$',
            ['say "\\"'],
            ['say "'],
        ),
        (r"^x{2,}$", ["xx", "xxxxx"], ["x"]),
        (r"^ab*?c$", ["ac", "abbbc"], ["abd"]),
        (r"cat", ["cat", "concatenate", "a cat."], ["dog", "ca t"]),
        (r"^go", ["go", "gone"], ["ago"]),
        (r"end$", ["the end"], ["ending"]),
        (r"^a$|^b$", ["a", "b"], ["ab", "c"]),
        (r"^\*$|^[*]$", ["*"], [""]),  # the same branch twice is not an empty one
        (r"^$", [""], ["x"]),
        (r"^[\u3000-\u303F]+$", ["。、"], ["a"]),
        (r"^\x41\u0042$", ["AB"], ["ab"]),
        (r"^a  b$", ["a  b"], ["a b"]),  # spaces in a literal are its own
        (r"^a{1}b{0,2}$", ["a", "abb"], ["abbb", "b"]),
        (r"^{x}$", ["{x}"], ["x"]),  # a brace that starts no repetition is itself
    ],
)
def test_a_pattern_holds_the_string_to_what_it_matches(
    pattern: str, taken: list[str], refused: list[str]
) -> None:
    grammar_text = held(pattern)
    assert grammar_text != PLAIN
    for value in taken:
        assert regex.search(pattern, value), value  # the table itself is right
        assert takes(grammar_text, value), value
    for value in refused:
        assert not regex.search(pattern, value), value
        assert not takes(grammar_text, value), value


@pytest.mark.parametrize(
    "pattern",
    [
        r"(?=x)x",  # lookahead
        r"(?<!a)b",  # lookbehind
        r"(a)\1",  # back-reference
        r"\bword\b",
        r"\p{L}+",
        r"(?i)abc",  # inline flags
        r"a++",  # possessive
        rf"^x{{{MAX_REPEAT + 1}}}$",
        r"a^b",  # an anchor inside
        r"[[:alpha:]]",
        r"^\D$",  # the validator reads \D in Unicode: wider than any ASCII class
        r"^[^\d]$",
        r"^a{,3}$",  # `regex` reads {0,3}, ECMA-262 a literal
        r"^\01$",  # octal
        r"^\ud83d$",  # a surrogate
        r"^((a?)*)*$",  # a repetition of what may be empty
        "(" * 300 + "a" + ")" * 300,  # deeper than Python's stack
        r"^(?:(?:a{256}){256}){256}$",  # longer than any bounded string
        r"*a",
        "(unclosed",
        "[unclosed",
        "",
    ],
)
def test_a_pattern_outside_the_subset_leaves_the_plain_string(pattern: str) -> None:
    """A grammar narrower than the pattern would forbid values the tool takes: the plain
    string instead, and the validator checks the pattern."""
    assert pattern_grammar(pattern, "char", 256) is None
    assert held(pattern) == PLAIN


#: Patterns of the kinds tool schemas use, for the properties below.
PATTERNS = [
    r"^[A-Z]{2,3}-\d{1,4}$",
    r"^(?:\+\d{1,3} )?\d{3}[- ]\d{4}$",
    r"^[a-z0-9_.]+@[a-z]+\.(?:com|org)$",
    r"^\d{4}-[01]\d-[0-3]\d$",
    r"^[^ ,]+(?:,[^ ,]+)*$",
    r"^.{2,8}$",
    r"v\d+\.\d+",
    r"^(?:[A-Za-z]+|\d+)( [A-Za-z]+)*$",
    r'^["\\/]+$',
]


def _matched(pattern: str) -> st.SearchStrategy[tuple[str, str]]:
    # `\d`, `\w`, `\s` as ECMA-262 (JSON Schema's dialect) reads them: ASCII
    return st.tuples(st.just(pattern), st.from_regex(re.compile(pattern, re.ASCII)))


@given(st.sampled_from(PATTERNS).flatmap(_matched))
def test_every_string_a_pattern_matches_is_one_its_grammar_takes(case: tuple[str, str]) -> None:
    """Never narrower than the pattern, except for control characters no tool wants and the
    pattern does not name (a class or `.` takes none of them)."""
    pattern, value = case
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        value = "".join(c for c in value if 0x20 <= ord(c) != 0x7F)
        if not regex.search(pattern, value):
            return
    assert takes(held(pattern), value), (pattern, value)


@given(st.sampled_from(PATTERNS), st.text(alphabet='aZ09-_.,@+ /"\\', max_size=14))
def test_every_string_a_grammar_takes_matches_its_pattern(pattern: str, value: str) -> None:
    """Never wider either: what the model may write is what the tool's schema accepts."""
    if takes(held(pattern), value):
        assert regex.search(pattern, value), (pattern, value)


@pytest.mark.parametrize(
    ("pattern", "example"),
    [
        (r"^[A-Z]{3}-\d{2}$", "AAA-00"),
        (r"^(?:\+\d{1,3} )?\d{3}[- ]\d{4}$", "000 0000"),
        (r"^[^,]+$", "a"),
        (r"^[^a-z0-9 _.-]$", "!"),
        (r"^(red|green|blue)$", "red"),
        (r"v\d+", "v0"),
    ],
)
def test_a_required_argument_with_a_pattern_gets_its_shortest_string_as_example(
    pattern: str, example: str
) -> None:
    """Not a ToolExampleError asking for an example by hand: the shortest string the pattern
    matches, which the tool's own validation accepts."""
    from textreact import Tool

    tool = Tool.from_schema(
        "code", "Use it.", {"properties": {"code": {"type": "string", "pattern": pattern}},
                            "required": ["code"]},
    )  # fmt: skip
    assert shortest(pattern) == example
    assert tool.example == {"code": example}
    assert tool.parse_arguments({"code": example}) == {"code": example}
    assert shortest(r"\bword") is None  # outside the subset: the neutral value is tried


@given(st.sampled_from(PATTERNS))
def test_the_shortest_string_matches_and_its_grammar_takes_it(pattern: str) -> None:
    value = shortest(pattern)
    assert value is not None and regex.search(pattern, value)
    assert takes(held(pattern), value)
