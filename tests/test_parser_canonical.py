"""The literal check of the canonical form (`parsing.canonical`): it reads the form the prompt
teaches, and wherever it answers it gives the general reader's step exactly (values,
`discarded_text`, `raw_input`, repairs). Its speed is the bench's to measure; what these
tests hold is that it answers where it should, so a change that sends the canonical form
back to the slower paths fails here."""

from __future__ import annotations

import pytest
from corpus import load
from hypothesis import given
from hypothesis import strategies as st
from parse_support import near_canonical

from textreact.grammar import render_step
from textreact.parser import _Reader, parse
from textreact.parsing.canonical import canonical
from textreact.steps import Action, FinalAnswer
from textreact.testing import steps


def _everything(step: object) -> tuple:
    return (
        step,
        step.discarded_text,
        getattr(step, "raw_input", None),
        getattr(step, "repairs", None),
    )


def _agrees(text: str) -> object:
    """The literal check's step, after checking it is the general reader's wherever it
    answers, and the one `parse` gives."""
    step = canonical(text)
    if step is not None:
        assert _everything(step) == _everything(_Reader(text).step())
        assert _everything(parse(text)) == _everything(step)
    return step


@pytest.mark.parametrize("case", load(), ids=lambda case: case["id"])
def test_the_literal_check_agrees_with_the_reader_on_the_corpus(case: dict) -> None:
    _agrees(case["text"])


_WORDS = st.text("abcdefghijklmnopqrstuvwxyz ,.?!'0123456789", min_size=1, max_size=40)
_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True).filter(
    lambda name: name not in {"none", "null", "nothing", "na", "no", "final_answer"}
)
_ARGUMENTS = st.dictionaries(
    st.from_regex(r"[a-z_]{1,10}", fullmatch=True),
    st.one_of(_WORDS, st.integers(-(10**6), 10**6), st.booleans(), st.none()),
    max_size=4,
)
_PLAIN_STEPS = st.one_of(
    st.builds(Action, _NAMES, _ARGUMENTS, st.one_of(st.none(), _WORDS.map(str.strip))),
    st.builds(
        FinalAnswer,
        _WORDS.map(str.strip).filter(bool),
        st.one_of(st.none(), _WORDS.map(str.strip)),
    ),
)


@given(_PLAIN_STEPS, st.sampled_from(["", "\n", "\n\n", "\nObservation: 42", "\n\nObservation:"]))
def test_the_canonical_rendering_of_a_plain_step_is_read_by_the_literal_check(
    step: Action | FinalAnswer, tail: str
) -> None:
    """A step of plain words, names and arguments, as `render_step` writes it (with the
    continuation a model without stop sequences writes): the literal check reads it, and
    reads it as the reader does."""
    text = render_step(step) + tail
    read = _agrees(text)
    assert read == (step if step.thought else type(step)(**{**vars(step), "thought": None}))
    assert read.discarded_text == tail.lstrip("\n")


@given(steps(), st.sampled_from(["", "\n", " \n", "\nObserv", "\nObservation: x\nAction: y"]))
def test_the_literal_check_agrees_on_any_rendered_step(step: object, tail: str) -> None:
    _agrees(render_step(step) + tail)


_LABELS = ["Thought: ", "Action: ", "Action Input: ", "Final Answer: ", "Observation:", ""]
_PIECES = (
    ["search", "x", " ", "\t", ":", "<", "**", "{", "}", '"q"', ": ", ", ", "None", "'",
     "final_answer", "\x00", "\u200b", "\xa0", "Action: ", "```", "\n", "1", "\r", "\x85"]
)  # fmt: skip
_near_canonical = near_canonical(_LABELS, _PIECES)


@given(_near_canonical)
def test_the_literal_check_agrees_on_near_canonical_texts(text: str) -> None:
    _agrees(text)
