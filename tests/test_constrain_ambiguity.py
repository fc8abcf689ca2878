"""A pattern handed to llama.cpp as a grammar has one way through for each text: a repetition
of a body that itself repeats a varying number of times (`^(\\w+\\s?)+$`, a common "words"
pattern) is rewritten where the rewrite is exact (`(x+)+` is `x+`) and otherwise left out of
the grammar, where a server would track a parse stack for every way of splitting the text; the
tool's validation still checks the pattern. Bodies whose rounds begin or end at a character no
varying repetition in them takes (`(\\d{1,3}\\.){3}`) keep their grammar."""

from __future__ import annotations

import json

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

from textreact.constrain.pattern import pattern_grammar
from textreact.constrain.recognizer import matches
from textreact.tools import Tool

AMBIGUOUS = [
    r"^(\w+\s?)+$", r"^(a+b?)+$", r"^(a+|b+)+$", r"^([a-z]+[0-9]*)+$", r"^(\d+,?){1,5}$",
    r"^(\w{1,3}){2,}$", r"^((ab)+c?)+$",
]  # fmt: skip
KEPT = [
    r"^(\d{1,3}\.){3}\d{1,3}$", r"^([a-z]+-)*[a-z]+$", r"^(ab+)+$", r"^(\d{3}-){2}\d{4}$",
    r"^((ab){2}){3}$", r"^([^,]+,)*[^,]+$", r"^(\w+\s)*\w+$", r"^[a-z]+$", r"^(x+)+$",
]  # fmt: skip


def _rule(pattern: str) -> str | None:
    written = pattern_grammar(pattern, "char", 64)
    return None if written is None else f'root ::= {written}\nchar ::= [^"\\\\]'


@pytest.mark.parametrize("pattern", AMBIGUOUS)
def test_an_ambiguous_repetition_has_no_grammar(pattern) -> None:
    assert pattern_grammar(pattern, "char", 256) is None


@pytest.mark.parametrize("pattern", KEPT)
def test_a_delimited_or_rewritable_repetition_keeps_its_grammar(pattern) -> None:
    assert pattern_grammar(pattern, "char", 256) is not None


def test_a_repeated_run_is_written_as_one_run() -> None:
    assert pattern_grammar(r"^(\w+)+$", "char", 256) == "([0-9A-Z_a-z]){1,256}"
    assert pattern_grammar(r"^([ab]{2,})+$", "char", 256) == "([ab]){2,256}"


@pytest.mark.parametrize("pattern", [*KEPT[:5], r"^(x+)+$", r"^([ab]{2,}){2,}$"])
@given(text=st.text(alphabet="abx019.-", max_size=16))
def test_a_kept_grammar_takes_what_the_pattern_matches(pattern, text) -> None:
    rules = _rule(pattern)
    assert rules is not None
    assert matches(rules, text) == (regex.fullmatch(pattern.strip("^$"), text) is not None)


@pytest.mark.parametrize("pattern", AMBIGUOUS[:3])
def test_the_tool_still_checks_the_pattern_it_has_no_grammar_of(pattern) -> None:
    schema = {"type": "object", "required": ["words"],
              "properties": {"words": {"type": "string", "pattern": pattern}}}  # fmt: skip
    tool = Tool.from_schema("say", "Say words.", schema)
    from textreact.constrain import tools_grammar

    grammar = tools_grammar([tool])  # the string is a plain bounded string there
    assert "say" in grammar
    with pytest.raises(ValueError):
        tool.parse_arguments(json.dumps({"words": "!!"}))
