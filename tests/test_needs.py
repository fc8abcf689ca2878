"""What a refused call still needs, and the call with the numbers in place once nothing is."""

from __future__ import annotations

from typing import Any

import pytest

from textreact.policies.notes import unfinished
from textreact.policies.progress import progress
from textreact.steps import ToolResult


def refused(expression: str, *needs: str) -> ToolResult:
    return ToolResult(
        "calculator", {"expression": expression}, error="names", error_kind="wrong_tool",
        needs=needs,
    )  # fmt: skip


def found(text: str, query: str = "q", *, error: bool = False) -> ToolResult:
    if error:
        return ToolResult("lookup_fact", {"query": query}, error=text, error_kind="exception")
    return ToolResult("lookup_fact", {"query": query}, value=text, text=text)


EVEREST_FUJI = refused("Mount Everest - Mount Fuji", "Mount Everest", "Mount Fuji")


def test_what_is_missing_and_which_result_answers_which_need() -> None:
    later = [found("8849 m (height of Mount Everest)", "Everest"), found("Paris", "capital")]
    state = progress(EVEREST_FUJI, later)
    assert state.missing == ("Mount Fuji",)
    assert state.found == (("Mount Everest", "8849 m (height of Mount Everest)"), (None, "Paris"))
    assert state.filled is None


def test_the_numbers_go_in_place_of_the_names_in_the_model_s_own_order() -> None:
    later = [found("3776 m (height of Mount Fuji)"), found("8849 m (height of Mount Everest)")]
    state = progress(EVEREST_FUJI, later)
    assert state.missing == ()
    assert state.filled == {"expression": "8849 - 3776"}


def test_a_failed_call_finds_nothing() -> None:
    later = [found("Mount Fuji is not known", error=True)]
    assert progress(EVEREST_FUJI, later).missing == ("Mount Everest", "Mount Fuji")


@pytest.mark.parametrize(
    ("texts", "filled"),
    [
        # no unit, and thousands separators dropped
        (["14,047,594 (population of Tokyo)", "8982000 (of London)"], "14047594 - 8982000"),
        # a lookup that found both: each line answers its own name, not the heading
        (['"Tokyo and London" names 2 facts; each one:\n- 14047594 (Tokyo)\n- 8982000 (London)'],
         "14047594 - 8982000"),
        # units that differ need a conversion the engine cannot know
        (["384400 km (Tokyo)", "299792458 m/s (London)"], None),
        # a result that does not begin with its number
        (["Tokyo has 14047594 people", "8982000 (London)"], None),
        # a number run together with letters is no number
        (["14047594x (Tokyo)", "8982000 (London)"], None),
    ],
)  # fmt: skip
def test_a_number_is_put_in_only_where_each_result_begins_with_one_in_one_unit(
    texts: list[str], filled: str | None
) -> None:
    state = progress(refused("Tokyo - London", "Tokyo", "London"), [found(t) for t in texts])
    assert state.missing == ()
    assert state.filled == (None if filled is None else {"expression": filled})


def test_the_longest_name_is_replaced_first_and_case_does_not_matter() -> None:
    call = refused("new york city + New York", "New York City", "New York")
    later = [found("8336000 (population of New York City)"), found("20000000 (New York state)")]
    assert progress(call, later).filled == {"expression": "8336000 + 20000000"}


def test_a_name_found_only_through_the_query_of_a_one_line_result() -> None:
    """`北京人口` asked, the answer written in English: the query names the need."""
    call = refused("北京 + 上海", "北京", "上海")
    later = [found("21893095 (population of Beijing)", "北京人口"), found("24870895", "上海人口")]
    assert progress(call, later).filled == {"expression": "21893095 + 24870895"}


@pytest.mark.parametrize(
    "arguments",
    [
        "Tokyo - London",  # raw input, not parsed into arguments
        {"expression": "the difference"},  # the needs are not in the arguments
    ],
)
def test_no_call_is_shown_where_the_names_cannot_be_replaced(arguments: Any) -> None:
    call = ToolResult(
        "calculator", arguments, error="names", error_kind="wrong_tool", needs=("Tokyo", "London")
    )
    later = [found("14047594 (Tokyo)"), found("8982000 (London)")]
    assert progress(call, later).filled is None


def test_strings_inside_lists_and_objects_are_filled_too() -> None:
    arguments = {"terms": ["Tokyo", {"other": "London"}], "op": 2}
    call = ToolResult(
        "sum", arguments, error="names", error_kind="wrong_tool", needs=("Tokyo", "London")
    )
    later = [found("14047594 (Tokyo)"), found("8982000 (London)")]
    assert progress(call, later).filled == {"terms": ["14047594", {"other": "8982000"}], "op": 2}


@pytest.mark.parametrize(
    ("expression", "question", "filled", "asked"),
    [
        # the model's order turned round: "how many more A than B" is A - B
        ("London - Tokyo", "How many more people live in Tokyo than in London?",
         "14047594 - 8982000", True),
        # a difference for "how many times", names in parentheses
        ("(Tokyo) - (London)", "How many times larger is Tokyo than London?",
         "14047594 / 8982000", True),
        # already as asked: the plain note, with nothing said about the question
        ("Tokyo - London", "How many more people live in Tokyo than in London?",
         "14047594 - 8982000", False),
        # a sum or a product is the model's own, whatever the question says
        ("London + Tokyo", "How many more people live in Tokyo than in London?",
         "8982000 + 14047594", False),
        ("London * Tokyo", "How many times larger is Tokyo than London?",
         "8982000 * 14047594", False),
        # a ratio where a difference is asked
        ("Tokyo / London", "How many more people live in Tokyo than in London?",
         "14047594 - 8982000", True),
        # more than two names and one operator: the model's own call, numbers in place
        ("(London - Tokyo) / London", "How many times larger is Tokyo than London?",
         "(8982000 - 14047594) / 8982000", False),
        # words that fix nothing
        ("London - Tokyo", "Compare Tokyo and London.", "8982000 - 14047594", False),
    ],
)  # fmt: skip
def test_a_call_of_two_names_and_one_operator_is_written_as_the_question_asks(
    expression: str, question: str, filled: str, asked: bool
) -> None:
    call = refused(expression, "London", "Tokyo")
    later = [found("8982000 (population of London)"), found("14047594 (population of Tokyo)")]
    state = progress(call, later, question)
    assert state.filled == {"expression": filled}
    assert (state.asked is not None) is asked


@pytest.mark.parametrize(
    ("lang", "told"),
    [
        ("en", 'Now call calculator again as the question asks, Tokyo - London, with the numbers'
               ' in place of the names: {"expression": "14047594 - 8982000"}'),
        ("zh", '现在请按问题所问（Tokyo - London）重新调用 calculator，用数字代替名称：'
               '{"expression": "14047594 - 8982000"}'),
    ],
)  # fmt: skip
def test_an_answer_sent_back_says_what_the_question_asks(lang: str, told: str) -> None:
    call = refused("London - Tokyo", "London", "Tokyo")
    later = [found("8982000 (population of London)"), found("14047594 (population of Tokyo)")]
    question = "How many more people live in Tokyo than in London?"
    note = unfinished(call, 1, progress(call, later, question), question, lang)
    assert note.endswith(told)
