"""The `recheck` policy in the loop, under every protocol and both drivers: the first answer
backed by a result is sent back once with the question; the same answer again, or an answer
after the next call, is taken; an answer with nothing found, or with no tool on offer, is not
sent back."""

from __future__ import annotations

from test_loop import Move, answer, both, call, drivers, sent
from test_loop import run as run_loop

from textreact.policies import Recheck, by_name, small_model
from textreact.steps import PolicyNote

QUESTION = "What is 6 * 7, plus 1?"


def _run(protocol: str, driver: str, moves: list[Move], **settings) -> tuple:
    settings.setdefault("policies", [Recheck()])
    return run_loop(protocol, driver, moves, question=QUESTION, **settings)


def _sent_back(result) -> list[bool]:
    return [any(n.policy == "recheck" for n in t.policy_notes) for t in result.steps]


@both
@drivers
def test_the_first_answer_after_a_result_is_sent_back_once_and_then_taken(
    protocol: str, driver: str
) -> None:
    moves = [call("calculator", expression="6 * 7"), answer("42"), answer("42")]
    result, script = _run(protocol, driver, moves)
    assert (result.answer, result.stop_reason) == ("42", "final_answer")
    assert _sent_back(result) == [False, True, False]
    assert result.steps[1].policy_notes[-1] == PolicyNote("recheck", "sent_back", "recheck")
    shown = sent(script, 2)
    assert 'Before "42" is taken as your answer' in shown and QUESTION in shown
    assert "call the tool for it now" in shown
    script.assert_exhausted()


@both
def test_the_step_that_was_left_is_called_and_its_answer_taken(protocol: str) -> None:
    moves = [
        call("calculator", expression="6 * 7"),
        answer("42"),
        call("calculator", expression="42 + 1"),
        answer("43"),
    ]
    result, script = _run(protocol, "sync", moves)
    assert (result.answer, result.stop_reason) == ("43", "final_answer")
    assert _sent_back(result) == [False, True, False, False]
    assert [t.result.text for t in result.steps if t.result] == ["42", "43"]
    script.assert_exhausted()


@both
def test_an_answer_with_nothing_found_is_not_sent_back(protocol: str) -> None:
    result, script = _run(protocol, "sync", [answer("43")])
    assert result.answer == "43" and _sent_back(result) == [False]
    failed = [call("calculator", expression="6 *"), answer("43")]
    result, script = _run(protocol, "sync", failed)
    assert result.answer == "43" and not any(_sent_back(result))
    script.assert_exhausted()


@both
def test_with_no_tool_on_offer_the_answer_is_taken(protocol: str) -> None:
    """After the same call repeated twice in a row the loop offers no tool: the answer
    cannot be rechecked by a call, so it stands."""
    again = call("calculator", expression="6 * 7")
    result, script = _run(protocol, "sync", [again, again, again, answer("42")])
    assert (result.answer, result.stop_reason) == ("42", "final_answer")
    assert not any(_sent_back(result))
    script.assert_exhausted()


def test_recheck_is_named_and_not_among_the_small_model_policies() -> None:
    assert [p.name for p in by_name("recheck")] == ["recheck"]
    assert "recheck" not in {p.name for p in small_model()}
