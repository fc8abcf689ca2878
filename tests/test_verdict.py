"""`textreact.verdict.judge`: what one reply is under a turn's tool choice and finish reason,
and the proof that `textreact serve` reads a reply as the same kind of thing the loop does."""

from __future__ import annotations

import pytest

from textreact import parse
from textreact.serve.turn import Call, Judge
from textreact.steps import Action, Completion, FinalAnswer, FormatError
from textreact.tools import ToolBox, builtin_tools
from textreact.verdict import judge

CALC = 'Thought: x\nAction: calculator\nAction Input: {"expression": "1+1"}'
LOOKUP = 'Thought: x\nAction: lookup_fact\nAction Input: {"query": "capital of France"}'
ANSWER = "Thought: I know it.\nFinal Answer: 2"
#: A completed call the model rambled on after; the parser cuts the rambling.
RAMBLING = f"{CALC}\nObservation: 2\nmore"
#: A call the token limit cut in the middle of its input.
CUT_CALL = 'Thought: x\nAction: calculator\nAction Input: {"expression": "1+'
BROKEN = "Thought: I will work it out somehow."


@pytest.fixture
def box() -> ToolBox:
    return ToolBox(builtin_tools())


def _judge(text: str, box: ToolBox, finish_reason: str = "stop", choice: str = "auto", **kw):
    return judge(parse(text), finish_reason, choice, box, "en", **kw)


def test_the_text_fixtures_parse_as_the_tests_assume() -> None:
    assert isinstance(parse(RAMBLING), Action) and parse(RAMBLING).discarded_text
    assert isinstance(parse(CALC), Action) and not parse(CALC).discarded_text
    assert isinstance(parse(ANSWER), FinalAnswer)
    assert isinstance(parse(BROKEN), FormatError)


# each kind


def test_an_answer_is_an_answer(box) -> None:
    verdict = _judge(ANSWER, box)
    assert verdict.kind == "answer"
    assert isinstance(verdict.step, FinalAnswer) and verdict.step.answer == "2"


def test_a_call_is_a_call(box) -> None:
    verdict = _judge(CALC, box)
    assert verdict.kind == "call"
    assert isinstance(verdict.step, Action) and verdict.step.tool == "calculator"


def test_a_reply_in_neither_form_is_a_format_error(box) -> None:
    verdict = _judge(BROKEN, box)
    assert verdict.kind == "format_error" and isinstance(verdict.step, FormatError)


@pytest.mark.parametrize("text", [ANSWER, CALC, BROKEN, RAMBLING])
def test_a_reply_the_filter_stopped_is_filtered_whatever_it_says(box, text) -> None:
    assert _judge(text, box, "content_filter").kind == "filtered"


# the tool choice


def test_an_answer_where_a_call_is_required_is_a_format_error(box) -> None:
    verdict = _judge(ANSWER, box, choice="required")
    assert verdict.kind == "format_error"
    assert isinstance(verdict.step, FormatError) and verdict.step.problem == "tool_required"


def test_a_call_under_required_is_a_call(box) -> None:
    assert _judge(CALC, box, choice="required").kind == "call"


@pytest.mark.parametrize("this_turn", [False, True])
def test_an_answer_where_a_tool_is_named_is_a_format_error_naming_it(box, this_turn) -> None:
    verdict = _judge(ANSWER, box, choice="calculator", this_turn=this_turn)
    assert verdict.kind == "format_error"
    assert isinstance(verdict.step, FormatError) and verdict.step.tool == "calculator"


def test_in_one_turn_a_call_of_another_tool_than_the_named_one_is_a_format_error(box) -> None:
    verdict = _judge(LOOKUP, box, choice="calculator", this_turn=True)
    assert verdict.kind == "format_error"
    assert isinstance(verdict.step, FormatError) and verdict.step.tool == "calculator"


def test_in_a_run_a_call_of_another_tool_than_the_named_one_is_a_call(box) -> None:
    verdict = _judge(LOOKUP, box, choice="calculator", this_turn=False)
    assert verdict.kind == "call"
    assert isinstance(verdict.step, Action) and verdict.step.tool == "lookup_fact"


@pytest.mark.parametrize("this_turn", [False, True])
def test_a_call_of_the_named_tool_is_a_call(box, this_turn) -> None:
    assert _judge(CALC, box, choice="calculator", this_turn=this_turn).kind == "call"


def test_a_call_where_none_is_allowed_is_a_format_error(box) -> None:
    verdict = _judge(CALC, box, choice="none")
    assert verdict.kind == "format_error"
    assert isinstance(verdict.step, FormatError) and verdict.step.problem == "tool_forbidden"


def test_an_answer_where_none_is_allowed_is_an_answer(box) -> None:
    assert _judge(ANSWER, box, choice="none").kind == "answer"


# the token limit


def test_a_cut_answer_is_cut_never_an_answer(box) -> None:
    verdict = _judge(ANSWER, box, "length")
    assert verdict.kind == "cut"
    assert isinstance(verdict.step, FinalAnswer) and verdict.step.answer == "2"


def test_a_call_completed_before_the_limit_cut_its_rambling_is_a_call(box) -> None:
    verdict = _judge(RAMBLING, box, "length")
    assert verdict.kind == "call"
    assert isinstance(verdict.step, Action) and verdict.step.input == {"expression": "1+1"}


@pytest.mark.parametrize("text", [CALC, CUT_CALL])
def test_a_cut_call_with_nothing_cut_after_it_is_cut(box, text) -> None:
    assert _judge(text, box, "length").kind == "cut"


def test_a_cut_reply_in_neither_form_is_cut(box) -> None:
    assert _judge(BROKEN, box, "length").kind == "cut"


def test_a_cut_reply_that_also_breaks_the_choice_is_cut_with_the_choices_error(box) -> None:
    verdict = _judge(ANSWER, box, "length", choice="required")
    assert verdict.kind == "cut"
    assert isinstance(verdict.step, FormatError) and verdict.step.problem == "tool_required"


def test_a_completed_call_cut_after_where_none_is_allowed_is_cut_as_broken(box) -> None:
    verdict = _judge(RAMBLING, box, "length", choice="none")
    assert verdict.kind == "cut"
    assert isinstance(verdict.step, FormatError) and verdict.step.problem == "tool_forbidden"


# serve and the loop agree


@pytest.mark.parametrize(
    ("text", "finish_reason", "choice"),
    [
        (CALC, "stop", "auto"),
        (CALC, "length", "auto"),
        (RAMBLING, "length", "auto"),
        (RAMBLING, "stop", "required"),
        (RAMBLING, "length", "none"),
        (CUT_CALL, "length", "auto"),
        (LOOKUP, "stop", "calculator"),
        (CALC, "stop", "calculator"),
        (CALC, "stop", "none"),
        (CALC, "content_filter", "auto"),
        (ANSWER, "stop", "auto"),
        (ANSWER, "length", "auto"),
        (ANSWER, "stop", "required"),
        (BROKEN, "stop", "auto"),
        (BROKEN, "length", "auto"),
    ],
)
def test_serve_passes_a_call_on_exactly_when_the_verdict_is_a_call(
    box, text, finish_reason, choice
) -> None:
    served = Judge(builtin_tools(), choice).read(Completion(text, finish_reason))
    verdict = judge(parse(text), finish_reason, choice, box, "en", this_turn=True)
    assert isinstance(served, Call) == (verdict.kind == "call")


# a placeholder copied from the prompt


@pytest.mark.parametrize(
    "text",
    [
        "Thought: I now know the answer.\nFinal Answer: the answer",
        "Final Answer: The answer.",
        "**Final Answer:** the answer",
        "Final Answer: your answer to the question",
        "思考：我现在知道答案了。\n最终答案：答案",
    ],
)
def test_a_placeholder_the_prompt_shows_is_no_answer(text: str, box: ToolBox) -> None:
    """The placeholders come from the prompt files, in every language. `parse` reads what is
    written; the judgement refuses it, with a hint that shows no placeholder again."""
    assert isinstance(parse(text), FinalAnswer)
    verdict = _judge(text, box)
    assert verdict.kind == "format_error" and verdict.step.problem == "placeholder"
    hint = verdict.step.hint
    assert "Answer: the answer" not in hint and "your answer" not in hint
    assert "答案：答案" not in hint and "对问题的回答" not in hint


@pytest.mark.parametrize(
    "text",
    ["Final Answer: The answer is 42.", "Final Answer: the answers differ", "最终答案：答案是42"],
)
def test_an_answer_that_only_begins_like_a_placeholder_is_an_answer(text, box) -> None:
    assert _judge(text, box).kind == "answer"
