"""Several calls in one reply of the text protocol, where the caller allows them: the parser
(`parse_calls`: the form, its bound, a call written wrong among calls, hostile input), the
grammar (a bounded number of calls, each under its tool's schema), the format rules (said only
when several are allowed), and the loop (`Agent(parallel_calls=True)` runs them in order, each
observed, the observations in one user message; off by default, today's behaviour)."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from textreact import Agent, ScriptedModel, prompt, tool
from textreact.cli import EXIT_OK, main
from textreact.constrain import branch_grammar, matches, tools_grammar
from textreact.errors import ConfigError
from textreact.grammar import LANGUAGES, render_step
from textreact.memory import MemoryConfig
from textreact.parser import parse
from textreact.parsing import calls as calls_module
from textreact.parsing.calls import MAX_CALLS, parse_calls
from textreact.protocols import TextProtocol
from textreact.steps import Action, Completion, FinalAnswer, FormatError
from textreact.testing import actions
from textreact.tools import builtin_tools

WEATHER = 'Action: get_weather\nAction Input: {"city": "Paris"}'
TIME = 'Action: get_time\nAction Input: {"zone": "CET"}'
TWO = f"Thought: I need both.\n{WEATHER}\n{TIME}"


# the parser


def test_two_pairs_in_a_row_are_two_calls_and_parse_still_reads_one() -> None:
    first, second = parse_calls(TWO)
    assert first == Action("get_weather", {"city": "Paris"}, "I need both.")
    assert second == Action("get_time", {"zone": "CET"})
    assert second.discarded_text == ""
    single = parse(TWO)  # the public single-step reading is unchanged: the rest is discarded
    assert single == first and single.discarded_text == TIME


@pytest.mark.parametrize(
    "text",
    [
        f"{WEATHER}\n\nThought: now the time.\n{TIME}",  # a Thought line before a later call
        '**Action 1:** get_weather\n**Action Input 1:** {"city": "Paris"}\n'
        '**Action 2:** get_time\n**Action Input 2:** {"zone": "CET"}',  # numbered, in bold
        f"{WEATHER}\n{TIME}\nObservation: 18 C and 12:00",  # the model's own observation after
    ],
    ids=["thought between", "numbered", "observation after"],
)
def test_later_calls_are_read_in_the_forms_models_write(text: str) -> None:
    steps = parse_calls(text)
    assert [(s.tool, s.input) for s in steps] == [  # type: ignore[union-attr]
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"zone": "CET"}),
    ]
    assert text.endswith(steps[-1].discarded_text)
    assert "Observation" not in text[: len(text) - len(steps[-1].discarded_text)]


def test_chinese_calls_are_read() -> None:
    text = (
        '思考：两个都要。\n行动：get_weather\n行动输入：{"city": "巴黎"}\n'
        + "行动：get_time\n行动输入：{}"
    )
    assert [s.tool for s in parse_calls(text)] == ["get_weather", "get_time"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "after",
    [
        "Observation: 18 C\n" + TIME,  # a call after an observation the model invented
        "Final Answer: 18 C",  # an answer written before any result was seen
        "Action: None\nFinal Answer: done",  # "no action"
    ],
    ids=["observation", "answer", "no action"],
)
def test_only_calls_in_a_row_are_read_and_the_rest_is_discarded(after: str) -> None:
    text = f"{WEATHER}\n{after}"
    (only,) = parse_calls(text)
    assert only.tool == "get_weather"  # type: ignore[union-attr]
    assert only.discarded_text == after


def test_at_most_the_limit_is_read_and_the_rest_is_discarded() -> None:
    pairs = [f'Action: t{i}\nAction Input: {{"n": {i}}}' for i in range(20)]
    text = "\n".join(pairs)
    read = parse_calls(text)
    assert [s.tool for s in read] == [f"t{i}" for i in range(MAX_CALLS)]  # type: ignore[union-attr]
    assert read[-1].discarded_text == "\n".join(pairs[MAX_CALLS:])
    assert [s.tool for s in parse_calls(text, 3)] == ["t0", "t1", "t2"]  # type: ignore[union-attr]
    assert parse_calls(text, 1) == (parse(text),)
    with pytest.raises(ValueError, match="at least 1"):
        parse_calls(text, 0)


@pytest.mark.parametrize(
    ("second", "problem"),
    [
        ("Action: get_time", "no_input"),
        ('Action: get_time\nAction Input: {"zone": "CET", "zone": "UTC"}', "ambiguous_input"),
    ],
)
def test_a_call_written_wrong_among_calls_is_its_format_error(second: str, problem: str) -> None:
    first, wrong = parse_calls(f"{WEATHER}\n{second}")
    assert first.tool == "get_weather"  # type: ignore[union-attr]
    assert isinstance(wrong, FormatError) and wrong.problem == problem
    assert wrong.tool == "get_time"


def test_a_reply_of_forty_thousand_calls_costs_the_limits_parses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted = []

    def counting(text: str) -> Any:
        counted.append(len(text))
        return parse(text)

    monkeypatch.setattr(calls_module, "parse", counting)
    pairs = (f'Action: get_weather\nAction Input: {{"city": "{i}"}}' for i in range(40_000))
    text = "\n".join(pairs)  # 1.7 MB: read whole at every call, it would take hours
    assert len(parse_calls(text)) == MAX_CALLS
    assert len(counted) == MAX_CALLS


@pytest.mark.parametrize("thought", ["", "Thought: and again.\n"])
def test_a_call_the_reply_already_made_ends_the_calls(thought: str) -> None:
    """The same tool with the same arguments again (whatever the thought before it, however
    the JSON is spaced): the copy and what follows are discarded, as after an answer."""
    again = 'Action: get_weather\nAction Input: {"city":"Paris"}'
    rest = f"{thought}{again}\n{TIME}\n{WEATHER}"
    read = parse_calls(f"{TWO}\n{rest}")
    assert [(s.tool, s.input) for s in read] == [  # type: ignore[union-attr]
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"zone": "CET"}),
    ]
    assert read[-1].discarded_text == rest
    (only,) = parse_calls(f"{WEATHER}\n{WEATHER}\n{WEATHER}")  # a repeat to the bound
    assert only.discarded_text == f"{WEATHER}\n{WEATHER}"
    other_city = WEATHER.replace("Paris", "Lyon")
    assert len(parse_calls(f"{WEATHER}\n{other_city}")) == 2  # the same tool, other arguments


def test_the_parse_command_prints_every_call_with_calls(capsys, tmp_path) -> None:
    path = tmp_path / "reply.txt"
    path.write_text(TWO, encoding="utf-8")
    assert main(["parse", "--calls", str(path)]) == EXIT_OK
    read = json.loads(capsys.readouterr().out)
    assert [(s["kind"], s["tool"], s["input"]) for s in read] == [
        ("action", "get_weather", {"city": "Paris"}),
        ("action", "get_time", {"zone": "CET"}),
    ]
    assert main(["parse", str(path)]) == EXIT_OK  # without it, the one step as before
    assert json.loads(capsys.readouterr().out)["discarded_text"] == TIME


@given(st.lists(actions(), min_size=1, max_size=12), st.sampled_from(LANGUAGES))
def test_calls_rendered_one_after_another_read_back(written: list[Action], lang: str) -> None:
    text = "\n".join(render_step(action, lang) for action in written)
    calls = [(action.tool, action.input) for action in written]
    first_repeat = next((i for i, call in enumerate(calls) if call in calls[:i]), len(calls))
    assert parse_calls(text) == tuple(written[: min(first_repeat, MAX_CALLS)])


#: Text built from the pieces of several calls finds more corners than uniform text does.
_PIECES = st.sampled_from(
    ["Thought:", "Action:", "Action Input:", "Observation:", "Final Answer:", "行动：",
     "行动输入：", "\n", " ", "{", "}", '"', ":", "get_time", '{"zone": "CET"}', "None", "**",
     "1", "<think>", "</think>", "```", "\x00", "\u2028", "\ud800", "Obs", "Action 2:",
     WEATHER, "\n" + TIME]
)  # fmt: skip


@given(st.one_of(st.text(), st.lists(_PIECES, max_size=40).map("".join)), st.integers(1, 9))
def test_parse_calls_never_raises_and_reads_calls_in_a_row(text: str, limit: int) -> None:
    steps = parse_calls(text, limit)
    assert 1 <= len(steps) <= limit
    assert steps[0] == parse(text)
    assert all(isinstance(step, Action) for step in steps[:-1])
    for step in steps:
        assert text.endswith(step.discarded_text)
    for before, after in itertools.pairwise(steps):
        assert before.discarded_text.endswith(after.discarded_text)
        assert len(after.discarded_text) < len(before.discarded_text)


# the grammar


TOOLS = builtin_tools()
CALC = render_step(Action("calculator", {"expression": "1+1"}))
FACT = render_step(Action("lookup_fact", {"query": "capital of France"}))


def test_the_grammar_of_one_call_is_unchanged_and_refuses_a_second() -> None:
    assert tools_grammar(TOOLS, max_calls=1) == tools_grammar(TOOLS)
    assert matches(tools_grammar(TOOLS), f"Thought: one.\n{CALC}")
    assert not matches(tools_grammar(TOOLS), f"Thought: two.\n{CALC}\n{FACT}")


def test_the_grammar_allows_up_to_max_calls_each_under_its_schema() -> None:
    rules = tools_grammar(TOOLS, max_calls=3)
    assert matches(rules, f"Thought: one.\n{CALC}")
    assert matches(rules, f"Thought: two.\n{CALC}\n{FACT}")
    assert matches(rules, f"Thought: three.\n{CALC}\n{FACT}\n{FACT}")
    assert not matches(rules, f"Thought: four.\n{CALC}\n{FACT}\n{FACT}\n{FACT}")
    wrong = render_step(Action("lookup_fact", {"expression": "1+1"}))  # another tool's input
    assert not matches(rules, f"Thought: two.\n{CALC}\n{wrong}")
    assert not matches(rules, f"Thought: two.\n{CALC}\nThought: more.\n{FACT}")  # in a row
    assert matches(rules, "Thought: easy.\nFinal Answer: 2")


def test_the_grammar_holds_every_call_to_the_tool_choice() -> None:
    named = tools_grammar(TOOLS, tool_choice="lookup_fact", max_calls=4)
    assert matches(named, f"Thought: two.\n{FACT}\n{FACT}")
    assert not matches(named, f"Thought: two.\n{FACT}\n{CALC}")
    assert not matches(named, f"Thought: two.\n{CALC}\n{FACT}")
    assert not matches(tools_grammar(TOOLS, tool_choice="none", max_calls=4), f"Thought: t\n{CALC}")


def test_the_action_branch_of_a_scored_decision_allows_more_calls() -> None:
    rest = f"{CALC.removeprefix('Action:')}\n{FACT}"
    assert matches(branch_grammar(TOOLS, "action", max_calls=2), rest)
    assert not matches(branch_grammar(TOOLS, "action"), rest)


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_max_calls_is_checked(bad: Any) -> None:
    with pytest.raises(ConfigError, match="max_calls"):
        tools_grammar(TOOLS, max_calls=bad)


# the format rules


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_rule_is_said_only_when_several_calls_are_allowed(lang: str) -> None:
    one, several = prompt.format_section(TOOLS, lang), prompt.format_section(TOOLS, lang, 8)
    assert one == prompt.format_section(TOOLS, lang, max_calls=1)
    assert several.startswith(one + "\n") and "8" in several[len(one) :]
    assert "\n" not in several[len(one) + 1 :]  # one line more, nothing else changed
    default = TextProtocol().opening("q", TOOLS, lang)
    parallel = TextProtocol(parallel_calls=True).opening("q", TOOLS, lang)
    assert default[0]["content"] == prompt.system_prompt(TOOLS, lang)
    assert parallel[0]["content"] == default[0]["content"].replace(one, several)
    assert default[1:] == parallel[1:]


def test_a_text_protocol_request_carries_the_grammar_of_its_calls() -> None:
    memory = MemoryConfig()
    one = TextProtocol().request([], [], TOOLS, memory=memory, lang="en")
    several = TextProtocol(parallel_calls=True).request([], [], TOOLS, memory=memory, lang="en")
    assert one.grammar == tools_grammar(TOOLS)
    assert several.grammar == tools_grammar(TOOLS, max_calls=MAX_CALLS)


# the loop


def _run(script: list[str | Completion], driver: str = "sync", **settings: Any) -> tuple:
    model = ScriptedModel(script)
    agent = Agent(model, protocol="text", **settings)
    result = agent.run("q") if driver == "sync" else asyncio.run(agent.arun("q"))
    return result, model


CALLS_TWO = (
    'Thought: both.\nAction: calculator\nAction Input: {"expression": "6*7"}\n'
    'Action: lookup_fact\nAction Input: {"query": "capital of France"}'
)
DONE = "Thought: I now know.\nFinal Answer: 42, Paris"


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_parallel_calls_run_in_order_and_their_observations_go_back_together(driver) -> None:
    ran = []

    @tool
    def calculator(expression: str) -> str:
        """Evaluate an arithmetic expression."""
        ran.append(("calculator", expression))
        return "42"

    @tool
    def lookup_fact(query: str) -> str:
        """Look a fact up."""
        ran.append(("lookup_fact", query))
        return "Paris"

    tools = [calculator, lookup_fact]
    result, model = _run([CALLS_TWO, DONE], driver, tools=tools, parallel_calls=True)
    assert result.answer == "42, Paris" and result.stop_reason == "final_answer"
    assert ran == [("calculator", "6*7"), ("lookup_fact", "capital of France")]
    first, second, _ = result.steps
    assert (first.tool, first.observation, first.joined) == ("calculator", "42", False)
    assert (second.tool, second.observation, second.joined) == ("lookup_fact", "Paris", True)
    assert first.text == CALLS_TWO and second.text == ""
    *_, said, observed = model.requests[1]
    assert said == {"role": "assistant", "content": CALLS_TWO}
    assert observed == {"role": "user", "content": "Observation: 42\n\nObservation: Paris"}
    assert "several tools at once" in model.requests[0][0]["content"]
    assert model.options[0]["grammar"] == tools_grammar(tools, max_calls=MAX_CALLS)


def test_off_by_default_the_second_call_is_discarded_as_before() -> None:
    result, model = _run([CALLS_TWO, DONE])
    first, _ = result.steps
    assert first.tool == "calculator" and first.observation == "42"
    assert first.step.discarded_text == CALLS_TWO.split("\n", 3)[3]
    *_, said, observed = model.requests[1]
    assert said["content"] == CALLS_TWO[: CALLS_TWO.index("Action: lookup_fact")]
    assert observed == {"role": "user", "content": "Observation: 42"}
    assert "several" not in model.requests[0][0]["content"]
    assert model.options[0]["grammar"] == tools_grammar(builtin_tools())


def test_each_call_is_checked_alone_and_a_wrong_one_gets_its_own_observation() -> None:
    reply = (
        'Action: calculator\nAction Input: {"expression": "6*7"}\n'
        'Action: weather\nAction Input: {"city": "Paris"}\n'  # no such tool
        'Action: lookup_fact\nAction Input: {"query": "France", "days": 3}\n'  # no such argument
        "Action: calculator"  # no input
    )
    result, model = _run([reply, DONE], parallel_calls=True)
    ok, unknown, arguments, malformed, _ = result.steps
    assert ok.observation == "42" and not ok.is_error
    assert unknown.is_error and unknown.result.error_kind == "unknown_tool"
    assert arguments.is_error and arguments.result.error_kind == "arguments"
    assert isinstance(malformed.step, FormatError) and malformed.step.problem == "no_input"
    assert malformed.is_error and "Action Input" in malformed.observation
    observed = model.requests[1][-1]["content"].split("\n\nObservation: ")
    assert len(observed) == 4 and observed[0] == "Observation: 42"


def test_a_last_call_cut_by_the_token_limit_is_not_run() -> None:
    cut = Completion(CALLS_TWO[: CALLS_TWO.rindex('"capital')], "length")
    result, model = _run([cut, DONE], parallel_calls=True)
    first, _ = result.steps
    assert first.tool == "calculator" and first.observation == "42" and first.note is None
    assert model.requests[1][-2]["content"] == cut.text[: cut.text.index("Action: lookup_fact")]


def test_a_summarised_reply_shows_each_of_its_calls() -> None:
    script = [CALLS_TWO, 'Action: calculator\nAction Input: {"expression": "1+1"}', DONE]
    _, model = _run(script, parallel_calls=True, memory=MemoryConfig(keep_recent=1))
    older = [m["content"] for m in model.requests[2] if m["role"] == "assistant"][-2]
    assert older == (
        'Action: calculator\nAction Input: {"expression": "6*7"}\n'
        'Action: lookup_fact\nAction Input: {"query": "capital of France"}'
    )


def test_parallel_calls_keep_the_text_protocol_and_need_one() -> None:
    agent = Agent(ScriptedModel([]), parallel_calls=True)  # protocol="auto"
    assert isinstance(agent.protocol, TextProtocol) and agent.protocol.max_calls == MAX_CALLS
    assert (
        Agent(ScriptedModel([]), protocol="native", parallel_calls=True).protocol.name == "native"
    )
    with pytest.raises(ConfigError, match="parallel_calls"):
        Agent(ScriptedModel([]), protocol="own", parallel_calls=True)
    with pytest.raises(ConfigError, match="True or False"):
        Agent(ScriptedModel([]), protocol="text", parallel_calls="yes")  # type: ignore[arg-type]
    given = TextProtocol(parallel_calls=True)
    assert Agent(ScriptedModel([]), protocol=given, parallel_calls=True).protocol is given


def test_a_final_answer_reply_reads_the_same_with_parallel_calls() -> None:
    text = "Thought: t\nFinal Answer: 4\nAction: calculator\nAction Input: {}"
    several = TextProtocol(parallel_calls=True).read(Completion(text), TOOLS)
    assert several == TextProtocol().read(Completion(text), TOOLS)
    assert several.steps == (FinalAnswer("4", "t"),)
