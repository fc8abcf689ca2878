"""parse(): the corpus of messy completions, the decision table in docs/protocol.md, the
FormatError texts, and hostile inputs."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from corpus import load, mismatch

from textreact import parser
from textreact.grammar import render_step
from textreact.parser import parse
from textreact.steps import Action, FinalAnswer, FormatError

CASES = load()
PROTOCOL = Path(__file__).resolve().parents[1] / "docs" / "protocol.md"


def test_corpus_is_large_and_varied() -> None:
    assert len(CASES) >= 80
    assert {c["expected"]["kind"] for c in CASES} == {"action", "final", "error"}


@pytest.mark.parametrize("case", CASES, ids=[f"{c['id']}-{c['source']}" for c in CASES])
def test_corpus_case(case: dict) -> None:
    step = parse(case["text"])
    assert mismatch(case["expected"], step) is None, mismatch(case["expected"], step)
    assert case["text"].endswith(step.discarded_text)
    general = parser._Reader(case["text"]).step()  # the fast path, when taken, agrees
    assert (step, step.discarded_text) == (general, general.discarded_text)


def _table_rows() -> list[tuple[str, str, str]]:
    rows = []
    for line in PROTOCOL.read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"\| (\d+) \| (.+) \| `{1,2}(.+?)`{1,2} \| (.+) \|", line)
        if match:
            rows.append((match[1], match[3], match[4]))
    return rows


TABLE = _table_rows()


def test_decision_table_is_found() -> None:
    assert [int(number) for number, _, _ in TABLE] == list(range(1, len(TABLE) + 1))
    assert len(TABLE) >= 35


@pytest.mark.parametrize(("number", "example", "result"), TABLE, ids=[r[0] for r in TABLE])
def test_decision_table_rows(number: str, example: str, result: str) -> None:
    step = parse(ast.literal_eval(example))
    kind, _, rest = result.partition(" ")
    assert step.kind == kind, step
    if kind == "final":
        assert step.answer == rest
    elif kind == "action":
        tool, value = re.fullmatch(r"(.+?) ([{\"].*)", rest).groups()
        assert (step.tool, step.input) == (tool, json.loads(value))


def test_hallucinated_observation_is_cut_exactly() -> None:
    text = 'Thought: t\nAction: s\nAction Input: {"q": 1}\nObservation: fake\nThought: more'
    step = parse(text)
    assert step.discarded_text == "Observation: fake\nThought: more"
    assert text[: len(text) - len(step.discarded_text)].rstrip().endswith('{"q": 1}')


def test_action_records_raw_input_and_repairs() -> None:
    step = parse("Action: s\nAction Input: {'q': 'x',}  ")
    assert isinstance(step, Action)
    assert step.raw_input == "{'q': 'x',}"
    assert step.repairs == ("single_quotes", "trailing_comma")


def test_missing_input_hint_shows_the_exact_form() -> None:
    step = parse("Thought: time\nAction: get_time")
    assert isinstance(step, FormatError)
    assert "get_time" in step.message
    assert render_step(Action("get_time", {})) in step.hint
    assert "{}" in step.hint


def test_error_hint_is_chinese_for_chinese_completions() -> None:
    step = parse("思考：我想一想")
    assert isinstance(step, FormatError)
    assert "最终答案：" in step.hint and "Final Answer" not in step.hint


def test_error_message_quotes_a_shortened_fragment() -> None:
    step = parse("I should search for " + "very " * 100 + "long things.")
    assert isinstance(step, FormatError)
    assert "I should search" in step.message and "long things." in step.message
    assert len(step.message) < 200


def test_implicit_answer_is_flagged() -> None:
    assert parse("It is 4.") == FinalAnswer("It is 4.")
    assert parse("It is 4.").implicit
    assert not parse("Final Answer: It is 4.").implicit


def test_long_final_answer_runs_past_the_scan_limit() -> None:
    body = "word " * (parser.SCAN_LIMIT // 2)
    step = parse(f"Final Answer: {body}end")
    assert isinstance(step, FinalAnswer)
    assert step.answer.endswith("end")


def test_long_reasoning_does_not_hide_the_action() -> None:
    text = "<think>" + "hmm " * parser.SCAN_LIMIT + "</think>\nAction: s\nAction Input: {}"
    assert parse(text) == Action("s", {})


def test_a_long_run_of_steps_is_read_as_its_first_action() -> None:
    # Replaces the regex-timeout test: the parser now runs only linear stdlib patterns on a
    # bounded window, so there is no timeout left to hit; the long input still gives the step.
    step = parse("Thought: t\nAction: s\nAction Input: {}\n" * 2000)
    assert step == Action("s", {}, "t")
    assert step.discarded_text.startswith("Thought: t\nAction: s")


HOSTILE = {
    "lone_surrogates": 'Action: s\ud800\nAction Input: {"q": "\udfff"}',
    "nul_bytes": "Action: s\x00\nAction Input: \x00{\x00",
    "megabyte_of_braces": "Action: s\nAction Input: " + "{" * 1_000_000,
    "newlines": "\n" * 100_000,
    "newlines_and_spaces": "  \n" * 100_000,
    "nested_think": "<think>" * 5000 + "Action: s" + "</think>" * 5000 + "Final Answer: x",
    "keywords_everywhere": "Action: a\nAction Input: {}\n" * 50_000,
    "deep_brackets": "Action: s\nAction Input: " + "[" * 10_000 + "]" * 10_000,
    "huge_call": "Action: f(" + "(" * 50_000 + ")" * 50_000 + ")",
    "fence_storm": "```" * 100_000,
    "stop_word_only": "\nObserv",
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_input_never_raises(text: str) -> None:
    step = parse(text)
    assert step.kind in {"action", "final", "error"}
    assert text.endswith(step.discarded_text)
