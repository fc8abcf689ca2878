"""The streaming committer and the judgement of one reply, without HTTP: however a reply is
split into deltas, what is sent as content is exactly the answer the whole reply holds, a call
is sent once and only when its arguments are complete and valid, and no thought leaks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from itertools import accumulate

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from textreact import grammar
from textreact.parser import SCAN_LIMIT, parse
from textreact.parsing.keywords import AS_BLANK, AS_NEWLINE, BLANKS
from textreact.serve import stream
from textreact.serve.reply import Chunks
from textreact.serve.request import request_tools
from textreact.serve.stops import stops_for
from textreact.serve.stream import Committer, events
from textreact.serve.turn import Answer, Call, Judge, Problem
from textreact.serve.upstream import Delta
from textreact.steps import Completion

from serve_support import CLOCK, WEATHER  # isort: skip

TOOLS = request_tools([WEATHER, CLOCK])

ANSWERS = [
    "Thought: easy.\nFinal Answer: It is 18 °C and sunny in Paris.",
    "Thought: two lines.\nFinal Answer: First line.\nSecond line, with Action words inside.",
    "**Final Answer:** Bold label, then the answer.",
    "Thought: x\nFinal Answer: 42\nObservation: hallucinated",
    "Final Answer: the answer is below\nAction: get_time\nAction Input: {}",
    "思考：很简单。\n最终答案：巴黎现在18度，天气晴朗。",
    "Just prose with no keyword at all.",
]
CALLS = [
    'Thought: I need it.\nAction: get_weather\nAction Input: {"city": "Paris"}',
    'Action: get_weather\nAction Input: {"city": "Paris", "days": 3}\nObservation: 18 C',
    'Thought: clock.\nAction: get_time\nAction Input: {"zone": "CET"}\n',
]


def _feed(reply: str, cuts: list[int], judge: Judge, *, show: bool = False) -> tuple:
    committer = Committer(judge, show_thoughts=show)
    events = []
    for end in [*sorted(set(cuts)), len(reply)]:
        events += committer.feed(reply[:end])
    verdict, left = committer.finish(reply, "stop")
    return verdict, events + left


def _content(events: list) -> str:
    return "".join(value for kind, value in events if kind == "content")


@given(st.sampled_from(ANSWERS), st.lists(st.integers(0, 120), max_size=30))
def test_streamed_content_is_exactly_the_answer_however_the_reply_is_split(reply, cuts) -> None:
    verdict, events = _feed(reply, [c for c in cuts if c <= len(reply)], Judge(TOOLS))
    assert isinstance(verdict, Answer)
    assert _content(events) == parse(reply).answer == verdict.text
    assert not [e for e in events if e[0] == "call"]
    thought = parse(reply).thought
    assert thought is None or thought not in _content(events)


@given(
    st.sampled_from(
        [
            "Thought: I now know the answer.\nFinal Answer: the answer",
            "Final Answer: The answer.\n\n",
            "思考：我现在知道答案了。\n最终答案：答案",
        ]
    ),
    st.lists(st.integers(0, 80), max_size=20),
)
def test_a_placeholder_answer_sends_nothing_however_the_reply_is_split(reply, cuts) -> None:
    """The format's placeholder is no answer (a format error the proxy re-asks), and no
    prefix of it went out as content before the reply ended."""
    verdict, events = _feed(reply, [c for c in cuts if c <= len(reply)], Judge(TOOLS))
    assert isinstance(verdict, Problem) and "placeholder" in verdict.observation
    assert events == []


@given(st.sampled_from(CALLS), st.lists(st.integers(0, 120), max_size=30))
def test_a_streamed_call_is_sent_once_with_the_whole_arguments(reply, cuts) -> None:
    verdict, events = _feed(reply, [c for c in cuts if c <= len(reply)], Judge(TOOLS))
    calls = [value for kind, value in events if kind == "call"]
    assert calls == [verdict] and isinstance(verdict, Call)
    assert verdict.arguments == parse(reply).input
    assert _content(events) == ""


def test_an_answer_streams_before_the_reply_ends() -> None:
    committer = Committer(Judge(TOOLS))
    reply = "Thought: t\nFinal Answer: It is eighteen degrees and sunny in Paris today"
    sent = [_content(committer.feed(reply[:end])) for end in range(0, len(reply) + 1, 8)]
    assert sum(1 for piece in sent if piece) > 3


def test_a_call_is_not_sent_while_its_arguments_are_incomplete_or_invalid() -> None:
    committer = Committer(Judge(TOOLS))
    partial = 'Action: get_weather\nAction Input: {"city": "Par'
    assert committer.feed(partial) == []
    assert committer.feed(partial + "is") == []  # the parser would repair it: not yet
    invalid = Committer(Judge(TOOLS))
    assert invalid.feed('Action: get_weather\nAction Input: {"days": "x"}\n') == []
    verdict, left = invalid.finish('Action: get_weather\nAction Input: {"days": "x"}\n', "stop")
    assert isinstance(verdict, Problem) and left == []


def test_a_call_is_sent_as_soon_as_its_input_line_ends() -> None:
    committer = Committer(Judge(TOOLS))
    events = committer.feed('Thought: go\nAction: get_time\nAction Input: {"zone": "CET"}\nObs')
    assert [kind for kind, _ in events] == ["reasoning", "call"]
    assert (
        committer.feed(
            'Thought: go\nAction: get_time\nAction Input: {"zone": "CET"}\nObservation: 1'
        )
        == []
    )


def test_show_thoughts_sends_the_thought_as_content_first() -> None:
    _, events = _feed(ANSWERS[0], [], Judge(TOOLS), show=True)
    assert _content(events) == "easy.\n\nIt is 18 °C and sunny in Paris."
    assert events[0] == ("reasoning", "easy.")


@pytest.mark.parametrize("choice", ["required", "get_weather"])
def test_no_content_streams_when_a_call_is_required(choice: str) -> None:
    verdict, events = _feed(ANSWERS[0], list(range(0, 60, 5)), Judge(TOOLS, choice))
    assert isinstance(verdict, Problem) and events == []


def test_a_call_under_tool_choice_none_is_a_problem() -> None:
    verdict, events = _feed(CALLS[0], list(range(0, 80, 7)), Judge(TOOLS, "none"))
    assert isinstance(verdict, Problem) and events == []


class _Reparsing(Committer):
    """The oracle: every growth of the settled text is read by a parse of all of it."""

    def _run_on(self, text: str, settled: int) -> None:
        return None


def _streamed(committer: Committer, reply: str, ends: list[int]) -> tuple:
    """Each feed's events, then the finish, the answer sent and whether it was answering."""
    fed = [committer.feed(reply[:end]) for end in [*sorted(set(ends)), len(reply)]]
    return fed, committer.finish(reply, "stop"), committer.sent, committer.answering


#: Pieces of replies rich in what the parser reads specially: labels in both languages, with
#: and without colons, line breaks of each kind, fences, think tags, end-of-turn tokens, the
#: starts of stop residues, headings, bold, list markers, blanks, and plain words, some
#: longer than the line length the committer holds back.
PIECES = [
    "Final Answer:", "Final Answer: ", "Action:", "Action Input:", "Observation:", "Thought:",
    "Question:", "Answer:", "final answer", "Final", " Answer", "Action", "Obs", "obs", "ob",
    "serv", "ation", "思考：", "最终答案：", "行动：", "观察", "问题：", "\n", "\n", "\n\n",
    "\u2028", "\r", "\t", "\xa0", "```", "`", "<think>", "</think>", "<|im_end|>", "<", ">",
    ":", "：", " ", "  ", "*", "**", "__", "#", "## ", "- ", "1. ", "{", "}", '"', "word",
    " word", "two words", "Paris is", " sunny", "x", "lorem ipsum dolor sit amet",
    "the capital of France is Paris, ", "ſ", "K",
]  # fmt: skip
OPENINGS = ["Final Answer: ", "Thought: t\nFinal Answer:", "<think>r</think>Final Answer: ", ""]


@given(
    st.sampled_from(OPENINGS),
    st.lists(st.sampled_from(PIECES), max_size=40),
    st.lists(st.integers(0, 400), max_size=10),
)
# a line that may yet be a stop residue (`Observ`), a heading, or a second bare Final Answer
@example("Final Answer: ", ["x", "\n", " " * 24 + "ob", "s"], [])
@example("Final Answer: ", ["x", "\n", "##" + " " * 20 + "final", " answer"], [])
@example("Action\nNone\nAction Input: x\nFinal Answer: ", ["y z", "\n", "final answer\n", "x"], [])
# a think block left open, and answers that are a pseudo-tool's input
@example("Final Answer: ", ["two words", " <think>", "\n", "lorem ipsum dolor sit amet", " x"], [])
@example("Action: final_answer\nAction Input: ", ["x y", "\nFinal Answer: x y", " z"], [])
@example("Action: final_answer\nAction Input: ", ["'It is 42", "'"], [])
def test_a_plain_answer_is_read_without_a_parse_exactly_as_with_one(opening, pieces, cuts) -> None:
    """The events at every delta (each piece one, and a few cut anywhere), the verdict and what
    was sent are those of a committer that parses the whole settled text at every delta: the
    shortcut changes nothing but the cost."""
    reply = opening + "".join(pieces)
    ends = [cut for cut in cuts if cut <= len(reply)]
    ends += accumulate(map(len, pieces), initial=len(opening))
    judge = Judge(TOOLS)
    assert _streamed(Committer(judge), reply, ends) == _streamed(_Reparsing(judge), reply, ends)


def _long(words: int, every: int = 12) -> str:
    return "".join(
        ("\n" if i % every == every - 1 else " ") + f"word{i % 89}" for i in range(words)
    )


LONG = [
    "Thought: t\nFinal Answer:" + _long(4000),
    "Final Answer:" + _long(4000, every=10**6),
    "<think>" + "reasoning. " * 900 + "</think>\nFinal Answer:" + _long(4000),
    # a long run of empty keywords: past the scan limit the window starts at the last of them
    "Action: " * 700 + "Action Input: x\nFinal Answer:" + _long(3000),
    "Final Answer:" + _long(3000) + "\nAction: get_time\nAction Input: {}" + _long(400),
    "Final Answer:" + _long(3000) + "\n```\n" + _long(30) + "\n```" + _long(30),
    "Final Answer:" + _long(3000) + " <think>" + _long(30) + "</think>" + _long(30),
    "Final Answer:" + _long(3000) + "\nobs" + "\n" + "Question: q" + _long(30),
]


@pytest.mark.parametrize("reply", LONG, ids=range(len(LONG)))
def test_a_long_answer_reads_as_with_a_parse_at_every_delta(reply: str) -> None:
    """Around the scan limit too: where the window's start is set anew, where an answer
    starts to run to the end of the text unscanned, and with keywords, fences, think tags
    and residues past it."""
    ends = list(range(0, len(reply), 97))
    judge = Judge(TOOLS)
    assert _streamed(Committer(judge), reply, ends) == _streamed(_Reparsing(judge), reply, ends)
    assert len(reply) > SCAN_LIMIT


def test_a_long_plain_answer_streams_with_a_few_parses(monkeypatch) -> None:
    parses = []
    monkeypatch.setattr(stream, "parse", lambda text: parses.append(text) or parse(text))
    reply = LONG[0]
    _, events = _feed(reply, list(range(0, len(reply), 7)), Judge(TOOLS))
    assert _content(events) == parse(reply).answer
    assert len(parses) < 10


def _whole_line_settled(text: str) -> str:
    """The settled text as the committer read it before it read a line's end only."""
    start = text.rfind("\n") + 1
    line = text[start:]
    if len(line) < 24 and grammar.KEYWORD_LINE.match(line) is None:
        return text[:start]
    for size in range(min(len(line), 13), 0, -1):
        if any(label.startswith(line[-size:]) for label in stream._LABELS):
            return text[: len(text) - size]
    return text[: len(text) - (len(line) - len(line.rstrip()))]


@given(st.lists(st.sampled_from([*PIECES, " " * 30, "\x0b", "\u3000"]), max_size=30))
def test_the_settled_text_is_read_from_the_end_as_from_the_whole_line(pieces) -> None:
    text = "".join(pieces)
    assert text[: stream._settled(text)] == _whole_line_settled(text)


def test_inert_text_holds_no_character_the_parser_reads_as_a_blank_or_a_line_break() -> None:
    """`_inert` relies on str.isprintable to leave out each of them but the space."""
    assert [c for c in BLANKS + AS_BLANK + AS_NEWLINE if c.isprintable()] == [" "]


class _Upstream:
    """A streamed upstream reply in `pieces`, counting the pieces read."""

    def __init__(self, pieces: list[str]) -> None:
        self.pieces, self.read = pieces, 0

    async def __aiter__(self) -> AsyncIterator[Delta]:
        for piece in self.pieces:
            self.read += 1
            yield Delta(piece)

    async def aclose(self) -> None:
        pass


async def _never(messages):
    raise AssertionError("an answer is never asked for again")


def _sent(upstream: _Upstream, stops) -> tuple[str, str]:
    """(the content, the finish reason) of the SSE `events` makes of `upstream`."""

    async def sse() -> list[bytes]:
        chunks = Chunks("m")
        stream = events(upstream, judge=Judge(TOOLS), messages=[], reopen=_never, chunks=chunks,
                        stops=stops)  # fmt: skip
        return [part async for part in stream]

    lines = [line for part in asyncio.run(sse()) for line in part.decode().split("\n\n")]
    choices = [json.loads(line[6:])["choices"][0] for line in lines if line[6:7] == "{"]
    content = "".join(choice["delta"].get("content") or "" for choice in choices)
    return content, choices[-1]["finish_reason"]


@given(st.text("STOP x\n", max_size=60), st.lists(st.integers(0, 90), max_size=20))
@example("x ST", [27, 28])  # no stop: every piece is read
@example("x STOP and OPS, more", [27, 29, 31, 40, 44])  # STOP, split: read to its piece
def test_at_the_proxys_stop_the_upstream_is_read_no_further(tail, cuts) -> None:
    """The stop each new piece holds is found (with the end of the text before it, where it
    may begin), the reply is cut there as a whole reply is, and no piece after it is read."""
    stops = stops_for(("A1", "B2", "C3", "STOP", "OPS"))  # the proxy's to cut at: STOP, OPS
    reply = "Final Answer: It is 18 C. " + tail
    ends = sorted({min(cut, len(reply)) for cut in cuts} | {len(reply)})
    pieces = [reply[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]
    upstream = _Upstream(pieces)
    assert _sent(upstream, stops) == (parse(stops.cut(reply)[0]).answer, "stop")
    read = next((i + 1 for i, end in enumerate(ends) if stops.cut(reply[:end])[1]), len(pieces))
    assert upstream.read == read


# the judgement of whole replies


@pytest.mark.parametrize(
    ("reply", "choice", "reason", "expected"),
    [
        (CALLS[0], "auto", "stop", Call),
        (CALLS[0], "required", "stop", Call),
        (CALLS[0], "get_time", "stop", Problem),
        (CALLS[0], "none", "stop", Problem),
        (CALLS[0], "auto", "length", Problem),
        (ANSWERS[0], "auto", "length", Answer),
        (ANSWERS[0], "none", "stop", Answer),
        (ANSWERS[0], "required", "stop", Problem),
        ("Thought: hmm.", "auto", "stop", Problem),
        ('Action: get_weathers_today\nAction Input: {"city": "X"}', "auto", "stop", Problem),
    ],
)
def test_the_judgement_of_a_whole_reply(reply, choice, reason, expected) -> None:
    verdict = Judge(TOOLS, choice).read(Completion(reply, reason))
    assert type(verdict) is expected
    if isinstance(verdict, Answer):
        assert verdict.finish_reason == reason


def test_a_lenient_tool_name_resolves_to_the_requests_tool() -> None:
    verdict = Judge(TOOLS).read(Completion('Action: Get-Weather\nAction Input: {"city": "X"}'))
    assert isinstance(verdict, Call) and verdict.tool.name == "get_weather"


def test_giving_up_shows_the_models_text_with_a_note_in_each_language() -> None:
    for lang, marker in (("en", "[textreact:"), ("zh", "[textreact：")):
        judge = Judge(TOOLS, "auto", lang)
        problem = judge.read(Completion('Action: get_weather\nAction Input: {"days": "x"}'))
        assert isinstance(problem, Problem)
        answer = judge.give_up(problem)
        assert answer.text.startswith("Action: get_weather") and marker in answer.text
        assert answer.note is not None and answer.note in answer.text
