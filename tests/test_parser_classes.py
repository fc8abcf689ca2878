"""parse(): the failure classes found from outside (issue 10, items 16-20), several cases per
class, and what a FormatError says is missing (`problem`, `tool`)."""

from __future__ import annotations

import json

import pytest

from textreact import jsonish
from textreact.parser import SCAN_LIMIT, _fast, _Reader, parse
from textreact.parsing.messages import forms_hint
from textreact.steps import Action, FinalAnswer, FormatError


def _error(text: str) -> FormatError:
    step = parse(text)
    assert isinstance(step, FormatError), step
    assert step.message and step.hint
    assert text.endswith(step.discarded_text)
    return step


# --- 16: ambiguous Action Inputs are errors, never a silent pick -----------------------------

AMBIGUOUS = {
    "two objects, one line": 'Action: search\nAction Input: {"q": "a"} {"q": "b"}',
    "two objects, two lines": 'Action: search\nAction Input: {"q": "a"}\n{"q": "b"}',
    "two objects, comma": 'Action: search\nAction Input: {"q": "a"}, {"q": "b"}',
    "two fenced blocks": (
        'Action: search\nAction Input: ```json\n{"q": "a"}\n```\n```json\n{"q": "b"}\n```'
    ),
    "key twice": 'Action: search\nAction Input: {"q": "a", "q": "b"}',
    "key twice, nested": 'Action: search\nAction Input: {"f": {"q": 1, "q": 2}}',
    "key twice, Python dict": "Action: search\nAction Input: {'q': 'a', 'q': 'b'}",
    "key twice, repaired": 'Action: search\nAction Input: {"q": "a", "q": "b",}',
    "keyword argument twice": 'Action: search\nAction Input: q="a", q="b"',
    "call argument twice": 'Action: search(q="a", q="b")',
    "blob key twice": '{"name": "search", "arguments": {"q": "a", "q": "b"}}',
    "blob string arguments, two objects": (
        '{"name": "search", "arguments": "{\\"q\\": \\"a\\"} {\\"q\\": \\"b\\"}"}'
    ),
}


@pytest.mark.parametrize("text", AMBIGUOUS.values(), ids=AMBIGUOUS.keys())
def test_an_ambiguous_action_input_is_an_error_naming_the_tool(text: str) -> None:
    step = _error(text)
    assert step.problem == "ambiguous_input"
    assert step.tool == "search"
    assert "search" in step.message and "search" in step.hint


def test_the_message_says_which_key_was_set_twice() -> None:
    assert "“q”" in _error('Action: s\nAction Input: {"q": 1, "q": 2}').message
    assert "two JSON objects" in _error('Action: s\nAction Input: {"q": 1} {"q": 2}').message


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"q": "a"} and then {"q": "b"} if that fails', {"q": "a"}),  # prose between
        ('{"q": "a"} {oops', {"q": "a"}),  # what follows is not an object
        ('{"q": "{\\"q\\": 1}"}', {"q": '{"q": 1}'}),  # an object inside a string
        ('[{"q": 1}, {"q": 2}]', [{"q": 1}, {"q": 2}]),  # one value: a list
    ],
)
def test_one_object_and_more_text_is_not_ambiguous(text: str, value: object) -> None:
    assert jsonish.loads(text)[0] == value


def test_ambiguity_is_a_jsonish_error_for_tools_too() -> None:
    with pytest.raises(jsonish.AmbiguousJsonError) as raised:
        jsonish.loads('{"q": 1, "q": 2}')
    assert isinstance(raised.value, jsonish.JsonishError) and raised.value.key == "q"
    with pytest.raises(jsonish.JsonishError, match="two JSON objects"):
        jsonish.loads('{"q": 1}\n{"q": 2}')


# --- 17: a JSON call never loses its arguments unsaid ----------------------------------------


@pytest.mark.parametrize(
    ("text", "tool", "value"),
    [
        ('{"name": "add", "arguments": [1, 2]}', "add", "[1, 2]"),
        ('{"name": "sqrt", "arguments": 16}', "sqrt", "16"),
        ('{"action": "flag", "action_input": true}', "flag", "true"),
        ('{"name": "now", "arguments": null}', "now", "null"),
        ('```json\n{"tool": "add", "args": [1, 2]}\n```', "add", "[1, 2]"),
    ],
)
def test_arguments_that_are_not_an_object_stay_an_action(text: str, tool: str, value: str) -> None:
    """As on an Action Input line: the text as written, for the tool (which knows its schema)
    to read; never a final answer."""
    step = parse(text)
    assert isinstance(step, Action), step
    assert (step.tool, step.input, step.raw_input) == (tool, value, value)


@pytest.mark.parametrize("key", ["params", "kwargs", "inputs", "tool_args", "argument"])
def test_more_spellings_of_the_arguments_key_are_read(key: str) -> None:
    step = parse(json.dumps({"name": "search", key: {"q": "x"}}))
    assert isinstance(step, Action) and step.input == {"q": "x"}
    assert json.loads(step.raw_input) == {"q": "x"}


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('{"name": "search", "query": {"q": "x"}}', "query"),
        ('{"tool": "search", "q": "x"}', "q"),
        ('{"name": "search", "id": "1", "payload": {"q": "x"}}', "payload"),
        ('```json\n{"action": "search", "input_args": {"q": "x"}}\n```', "input_args"),
    ],
)
def test_arguments_under_an_unknown_key_are_an_error_that_names_the_key(
    text: str, key: str
) -> None:
    step = _error(text)
    assert step.problem == "lost_arguments" and step.tool == "search"
    assert f"“{key}”" in step.message and "“id”" not in step.message


def test_a_call_with_no_arguments_at_all_is_a_call_without_arguments() -> None:
    step = parse('{"name": "get_time"}')
    assert step == Action("get_time", {}) and step.raw_input == "{}"
    assert parse('{"type": "function", "id": "c1", "name": "get_time"}') == Action("get_time", {})


# --- 18: fences inside JSON strings ----------------------------------------------------------

CODE = "```python\nprint('hi')\n```"


@pytest.mark.parametrize(
    "text",
    [
        "Action: run\nAction Input: " + json.dumps({"code": CODE}),
        'Action: run\nAction Input: {"code": "' + CODE + '"}',  # raw newlines in the string
        "Action: run\nAction Input: ```json\n" + json.dumps({"code": CODE}) + "\n```",
        'Action: run\nAction Input: ```json\n{"code": "' + CODE + '"}\n```',
        "```json\n" + json.dumps({"action": "run", "action_input": {"code": CODE}}) + "\n```",
        '```json\n{"name": "run", "arguments": {"code": "' + CODE + '"}}\n```',
    ],
)
def test_a_fence_inside_a_json_string_stays_in_the_string(text: str) -> None:
    step = parse(text)
    assert isinstance(step, Action), step
    assert step.tool == "run" and step.input == {"code": CODE}


def test_the_closing_fence_after_the_value_is_cut_not_kept() -> None:
    text = 'Action Input: ```json\n{"code": "' + CODE + '"}\n```\nThat runs it.'
    decoded = jsonish.decode(text[len("Action Input: ") :])
    assert decoded.value == {"code": CODE}
    assert text[len("Action Input: ") :][decoded.end :] == "\nThat runs it."


# --- 19: no-action lines, markup, the final_answer pseudo-tool --------------------------------


@pytest.mark.parametrize(
    "written",
    [
        "None (direct response required)",
        "None - I can answer directly",
        "None. I will answer now",
        "N/A (no tool needed)",
        "No tool needed",
        "No action required.",
        "nothing: the answer is known",
        "无（直接回答）",
    ],
)
def test_no_action_with_an_explanation_is_no_action(written: str) -> None:
    assert parse(f"Action: {written}\nFinal Answer: blue") == FinalAnswer("blue")
    step = _error(f"Thought: easy\nAction: {written}")
    assert step.problem == "no_action" and written.split()[0] in step.message


@pytest.mark.parametrize(
    "name", ["none_tool", "nothing_found", "nonexistent", "no-op", "na_lookup"]
)
def test_a_name_that_only_starts_like_none_is_a_name(name: str) -> None:
    assert parse(f"Action: {name}\nAction Input: {{}}") == Action(name, {})


@pytest.mark.parametrize(
    "written", ["**search", "**search**", "search**", "`search", "search`", "**`search`**"]
)
def test_markup_on_one_side_of_the_tool_name_is_stripped(written: str) -> None:
    assert parse(f'Action: {written}\nAction Input: {{"q": 1}}') == Action("search", {"q": 1})


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ('{"name": "final_answer", "arguments": {"answer": "Paris"}}', "Paris"),
        ('{"action": "Final Answer", "action_input": {"response": "Paris"}}', "Paris"),
        ('{"name": "final_answer", "arguments": {"text": "Paris", "confidence": 1}}', "Paris"),
        ('{"name": "final_answer", "arguments": {"city": "Paris"}}', "Paris"),
        ('{"name": "final_answer", "arguments": {"answer": 42}}', "42"),
        ('{"action": "Final Answer", "action_input": 42}', "42"),
        ('Action: final_answer\nAction Input: {"answer": "Paris"}', "Paris"),
        ("Action: Final Answer\nAction Input: Paris", "Paris"),
        ('Action: final_answer(answer="Paris")', "Paris"),
    ],
)
def test_the_final_answer_pseudo_tool_gives_the_answer_text(text: str, answer: str) -> None:
    step = parse(text)
    assert isinstance(step, FinalAnswer), step
    assert step.answer == answer


def test_a_final_answer_pseudo_tool_with_several_fields_keeps_the_json() -> None:
    step = parse('{"name": "final_answer", "arguments": {"city": "Paris", "country": "FR"}}')
    assert isinstance(step, FinalAnswer)
    assert json.loads(step.answer) == {"city": "Paris", "country": "FR"}


# --- 20: keywords without colons, cut-off inputs, long runs, NULs, fragments, Answer: ----------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'Thought\nI need to search.\nAction\nsearch\nAction Input\n{"q": "x"}',
            Action("search", {"q": "x"}, "I need to search."),
        ),
        ('Action\nsearch\nAction Input\n{"q": "x"}', Action("search", {"q": "x"})),
        (
            "Thought\nI know it.\nAction\ncalculator\nAction Input\n2+2\nObservation\n4",
            Action("calculator", "2+2", "I know it."),
        ),
        ("Thought\nI know it.\nFinal Answer\n42", FinalAnswer("42", "I know it.")),
        ("Final Answer\n42", FinalAnswer("42")),
        (
            "THOUGHT\nfind it\nACTION\nsearch\nACTION INPUT\nParis",
            Action("search", "Paris", "find it"),
        ),
    ],
)
def test_keywords_alone_on_their_lines_without_colons_are_keywords(
    text: str, expected: object
) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Genres:\nAction\nComedy and drama.", "Genres:\nAction\nComedy and drama."),
        ("Final Answer: The genres are:\nAction\nDrama", "The genres are:\nAction\nDrama"),
    ],
)
def test_a_single_bare_keyword_word_inside_text_stays_text(text: str, answer: str) -> None:
    step = parse(text)
    assert isinstance(step, FinalAnswer) and step.answer == answer


@pytest.mark.parametrize(
    "text",
    [
        "Action: get_time\nAction Input:",
        "Action: get_time\nAction Input:   ",
        "Action: get_time\nAction Input:\n",
        "Thought: t\nAction: get_time\nAction Input:\n\n",
        "行动：get_time\n行动输入：",
    ],
)
def test_an_empty_action_input_at_the_very_end_is_an_error(text: str) -> None:
    step = _error(text)
    assert step.problem == "no_input" and step.tool == "get_time"
    assert "{}" in step.hint and "get_time" in step.hint


@pytest.mark.parametrize(
    "text",
    [
        "Action: get_time\nAction Input:\nObservation: 12:00",
        "Action: get_time\nAction Input:\nObserv",
        "Action: get_time()\nAction Input:",
        "Action: get_time\nAction Input: {}",
    ],
)
def test_an_empty_action_input_that_is_not_at_the_end_is_no_arguments(text: str) -> None:
    assert parse(text) == Action("get_time", {})


@pytest.mark.parametrize(
    "run",
    [
        "Action: " * 5_000,
        "Thought: Action: Action Input: Observation: " * 1_000,
        "**Action:** " * 3_000,
        "Action:" + " Action:" * 4_000,
        "Thought: " + "Action: " * 10,
    ],
    ids=["action", "mixed", "bold", "no leading space", "short"],
)
def test_a_final_answer_after_a_run_of_empty_keywords_is_the_answer(run: str) -> None:
    step = parse(run + "Final Answer: 42")
    assert isinstance(step, FinalAnswer) and step.answer == "42"


def test_a_run_of_empty_keywords_longer_than_the_scan_limit_is_skipped() -> None:
    run = "Action: " * (SCAN_LIMIT // 4)
    assert len(run) > SCAN_LIMIT
    assert parse(run + "Final Answer: 42") == FinalAnswer("42")
    assert parse(run + 'Action: search\nAction Input: {"q": 1}') == Action("search", {"q": 1})


@pytest.mark.parametrize(
    "text",
    [
        "\x00\x00Final Answer: 42\x00\x00",
        "\x00\x00\x00\nFinal Answer: 42\n\x00",
        "Thought: ok\x00\n\x00Final Answer: 42",
        "\ufeffFinal Answer: 42",
        "\u200bFinal Answer:\x00 42\u200b",
    ],
)
def test_nul_bytes_and_invisible_characters_around_an_answer_are_ignored(text: str) -> None:
    step = parse(text)
    assert isinstance(step, FinalAnswer) and step.answer == "42"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("search", "fragment"),
        ("Hmm", "fragment"),
        ("get_weather", "fragment"),
        ("Do I need to use a tool? No", "fragment"),
        ("Do I need to use a tool? Yes", "fragment"),
        ("Thought: Do I need to use a tool? No", "thought_only"),
        ("Need to search for the population.", "intention"),
        ("Will look it up now.", "intention"),
        ("Going to use the calculator.", "intention"),
        ("Searching for the capital of Peru.", "intention"),
        ("Okay. Should check the weather first.", "intention"),
    ],
)
def test_fragments_and_intentions_are_errors(text: str, problem: str) -> None:
    assert _error(text).problem == problem


@pytest.mark.parametrize(
    "text", ["42", "Paris.", "Yes, it is.", "北京", "Will Smith was born in 1968.", "3.14"]
)
def test_short_answers_are_still_answers(text: str) -> None:
    step = parse(text)
    assert isinstance(step, FinalAnswer) and step.implicit and step.answer == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Thought: I can answer without using any more tools.\nAnswer: Paris",
            FinalAnswer("Paris", "I can answer without using any more tools."),
        ),
        ("Answer: Paris", FinalAnswer("Paris")),
        ("ANSWER: Paris", FinalAnswer("Paris")),
        ("Thought: t\n**Answer:** Paris", FinalAnswer("Paris", "t")),
    ],
)
def test_answer_at_the_start_of_a_line_is_a_final_answer(text: str, expected: object) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer: 42 is right.", FinalAnswer("The answer: 42 is right.")),
        ("Thought: the answer: 42\nFinal Answer: 42", FinalAnswer("42", "the answer: 42")),
        (
            "Final Answer: Q and A:\nQuestion: x\nAnswer: y",
            FinalAnswer("Q and A:\nQuestion: x\nAnswer: y"),
        ),
        (
            'Action: s\nAction Input: {\n  answer: "x"\n}',
            Action("s", {"answer": "x"}),
        ),
        ("Action: s\nAction Input: {}\nAnswer: 4", Action("s", {})),
    ],
)
def test_answer_elsewhere_is_not_a_keyword(text: str, expected: object) -> None:
    assert parse(text) == expected


# --- FormatError: what is missing, as a code; the messages from prompts/ ---------------------

PROBLEMS = {
    "all_reasoning": "<think>\nAction: a\nAction Input: {}",
    "empty": "  \n ",
    "empty_answer": "Final Answer:",
    "no_tool": "Action:\nAction Input: {}",
    "no_input": "Action: get_time",
    "intention": "I should search for it.",
    "fragment": "The answer is",
    "input_without_action": 'Action Input: {"q": "x"}',
    "no_action": "Action: N/A\nAction Input: N/A",
    "thought_only": "Thought: I think it is 4.",
    "observation_only": "Observation: made up",
    "ambiguous_input": 'Action: s\nAction Input: {"q": 1, "q": 2}',
    "lost_arguments": '{"name": "s", "query": "x"}',
}


@pytest.mark.parametrize(("problem", "text"), PROBLEMS.items(), ids=PROBLEMS.keys())
def test_each_format_error_says_what_is_missing(problem: str, text: str) -> None:
    step = _error(text)
    assert step.problem == problem
    assert "\x00" not in step.message and "$" not in step.message


def test_problem_and_tool_do_not_change_equality() -> None:
    step = _error("Action: get_time")
    assert step.tool == "get_time"
    assert step == FormatError(step.message, step.hint)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("行动：search", ("行动输入", "search")),
        ("思考：我想一想", ("思考", "我想一想")),
        ('行动：s\n行动输入：{"q": 1, "q": 2}', ("不止一次", "“q”")),
        ("我需要先搜索一下。", ("打算",)),
    ],
)
def test_chinese_completions_get_chinese_messages_and_hints(text: str, words: tuple) -> None:
    step = _error(text)
    assert all(word in step.message for word in words), step.message
    assert "Action" not in step.message and "Action" not in step.hint


def test_forms_hint_keeps_its_signature_and_shows_the_tool_given() -> None:
    hint = forms_hint("en", "lookup_fact", '{"query": "x"}')
    assert "Action: lookup_fact" in hint and '"query": "x"' in hint and "Final Answer:" in hint
    assert forms_hint("en") == _error("The answer is").hint
    assert "最终答案：" in forms_hint("zh")


# --- the fast path agrees with the reader on its new shapes ----------------------------------

FAST = [
    "Thought: I know.\nFinal Answer: 42",
    "Final Answer: 42\n",
    "Final Answer:42",
    "Final Answer:**42**",
    "Thought:**x**\nFinal Answer: 1",
    "Thought: t\nFinal Answer: a <b> c",
    "Final Answer:   ",
    'Action: s\nAction Input: {"q": 1}\nObservation: 3\nThought: more',
    'Action: s\nAction Input: {"q": 1}\nObserved: 3',
    'Action: s\nAction Input: {"q": 1}\n',
    'Action: s\nAction Input: {"q": 1}\n\n',
    'Action:__s\nAction Input: {"q": 1}',
    'Action: final_answer\nAction Input: {"answer": "x"}',
    'Action: None\nAction Input: {"q": 1}',
    'Action: s\nAction Input: {"q": 1, "q": 2}',
    'Action: s\nAction Input: {"q": 1}</think>',
    '思考：查一下\n行动：search\n行动输入：{"q": "北京"}\n观察：晴',
    "思考：好\n最终答案：北京",
    'Thought: x\x00\nAction: s\nAction Input: {"q": 1}',
]


@pytest.mark.parametrize("text", FAST)
def test_the_fast_path_agrees_with_the_reader(text: str) -> None:
    fast = _fast(text)
    general = _Reader(text).step()
    if fast is not None:
        assert (fast, fast.discarded_text) == (general, general.discarded_text)
        assert getattr(fast, "raw_input", None) == getattr(general, "raw_input", None)
    assert parse(text) == general
