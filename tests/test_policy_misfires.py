"""The small-model policies on a user's own tools: none of them misfires on a run that is going
right, under every protocol and both drivers. And the loop rules that a mutation once slipped
past: a cut reply is never an answer, steering never forces a call no other tool can make, and
a refused call's progress line comes only after a result that answers one of its needs."""

from __future__ import annotations

from typing import Any

import pytest
from test_loop import CUT, Move, answer, both, call, drivers
from test_loop import run as run_loop

from textreact import ScriptedModel, WrongToolError, builtin_tools, tool
from textreact.policies import small_model
from textreact.steps import Completion, Result


def run(protocol: str, driver: str, moves: Any, **settings: Any) -> tuple[Result, ScriptedModel]:
    settings.setdefault("policies", small_model())
    return run_loop(protocol, driver, moves, **settings)


@tool
def is_prime(n: int) -> bool:
    """Whether n is a prime number.

    Args:
        n: the number to test
    """
    return n > 1 and all(n % d for d in range(2, int(n**0.5) + 1))


@tool(example={"text": "Good morning", "target": "es"})
def translate(text: str, target: str) -> str:
    """Translate text into the target language (an ISO code such as es or fr).

    Args:
        text: what to translate
        target: the language code
    """
    return {"es": "Buenos días", "fr": "Bonjour"}.get(target, text)


def polling_tool() -> Any:
    states = iter(["running", "done"])

    @tool(cache=False)
    def job_status(job: str) -> str:
        """The current status of a background job; it changes while the job runs.

        Args:
            job: the job's id
        """
        return next(states, "done")

    return job_status


def choices(script: ScriptedModel) -> list[Any]:
    return [o.get("tool_choice") for o in script.options]


@both
@drivers
def test_an_answer_a_result_backs_is_no_echo(protocol: str, driver: str) -> None:
    moves = [call("is_prime", n=97), answer("97")]
    result, script = run(protocol, driver, moves, tools=[is_prime], question="Is 97 prime?")
    assert (result.answer, result.stop_reason, result.answer_source) == (
        "97",
        "final_answer",
        "model",
    )
    assert len(script.requests) == 2 and not any(t.policy_notes for t in result.steps)


@both
@drivers
def test_a_call_equal_to_the_tool_s_own_example_runs(protocol: str, driver: str) -> None:
    moves = [call("translate", text="Good morning", target="es"), answer("Buenos días")]
    question = "How do you say 'Good morning' in Spanish?"
    result, script = run(protocol, driver, moves, tools=[translate], question=question)
    first = result.steps[0]
    assert first.result is not None and first.result.value == "Buenos días"
    assert result.answer == "Buenos días" and not first.policy_notes
    # nothing is held afterwards: the grammar still lets any language code through
    assert all("pattern" not in str(o.get("grammar", "")) for o in script.options)


@both
@drivers
def test_a_tool_whose_result_changes_runs_on_every_call(protocol: str, driver: str) -> None:
    moves = [call("job_status", job="j-1"), call("job_status", job="j-1"), answer("done")]
    result, _ = run(protocol, driver, moves, tools=[polling_tool()], question="Is job j-1 done?")
    assert [t.observation for t in result.steps[:2]] == ["running", "done"]
    assert [t.note for t in result.steps[:2]] == [None, None]


@both
@drivers
def test_a_cached_tool_answers_a_repeat_from_its_first_result(protocol: str, driver: str) -> None:
    @tool
    def job_status(job: str) -> str:
        """The status of a job.

        Args:
            job: the job's id
        """
        return "running"

    moves = [call("job_status", job="j-1"), call("job_status", job="j-1"), answer("running")]
    result, _ = run(protocol, driver, moves, tools=[job_status], question="Is job j-1 done?")
    assert result.steps[1].note == "repeated_call"


@drivers
def test_native_requests_keep_a_tool_its_history_calls(driver: str) -> None:
    @tool
    def height(mountain: str) -> str:
        """The height of a mountain, in metres.

        Args:
            mountain: the mountain
        """
        raise WrongToolError("give a mountain's name, not a sum", needs=("Everest",))

    moves = [call("height", mountain="Everest + Fuji"), answer("no idea")]
    result, script = run("native", driver, moves, tools=[height, *builtin_tools()])
    called = {t.tool for t in result.steps if t.tool}
    for options in script.options[1:]:
        assert called <= {t["function"]["name"] for t in options["tools"]}


@both
@drivers
def test_a_closed_book_answer_says_where_it_came_from(protocol: str, driver: str) -> None:
    moves = [CUT, CUT, Move("plain", "I do not know.")]
    result, _ = run(protocol, driver, moves)
    assert result.answer == "I do not know." and result.answer_source == "closed_book"
    assert result.steps[-1].note == "closed_book"
    (note,) = result.steps[-1].policy_notes
    assert (note.policy, note.action, note.reason) == (
        "closed_book",
        "asked_alone",
        "cut_off_twice",
    )
    assert result.steps[-2].note == "truncated"


@both
@drivers
@pytest.mark.parametrize("policies", [(), None], ids=["no-policy", "small"])
def test_an_answer_cut_off_twice_is_never_taken(protocol: str, driver: str, policies: Any) -> None:
    """Even when its first line is one of the run's results, word for word."""
    cut = "Thought: done.\nFinal Answer: 42\n42\n42" if protocol == "text" else "42\n42\n42"
    cut_off = Move("plain", Completion(cut, "length"))
    moves = [call("calculator", expression="6*7"), cut_off, cut_off]
    settings = {} if policies is None else {"policies": list(policies)}
    result, _ = run(protocol, driver, moves, **settings)
    assert (result.answer, result.stop_reason, result.answer_source) == (None, "truncated", None)


@both
@drivers
def test_a_cut_best_effort_reply_is_no_answer(protocol: str, driver: str) -> None:
    cut = "Thought: done.\nFinal Answer: 7" if protocol == "text" else "7"
    moves = [call("calculator", expression="1+1"), Move("plain", Completion(cut, "length"))]
    result, _ = run(protocol, driver, moves, max_steps=1)
    assert (result.answer, result.stop_reason, result.best_effort) == (None, "max_steps", False)
    assert result.steps[-1].note == "best_effort"


def refusing_calculator() -> Any:
    @tool
    def calculate(expression: str) -> float:
        """Evaluate an arithmetic expression of numbers.

        Args:
            expression: numbers and operators
        """
        raise WrongToolError("numbers only", needs=("Mount Everest", "Mount Fuji"))

    return calculate


@both
@drivers
def test_needs_never_force_a_call_no_other_tool_can_make(protocol: str, driver: str) -> None:
    refused = call("calculate", expression="Mount Everest - Mount Fuji")
    moves = [refused, answer("5073"), answer("5073")]  # the early answer is sent back once
    result, script = run(protocol, driver, moves, tools=[refusing_calculator()])
    assert all(choice in (None, "auto") for choice in choices(script)[1:])
    assert result.answer == "5073"


@both
@drivers
def test_no_progress_line_after_a_result_that_answers_no_need(protocol: str, driver: str) -> None:
    @tool
    def weather(city: str) -> str:
        """Today's weather in a city.

        Args:
            city: the city
        """
        return "sunny"

    moves = [
        call("calculate", expression="Mount Everest - Mount Fuji"),
        call("weather", city="Tokyo"),
        answer("sunny"),
    ]
    result, _ = run(protocol, driver, moves, tools=[refusing_calculator(), weather])
    assert result.steps[1].observation == "sunny"
    assert not [n for n in result.steps[1].policy_notes if n.action == "added_line"]


@both
@drivers
def test_without_policies_the_loop_steers_nothing(protocol: str, driver: str) -> None:
    moves = [call("calculate", expression="Mount Everest - Mount Fuji"), answer("5073")]
    result, _ = run(protocol, driver, moves, tools=[refusing_calculator()], policies=[])
    assert result.answer == "5073" and result.answer_source == "model"
    assert not any(t.policy_notes for t in result.steps)


@drivers
def test_a_named_tool_choice_is_never_left_out_by_a_policy(driver: str) -> None:
    """The worked example's calculation copied under tool_choice="calculator": the copy is
    sent back, but the named tool stays offered (no crash, no silent override)."""
    moves = [call("calculator", expression="12 * 34"), call("calculator", expression="7*9")]
    result, _ = run("text", driver, [*moves, answer("63")], tool_choice="calculator")
    assert result.answer == "63" and result.steps[1].observation == "63"
    assert result.steps[0].policy_notes[0].reason == "copied_call"


@both
@drivers
def test_a_later_policy_never_overrides_an_earlier_one_s_tool_choice(
    protocol: str, driver: str
) -> None:
    from textreact.policies import Needs, ToolHiding

    refused = call("calculate", expression="Mount Everest - Mount Fuji")
    found = call("lookup_fact", query="height of Mount Everest")
    moves = [refused, found, found, found, answer("8849")]
    tools = [refusing_calculator(), *builtin_tools()[1:]]
    result, _ = run(protocol, driver, moves, tools=tools, policies=[Needs(), ToolHiding()])
    choosing = [
        [n.policy for n in t.policy_notes if n.reason == "tool_choice"] for t in result.steps
    ]
    assert choosing[1] == ["needs"]  # required, after the refusal
    assert all(len(chose) <= 1 for chose in choosing)  # never one choice steered over another
