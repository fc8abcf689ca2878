"""One reply of the upstream -> what the proxy answers: a call of one of the request's own
tools with repaired, validated arguments, an answer, or a problem that earns one re-ask.

The same judgement serves a whole reply and a streamed one, so the two can never disagree
about what a reply means. What a reply is (answer, call, format error, cut, filtered) is
decided by `textreact.verdict.judge`, the function the loop reads its turns with, so serve and
the loop cannot drift apart: an action the model completed before the length limit cut what
followed is a call here as it is in the loop. What serve adds is what it does with the
verdict: a format error, an unknown tool, arguments that do not fit the schema, a reply that
breaks `tool_choice`, or a call cut by the length limit is answered with the observation the
loop would send, once; a second failure comes back as plain content with a note, never as a
call the model did not make. A cut answer is the one verdict serve treats otherwise than the
loop: the client gets it as content with finish_reason "length", as OpenAI sends a cut reply,
and its own loop decides (the loop re-asks). A call that repeats an earlier one of the
conversation is answered once with the earlier result, as the loop answers it, unless its
tool is one the server was told may change (`--uncached-tool`, the counterpart of the loop's
`@tool(cache=False)`): then it goes straight to the client.

Where the client allows several calls in one reply (`parallel_tool_calls`), each call is
judged as a lone one is, in the order written, and the reply is `Calls`. One that cannot be
used makes the whole reply a problem, re-asked once with a note that names it (its number and
tool) and what was wrong with it; the calls that were fine are not sent alone, since the
model may write them otherwise once it has read the note."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any, Union

from textreact import grammar, observation, templates, verdict
from textreact.models import Message
from textreact.protocols.interface import Reading
from textreact.protocols.text import TextProtocol
from textreact.serve.answers import AnswerFormat
from textreact.steps import Action, Completion, FinalAnswer, FormatError, Step, ToolResult
from textreact.tools import Tool, ToolBox
from textreact.untrusted import defuse

#: Longest problem description shown in a note, in characters.
_PROBLEM_CHARS = 300


@dataclass(frozen=True)
class Call:
    """The reply calls one of the request's tools with arguments that fit its schema."""

    tool: Tool
    arguments: dict[str, Any]
    thought: str | None = None
    repairs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Calls:
    """The reply calls several of the request's tools at once, each as a lone `Call` is
    checked, in the order written (the client allows parallel calls)."""

    calls: tuple[Call, ...]

    @property
    def thought(self) -> str | None:
        """The thoughts written before the calls, one a line."""
        return "\n".join(call.thought for call in self.calls if call.thought) or None


def calls_of(verdict: Call | Calls) -> tuple[Call, ...]:
    """The calls a call verdict makes, one or several, in order: what an API's reply lists."""
    return verdict.calls if isinstance(verdict, Calls) else (verdict,)


@dataclass(frozen=True)
class Answer:
    """The reply is content for the client (an answer, or a failed reply shown with a note)."""

    text: str
    thought: str | None = None
    finish_reason: str = "stop"
    #: Why the content is not what the model answered as such (the unread note); None if it is.
    note: str | None = None


@dataclass(frozen=True)
class Problem:
    """The reply cannot be used as it is: `observation` is what the re-ask tells the model."""

    observation: str
    #: The problem in one line, for the note when the re-ask fails too.
    summary: str
    #: The reply as kept in the conversation (what the model is shown it wrote).
    kept: str
    #: What the client gets as content if it comes to that.
    shown: str
    thought: str | None = None
    #: A call that repeats an earlier one: asked once to use the earlier result, it is
    #: passed on if the model insists (the client's loop has its own limits); with the
    #: other calls of its reply, where it made several.
    call: Call | Calls | None = None
    #: Why the upstream stopped this reply ("length": cut by the token limit).
    finish_reason: str = "stop"


Verdict = Union[Call, Calls, Answer, Problem]  # noqa: UP007 (a runtime alias works on 3.10)


class Judge:
    """The judgement of replies for one request: its tools, its `tool_choice`, its language."""

    def __init__(
        self,
        tools: Sequence[Tool],
        tool_choice: str = "auto",
        lang: str = "en",
        *,
        earlier: Sequence[tuple[str, dict[str, Any] | str, str]] = (),
        answer_format: AnswerFormat | None = None,
        limit: int | None = None,
        uncached: Collection[str] = (),
        parallel_calls: bool = False,
    ) -> None:
        self.tools = tuple(tools)
        #: The tools whose repeated calls go straight through (`ServeConfig.uncached_tools`).
        self.uncached = frozenset(uncached)
        #: The characters an earlier result is cut to when a repeated call is shown it again,
        #: as the conversation showed it (`--observation-limit`); None: whole.
        self.limit = limit
        #: What a final answer must be (`response_format`); None: any text.
        self.answer_format = answer_format
        self.box = ToolBox(self.tools)
        self.tool_choice = tool_choice
        self.lang = lang
        #: Whether a reply may make several calls (`Calls`).
        self.parallel_calls = parallel_calls
        self.protocol = TextProtocol(examples=[], parallel_calls=parallel_calls)
        #: Each earlier call with a result, numbered from 1, as the request holds it.
        self._earlier = list(enumerate(earlier, 1))
        #: The earlier results, and whether a placeholder answer was refused in this request,
        #: for the judgement of a placeholder answer (`verdict.judge`).
        self._said = verdict.Earlier(tuple(result for _, _, result in earlier))
        #: By tool name, its earlier calls by their identity: (step number, result).
        self._repeats: dict[str, dict[tuple[str, str], tuple[int, str]]] = {}

    def read(self, completion: Completion) -> Verdict:
        """What the reply means for this request."""
        reading = self.protocol.read(completion, self.tools)
        if len(reading.steps) > 1 and completion.finish_reason != "content_filter":
            return self._several(reading, completion.finish_reason)
        return self.judge(reading.steps[0], reading.text, completion.finish_reason)

    def _several(self, reading: Reading, finish_reason: str) -> Calls | Problem:
        """Several calls, each judged alone. The first that cannot be used, else the first
        that repeats an earlier call (passed on with the others if the model insists), is
        the reply's problem, its note naming it by number and tool."""
        verdicts = [self.judge(step, reading.text, finish_reason) for step in reading.steps]
        made = [v if isinstance(v, Call) else getattr(v, "call", None) for v in verdicts]
        calls = Calls(tuple(call for call in made if isinstance(call, Call)))
        problems = [(k, v) for k, v in enumerate(verdicts) if isinstance(v, Problem)]
        if not problems:  # a call's verdict is a Call or a Problem
            return calls
        unusable = [(k, v) for k, v in problems if v.call is None]
        k, problem = (unusable or problems)[0]
        name = getattr(reading.steps[k], "tool", None)
        which = f"{k + 1} ({name})" if name else str(k + 1)
        slots = {"call": which, "count": str(len(verdicts)), "problem": problem.observation}
        said = templates.note("call_of_several", self.lang, **slots)
        summary = f"call {which} of {len(verdicts)}: {problem.summary}"
        kept = reading.text
        insisted = None if unusable else calls
        return Problem(said, summary, kept, kept, calls.thought, insisted, finish_reason)

    def judge(self, step: Step, kept: str, finish_reason: str = "stop") -> Verdict:
        """What one parsed step means, `kept` being the reply minus what the parser cut."""
        thought = None if isinstance(step, FormatError) else step.thought
        ruling = verdict.judge(
            step, finish_reason, self.tool_choice, self.box, self.lang, this_turn=True,
            earlier=self._said,
        )  # fmt: skip
        if ruling.kind == "filtered":  # stopped by the upstream's filter: not re-asked
            return Answer(_shown(step, kept), thought, "content_filter")
        if ruling.kind == "cut":
            if isinstance(ruling.step, FinalAnswer):  # as OpenAI sends a cut answer, unchecked
                return Answer(ruling.step.answer, thought, "length")
            note = self.protocol.note("truncated", self.lang)
            return Problem(note, _one_line(note), kept, kept, thought, finish_reason="length")
        if ruling.kind == "format_error":
            assert isinstance(ruling.step, FormatError)
            if ruling.step.problem == "placeholder":  # the re-ask's may stand: see `judge`
                self._said = replace(self._said, refused=True)
            shown = kept if isinstance(step, FormatError) else _shown(step, kept)
            return self._problem(ruling.step, kept, shown, thought, finish_reason)
        if ruling.kind == "answer":
            assert isinstance(ruling.step, FinalAnswer)
            return self._answer(ruling.step.answer, kept, thought)
        assert isinstance(ruling.step, Action)
        action = ruling.step
        prepared = self.box.prepare(action.tool, action.input, self.lang)
        if isinstance(prepared, ToolResult):
            text = observation.observe(prepared, lang=self.lang)
            return Problem(text, _one_line(prepared.error or ""), kept, kept, thought)
        repairs = action.repairs + prepared.repairs
        call = Call(prepared.tool, prepared.arguments, thought, repairs)
        repeats = self._repeats_of(prepared.tool) if self._cached(prepared.tool) else {}
        if prepared.key in repeats:
            number, result = repeats[prepared.key]
            shown = defuse(result, self.limit)
            text = observation.repeated_call(prepared.tool.name, number, shown, self.lang)
            return Problem(text, _one_line(text), kept, kept, thought, call)
        return call

    def _cached(self, tool: Tool) -> bool:
        """Whether a repeated call of `tool` may be answered from the earlier result: not for
        a tool the server was told may change (`--uncached-tool`), as not in the loop for a
        `cache=False` one."""
        return tool.cache and tool.name not in self.uncached and "*" not in self.uncached

    def _repeats_of(self, tool: Tool) -> dict[tuple[str, str], tuple[int, str]]:
        """The earlier calls of `tool` by their identity (the first of each kept), validated
        when a call of that tool is first judged: most replies call a tool the conversation
        has not called, or none, and a framework resends every earlier call on every turn."""
        repeats = self._repeats.get(tool.name)
        if repeats is None:
            repeats = self._repeats[tool.name] = {}
            for number, (name, arguments, result) in self._earlier:
                if self.box.resolve(name) is not tool:
                    continue
                prepared = self.box.prepare(name, arguments, self.lang)
                if not isinstance(prepared, ToolResult):
                    repeats.setdefault(prepared.key, (number, result))
        return repeats

    def _answer(self, answer: str, kept: str, thought: str | None) -> Answer | Problem:
        """The answer, as the JSON `response_format` asks for when it asks for one."""
        if self.answer_format is None:
            return Answer(answer, thought)
        shaped, problem = self.answer_format.read(answer, self.lang)
        if problem is None:
            return Answer(shaped, thought)
        said = self.answer_format.reask(problem, self.lang)
        return Problem(said, _one_line(said), kept, answer, thought)

    def _problem(
        self, error: FormatError, kept: str, shown: str, thought: str | None, finish_reason: str
    ) -> Problem:
        text = self.protocol.explain(error, self.tools, self.lang, again=False)
        return Problem(text, _one_line(error.message), kept, shown, thought, None, finish_reason)

    def reask(self, messages: Sequence[Message], problem: Problem) -> list[Message]:
        """The conversation with the failed reply and the observation that answers it."""
        said = grammar.render_observation(problem.observation, self.lang)
        return [
            *messages,
            {"role": "assistant", "content": problem.kept},
            {"role": "user", "content": said},
        ]

    def give_up(self, problem: Problem) -> Answer | Call | Calls:
        """The content for a reply that failed its re-ask too: what the model wrote, and a
        note that says why it is text; a repeated call stays the call it is. A reply the token
        limit cut ends with "length", as OpenAI ends one."""
        if problem.call is not None:
            return problem.call
        note = templates.render("serve/unread.md", self.lang, {"problem": problem.summary})
        text = f"{problem.shown}\n\n{note}" if problem.shown.strip() else note
        reason = "length" if problem.finish_reason == "length" else "stop"
        return Answer(text, problem.thought, reason, note)


def _shown(step: Step, kept: str) -> str:
    return step.answer if isinstance(step, FinalAnswer) else kept


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _PROBLEM_CHARS else line[:_PROBLEM_CHARS] + " …"
