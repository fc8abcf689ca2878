"""The call-or-answer branch as a scored choice (`decision_bias`): the branch grammars, the
scoring of the branch point from log-probabilities (whatever the tokenisation), the prefill
that continues the chosen branch, the loop re-posing the choice at every turn (scripted), and
the real client against a loopback server that returns log-probabilities, or none."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math

import pytest
from fakeserver import FakeServer, Reply, chat_completion, error_body
from test_local_model import GGUF, TIMEOUT, needs_model

from textreact import Agent, ScriptedModel
from textreact.cli import EXIT_OK, EXIT_USAGE, main
from textreact.constrain import branch_grammar, matches, tools_grammar
from textreact.errors import ConfigError
from textreact.models import local
from textreact.models.decision import TOP_K, decide
from textreact.models.openai_compat import AsyncOpenAICompatModel, OpenAICompatModel
from textreact.protocols.text import TextProtocol
from textreact.steps import Completion, TokenLogprob, Usage
from textreact.tools import builtin_tools

LLAMA_PROPS = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}
CALL = 'Thought: add.\nAction: calculator\nAction Input: {"expression": "2+2"}'
ANSWER = "Thought: I know.\nFinal Answer: 4"


def decision(bias: float = 0.0, lang: str = "en"):
    posed = TextProtocol(decision_bias=bias).decision(builtin_tools(), lang)
    assert posed is not None
    return posed


# The branch grammars: what follows each label in the step grammar, no more, no less


@pytest.mark.parametrize(
    "rest",
    [
        ' calculator\nAction Input: {"expression": "2+2"}',
        ' lookup_fact\nAction Input: {"query": "capital of Japan"}',
        ' calculator\nAction Input: {"query": "capital of Japan"}',
        ' search\nAction Input: {"query": "x"}',
        " 4",
    ],
)
def test_a_branch_grammar_takes_what_the_step_grammar_takes_after_its_label(rest: str) -> None:
    tools = builtin_tools()
    step = tools_grammar(tools)
    for label, branch in (("Action:", "action"), ("Final Answer:", "final")):
        whole = matches(step, f"Thought: t\n{label}{rest}")
        assert bool(matches(branch_grammar(tools, branch), rest)) == bool(whole)


def test_an_unknown_branch_is_refused() -> None:
    with pytest.raises(ConfigError, match="branch"):
        branch_grammar(builtin_tools(), "maybe")


# Scoring the branch point


def test_the_bias_moves_the_choice_and_a_changed_choice_asks_for_the_other_branch() -> None:
    sampled = ScriptedModel.scored(ANSWER, call=-0.9, answer=-0.6)
    kept = decide(sampled, decision(0.0))
    assert kept.prefill is None and kept.completion.text == ANSWER
    assert kept.completion.decision.chosen == "answer" == kept.completion.decision.sampled
    moved = decide(sampled, decision(0.5))
    assert moved.prefill == "Thought: I know.\nAction:"
    assert moved.grammar == branch_grammar(builtin_tools(), "action")
    record = moved.completion.decision
    assert (record.sampled, record.chosen) == ("answer", "call")
    assert record.margin == pytest.approx(-0.3)


def token(text: str, logprob: float, *top: tuple[str, float]) -> TokenLogprob:
    return TokenLogprob(text.encode(), logprob, tuple((t.encode(), lp) for t, lp in top))


def test_a_token_that_holds_the_line_break_before_the_label_is_read() -> None:
    tokens = (
        token("Thought: I know.", -0.1),
        token("\nFinal", -1.8, ("\nAction", -0.2), ("\nFinal", -1.8), (" The", -3.0)),
        token(" Answer: 4", -0.1),
    )
    record = decide(Completion(ANSWER, logprobs=tokens), decision()).completion.decision
    assert (record.call_logprob, record.answer_logprob) == (-0.2, -1.8)
    assert record.chosen == "call"


def test_every_token_that_begins_a_branch_counts_and_an_absent_branch_gets_its_ceiling() -> None:
    tokens = (
        token("Thought: x.\n", -0.1),
        token("Action", -1.0, ("Action", -1.0), ("Act", -2.0), ("The", -0.9)),
        token(': calculator\nAction Input: {"expression": "1"}', -0.1),
    )
    text = 'Thought: x.\nAction: calculator\nAction Input: {"expression": "1"}'
    record = decide(Completion(text, logprobs=tokens), decision()).completion.decision
    assert record.call_logprob == pytest.approx(math.log(math.exp(-1.0) + math.exp(-2.0)))
    left = 1 - math.exp(-1.0) - math.exp(-2.0) - math.exp(-0.9)
    assert record.answer_logprob == pytest.approx(min(-2.0, math.log(left)))


def test_labels_split_inside_a_character_are_read_by_their_bytes() -> None:
    text = "思考：要算。\n最终答案：4"
    action, final = "行动".encode(), "最终".encode()
    tokens = (
        TokenLogprob("思考：要算。\n".encode(), -0.1),
        TokenLogprob(final[:2], -0.7, ((final[:2], -0.7), (action[:2], -0.9))),
        TokenLogprob(final[2:], -0.1),
        TokenLogprob("答案：4".encode(), -0.1),
    )
    choice = decide(Completion(text, logprobs=tokens), decision(0.5, "zh"))
    record = choice.completion.decision
    assert (record.call_logprob, record.answer_logprob) == (-0.9, -0.7)
    assert choice.prefill == "思考：要算。\n行动："


@pytest.mark.parametrize(
    ("completion", "reason"),
    [
        (Completion(ANSWER), "no_logprobs"),
        (Completion("Paris.", logprobs=(token("Paris.", -0.1),)), "no_branch_point"),
        (Completion(ANSWER, logprobs=(token("Thought: other", -0.1),)), "no_branch_token"),
    ],
)
def test_a_reply_that_cannot_be_scored_stands_as_sampled(completion, reason) -> None:
    choice = decide(completion, decision(5.0))
    assert choice.prefill is None and choice.completion.text == completion.text
    assert choice.completion.decision.unscored == reason


def test_the_continuation_is_joined_whether_or_not_the_server_repeats_the_prefill() -> None:
    sampled = ScriptedModel.scored(ANSWER, call=-0.9, answer=-0.6)
    choice = decide(dataclasses.replace(sampled, usage=Usage(10, 5)), decision(1.0))
    rest = ' calculator\nAction Input: {"expression": "2+2"}'
    joined = choice.join(Completion(rest, usage=Usage(12, 9)))
    repeated = choice.join(Completion(choice.prefill + rest, usage=Usage(12, 9)))
    assert joined.text == repeated.text == "Thought: I know.\nAction:" + rest
    assert joined.usage == Usage(22, 14) and joined.decision.chosen == "call"
    afresh = choice.join(Completion("Thought: hello\nFinal Answer: 5"))
    assert afresh.text == ANSWER and afresh.decision.unscored == "not_continued"
    assert afresh.decision.chosen == "answer"


# The loop, with a scripted model that returns log-probabilities


def test_the_choice_is_posed_at_every_turn_and_a_first_result_is_not_the_end() -> None:
    model = ScriptedModel(
        [
            ScriptedModel.scored(ANSWER, call=-0.9, answer=-0.6),
            ' calculator\nAction Input: {"expression": "2+2"}',
            ScriptedModel.scored("Thought: 4.\nFinal Answer: 4", call=-3.0, answer=-0.1),
        ]
    )
    result = Agent(model, decision_bias=1.0).run("What is 2+2?")
    model.assert_exhausted()
    assert result.answer == "4" and result.steps[0].tool == "calculator"
    assert result.steps[0].observation == "4"
    first, second = (step.to_dict()["decision"] for step in result.steps)
    assert (first["sampled"], first["chosen"]) == ("answer", "call")
    assert (second["sampled"], second["chosen"]) == ("answer", "answer")
    assert model.requests[1][-1] == {"role": "assistant", "content": "Thought: I know.\nAction:"}
    assert model.options[1] == {"grammar": branch_grammar(builtin_tools(), "action")}
    assert "decision" in model.options[0] and "decision" in model.options[2]


def test_without_a_bias_nothing_changes_and_with_one_the_prompt_is_the_same() -> None:
    plain, scored = ScriptedModel([ANSWER]), ScriptedModel([ANSWER])
    Agent(plain).run("What is 2+2?")
    result = Agent(scored, decision_bias=0.0).run("What is 2+2?")
    assert "decision" not in plain.options[0] and "decision" in scored.options[0]
    assert plain.requests == scored.requests and plain.stops == scored.stops
    assert result.steps[0].decision.unscored == "no_logprobs"


def test_a_forced_tool_choice_poses_no_choice() -> None:
    model = ScriptedModel([CALL, ANSWER])
    Agent(model, decision_bias=0.0, tool_choice="required").run("What is 2+2?")
    assert "decision" not in model.options[0]


@pytest.mark.parametrize("bias", [math.nan, math.inf, "1", True])
def test_a_bias_that_is_not_a_finite_number_is_refused(bias) -> None:
    with pytest.raises(ConfigError, match="decision_bias"):
        TextProtocol(decision_bias=bias)


def test_the_bias_needs_the_text_protocol() -> None:
    with pytest.raises(ConfigError, match="decision_bias"):
        Agent(ScriptedModel([]), protocol="native", decision_bias=0.0)


# The real client against a server that returns log-probabilities


def scored_body(text: str, call: float, answer: float) -> dict:
    """A chat completion whose `logprobs` are as llama.cpp sends them (bytes and tokens)."""
    tokens = ScriptedModel.scored(text, call=call, answer=answer).logprobs
    body = chat_completion(text)
    body["choices"][0]["logprobs"] = {
        "content": [
            {
                "token": t.token.decode(),
                "bytes": list(t.token),
                "logprob": t.logprob,
                "top_logprobs": [
                    {"token": b.decode(), "bytes": list(b), "logprob": lp} for b, lp in t.top
                ],
            }
            for t in tokens
        ]
    }
    return body


def test_the_client_asks_for_logprobs_and_prefills_the_chosen_branch() -> None:
    rest = ' calculator\nAction Input: {"expression": "2+2"}'
    replies = [
        Reply(body=scored_body(ANSWER, call=-0.9, answer=-0.6)),
        Reply(body=chat_completion("Thought: I know.\nAction:" + rest)),  # as llama.cpp sends
        Reply(body=scored_body("Thought: 4.\nFinal Answer: 4", call=-4.0, answer=-0.1)),
    ]
    with FakeServer(replies, props=LLAMA_PROPS) as server:
        with OpenAICompatModel("fake-model", server.base_url, max_retries=0) as model:
            result = Agent(model, decision_bias=1.0).run("What is 2+2?")
        bodies = [p.body for p in server.posts]
    assert result.answer == "4" and result.steps[0].text == "Thought: I know.\nAction:" + rest
    assert bodies[0]["logprobs"] is True and bodies[0]["top_logprobs"] == TOP_K
    assert bodies[1]["messages"][-1] == {
        "role": "assistant",
        "content": "Thought: I know.\nAction:",
    }
    assert bodies[1]["grammar"] == branch_grammar(builtin_tools(), "action")
    assert "logprobs" not in bodies[1] and bodies[2]["logprobs"] is True
    assert result.steps[0].decision.chosen == "call" and model.decision_note is None


def test_a_server_without_logprobs_is_sampled_and_not_asked_again() -> None:
    replies = [Reply(body=chat_completion(CALL)), Reply(body=chat_completion(ANSWER))]
    with FakeServer(replies) as server:
        with OpenAICompatModel("fake-model", server.base_url, max_retries=0) as model:
            result = Agent(model, decision_bias=3.0).run("What is 2+2?")
        bodies = [p.body for p in server.posts]
    assert result.answer == "4" and len(bodies) == 2
    assert "logprobs" in bodies[0] and "logprobs" not in bodies[1]
    assert [s.decision.unscored for s in result.steps] == ["no_logprobs", "no_logprobs"]
    assert "sent no log-probabilities" in model.decision_note


def test_an_empty_reply_with_an_empty_list_of_logprobs_leaves_the_scoring_on() -> None:
    """A server that sends log-probabilities sends an empty list for an empty reply: that
    turn has nothing to score, and the next is scored as before."""
    empty = chat_completion("")
    empty["choices"][0]["logprobs"] = {"content": []}
    replies = [Reply(body=empty), Reply(body=scored_body(ANSWER, call=-4.0, answer=-0.1))]
    with FakeServer(replies, props=LLAMA_PROPS) as server:
        with OpenAICompatModel("fake-model", server.base_url, max_retries=0) as model:
            result = Agent(model, decision_bias=0.0).run("What is 2+2?")
        bodies = [p.body for p in server.posts]
    assert result.answer == "4" and bodies[1]["logprobs"] is True
    assert model.decision_note is None and result.steps[-1].decision.chosen == "answer"


def test_a_server_that_refuses_logprobs_is_asked_again_without_them() -> None:
    refusal = Reply(400, error_body("logprobs is not supported", param="logprobs"))
    with FakeServer([refusal, Reply(body=chat_completion(ANSWER))]) as server:
        with OpenAICompatModel("fake-model", server.base_url, max_retries=0) as model:
            result = Agent(model, decision_bias=0.0).run("What is 2+2?")
        bodies = [p.body for p in server.posts]
    assert result.answer == "4" and "logprobs" not in bodies[1]
    assert "refused log-probabilities" in model.decision_note


def test_the_async_client_decides_the_same_way() -> None:
    rest = " 4"
    replies = [
        Reply(body=scored_body(CALL, call=-0.7, answer=-0.8)),
        Reply(body=chat_completion(rest)),  # a server that sends the continuation alone
    ]

    async def go(base_url: str):
        model = AsyncOpenAICompatModel("fake-model", base_url, max_retries=0)
        result = await Agent(model, decision_bias=-1.0).arun("What is 2+2?")
        await model.aclose()
        return result

    with FakeServer(replies, props=LLAMA_PROPS) as server:
        result = asyncio.run(go(server.base_url))
        bodies = [p.body for p in server.posts]
    assert result.answer == "4" and result.steps[0].text == "Thought: add.\nFinal Answer: 4"
    assert bodies[1]["messages"][-1]["content"] == "Thought: add.\nFinal Answer:"
    assert bodies[1]["grammar"] == branch_grammar(builtin_tools(), "final")


def test_run_takes_the_bias_and_json_shows_the_decision(capsys) -> None:
    with FakeServer([Reply(body=scored_body(ANSWER, call=-2.0, answer=-0.1))]) as server:
        code = main(
            ["run", "What is 2+2?", "--base-url", server.base_url, "--model", "m",
             "--decision-bias", "0.5", "--json"]
        )  # fmt: skip
    assert code == EXIT_OK
    step = json.loads(capsys.readouterr().out)["steps"][0]
    assert step["decision"]["chosen"] == "answer" and step["decision"]["bias"] == 0.5


@pytest.mark.parametrize(
    "argv", [["--decision-bias", "nan"], ["--decision-bias", "1", "--protocol", "native"]]
)
def test_run_refuses_a_bias_it_cannot_use(argv, capsys) -> None:
    code = main(["run", "q", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", *argv])
    assert code == EXIT_USAGE and "decision" in capsys.readouterr().err


# The embedded llama.cpp server: real log-probabilities, a real prefill


def test_the_embedded_server_scores_the_branch_and_continues_the_chosen_one() -> None:
    with local.local_model(GGUF, max_tokens=64, timeout=TIMEOUT) as model:
        kinds = {}
        for bias, kind in ((50.0, "action"), (-50.0, "final")):
            agent = Agent(model, decision_bias=bias, max_steps=1, best_effort=False)
            turn = agent.run("What is 17 * 23?").steps[0]
            assert turn.decision.unscored is None and turn.constrained
            kinds[kind] = (turn.step.kind, turn.decision.chosen)
    assert kinds == {"action": ("action", "call"), "final": ("final", "answer")}


for _mark in needs_model:  # marked local_model; skipped with the reason when the model is absent
    test_the_embedded_server_scores_the_branch_and_continues_the_chosen_one = _mark(
        test_the_embedded_server_scores_the_branch_and_continues_the_chosen_one
    )
