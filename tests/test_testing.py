"""The fuzz kit: ground truth that means what it says, a runner that reports and reproduces,
textreact's own parser passing every family, and a naive parser failing the families it should."""

from __future__ import annotations

import ast
import itertools
import json
import unicodedata
from types import SimpleNamespace

import naive_parser
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from textreact.errors import ConfigError
from textreact.grammar import KEYWORD_LINE, render_step
from textreact.parser import parse
from textreact.steps import Action, FinalAnswer, FormatError
from textreact.testing import (
    FAMILIES,
    Noise,
    actions,
    answers,
    arguments,
    check_parser,
    completions,
    families,
    load_parser,
    matches,
    outcome,
    plain_inputs,
    render,
    run_fuzz,
    steps,
    tool_names,
)
from textreact.testing.draw import ReplayDrawer, shrink
from textreact.testing.families import sample
from textreact.testing.render import dump
from textreact.testing.values import LETTERS

#: Families whose noise a single LangChain-style regex with json.loads cannot read.
NAIVE_FAILS = {
    "markdown", "case", "spacing", "fullwidth_colon", "chinese", "aliases", "numbered",
    "tool_markup", "code_fence", "python_dict", "trailing_comma", "prose_after", "think_block",
    "hallucinated_observation", "partial_stop", "action_then_final", "mixed",
}  # fmt: skip
#: What the naive regex does handle: any whitespace before the input, multi-line JSON,
#: a quoted string (json.loads unquotes it), and chatter before the first keyword.
NAIVE_PASSES = {"canonical", "multiline_json", "quoted_input", "prose_before"}


def test_the_families_cover_the_issue_list() -> None:
    assert set(FAMILIES) == NAIVE_FAILS | NAIVE_PASSES
    assert all(description and "\n" not in description for description in FAMILIES.values())


@given(steps())
def test_canonical_noise_renders_exactly_what_grammar_renders(step: Action | FinalAnswer) -> None:
    assert render(step, Noise()) == render_step(step)


@given(arguments(), st.booleans(), st.sampled_from([None, 2, 4]), st.booleans())
def test_rendered_inputs_decode_to_the_ground_truth(
    value: dict, trailing_comma: bool, indent: int | None, ensure_ascii: bool
) -> None:
    as_python = Noise(python=True, trailing_comma=trailing_comma, json_indent=indent)
    assert ast.literal_eval(dump(value, as_python)) == value
    as_json = Noise(json_indent=indent, ensure_ascii=ensure_ascii)
    assert json.loads(dump(value, as_json)) == value


@given(tool_names(), plain_inputs(), answers())
def test_ground_truth_texts_hold_nothing_ambiguous(tool: str, text: str, answer: str) -> None:
    for value in (tool, text, answer):
        assert value == value.strip() and not KEYWORD_LINE.search(value)
    assert tool.lower() not in {"none", "n/a", "null"}
    with pytest.raises(ValueError):
        json.loads(text)
    assert "\n" not in tool + text


def test_letters_are_letters_and_digits() -> None:
    assert {unicodedata.category(c)[0] for c in LETTERS} <= {"L", "N"}
    assert all(unicodedata.category(c) != "No" for c in LETTERS)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_draws_through_hypothesis(family: str) -> None:
    @settings(max_examples=10)  # a smoke test per family; the runner tests draw many more
    @given(completions(family))
    def draws(case) -> None:
        assert case.family == family and case.text.strip()

    draws()


def test_the_fast_sampler_replays_from_its_seed_and_its_choices() -> None:
    def texts(seed: int) -> list[str]:
        return [case.text for case, _ in itertools.islice(sample("mixed", seed), 20)]

    assert texts(3) == texts(3) != texts(4)
    for case, choices in itertools.islice(sample("mixed", 5), 20):
        assert families.case(ReplayDrawer(choices), "mixed") == case


def test_shrinking_replays_simpler_choices_down_to_the_noise() -> None:
    case, choices = next((c, ch) for c, ch in sample("markdown", 0) if "**" in c.text)

    def fails(drawer: ReplayDrawer) -> bool:
        return "**" in families.case(drawer, "markdown").text

    minimal = families.case(ReplayDrawer(shrink(choices, fails)), "markdown")
    assert fails(ReplayDrawer(choices)) and minimal.text.count("**") > 0
    assert len(minimal.text) <= len(case.text) and minimal.expected.thought is None


def test_textreacts_parser_passes_every_family() -> None:
    check_parser(parse, examples=60)


def test_the_naive_parser_fails_exactly_the_families_it_cannot_read() -> None:
    report = run_fuzz(naive_parser.parse, examples=60, seed=0)
    assert set(report.failed) == NAIVE_FAILS
    assert not report.ok
    chinese = next(r for r in report.results if r.family == "chinese")
    assert chinese.passed == 0 and chinese.run == 60
    # Shrinking leaves only the noise: a bare two-line action, no thought, an empty input.
    assert chinese.failure is not None and chinese.failure.minimised
    assert chinese.failure.text.count("\n") == 1 and chinese.failure.expected.input == {}


def test_a_report_is_reproducible_from_its_seed_and_says_how() -> None:
    families = ["think_block", "python_dict", "canonical"]
    first = run_fuzz(naive_parser.parse, examples=25, seed=7, families=families).render()
    assert first == run_fuzz(naive_parser.parse, examples=25, seed=7, families=families).render()
    assert "--seed 7" in first and "--family think_block python_dict\n" in first + "\n"
    assert "expected: action" in first and "got:" in first and "as a Python string" in first


def test_check_parser_raises_with_the_report_and_honours_exclude() -> None:
    with pytest.raises(AssertionError, match="FAILED chinese"):
        check_parser(naive_parser.parse, examples=10, families=["canonical", "chinese"])
    report = check_parser(naive_parser.parse, examples=10, exclude=NAIVE_FAILS)
    assert {r.family for r in report.results} == NAIVE_PASSES
    with pytest.raises(ConfigError, match="Did you mean 'chinese'"):
        check_parser(naive_parser.parse, exclude=["chinse"])


def test_an_exception_is_an_error_outcome_and_is_reported() -> None:
    def explodes(text: str) -> None:
        raise ValueError("boom")

    report = run_fuzz(explodes, examples=5, families=["canonical"])
    assert report.results[0].passed == 0
    assert "raised ValueError: boom" in report.render()


@pytest.mark.parametrize(
    "returned",
    [
        Action(tool="web search", input={"n": 1.0, "ok": True}),
        {"kind": "action", "tool": " web search ", "input": {"n": 1, "ok": True}},
        SimpleNamespace(kind="action", tool="web search", input={"ok": True, "n": 1}),
    ],
)
def test_steps_objects_and_dicts_are_all_understood(returned: object) -> None:
    assert matches(Action(tool="web search", input={"n": 1, "ok": True}), outcome(returned))


@pytest.mark.parametrize(
    ("expected", "returned"),
    [
        (Action("t", {"n": 1}), {"kind": "action", "tool": "t", "input": {"n": True}}),
        (Action("t", {"n": True}), {"kind": "action", "tool": "t", "input": {"n": 1}}),
        (Action("t", {"n": [1]}), {"kind": "action", "tool": "t", "input": {"n": [1, 2]}}),
        (Action("t", {"n": 1}), {"kind": "action", "tool": "t", "input": '{"n": 1}'}),
        (Action("t", "Paris"), {"kind": "action", "tool": "t", "input": {"q": "Paris"}}),
        (Action("t", {}), {"kind": "final", "answer": "t"}),
        (FinalAnswer("42"), FormatError("no keyword", "")),
        (FinalAnswer("42"), None),
    ],
)
def test_a_different_step_does_not_match(expected: object, returned: object) -> None:
    assert not matches(expected, outcome(returned))


def test_a_final_answer_is_compared_stripped() -> None:
    assert matches(FinalAnswer("a\nb"), outcome(FinalAnswer("  a\nb\n")))


def test_load_parser_finds_the_function_or_says_what_is_wrong() -> None:
    assert load_parser("textreact.parser:parse") is parse
    with pytest.raises(ConfigError, match="module:function"):
        load_parser("textreact.parser.parse")
    with pytest.raises(ConfigError, match="cannot import 'no_such_module'"):
        load_parser("no_such_module:parse")
    with pytest.raises(ConfigError, match="no attribute 'nope'"):
        load_parser("textreact.parser:nope")
    with pytest.raises(ConfigError, match="not a function"):
        load_parser("textreact.grammar:LABELS")


def test_bad_arguments_to_run_fuzz_raise_config_errors() -> None:
    with pytest.raises(ConfigError, match="at least 1"):
        run_fuzz(parse, examples=0)
    with pytest.raises(ConfigError, match="unknown fuzz family 'markdwon'"):
        run_fuzz(parse, families=["markdwon"])


@given(actions())
def test_the_random_and_hypothesis_drawers_agree_on_what_an_action_is(action: Action) -> None:
    assert action.tool and (isinstance(action.input, dict) or action.input == action.input.strip())
