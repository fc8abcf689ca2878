"""Properties of parse(): it never raises, discarded_text is always a suffix, the canonical
rendering round-trips in both languages, and noisy renderings still recover the step.
Strategies come from textreact.testing, the same ones `textreact fuzz` uses."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from parse_support import near_canonical

from textreact.grammar import LANGUAGES, render_step
from textreact.parser import _fast, _Reader, parse
from textreact.steps import Action
from textreact.testing import completions, matches, outcome, steps

#: Text built from the protocol's own pieces finds more corners than uniform text does.
_PIECES = st.sampled_from(
    ["Thought:", "Action:", "Action Input:", "Observation:", "Final Answer:", "行动：", "\n",
     " ", "{", "}", "[", "]", '"', "'", ",", ":", "```", "```json\n", "<think>", "</think>",
     "**", "#", "search", "None", "True", "\\", "Observ", "\x00", "\ud800", "(", ")", "x=1",
     "f(", "b'x'", "1e999", "{1, 2}", "...", "1j", "(1,)", "9" * 400, "\u2028", "\xa0", "Obs:",
     '{"action": "a", "action_input": {}}', "## ", "1. "]
)  # fmt: skip
hostile_texts = st.one_of(st.text(), st.lists(_PIECES, max_size=40).map("".join))


@given(hostile_texts)
def test_parse_never_raises_and_discards_a_suffix(text: str) -> None:
    step = parse(text)
    assert step.kind in {"action", "final", "error"}
    assert text.endswith(step.discarded_text)
    if step.kind == "error":
        assert step.message and step.hint
    if step.kind == "action":  # every input is JSON, and the same after a round trip
        assert json.loads(json.dumps(step.input, allow_nan=False)) == step.input


@given(steps(), st.sampled_from(LANGUAGES))
def test_canonical_rendering_round_trips(step: object, lang: str) -> None:
    parsed = parse(render_step(step, lang))
    assert parsed == step
    assert parsed.discarded_text == ""


@given(completions("hallucinated_observation"))
def test_a_hallucinated_continuation_is_discarded(case: object) -> None:
    step = parse(case.text)
    assert matches(case.expected, outcome(step)), step
    assert step.discarded_text and case.text.endswith(step.discarded_text)


@given(completions("partial_stop"))
def test_a_stop_word_residue_is_not_input(case: object) -> None:
    step = parse(case.text)
    assert matches(case.expected, outcome(step)), step


@given(completions("mixed"))
def test_noisy_renderings_recover_the_step(case: object) -> None:
    """Two to four noise families at once: markdown, case, full-width colons, Chinese keywords,
    prose before and after, fences, Python dicts, think blocks, a hallucinated tail…
    (The fuzz kit's ground truth has no thought for chatter before the first keyword, which
    the parser keeps as the thought, so tool, input and answer are compared.)"""
    step = parse(case.text)
    assert matches(case.expected, outcome(step)), step


@given(steps().filter(lambda s: isinstance(s, Action)), st.sampled_from(["", "\n", " "]))
def test_one_line_rendering_recovers_the_action(step: Action, glue: str) -> None:
    one_line = " ".join(render_step(step).split("\n"))
    assert matches(step, outcome(parse(one_line + glue)))


def _everything(step: object) -> tuple:
    return (
        step,
        step.discarded_text,
        getattr(step, "raw_input", None),
        getattr(step, "repairs", None),
    )


@given(steps(), st.sampled_from(["", "\n", " \n", "\nObserv"]))
def test_fast_path_agrees_with_the_general_reader(step: object, tail: str) -> None:
    text = render_step(step) + tail
    fast = _fast(text)
    if fast is not None:
        assert _everything(fast) == _everything(_Reader(text).step())


@pytest.mark.parametrize(
    "text",
    [
        'Thought: **bold** ok\nAction: s\nAction Input: {"q": 1}',
        'Thought: __under__ line\nAction: s\nAction Input: {"q": 1}',
    ],
)
def test_markup_that_opens_a_value_belongs_to_the_value(text: str) -> None:
    fast = _fast(text)
    assert fast is not None and fast.thought.startswith(("**bold**", "__under__"))
    assert _everything(fast) == _everything(_Reader(text).step())


_LABELS = ["Thought:", "Action:", "Action Input:", "Observation:", "Final Answer:", "思考：",
           "行动：", "行动输入：", "最终答案：", "Observed:"]  # fmt: skip
_VALUE_PIECES = (
    ["search", "x", " ", "  ", "\t", ":", "：", "<", "</think>", "**", "__", "{", "}", '"q"',
     '"x"', ": ", ", ", "None", "final_answer", "\x00", "\u200b", "Answer:", "\n", "1"]
)  # fmt: skip
_near_canonical = near_canonical(_LABELS, _VALUE_PIECES)


@given(_near_canonical, st.sampled_from(["", "\n", "\n\n", " "]))
def test_fast_path_agrees_on_near_canonical_texts(text: str, tail: str) -> None:
    """Texts built from the canonical labels with awkward values: wherever the fast path
    answers, it gives the general reader's step exactly."""
    text += tail
    fast = _fast(text)
    if fast is not None:
        assert _everything(fast) == _everything(_Reader(text).step())


#: Keyword lines as models decorate them, and the lines the fast path must treat as prose.
_DECORATED = ["Thought:", "Action:", "Action Input:", "Observation:", "Final Answer:", "行动：",
              "**Thought:**", "**Action**:", "> Action:", "- Action Input:", "1. Thought:",
              "## Final Answer:", "THOUGHT :", "action_input:", "ActionInput：", "Thought 1:",
              "Final_Answer:", "Answer:", "Action:**", "Thought", "## Action", "Obs:",
              "Question:", "思考：", "最终答案：", "行动输入：", "   Action:",
              "\tFinal Answer:"]  # fmt: skip
_LINE_PIECES = st.sampled_from(
    ["search", "x", "I will look it up.", " ", "\t", ":", "：", "<", "{", "}", '"q": 1', "[",
     "]", "```", "```json", "Action: y", " Final Answer: z", "None", "final_answer", "\x00",
     "\xa0", "Obs", "Observation", "question: q", "1.", "**", "__", '{"q": "Action: a"}',
     '"', "'", "=", "query=1", "(", ")", "\u2028", "</think>", "<|im_end|>"]
)  # fmt: skip
_layouts = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(_DECORATED), st.lists(_LINE_PIECES, max_size=5).map("".join)),
        st.tuples(st.just(""), st.lists(_LINE_PIECES, max_size=5).map("".join)),
    ),
    min_size=1,
    max_size=6,
).map(lambda lines: "\n".join(label + " " * (len(value) % 2) + value for label, value in lines))


_value = st.lists(_LINE_PIECES, max_size=4).map("".join)


def _label(word: str) -> st.SearchStrategy[str]:
    """`word` as a keyword line opens, decorated as models do, or now and then another
    line's label."""
    forms = ["{}:", "**{}:**", "**{}**:", "> {}:", "1. {}:", "- {}:", "## {}:", "{} :", "{}：",
             "{}:**", "  {}:", "{} 1:"]  # fmt: skip
    cased = st.sampled_from([word, word.upper(), word.lower(), word.replace(" ", "_")])
    return st.one_of(
        st.tuples(st.sampled_from(forms), cased).map(lambda p: p[0].format(p[1])),
        st.sampled_from(_DECORATED),
    )


#: The fast path's own shapes, each part drawn with awkward pieces: prose, a thought, then an
#: action with an input over one or more lines, or an answer over one or more lines.
_shaped = st.tuples(
    st.lists(_value, max_size=2).map(lambda lines: "".join(f"{line}\n" for line in lines)),
    st.one_of(st.just(""), st.tuples(_label("Thought"), _value).map(" ".join).map("{}\n".format)),
    st.one_of(
        st.tuples(_label("Action"), st.sampled_from(["search", "get.time", "None", "final_answer"]),
                  _label("Action Input"), st.lists(_value, min_size=1, max_size=3))
        .map(lambda p: f"{p[0]} {p[1]}\n{p[2]} " + '\n  "'.join(p[3])),
        st.tuples(_label("Final Answer"), st.lists(_value, min_size=1, max_size=3))
        .map(lambda p: f"{p[0]} " + "\n".join(p[1])),
    ),
).map("".join)  # fmt: skip


#: What may stand before a reply: reasoning closed (its keywords are none of the reply's),
#: closed with its opening tag left in the prompt, never closed, or after a word.
_REASONING = ["", "<think>Action: x</think>\n", "r</think>", "<think>", " <think>r</think>"]


@given(
    st.one_of(_layouts, _shaped, completions("mixed").map(lambda case: case.text)),
    st.sampled_from(["", "\n", "\n\n", " ", "\nObs", "\nObservation: o", "\n\nThought: t"]),
    st.sampled_from(_REASONING),
)
def test_fast_path_agrees_on_decorated_layouts(text: str, tail: str, head: str) -> None:
    """Prose, decorated keyword lines, values over several lines, continuations, reasoning
    before them, and the fuzz kit's noise two to four families at once: wherever the fast
    path (`keywords.layout`) answers, it gives the general reader's step exactly."""
    text = head + text + tail
    fast = _fast(text)
    if fast is not None:
        assert _everything(fast) == _everything(_Reader(text).step())
