"""The stop rules of the one loop, written once and run under every protocol (text, native)
and both drivers (sync `run`, async `arun`): a mutation of any rule fails a test under each.

Each test scripts the model in protocol-neutral moves (`call`, `answer`, `broken`, `cut`);
`Script` turns them into what that protocol's model would send. The loop runs without policies
(the default) unless a test passes one: what a policy steers is tested with that policy on, and
beside it that the loop alone does none of it (the other cases are in test_policies.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest

from textreact import Agent, ScriptedModel, WrongToolError, builtin_tools, tool
from textreact.errors import ConfigError, ModelError
from textreact.policies import ClosedBook, ToolHiding
from textreact.steps import Completion, Event, PolicyNote, Result
from textreact.transcript import read_transcript

PROTOCOLS = ["text", "native"]
DRIVERS = ["sync", "async"]
#: The built-in tools, as `offered` names them.
EVERYTHING = ["calculator", "lookup_fact"]


class Move:
    """One scripted reply, rendered per protocol."""

    def __init__(self, kind: str, *args: Any) -> None:
        self.kind, self.args = kind, args

    def render(self, protocol: str) -> Completion | str:
        kind, args = self.kind, self.args
        if kind == "call":
            name, arguments = args
            if protocol == "native":
                return ScriptedModel.calls((name, arguments))
            body = json.dumps(arguments)
            return f"Thought: I need {name}.\nAction: {name}\nAction Input: {body}"
        if kind == "answer":
            return args[0] if protocol == "native" else f"Thought: done.\nFinal Answer: {args[0]}"
        if kind == "broken":  # a reply the protocol cannot read as a step
            return "" if protocol == "native" else "Action: calculator"
        if kind == "cut":  # cut off by the token limit
            text = "The answer is probably" if protocol == "native" else "Thought: I will"
            return Completion(text, "length")
        if kind == "plain":  # a reply in plain words, the same under every protocol
            return args[0]
        if kind == "filtered":
            return Completion("", "content_filter")
        raise AssertionError(kind)


def call(name: str, **arguments: Any) -> Move:
    return Move("call", name, arguments)


def answer(text: str) -> Move:
    return Move("answer", text)


BROKEN, CUT, FILTERED = Move("broken"), Move("cut"), Move("filtered")


class Boom(ModelError):
    pass


class FailingModel(ScriptedModel):
    """Replays its script, then fails like an unreachable server."""

    def complete(self, messages: Sequence[Any], *, stop: Sequence[str] = (), **options: Any):
        if not self.remaining:
            self.requests.append([dict(m) for m in messages])
            raise Boom("the model server is gone")
        return super().complete(messages, stop=stop, **options)


class AsyncScripted:
    """An async model around a ScriptedModel, so the async driver awaits a real coroutine."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner

    async def complete(self, messages: Sequence[Any], **options: Any) -> Completion:
        await asyncio.sleep(0)
        return self.inner.complete(messages, **options)


def run(
    protocol: str,
    driver: str,
    moves: Sequence[Move],
    *,
    model_class: type[ScriptedModel] = ScriptedModel,
    question: str = "What is 6 * 7?",
    **settings: Any,
) -> tuple[Result, ScriptedModel]:
    script = model_class([m.render(protocol) for m in moves])
    model: Any = script if driver == "sync" else AsyncScripted(script)
    agent = Agent(model, protocol=protocol, **settings)
    result = agent.run(question) if driver == "sync" else asyncio.run(agent.arun(question))
    return result, script


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def sent(script: ScriptedModel, request: int = -1) -> str:
    """Everything the model was shown in one request, as one text."""
    return "\n".join(text_of(m) for m in script.requests[request])


both = pytest.mark.parametrize("protocol", PROTOCOLS)
drivers = pytest.mark.parametrize("driver", DRIVERS)


@both
@drivers
def test_a_final_answer_ends_the_run(protocol: str, driver: str) -> None:
    result, script = run(protocol, driver, [answer("42")])
    assert (result.answer, result.stop_reason, result.protocol) == ("42", "final_answer", protocol)
    script.assert_exhausted()


@both
@drivers
def test_a_call_runs_and_its_observation_goes_back(protocol: str, driver: str) -> None:
    result, script = run(protocol, driver, [call("calculator", expression="6*7"), answer("42")])
    assert result.stop_reason == "final_answer"
    assert result.steps[0].tool == "calculator" and result.steps[0].observation == "42"
    assert result.steps[0].input == {"expression": "6*7"}
    assert "42" in text_of(script.requests[1][-1])


@both
@drivers
def test_the_step_limit_asks_once_for_a_best_effort_answer(protocol: str, driver: str) -> None:
    moves = [call("calculator", expression=f"{i}+1") for i in range(2)] + [answer("2")]
    result, script = run(protocol, driver, moves, max_steps=2)
    assert result.stop_reason == "max_steps"
    assert result.best_effort and result.answer == "2"
    assert result.steps[-1].note == "best_effort"
    assert "Do not call any more tools" in text_of(script.requests[-1][-1])
    assert len(script.requests) == 3


@both
@drivers
def test_without_best_effort_the_step_limit_ends_at_once(protocol: str, driver: str) -> None:
    moves = [call("calculator", expression=f"{i}+1") for i in range(2)]
    result, script = run(protocol, driver, moves, max_steps=2, best_effort=False)
    assert (result.stop_reason, result.answer, result.best_effort) == ("max_steps", None, False)
    assert len(script.requests) == 2


@both
@drivers
def test_a_best_effort_reply_that_still_calls_a_tool_is_no_answer(protocol: str, driver: str):
    moves = [call("calculator", expression="1+1"), call("calculator", expression="2+2")]
    result, _ = run(protocol, driver, moves, max_steps=1)
    assert result.stop_reason == "max_steps"
    assert result.answer is None and not result.best_effort
    assert result.steps[-1].note == "best_effort" and result.steps[-1].tool is None
    assert result.steps[-1].result is None  # its call never ran


@both
@drivers
def test_format_errors_in_a_row_end_the_run(protocol: str, driver: str) -> None:
    result, script = run(protocol, driver, [BROKEN, BROKEN, BROKEN], max_format_errors=3)
    assert result.stop_reason == "format_errors"
    assert len(script.requests) == 3
    assert all(t.is_error for t in result.steps)


@both
@drivers
def test_an_action_resets_the_format_error_count(protocol: str, driver: str) -> None:
    moves = [BROKEN, call("calculator", expression="1+1"), BROKEN, answer("2")]
    result, _ = run(protocol, driver, moves, max_format_errors=2)
    assert (result.stop_reason, result.answer) == ("final_answer", "2")


@drivers
def test_a_copied_placeholder_answer_is_asked_again_and_the_real_one_ends_the_run(driver: str):
    """The format's placeholder (`Final Answer: the answer`) copied is a format error, so
    the model is asked again and a real answer after it is the run's."""
    result, script = run("text", driver, [answer("the answer"), answer("42")])
    assert (result.answer, result.stop_reason) == ("42", "final_answer")
    first = result.steps[0]
    assert first.is_error and "placeholder" in (first.observation or "")
    assert "placeholder" in text_of(script.requests[1][-1])


@both
@drivers
def test_a_second_format_error_in_a_row_is_answered_differently(protocol: str, driver: str):
    result, _ = run(protocol, driver, [BROKEN, BROKEN, answer("x")])
    first, second = result.steps[0].observation, result.steps[1].observation
    assert first and second
    if protocol == "text":  # the rules restated, not the same hint again
        assert first != second


@both
@drivers
def test_two_cut_off_replies_in_a_row_end_the_run(protocol: str, driver: str) -> None:
    result, script = run(protocol, driver, [CUT, CUT], best_effort=False)
    assert result.stop_reason == "truncated"
    assert [t.note for t in result.steps] == ["truncated", "truncated"]
    assert result.answer is None
    script.assert_exhausted()


@both
@drivers
def test_without_policies_two_cut_off_replies_end_the_run_with_no_request_more(
    protocol: str, driver: str
) -> None:
    """Best effort on (the default), and still nothing asked alone: that is a policy's."""
    result, script = run(protocol, driver, [CUT, CUT], question="What did coffee cost?")
    assert [t.note for t in result.steps] == ["truncated", "truncated"]
    assert not any(t.policy_notes for t in result.steps)
    assert (result.answer, result.stop_reason, result.answer_source) == (None, "truncated", None)
    assert len(script.requests) == 2
    script.assert_exhausted()


@both
@pytest.mark.parametrize(
    ("reply", "answer_", "stop", "source"),
    [
        (Move("plain", "I do not know."), "I do not know.", "final_answer", "closed_book"),
        (CUT, None, "truncated", None),  # cut off a third time: the run ends as it did
    ],
)
def test_after_two_cut_off_replies_the_closed_book_policy_asks_the_question_alone(
    protocol: str, reply: Move, answer_: str | None, stop: str, source: str | None
) -> None:
    """Qwen wrote `1975 * 12000…` to the token limit, twice, for the price of a coffee in
    1975; asked the question alone, it says it does not know."""
    moves = [CUT, CUT, reply]
    result, script = run(
        protocol, "sync", moves, question="What did coffee cost?", policies=[ClosedBook()]
    )
    assert [t.note for t in result.steps] == ["truncated", "truncated", "closed_book"]
    assert script.requests[-1][-1] == {"role": "user", "content": "What did coffee cost?"}
    assert script.options[-1].get("tools") is None and script.options[-1].get("grammar") is None
    assert (result.answer, result.stop_reason, result.answer_source) == (answer_, stop, source)
    script.assert_exhausted()


def test_the_closed_book_ask_after_two_cut_off_replies_is_recorded_as_the_policy_s() -> None:
    moves = [CUT, CUT, Move("plain", "I do not know.")]
    result, _ = run(
        "text", "sync", moves, question="What did coffee cost?", policies=[ClosedBook()]
    )
    notes = [n for t in result.steps for n in t.policy_notes]
    assert notes == [PolicyNote("closed_book", "asked_alone", "cut_off_twice")]
    assert result.answer_source == "closed_book"


@both
@drivers
def test_a_cut_off_reply_is_re_asked_shorter(protocol: str, driver: str) -> None:
    result, script = run(protocol, driver, [CUT, answer("42")])
    assert (result.stop_reason, result.answer) == ("final_answer", "42")
    assert "cut off" in text_of(script.requests[1][-1])


@both
@drivers
def test_an_action_resets_the_truncation_count(protocol: str, driver: str) -> None:
    moves = [CUT, call("calculator", expression="1+1"), CUT, answer("2")]
    result, _ = run(protocol, driver, moves)
    assert result.stop_reason == "final_answer"


@both
@drivers
def test_a_format_error_resets_the_truncation_count(protocol: str, driver: str) -> None:
    result, _ = run(protocol, driver, [CUT, BROKEN, CUT, answer("2")])
    assert result.stop_reason == "final_answer"


@both
@drivers
def test_a_repeated_call_is_answered_from_the_first_result(protocol: str, driver: str) -> None:
    runs: list[str] = []

    @tool
    def count(item: str) -> str:
        """Use this to count an item."""
        runs.append(item)
        return f"{item}: 3"

    moves = [call("count", item="apples"), call("count", item="apples"), answer("3")]
    result, _script = run(protocol, driver, moves, tools=[count])
    assert runs == ["apples"]
    assert result.steps[1].note == "repeated_call"
    assert "apples: 3" in result.steps[1].observation


@both
@drivers
def test_repeating_twice_in_a_row_is_told_to_answer(protocol: str, driver: str) -> None:
    moves = [call("calculator", expression="1+1")] * 3 + [answer("2")]
    result, _ = run(protocol, driver, moves)
    assert [t.note for t in result.steps[:3]] == [None, "repeated_call", "repeated_call"]
    assert result.steps[1].observation != result.steps[2].observation
    assert "Final Answer" in result.steps[2].observation or "answer" in result.steps[2].observation


@both
@drivers
def test_a_repeated_failing_call_is_not_run_again_and_says_it_failed(
    protocol: str, driver: str
) -> None:
    runs: list[str] = []

    @tool
    def fetch(url: str) -> str:
        """Use this to fetch a page."""
        runs.append(url)
        raise RuntimeError("host unreachable")

    moves = [call("fetch", url="http://x"), call("fetch", url="http://x"), answer("unknown")]
    result, _ = run(protocol, driver, moves, tools=[fetch])
    assert runs == ["http://x"]
    assert result.steps[1].note == "repeated_call" and result.steps[1].result.is_error
    assert "it failed" in result.steps[1].observation
    assert "host unreachable" in result.steps[1].observation


REPEATED_FAILURE = [call("calculator", expression="2 +")] * 2 + [
    call("lookup_fact", query="speed of light"),
    answer("299792458"),
]


@both
@drivers
def test_without_policies_a_repeated_failure_keeps_every_tool_offered(protocol: str, driver: str):
    result, script = run(protocol, driver, REPEATED_FAILURE)
    assert [t.note for t in result.steps[:2]] == [None, "repeated_call"]
    assert result.steps[1].result.is_error and result.answer == "299792458"
    assert offered(protocol, script) == [EVERYTHING] * 4
    assert not any(t.policy_notes for t in result.steps)


@both
@drivers
def test_a_repeated_failure_leaves_its_tool_out_of_the_next_request(protocol: str, driver: str):
    """Under the text protocol, where tools are prose and grammar; a native request keeps
    every tool in tools= (its history calls them)."""
    result, script = run(protocol, driver, REPEATED_FAILURE, policies=[ToolHiding()])
    assert [t.note for t in result.steps[:2]] == [None, "repeated_call"]
    assert result.answer == "299792458"
    if protocol == "native":
        assert offered(protocol, script) == [EVERYTHING] * 4
        assert not any(t.policy_notes for t in result.steps)
    else:
        assert offered(protocol, script) == [EVERYTHING, EVERYTHING, ["lookup_fact"], EVERYTHING]
        hid = PolicyNote("tool_hiding", "steered", "tools", offered=("lookup_fact",), left_out=1)
        assert result.steps[2].policy_notes == (hid,)


def offered(protocol: str, script: ScriptedModel) -> list[list[str]]:
    """The built-in tools each request offered: native tools=, or the text grammar's names
    (none in a request without either, such as the question asked alone)."""
    if protocol == "native":
        return [[t["function"]["name"] for t in o.get("tools", [])] for o in script.options]
    return [[n for n in EVERYTHING if f'"{n}"' in o.get("grammar", "")] for o in script.options]


@both
@drivers
def test_a_call_for_another_tool_leaves_its_tool_out_at_once(protocol: str, driver: str):
    """Names where the calculator needs numbers: the calculator says it cannot do it, and the
    next request offers only the other tools, so the model does not send the same call again."""
    moves = [
        call("calculator", expression="Mount Everest - Mount Fuji"),
        call("lookup_fact", query="height of Mount Everest"),
        answer("8849"),
    ]
    question = "How tall is Mount Everest?"
    result, script = run(protocol, driver, moves, question=question, policies=[ToolHiding()])
    first = result.steps[0]
    assert first.result.error_kind == "wrong_tool"
    assert '"Mount Everest", "Mount Fuji"' in first.observation
    assert "This tool cannot do it. Use another tool (lookup_fact)" in first.observation
    hidden = EVERYTHING if protocol == "native" else ["lookup_fact"]  # tools= keeps them all
    assert offered(protocol, script) == [EVERYTHING, hidden, EVERYTHING]
    plain, _ = run(protocol, driver, moves, question=question)  # without the policy
    assert plain.steps[0].observation == first.observation


@both
@drivers
def test_a_lone_number_sent_to_the_calculator_is_refused_and_it_is_left_out(
    protocol: str, driver: str
):
    """Qwen "calculated" the speed of light it recalled (`2997924580`, a digit too many) and
    answered with the echo; refused, it looked the fact up."""
    moves = [
        call("calculator", expression="2997924580"),
        call("lookup_fact", query="speed of light"),
        answer("299792458 m/s"),
    ]
    question = "What is the speed of light in metres per second?"
    result, script = run(protocol, driver, moves, question=question, policies=[ToolHiding()])
    first = result.steps[0]
    assert first.result.error_kind == "wrong_tool" and first.result.value is None
    assert "2997924580 is a single number: there is nothing to calculate" in first.observation
    assert "Use another tool (lookup_fact)" in first.observation
    hidden = EVERYTHING if protocol == "native" else ["lookup_fact"]  # tools= keeps them all
    assert offered(protocol, script) == [EVERYTHING, hidden, EVERYTHING]
    assert result.answer == "299792458 m/s"


def test_a_user_tool_raises_wrong_tool_error_to_be_left_out_once() -> None:
    @tool
    def translate(text: str) -> str:
        """Use this to translate a sentence."""
        raise WrongToolError("this is a sum, not a sentence: calculate it")

    moves = [call("translate", text="2 + 2"), call("calculator", expression="2 + 2"), answer("4")]
    tools = [translate, *builtin_tools()]
    result, script = run("text", "sync", moves, tools=tools, policies=[ToolHiding()])
    assert result.steps[0].result.error_kind == "wrong_tool"
    assert "calculate it" in result.steps[0].observation
    grammars = [o["grammar"] for o in script.options]
    assert '"translate"' not in grammars[1] and '"translate"' in grammars[2]
    _, plain = run("text", "sync", moves, tools=tools)  # without the policy: always offered
    assert all('"translate"' in o["grammar"] for o in plain.options)


@both
@drivers
@pytest.mark.parametrize("hiding", [True, False], ids=["tool_hiding", "no-policy"])
def test_a_model_repeating_itself_twice_is_offered_no_tool_next(
    protocol: str, driver: str, hiding: bool
):
    """The loop's own rule, under every protocol, with or without a policy: the second
    repeat's note asks for the answer, and the next request's tool choice is "none" (no
    policy claims the change). The requests before it offer the tools."""
    moves = [call("calculator", expression="1+1")] * 3 + [answer("2")]
    result, script = run(protocol, driver, moves, policies=[ToolHiding()] if hiding else [])
    assert (result.stop_reason, result.answer) == ("final_answer", "2")
    assert [t.note for t in result.steps] == [None, "repeated_call", "repeated_call", None]
    if protocol == "native":
        choices = [o.get("tool_choice") for o in script.options]
        assert choices == [None, None, None, "none"]  # None: the default, "auto"
    else:  # the grammar of that request allows a Final Answer only
        assert "Action:" in script.options[2]["grammar"]
        assert "Action:" not in script.options[3]["grammar"]
        assert "Final Answer:" in script.options[3]["grammar"]
    assert [n for t in result.steps for n in t.policy_notes] == []


@drivers
def test_one_repeat_leaves_the_tools_offered(driver: str) -> None:
    """A first repeat shows every result so far and the other tools, so the model may go on
    with another call: the offer stays "auto"."""
    moves = [call("calculator", expression="1+1")] * 2 + [call("lookup_fact", query="pi")]
    moves += [answer("2")]
    result, script = run("native", driver, moves)
    assert [t.note for t in result.steps[:3]] == [None, "repeated_call", None]
    assert [o.get("tool_choice") for o in script.options] == [None] * 4


@both
@drivers
def test_a_model_error_ends_the_run_with_its_message(protocol: str, driver: str) -> None:
    result, _ = run(protocol, driver, [], model_class=FailingModel)
    assert (result.stop_reason, result.error) == ("model_error", "the model server is gone")


@both
@drivers
def test_a_model_error_at_best_effort_keeps_max_steps(protocol: str, driver: str) -> None:
    moves = [call("calculator", expression="1+1")]
    result, _ = run(protocol, driver, moves, model_class=FailingModel, max_steps=1)
    assert result.stop_reason == "max_steps"
    assert result.error == "the model server is gone"


@both
@drivers
def test_a_content_filter_stop_is_a_model_error_that_names_it(protocol: str, driver: str):
    result, _ = run(protocol, driver, [FILTERED])
    assert result.stop_reason == "model_error"
    assert "content filter" in (result.error or "")


@both
@drivers
def test_before_call_can_veto_a_call(protocol: str, driver: str) -> None:
    seen: list[tuple[str, dict]] = []

    def guard(name: str, arguments: dict) -> str | None:
        seen.append((name, arguments))
        return "Refused: no arithmetic today." if name == "calculator" else None

    moves = [call("Calculator", expression="2*3"), answer("no")]
    result, script = run(protocol, driver, moves, before_call=guard)
    assert seen == [("calculator", {"expression": "2*3"})]  # resolved and validated first
    turn = result.steps[0]
    assert turn.note == "vetoed" and turn.observation.endswith("Refused: no arithmetic today.")
    assert "6" not in (turn.observation or "")
    assert "Refused: no arithmetic today." in sent(script, 1)


@both
@drivers
def test_an_unknown_tool_is_an_error_observation(protocol: str, driver: str) -> None:
    result, _ = run(protocol, driver, [call("calculater", expression="1"), answer("1")])
    turn = result.steps[0]
    assert turn.is_error and "calculator" in turn.observation


@both
def test_events_and_the_transcript_follow_every_protocol(protocol: str, tmp_path) -> None:
    events: list[Event] = []
    moves = [call("calculator", expression="6*7"), answer("42")]
    script = ScriptedModel([m.render(protocol) for m in moves])
    agent = Agent(script, protocol=protocol, on_event=events.append)
    result = agent.run("What is 6 * 7?", transcript=tmp_path / "t.jsonl")
    assert [e.kind for e in events] == ["request", "turn", "request", "turn", "finish"]
    assert events[-1].result is result
    records = read_transcript(tmp_path / "t.jsonl")
    assert [r["type"] for r in records] == ["start", "step", "step", "stop"]
    assert records[0]["protocol"] == protocol and records[1]["tool"] == "calculator"


@both
def test_iter_yields_each_turn_as_it_happens(protocol: str) -> None:
    moves = [call("calculator", expression="6*7"), answer("42")]
    script = ScriptedModel([m.render(protocol) for m in moves])
    turns = Agent(script, protocol=protocol).iter("What is 6 * 7?")
    first = next(turns)
    assert first.tool == "calculator" and len(script.requests) == 1  # nothing asked ahead
    assert next(turns).step.kind == "final"
    with pytest.raises(StopIteration) as end:
        next(turns)
    assert end.value.value.answer == "42"


@both
def test_aiter_yields_turns_only(protocol: str) -> None:
    moves = [call("calculator", expression="6*7"), answer("42")]
    script = ScriptedModel([m.render(protocol) for m in moves])

    async def collect() -> list[Any]:
        return [t async for t in Agent(script, protocol=protocol).aiter("What is 6 * 7?")]

    turns = asyncio.run(collect())
    assert [t.index for t in turns] == [1, 2]


@both
def test_chinese_notes_for_every_protocol(protocol: str) -> None:
    result, _ = run(protocol, "sync", [CUT, answer("42")], lang="zh")
    assert "截断" in (result.steps[0].observation or "")


@both
@drivers
def test_an_interrupt_ends_the_run_as_interrupted(protocol: str, driver: str) -> None:
    class Interrupting(ScriptedModel):
        def complete(self, messages: Sequence[Any], **options: Any):
            if len(self.requests) == 1:
                raise KeyboardInterrupt
            return super().complete(messages, **options)

    moves = [call("calculator", expression="1+1"), answer("2")]
    result, _ = run(protocol, driver, moves, model_class=Interrupting)
    assert result.stop_reason == "interrupted" and len(result.steps) == 1


@drivers
def test_async_tools_run_in_both_drivers(driver: str) -> None:
    @tool
    async def slow_double(n: int) -> int:
        """Use this to double a number."""
        await asyncio.sleep(0)
        return 2 * n

    result, _ = run("text", driver, [call("slow_double", n=21), answer("42")], tools=[slow_double])
    assert result.steps[0].observation == "42"


@drivers
def test_a_result_whose_str_hangs_is_bounded_by_the_tool_timeout(driver: str) -> None:
    import threading

    release = threading.Event()

    class Hangs:
        def __str__(self) -> str:
            release.wait(30)
            return "never"

    @tool(timeout=0.2)
    def hang():  # no return hint: the class is local to the test
        """Use this to wait."""
        return Hangs()

    try:
        result, _ = run("text", driver, [call("hang"), answer("gave up")], tools=[hang])
    finally:
        release.set()
    turn = result.steps[0]
    assert turn.result.error_kind == "timeout" and turn.is_error
    assert result.answer == "gave up"


def test_32_concurrent_async_runs_share_one_event_loop() -> None:
    async def many() -> list[Result]:
        agents = []
        for i in range(32):
            script = ScriptedModel([f"Final Answer: {i}"])
            agents.append(Agent(AsyncScripted(script), protocol="text"))
        return await asyncio.gather(*(a.arun(f"q{i}") for i, a in enumerate(agents)))

    results = asyncio.run(many())
    assert [r.answer for r in results] == [str(i) for i in range(32)]


@both
@drivers
def test_a_required_call_comes_before_the_first_answer(protocol: str, driver: str) -> None:
    moves = [answer("from memory"), call("calculator", expression="6*7"), answer("42")]
    result, script = run(protocol, driver, moves, tool_choice="required")
    assert (result.stop_reason, result.answer) == ("final_answer", "42")
    refused = result.steps[0]
    assert refused.step.kind == "error" and refused.step.problem == "tool_required"
    assert "must call a tool" in refused.observation
    # Once a call has succeeded the choice is the model's again.
    if protocol == "native":
        choices = [o.get("tool_choice", "auto") for o in script.options]
    else:  # the grammar offered has the answer branch only once the choice is "auto"
        choices = ["auto" if "Final Answer" in o["grammar"] else "required" for o in script.options]
    assert choices == ["required", "required", "auto"]


@both
def test_a_named_tool_choice_asks_for_that_tool(protocol: str) -> None:
    moves = [answer("guess"), call("lookup_fact", query="capital of Japan"), answer("Tokyo")]
    result, script = run(protocol, "sync", moves, tool_choice="lookup_fact")
    assert result.answer == "Tokyo"
    assert "lookup_fact" in result.steps[0].observation
    if protocol == "native":
        assert script.options[0]["tool_choice"] == "lookup_fact"
        assert "tool_choice" not in script.options[2]


@both
def test_tool_choice_none_refuses_a_call(protocol: str) -> None:
    ran: list[str] = []

    @tool
    def probe(x: str) -> str:
        """Use this to probe."""
        ran.append(x)
        return x

    moves = [call("probe", x="a"), answer("done")]
    result, _ = run(protocol, "sync", moves, tools=[probe], tool_choice="none")
    assert ran == [] and result.answer == "done"
    assert result.steps[0].step.problem == "tool_forbidden"


def test_a_tool_choice_that_names_no_tool_is_refused_at_construction() -> None:
    with pytest.raises(ConfigError, match="tool_choice"):
        Agent(ScriptedModel([]), tool_choice="search")


def test_the_text_protocol_offers_a_grammar_for_each_turns_choice() -> None:
    moves = [call("calculator", expression="1+1"), answer("2")]
    _, script = run("text", "sync", moves, tool_choice="required", max_steps=1)
    first, last = script.options[0]["grammar"], script.options[-1]["grammar"]
    assert "calculator" in first and "Final Answer" not in first  # a call is required
    assert "Final Answer" in last and "calculator" not in last  # best effort: answer only


def test_a_chat_model_without_a_grammar_parameter_is_not_sent_one() -> None:
    class Plain:
        def __init__(self) -> None:
            self.calls = 0

        def complete(self, messages: Sequence[Any], *, stop: Sequence[str] = ()) -> Completion:
            self.calls += 1
            return Completion("Final Answer: 4")

    model = Plain()
    assert Agent(model).run("2+2?").answer == "4" and model.calls == 1
    with pytest.raises(ConfigError, match="tools="):
        Agent(model, protocol="native")


def test_a_result_with_a_hostile_getattribute_is_shown_not_failed() -> None:
    class Sly:
        def __getattribute__(self, name: str) -> Any:
            raise RuntimeError(f"no {name} for you")

        def __str__(self) -> str:
            return "sly value"

    @tool
    def sly() -> str:
        """Use this to get a sly value."""
        return Sly()  # type: ignore[return-value]

    result, _ = run("text", "sync", [call("sly"), answer("ok")], tools=[sly])
    assert not result.steps[0].is_error and result.steps[0].observation == "sly value"


@pytest.mark.parametrize(
    ("reply", "shown"),
    [
        (
            "I should look it up.",
            'Action: calculator\nAction Input: {"expression": "(12 + 30) * 4"}',
        ),
        ("思考：我要查一下。", "行动： calculator"),  # the hint in the reply's language
        (
            'Action: calculator\nAction Input: {"expression": "1"} {"expression": "2"}',
            '{"expression": "(12 + 30) * 4"}',  # one object, shown with the real example
        ),
    ],
    ids=["intention", "chinese", "two-objects"],
)
def test_a_format_error_hint_shows_a_real_tool(reply: str, shown: str) -> None:
    script = ScriptedModel([reply, "Final Answer: 4"])
    result = Agent(script).run("What is 2 + 2?")
    observation = result.steps[0].observation or ""
    assert result.steps[0].step.kind == "error"
    assert shown in observation and "tool_name" not in observation


@pytest.mark.parametrize("name", ["no", "None", "final_answer", "FinalAnswer", "N/A"])
def test_names_the_parser_cannot_call_are_refused(name: str) -> None:
    from textreact import Tool

    with pytest.raises(ConfigError, match="tool name"):
        Tool.from_schema(name, "Use it.", {"type": "object", "properties": {}})
