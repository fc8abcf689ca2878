"""The message list: recent turns whole, older ones summarised, errors kept, budget held."""

from __future__ import annotations

import pytest

from textreact.errors import ConfigError
from textreact.memory import MemoryConfig, build_messages, summarise
from textreact.steps import Action, FormatError, ToolResult, Turn

OPENING = [
    {"role": "system", "content": "system prompt"},
    {"role": "user", "content": "example question"},
    {"role": "assistant", "content": "example answer"},
    {"role": "user", "content": "the question"},
]


def action_turn(i: int, observation: str, *, error: bool = False) -> Turn:
    step = Action(tool="search", input={"q": f"query {i}"}, thought=f"I think about {i}. More.")
    text = f'Thought: I think about {i}. More.\nAction: search\nAction Input: {{"q": "query {i}"}}'
    result = ToolResult(
        tool="search",
        arguments={"q": f"query {i}"},
        value=None if error else observation,
        error=observation if error else None,
        error_kind="exception" if error else None,
    )
    return Turn(index=i, text=text, step=step, observation=observation, result=result)


def test_summarise_takes_the_first_sentence():
    assert (
        summarise("Taipei has 2.6 million people. It is big.", 160)
        == "Taipei has 2.6 million people. …"
    )
    assert summarise("short", 160) == "short"
    assert summarise("x" * 500, 50).startswith("x" * 40)
    assert len(summarise("x" * 500, 50)) <= 52


def test_recent_turns_whole_older_summarised_errors_kept():
    turns = [action_turn(i, f"Result {i} first. Second sentence {i}.") for i in range(1, 6)]
    turns[0] = action_turn(1, "Boom: a specific error. Do this instead.", error=True)
    messages = build_messages(OPENING, turns, config=MemoryConfig(keep_recent=3, budget_chars=None))
    assert messages[:4] == OPENING
    body = messages[4:]
    assert [m["role"] for m in body] == ["assistant", "user"] * 5
    assert all(m["content"].startswith("Observation: ") for m in body[1::2])
    # The error turn (oldest) stays whole, thought and all.
    assert body[0]["content"] == turns[0].text
    assert body[1]["content"] == "Observation: Boom: a specific error. Do this instead."
    # Turn 2 is old and not an error: thought dropped, observation cut to its first sentence.
    assert body[2]["content"] == 'Action: search\nAction Input: {"q": "query 2"}'
    assert body[3]["content"] == "Observation: Result 2 first. …"
    # The last three stay whole.
    for turn, (assistant, user) in zip(
        turns[2:], zip(body[4::2], body[5::2], strict=True), strict=True
    ):
        assert assistant["content"] == turn.text
        assert user["content"] == f"Observation: {turn.observation}"


def test_budget_leaves_out_oldest_turns_and_says_so():
    turns = [action_turn(i, f"R{i}. " + "y" * 400) for i in range(1, 31)]
    config = MemoryConfig(keep_recent=3, budget_chars=2_000)
    messages = build_messages(OPENING, turns, config=config)
    history = sum(len(m["content"]) for m in messages[4:])
    assert history <= 2_000 + 3 * 600
    assert "left out to save space" in messages[3]["content"]
    assert messages[-1]["content"] == f"Observation: {turns[-1].observation}"
    # The opening itself is never dropped.
    assert [m["role"] for m in messages[:4]] == ["system", "user", "assistant", "user"]


def test_format_error_turns_are_never_summarised():
    bad = Turn(
        index=1,
        text="I will search now",
        step=FormatError("no Action", "Action: x"),
        observation="Format error: no Action. Reply exactly in this form: ...",
    )
    turns = [bad] + [action_turn(i, f"R{i}. more") for i in range(2, 7)]
    messages = build_messages(OPENING, turns, config=MemoryConfig(keep_recent=2, budget_chars=None))
    assert messages[4] == {"role": "assistant", "content": "I will search now"}
    assert messages[5]["content"] == f"Observation: {bad.observation}"


def test_config_is_validated():
    with pytest.raises(ConfigError, match="keep_recent"):
        MemoryConfig(keep_recent=0)
    with pytest.raises(ConfigError, match="budget_chars"):
        MemoryConfig(budget_chars=0)

    with pytest.raises(ConfigError, match="summary_chars"):
        MemoryConfig(summary_chars=0)


def test_summaries_never_cut_a_number_at_its_decimal_point():
    text = "The value is 3.14159 metres. Second."
    for limit in range(10, 40):
        shown = summarise(text, limit)
        assert not shown.startswith("The value is 3. "), (limit, shown)


def test_the_left_out_note_is_in_the_run_language():
    turns = [action_turn(i, f"R{i}. " + "y" * 400) for i in range(1, 12)]
    config = MemoryConfig(keep_recent=2, budget_chars=1_000)
    zh = build_messages(OPENING, turns, config=config, lang="zh")
    assert "已省略" in zh[3]["content"] and "left out" not in zh[3]["content"]
