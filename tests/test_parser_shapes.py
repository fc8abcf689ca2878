"""parse(): shapes from an audit of real completions (raw endpoints, small and quantized
models), each case the completion as written and the exact step it must give."""

from __future__ import annotations

import pytest

from textreact.parser import _fast, _Reader, parse
from textreact.parsing.window import END_OF_TURN
from textreact.steps import Action, FinalAnswer, FormatError, Step


def _parsed(text: str) -> Step:
    """The step, after checking what every parse owes: an exact suffix cut, and the fast path
    (where it answers) agreeing with the general reader."""
    step = parse(text)
    assert text.endswith(step.discarded_text)
    general = _Reader(text).step()
    assert (step, step.discarded_text) == (general, general.discarded_text)
    fast = _fast(text)
    assert fast is None or (fast, fast.discarded_text) == (general, general.discarded_text)
    return step


# --- end-of-turn tokens end the reply ---------------------------------------------------------


@pytest.mark.parametrize("token", END_OF_TURN)
def test_every_end_of_turn_token_ends_the_answer(token: str) -> None:
    step = _parsed(f"Thought: done\nFinal Answer: Paris{token}")
    assert step == FinalAnswer("Paris", "done")
    assert step.discarded_text == token


@pytest.mark.parametrize(
    ("text", "expected", "discarded"),
    [
        (
            "Thought: done\nFinal Answer: Paris<|eot_id|>",
            FinalAnswer("Paris", "done"),
            "<|eot_id|>",
        ),
        (
            "Thought: done\nFinal Answer: Paris<|im_end|>",
            FinalAnswer("Paris", "done"),
            "<|im_end|>",
        ),
        ("Thought: done\nFinal Answer: Paris<|end|>", FinalAnswer("Paris", "done"), "<|end|>"),
        (
            "Thought: done\nFinal Answer: Paris<end_of_turn>",
            FinalAnswer("Paris", "done"),
            "<end_of_turn>",
        ),
        ("Thought: done\nFinal Answer: Paris</s>", FinalAnswer("Paris", "done"), "</s>"),
        (
            "Thought: done\nFinal Answer: Paris<｜end▁of▁sentence｜>",
            FinalAnswer("Paris", "done"),
            "<｜end▁of▁sentence｜>",
        ),
        ("思考：完成\n最终答案：北京<|im_end|>", FinalAnswer("北京", "完成"), "<|im_end|>"),
        (
            "Final Answer: Paris<|endoftext|>Human: and Rome?\nFinal Answer: Rome",
            FinalAnswer("Paris"),
            "<|endoftext|>Human: and Rome?\nFinal Answer: Rome",
        ),
        (
            'Action: lookup_fact\nAction Input: {"query": "x"}<|eot_id|>',
            Action("lookup_fact", {"query": "x"}),
            "<|eot_id|>",
        ),
        (
            "Action: lookup_fact\nAction Input: Paris weather<|im_end|>",
            Action("lookup_fact", "Paris weather"),
            "<|im_end|>",
        ),
        (
            "Action: lookup_fact\nAction Input: Paris weather<|eom_id|>",
            Action("lookup_fact", "Paris weather"),
            "<|eom_id|>",
        ),
        (
            "Action: lookup_fact\nAction Input: Paris weather\n<|im_end|>\n<|im_start|>user\n"
            "Observation: sunny",
            Action("lookup_fact", "Paris weather"),
            "<|im_end|>\n<|im_start|>user\nObservation: sunny",
        ),
        (
            "Action: lookup_fact\nAction Input: Paris weather\n<|im_start|>user\nObservation: x",
            Action("lookup_fact", "Paris weather"),
            "<|im_start|>user\nObservation: x",
        ),
        (
            "The capital of France is Paris.<|eot_id|>",
            FinalAnswer("The capital of France is Paris.", None, True),
            "<|eot_id|>",
        ),
        (
            "<think>easy</think>\nFinal Answer: 4<｜end▁of▁sentence｜>",
            FinalAnswer("4"),
            "<｜end▁of▁sentence｜>",
        ),
        (
            "Action: s\nAction Input: Paris\nObserv<|im_end|>",
            Action("s", "Paris"),
            "\nObserv<|im_end|>",
        ),
    ],
)
def test_an_end_of_turn_token_is_cut_with_what_follows(
    text: str, expected: Step, discarded: str
) -> None:
    step = _parsed(text)
    assert step == expected
    assert step.discarded_text == discarded
    if isinstance(expected, FinalAnswer):
        assert step.implicit == expected.implicit


@pytest.mark.parametrize(
    ("text", "expected", "discarded"),
    [
        (
            'Action: search Action Input: {"search": "<|im_start|>"}',
            Action("search", {"search": "<|im_start|>"}),
            "",
        ),
        (
            'Action: run\nAction Input: {"code": "print(1)\n# emits </s>\nx = 2"}\n'
            "Observation: done",
            Action("run", {"code": "print(1)\n# emits </s>\nx = 2"}),
            "\nObservation: done",
        ),
        (
            'Action: s\nAction Input: {"<|im_end|>": null}\nObservation',
            Action("s", {"<|im_end|>": None}),
            "\nObservation",
        ),
        (
            'Action: s\nAction Input: {"q": "a<|im_end|>',  # it never closes: the turn ended
            Action("s", {"q": "a"}),
            "<|im_end|>",
        ),
    ],
)
def test_a_turn_token_inside_the_json_of_an_action_input_is_argument_text(
    text: str, expected: Step, discarded: str
) -> None:
    step = _parsed(text)
    assert step == expected
    assert step.discarded_text == discarded


def test_an_end_of_turn_token_ends_a_thought() -> None:
    step = _parsed("Thought: I think it is 4.<|im_end|>")
    assert isinstance(step, FormatError) and step.problem == "thought_only"
    assert "“I think it is 4.”" in step.message and "im_end" not in step.message


def test_control_tokens_that_open_no_turn_stay_text() -> None:
    text = (
        'Thought: call it\n<tool_call>\n{"name": "calculator", "arguments": {"x": 1}}\n</tool_call>'
    )
    assert _parsed(text) == Action("calculator", {"x": 1}, "call it")
    assert _parsed("Final Answer: use <b>bold</b>") == FinalAnswer("use <b>bold</b>")


# --- a keyword in the middle of a line yields to a later line of its kind ------------------

CALC = {"expression": "6*7"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Thought: I'll use the calculator first and then give the Final Answer: the product.\n"
            'Action: calculator\nAction Input: {"expression": "6*7"}',
            Action(
                "calculator",
                CALC,
                "I'll use the calculator first and then give the Final Answer: the product.",
            ),
        ),
        (
            "Thought: I need to decide on the next Action: I will use the calculator.\n"
            'Action: calculator\nAction Input: {"expression": "6*7"}',
            Action(
                "calculator",
                CALC,
                "I need to decide on the next Action: I will use the calculator.",
            ),
        ),
        (
            "Thought: The previous Action: search returned nothing, so I will compute.\n"
            'Action: calculator\nAction Input: {"expression": "6*7"}',
            Action(
                "calculator",
                CALC,
                "The previous Action: search returned nothing, so I will compute.",
            ),
        ),
        (
            "Thought: The Action: search failed. Final Answer: unknown, so compute.\n"
            'Action: calculator\nAction Input: {"expression": "6*7"}',
            Action(
                "calculator", CALC, "The Action: search failed. Final Answer: unknown, so compute."
            ),
        ),
        (
            "Thought: I should now write the Final Answer: 42\nFinal Answer: 42",
            FinalAnswer("42", "I should now write the Final Answer: 42"),
        ),
    ],
)
def test_a_keyword_mid_sentence_is_prose_when_a_line_of_its_kind_follows(
    text: str, expected: Step
) -> None:
    assert _parsed(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the one-line forms some models write, which the mid-line keywords are for
        (
            'Thought: I need to search. Action: search\nAction Input: {"q": "x"}',
            Action("search", {"q": "x"}, "I need to search."),
        ),
        (
            'Thought: x\nAction: calculator, Action Input: {"expression": "6*7"}',
            Action("calculator", CALC, "x"),
        ),
        ("Action:  foo Action Input: bar", Action("foo", "bar")),
        (
            'Thought: t Action: s Action Input: {"q": "x"} Observation: y',
            Action("s", {"q": "x"}, "t"),
        ),
        # a one-line step, then a hallucinated continuation written line by line: the first
        (
            'Thought: t Action: s Action Input: {"q": "x"}\nObservation: y\nThought: more\n'
            "Action: b\nAction Input: {}",
            Action("s", {"q": "x"}, "t"),
        ),
        (
            'Thought: t Action: s Action Input: {"q": "x"}\nAction: b\nAction Input: {}',
            Action("s", {"q": "x"}, "t"),
        ),
        ("Thought: I know. Final Answer: 42\nThought: done", FinalAnswer("42", "I know.")),
    ],
)
def test_a_keyword_mid_line_still_counts_when_no_line_of_its_kind_follows(
    text: str, expected: Step
) -> None:
    assert _parsed(text) == expected


# --- an observation the model wrote under another label ends the call ----------------------


@pytest.mark.parametrize(
    ("text", "expected", "discarded"),
    [
        (
            "Thought: add\nAction: calculator\nAction Input: 2+2\nObservation 4\nFinal Answer: 4",
            Action("calculator", "2+2", "add"),
            "Observation 4\nFinal Answer: 4",
        ),
        (
            "Thought: hmm\nAction: lookup_fact\nAction Input: capital of France\nObservation\n"
            "Paris\nThought: I now know\nFinal Answer: Paris",
            Action("lookup_fact", "capital of France", "hmm"),
            "Observation\nParis\nThought: I now know\nFinal Answer: Paris",
        ),
        (
            "Action: lookup_fact\nAction Input: capital of France\nObservations: Paris\n"
            "Final Answer: Paris",
            Action("lookup_fact", "capital of France"),
            "Observations: Paris\nFinal Answer: Paris",
        ),
        (
            "Action: lookup_fact\nAction Input: capital of France\n\nObservation (simulated): "
            "Paris\nFinal Answer: Paris",
            Action("lookup_fact", "capital of France"),
            "Observation (simulated): Paris\nFinal Answer: Paris",
        ),
        (
            "Action: calculator\nAction Input: 2+2\nTool Output: 4\nThought: done\nFinal Answer: 4",
            Action("calculator", "2+2"),
            "Tool Output: 4\nThought: done\nFinal Answer: 4",
        ),
        (
            "Action: calculator\nAction Input: 2+2\n**Tool result:** 4",
            Action("calculator", "2+2"),
            "**Tool result:** 4",
        ),
        (
            "行动：lookup_fact\n行动输入：法国首都\n观察结果：巴黎\n最终答案：巴黎",
            Action("lookup_fact", "法国首都"),
            "观察结果：巴黎\n最终答案：巴黎",
        ),
        (
            'Action: lookup_fact\nAction Input: {"query": "x"}\nObservations: Paris',
            Action("lookup_fact", {"query": "x"}),
            "Observations: Paris",
        ),
        (
            "Action: calculator(2+2)\nObservation 4\nFinal Answer: 4",
            Action("calculator", "2+2"),
            "Observation 4\nFinal Answer: 4",
        ),
    ],
)
def test_an_observation_line_without_its_label_ends_the_input_and_is_cut(
    text: str, expected: Step, discarded: str
) -> None:
    step = _parsed(text)
    assert step == expected
    assert step.discarded_text == discarded
    assert "trailing_text" not in step.repairs  # cut, not read past


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'Action: note\nAction Input: {"text": "one\nObservations are welcome"}',
            Action("note", {"text": "one\nObservations are welcome"}),
        ),
        (
            "Action: note\nAction Input: line one\nObservational data follows",
            Action("note", "line one\nObservational data follows"),
        ),
        (
            "Thought: the Observation 4 above is old\nFinal Answer: 5",
            FinalAnswer("5", "the Observation 4 above is old"),
        ),
    ],
)
def test_observation_words_elsewhere_stay_text(text: str, expected: Step) -> None:
    assert _parsed(text) == expected


# --- an Action Input before any Action line decides: a broken call, not an answer -----------


@pytest.mark.parametrize(
    ("text", "discarded"),
    [
        (
            'Thought: Let me search.\nAction Input: {"query": "population of Oslo"}\n'
            "Observation: 709,000\nThought: I now know.\nFinal Answer: 709,000",
            "Observation: 709,000\nThought: I now know.\nFinal Answer: 709,000",
        ),
        (
            '思考：我需要查询。\n行动输入：{"query": "奥斯陆人口"}\n观察：70万\n最终答案：70万',
            "观察：70万\n最终答案：70万",
        ),
        ('Action Input: {"q": "x"}\nFinal Answer: x', "Final Answer: x"),
        (
            "Thought: t\nAction Input: Oslo\nObservation 709,000\nFinal Answer: 709,000",
            "Observation 709,000\nFinal Answer: 709,000",
        ),
    ],
)
def test_an_action_input_with_no_action_before_it_is_an_error_whatever_follows(
    text: str, discarded: str
) -> None:
    step = _parsed(text)
    assert isinstance(step, FormatError), step
    assert step.problem == "input_without_action"
    assert step.lang == ("zh" if "行动输入" in text else "en")
    assert step.discarded_text == discarded


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the same shape with an Action line, no input: already an error naming the tool
        (
            "Thought: I need the population of Oslo.\nAction: lookup_fact\nObservation: 709,000\n"
            "Final Answer: 709,000",
            "no_input",
        ),
        ("Action: None\nAction Input: N/A", "no_action"),
        ("Action:\nAction Input: {}", "no_tool"),
    ],
)
def test_an_action_input_after_an_action_line_is_judged_with_it(text: str, expected: str) -> None:
    step = _parsed(text)
    assert isinstance(step, FormatError) and step.problem == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Final Answer: 42\nAction Input: {}", FinalAnswer("42")),
        ("Action Input:\nFinal Answer: 42", FinalAnswer("42")),  # an empty keyword decides nothing
        ('Action\nsearch\nAction Input: {"q": 1}', Action("search", {"q": 1})),
    ],
)
def test_what_comes_before_an_unasked_action_input_still_decides(text: str, expected: Step) -> None:
    assert _parsed(text) == expected


# --- an answer ends where the model goes on with the prompt's pattern, or closes its fence ---


@pytest.mark.parametrize(
    ("text", "expected", "discarded"),
    [
        (
            "Thought: I now know the final answer.\nFinal Answer: The answer is 4.\n\n"
            "Question: What is 3+3?\nThought: I should add.\nAction: calculator\n"
            'Action Input: {"expression": "3+3"}',
            FinalAnswer("The answer is 4.", "I now know the final answer."),
            "Question: What is 3+3?\nThought: I should add.\nAction: calculator\n"
            'Action Input: {"expression": "3+3"}',
        ),
        (
            "Final Answer: 4\nQuestion: and 3+3?\nThought: add",
            FinalAnswer("4"),
            "Question: and 3+3?\nThought: add",
        ),
        (
            "最终答案：4。\n\n问题：3+3 是多少？\n思考：我要加。",
            FinalAnswer("4。"),
            "问题：3+3 是多少？\n思考：我要加。",
        ),
        (
            "```\nThought: I know it.\nFinal Answer: 42\n```",
            FinalAnswer("42", "I know it."),
            "```",
        ),
        ("Final Answer: 42\n```\n", FinalAnswer("42"), "```\n"),
        ("Final Answer: 4\n```\nThought: more", FinalAnswer("4"), "```\nThought: more"),
    ],
)
def test_an_answer_ends_before_a_new_question_or_the_fence_around_the_reply(
    text: str, expected: Step, discarded: str
) -> None:
    step = _parsed(text)
    assert step == expected
    assert step.discarded_text == discarded


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Final Answer: Q and A:\nQuestion: x\nAnswer: y", "Q and A:\nQuestion: x\nAnswer: y"),
        ("Final Answer:\nQuestion: what is it?\nThought: t", "Question: what is it?"),
        (
            'Thought: I can explain.\nFinal Answer: Here is the code:\n```python\nprint("hi")\n```',
            'Here is the code:\n```python\nprint("hi")\n```',
        ),
        ("Final Answer:\n```", "```"),
    ],
)
def test_questions_and_fences_of_the_answer_itself_stay(text: str, answer: str) -> None:
    step = _parsed(text)
    assert isinstance(step, FinalAnswer) and step.answer == answer


# --- Action Input repairs: comments, curly quotes, the model's words after a plain string ----


@pytest.mark.parametrize(
    ("text", "expected", "repairs"),
    [
        (
            'Action: calculator\nAction Input: {\n  "expression": "2+2"  // simple addition\n}',
            Action("calculator", {"expression": "2+2"}),
            ("comments",),
        ),
        (
            'Action: calculator\nAction Input: {\n  # the sum\n  "expression": "2+2"\n}',
            Action("calculator", {"expression": "2+2"}),
            ("comments",),
        ),
        (
            'Action: search\nAction Input: {\n  "q": "x", // the query\n  "n": 2, # how many\n}',
            Action("search", {"q": "x", "n": 2}),
            ("comments", "trailing_comma"),
        ),
        (
            'Action: fetch\nAction Input: {"url": "https://x.org/#top", "tag": "#1"}',
            Action("fetch", {"url": "https://x.org/#top", "tag": "#1"}),
            (),
        ),
        (
            "Action: lookup_fact\nAction Input: {“query”: “capital of Peru”}",
            Action("lookup_fact", {"query": "capital of Peru"}),
            ("curly_quotes",),
        ),
        (
            "行动：lookup_fact\n行动输入：{“query”: “北京人口”}",
            Action("lookup_fact", {"query": "北京人口"}),
            ("curly_quotes",),
        ),
        (
            'Action: s\nAction Input: {"q": "he said “hi”", “n”: 1}',
            Action("s", {"q": "he said “hi”", "n": 1}),
            ("curly_quotes",),
        ),
        (
            "Thought: I will look it up.\nAction: lookup_fact\nAction Input: Paris weather\n\n"
            "I will wait for the result.",
            Action("lookup_fact", "Paris weather", "I will look it up."),
            ("trailing_text",),
        ),
        (
            'Action: lookup_fact\nAction Input: "Paris weather"\nThis will tell me the forecast.',
            Action("lookup_fact", "Paris weather"),
            ("quotes", "trailing_text"),
        ),
        (
            "Action: python_repl\nAction Input:\nimport math\nprint(math.pi)\n\n"
            "Let me see what it prints.",
            Action("python_repl", "import math\nprint(math.pi)"),
            ("trailing_text",),
        ),
    ],
)
def test_action_input_repairs_are_read_and_named(
    text: str, expected: Action, repairs: tuple[str, ...]
) -> None:
    step = _parsed(text)
    assert step == expected
    assert step.repairs == repairs
    assert step.discarded_text == ""


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (
            "Action: python_repl\nAction Input:\nimport math\n\nprint(math.pi)",
            "import math\n\nprint(math.pi)",
        ),
        (
            "Action: note\nAction Input: one\n\nThe second paragraph.",
            "one\n\nThe second paragraph.",
        ),
        ('Action: note\nAction Input: "Paris" weather\nmore', '"Paris" weather\nmore'),
        ('Action: note\nAction Input: "line one\nline two"', "line one\nline two"),
    ],
)
def test_plain_strings_keep_their_own_lines(text: str, value: str) -> None:
    step = _parsed(text)
    assert isinstance(step, Action) and step.input == value


# --- numbered steps read like unnumbered ones ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "1. Thought: I need to search.\n2. Action: lookup_fact\n"
            '3. Action Input: {"query": "x"}',
            Action("lookup_fact", {"query": "x"}, "I need to search."),
        ),
        (
            "1. **Thought:** I need to compute.\n2. **Action:** calculator\n"
            '3. **Action Input:** {"expression": "2+2"}',
            Action("calculator", {"expression": "2+2"}, "I need to compute."),
        ),
        (
            '1. 思考：我需要搜索。\n2. 行动：lookup_fact\n3. 行动输入：{"query": "x"}',
            Action("lookup_fact", {"query": "x"}, "我需要搜索。"),
        ),
        ("1) Thought: I know it.\n2) Final Answer: 42", FinalAnswer("42", "I know it.")),
        (
            '  10. Action: s\n  11. Action Input: {"q": 1}\n  12. Observation: 2',
            Action("s", {"q": 1}),
        ),
    ],
)
def test_numbered_steps_read_like_unnumbered_ones(text: str, expected: Step) -> None:
    assert _parsed(text) == expected


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        (
            "Final Answer: Here are the steps:\n1. Preheat the oven.\n2. Bake for 20 minutes.",
            "Here are the steps:\n1. Preheat the oven.\n2. Bake for 20 minutes.",
        ),
        ("Final Answer: It took\n2000. Thoughts differ.", "It took\n2000. Thoughts differ."),
    ],
)
def test_numbered_lines_that_hold_no_keyword_stay_in_the_answer(text: str, answer: str) -> None:
    step = _parsed(text)
    assert isinstance(step, FinalAnswer) and step.answer == answer
