"""The loop, once, without I/O: a generator that asks its driver to call the model (`Ask`) and
to run a tool (`RunTool`), is sent the results, yields each `Turn` as it happens, and returns the
`Result`. Every stop rule lives here and nowhere else, the same for every protocol; the sync
and async drivers in `agent.py` only perform what it asks for.

One turn: render the request (protocol), ask, read the reply into steps (protocol), then act:
a cut-off reply is re-asked once (cut again, it ends the run, unless its answer began with a
whole result: `stated_result`), a final answer ends the run, a format error is explained and
counted, each action is prepared once, answered from memory when it repeats an earlier call
(whether that call worked or failed: a failed one, and the next request leaves its tool out;
twice in a row, and the next request offers no tool),
offered to `before_call`, run, and observed. An answer copied or echoed is sent back once; one
that then copies an example's answer again, or only restates the question, is the model lost,
and the question is asked once more alone, without tools (`closed_book`)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from textreact import copied, grounding, needs, observation, templates
from textreact.errors import ModelError
from textreact.memory import MemoryConfig
from textreact.parser import parse
from textreact.protocols import Reading
from textreact.steps import (
    Action,
    Completion,
    FinalAnswer,
    FormatError,
    Request,
    Result,
    StopReason,
    ToolResult,
    Turn,
    Usage,
)
from textreact.tools.box import Prepared
from textreact.tools.tool import NotFound

if TYPE_CHECKING:
    from textreact.models import Message
    from textreact.protocols import Protocol, Reading
    from textreact.tools import ToolBox

__all__ = ["Ask", "BeforeCall", "RunTool", "Settings", "run"]

#: A veto hook: (tool name, validated arguments) -> None to let the call run, or the text the
#: model reads instead of the result.
BeforeCall = Callable[[str, dict[str, Any]], "str | None"]


@dataclass(frozen=True)
class Ask:
    """Call the model with this request; send back `(Completion, seconds)` or the ModelError."""

    request: Request


@dataclass(frozen=True)
class RunTool:
    """Run this prepared call, formatting its value with `present` inside the tool's time
    bound; send back the ToolResult."""

    call: Prepared
    present: Callable[[Any], str]


#: Finish reasons that say a reply was cut off, so it is no answer as it stands.
_CUT = ("length", "content_filter")
#: The longest closed-book reply taken as an answer: it was asked for in a few words.
CLOSED_BOOK_CHARS = 500

Effect = Union[Ask, RunTool, Turn]  # noqa: UP007 (a runtime alias works on 3.10)
Reply = Union[tuple[Completion, float], ModelError]  # noqa: UP007


@dataclass(frozen=True)
class Settings:
    """What one run needs to know of its agent (the agent validated every field)."""

    protocol: Protocol
    toolbox: ToolBox
    max_steps: int
    max_format_errors: int
    best_effort: bool
    observation_limit: int
    memory: MemoryConfig
    lang: str
    before_call: BeforeCall | None = None
    #: "auto", "required" (a call before the first answer), "none", or a tool's name (that
    #: tool is called before the first answer).
    tool_choice: str = "auto"


def run(settings: Settings, question: str) -> Generator[Effect, Any, Result]:
    """The loop for one question; see the module docstring for the protocol of effects. A
    KeyboardInterrupt thrown in by the driver ends the run as "interrupted"."""
    return _Run(settings, question).run()


class _Run:
    """The state of one run: the turns so far and the counters the stop rules read."""

    def __init__(self, settings: Settings, question: str) -> None:
        self.s = settings
        self.tools = settings.toolbox.tools
        self.question = question
        self.opening = settings.protocol.opening(question, self.tools, settings.lang)
        self.examples = copied.examples(self.opening, self.tools, settings.protocol.read)
        #: What the model was already sent back for (a copy, an echo, an answer given too
        #: early, by what was still missing), and at which request: the same a second time,
        #: the model means it (or, for a copy, is lost).
        self.told: dict[str, int] = {}
        self.turns: list[Turn] = []
        self.requests = 0
        #: How many turns there were when the model was last asked.
        self.asked_at = 0
        self.answer: str | None = None
        self.error: str | None = None
        self.best_effort = False
        self.format_errors_in_row = 0
        self.truncations_in_row = 0
        #: Calls run so far, by identity, so a repeat is answered from the first result.
        self.done: dict[tuple[str, str], Turn] = {}
        #: The model repeated a call twice in a row: it is asked for its answer, and the
        #: next request offers no tool (a grammar then holds it to a Final Answer).
        self.looping = False
        #: The model copied an example again after it was sent back: no tool is offered from
        #: then on (under the default tool choice), whatever else steered the next request.
        self.lost_to_copies = False
        #: Tools whose example call the model copied: where the protocol allows it, later
        #: requests hold their free-text arguments to the run's own words (`grounding`).
        self.hold = grounding.Hold()
        #: A tool whose failed call the model just repeated: the next request leaves it out,
        #: so a grammar steers the model to another tool or to its answer.
        self.shunned: str | None = None
        #: The last call that could not run until other things were found (WrongToolError
        #: with needs), while its tool has not run since: an answer now is sent back once.
        self.unfinished: Turn | None = None
        #: The next request's tool choice, once: "required" while a refused call's needs are
        #: still to find; then that call's tool (a small model told to call it looks them up
        #: again); "none" once it has run with the numbers in place.
        self.steered: str | None = None
        self.started = time.perf_counter()

    def run(self) -> Generator[Effect, Any, Result]:
        stop: StopReason | None = None
        try:
            while stop is None:
                stop = yield from self.turn()
                if stop is None and self.requests >= self.s.max_steps:
                    stop = "max_steps"
                    if self.s.best_effort:
                        yield from self.last_chance()
        except KeyboardInterrupt:
            stop = "interrupted"
        return self.result(stop)

    def request(
        self,
        preface: str | None = None,
        memory: MemoryConfig | None = None,
        tool_choice: str = "auto",
    ) -> Request:
        s = self.s
        self.asked_at = len(self.turns)
        offered = self.tools
        if self.shunned not in (None, tool_choice):
            offered = [t for t in self.tools if t.name != self.shunned] or self.tools
        if self.hold.names and getattr(s.protocol, "holds_arguments", False):
            offered = self.hold.offer(offered, self.question, self.results())
        return s.protocol.request(
            self.opening, self.turns, offered, memory=memory or s.memory, lang=s.lang,
            preface=preface, tool_choice=tool_choice,
        )  # fmt: skip

    def choice(self) -> str:
        """This turn's tool choice: a required call is required until one has succeeded; a
        free choice is the tool the model was steered back to, if any; once the model is
        looping, a free choice becomes "none"."""
        wanted = self.s.tool_choice
        if wanted == "auto" and self.lost_to_copies:
            return "none"
        if wanted == "auto" and self.steered is not None:
            return self.steered
        if wanted not in ("auto", "none"):
            done = {
                t.result.tool for t in self.turns if t.result is not None and not t.result.is_error
            }
            wanted = "auto" if (done if wanted == "required" else wanted in done) else wanted
        return "none" if self.looping and wanted == "auto" else wanted

    def conversation(self) -> list[Message]:
        """The conversation at the end as the model saw it: the last request, with the turns
        since then shown whole (memory summarises from the last request's point of view)."""
        since = len(self.turns) - self.asked_at
        memory = dataclasses.replace(self.s.memory, keep_recent=self.s.memory.keep_recent + since)
        return self.request(memory=memory).messages

    def ask(
        self, request: Request, read: Callable[[Completion, Any], Reading] | None = None
    ) -> Generator[Effect, Any, tuple[Reading, Turn] | None]:
        """The reply read into steps (by the protocol, unless told otherwise), and the turn it
        starts; None when the model failed."""
        reply: Reply = yield Ask(request)
        self.requests += 1
        if isinstance(reply, ModelError):
            self.error = str(reply)
            return None
        completion, seconds = reply
        reading = (read or self.s.protocol.read)(completion, self.tools)
        turn = Turn(
            index=len(self.turns) + 1,
            text=reading.text,
            step=reading.steps[0],
            finish_reason=completion.finish_reason,
            usage=completion.usage,
            model_seconds=seconds,
            note=reading.note,
            constrained=completion.constrained,
        )
        return reading, turn

    def record(self, turn: Turn) -> Generator[Effect, Any, None]:
        self.turns.append(turn)
        yield turn

    def turn(self) -> Generator[Effect, Any, StopReason | None]:
        """One model call and what the engine does with it; the stop reason, if it ends."""
        choice = self.choice()
        request = self.request(tool_choice=choice)
        self.shunned = self.steered = None
        asked = yield from self.ask(request)
        if asked is None:
            return "model_error"
        reading, turn = asked
        step = turn.step
        if isinstance(step, FinalAnswer) and turn.finish_reason not in _CUT:
            back = self.sent_back(step.answer)  # what it says is more than "call a tool"
            if back is not None:
                text, note = back
                yield from self.record(dataclasses.replace(turn, observation=text, note=note))
                return None
            lost = self.lost(step.answer) if self.s.best_effort else None
            if lost is not None:
                self.answer = step.answer
                yield from self.record(dataclasses.replace(turn, note=lost))
                return (yield from self.closed_book("final_answer"))
        refused = observation.against_choice(step, choice, self.tools, self.s.lang)
        if refused is not None:
            step = refused
            turn = dataclasses.replace(turn, step=refused)
        if turn.finish_reason == "content_filter":
            self.error = (
                "the server's content filter stopped the reply (finish_reason "
                "'content_filter'); rephrase the question, or use another model or server"
            )
            yield from self.record(turn)
            return "model_error"
        if turn.finish_reason == "length" and not _finished_action(step):
            return (yield from self.truncated(turn))
        if isinstance(step, FinalAnswer):
            self.answer = step.answer
            yield from self.record(turn)
            return "final_answer"
        if isinstance(step, FormatError):
            return (yield from self.format_error(turn, step))
        self.format_errors_in_row = self.truncations_in_row = 0
        for i, action in enumerate(reading.steps):
            if i:
                turn = dataclasses.replace(
                    turn, index=len(self.turns) + 1, text="", usage=Usage(),
                    model_seconds=0.0, note=None, joined=True,
                )  # fmt: skip
            assert isinstance(action, Action)
            yield from self.record((yield from self.act(dataclasses.replace(turn, step=action))))
        return None

    def truncated(self, turn: Turn) -> Generator[Effect, Any, StopReason | None]:
        """A reply cut by the token limit is no answer as it stands and its calls are never
        run: the model is asked once to reply shorter. Cut again, it is caught in a run (Qwen
        wrote `1975 * 12000…` until the limit, twice, for the price of a coffee in 1975), and
        with best effort it is asked the question alone, where it said it did not know;
        unless the answer it was cut in began with a line that is one of its results
        (`stated_result`): that line is the answer (turn note "cut_answer")."""
        self.truncations_in_row += 1
        stated = self.stated_result(turn.step) if self.truncations_in_row > 1 else None
        if stated is not None:
            assert isinstance(turn.step, FinalAnswer)
            self.answer = stated
            step = dataclasses.replace(turn.step, answer=stated)
            yield from self.record(dataclasses.replace(turn, step=step, note="cut_answer"))
            return "final_answer"
        turn = dataclasses.replace(turn, note="truncated")
        if self.truncations_in_row > 1:
            yield from self.record(turn)
            if self.s.best_effort and not self.worked():  # nothing found that the ask would drop
                return (yield from self.closed_book(otherwise="truncated"))
            return "truncated"
        note = self.s.protocol.note("truncated", self.s.lang)
        yield from self.record(dataclasses.replace(turn, observation=note))
        return None

    def stated_result(self, step: object) -> str | None:
        """With best effort, the first line of an answer when it is complete (a line follows,
        or the parser cut what followed) and is one of the run's results whole, and the
        answer would not be sent back (`sent_back`: a copy, an echo, too early): SmolLM2
        answered `2602000 (population of Taipei, 2020)`, the lookup's result, and then ran on
        to the token limit, twice, the same way. A result of several lines, or a miss
        (`NotFound`), is no answer to take on its own."""
        if not self.s.best_effort or not isinstance(step, FinalAnswer):
            return None
        if not ("\n" in step.answer or step.discarded_text):
            return None
        line = step.answer.split("\n", 1)[0].strip()
        for t in self.turns:
            if t.note is None and _found(t.result) and line and line == t.observation:
                return None if self.sent_back(line) is not None else line
        return None

    def format_error(
        self, turn: Turn, step: FormatError
    ) -> Generator[Effect, Any, StopReason | None]:
        self.truncations_in_row = 0
        self.format_errors_in_row += 1
        if self.format_errors_in_row >= self.s.max_format_errors:
            yield from self.record(turn)
            return "format_errors"
        again = self.format_errors_in_row > 1
        text = self.s.protocol.explain(step, self.tools, self.s.lang, again=again)
        yield from self.record(dataclasses.replace(turn, observation=text))
        return None

    def act(self, turn: Turn) -> Generator[Effect, Any, Turn]:
        """`turn` with its call's result and observation: the call is prepared once; a repeat
        of an earlier call, worked or failed, is answered from it (a repeated failure leaves its
        tool out of the next request; a model repeating itself twice in a row is asked to
        answer, and offered no tool next); `before_call` may veto it; otherwise it runs."""
        s, step = self.s, turn.step
        assert isinstance(step, Action)
        prepared = s.toolbox.prepare(step.tool, step.input, s.lang)
        if isinstance(prepared, ToolResult):
            return self.observed(turn, prepared)
        copying = self.examples.copied_input(prepared.arguments, self.seen())
        key = None if copying is None else copied.fold(copying)
        told_at = self.told.get(key or "")
        self.first_time(key)
        again = told_at is not None and told_at < self.requests  # sent back at an earlier reply
        if copying is not None and (not again or (s.best_effort and s.tool_choice == "auto")):
            # the next request leaves the tool out: Qwen sent the same again. Sent back once
            # and copied again, the model is lost: no tool is offered from then on, and an
            # answer copied too is asked for alone (`lost`)
            self.shunned = prepared.tool.name
            self.hold.add(prepared.tool.name)
            self.lost_to_copies = self.lost_to_copies or again
            text = observation.copied(copying, self.question, s.lang, answer=False, again=again)
            result = ToolResult(
                prepared.tool.name, prepared.arguments, error=text, error_kind="copied"
            )
            note = "copied_again" if again else "copied"
            return dataclasses.replace(turn, result=result, observation=text, note=note)
        earlier = self.done.get(prepared.key)
        if earlier is not None:
            again = bool(self.turns) and self.turns[-1].note == "repeated_call"
            self.looping = self.looping or again
            failed = earlier.result is not None and earlier.result.is_error
            if failed and not again:
                self.shunned = prepared.tool.name
            found = [
                t.observation or ""
                for t in self.done.values()
                if t.result is not None and not t.result.is_error
            ]
            text = observation.repeated_call(
                prepared.tool.name, earlier.index, earlier.observation or "", s.lang,
                again=again, failed=failed, found=found, question=self.question,
                others=self.others(prepared.tool.name),
            )  # fmt: skip
            return dataclasses.replace(
                turn, result=earlier.result, observation=text, note="repeated_call"
            )
        veto = s.before_call(prepared.tool.name, prepared.arguments) if s.before_call else None
        if veto is not None:
            result = ToolResult(
                prepared.tool.name, prepared.arguments, error=str(veto), error_kind="vetoed"
            )
            return self.observed(dataclasses.replace(turn, note="vetoed"), result)
        limit = s.observation_limit
        present = lambda value: observation.format_value(value, 4 * limit)  # noqa: E731
        result = yield RunTool(prepared, present)
        if result.error_kind == "wrong_tool":
            self.shunned = prepared.tool.name
        turn = self.done[prepared.key] = self.observed(turn, result)
        if result.needs:
            self.unfinished = turn
            if self.others(result.tool):  # the next request wants a call that finds them
                self.steered = "required"
        elif self.unfinished and not result.is_error:
            if result.tool == self.unfinished.result.tool:
                turn = self.finished(turn)
            else:  # what the call still needs is news now, not when this call is repeated
                turn = self.waiting(turn)
        return turn

    def progress(self, last: Turn | None = None) -> needs.Progress:
        """What the results since the unfinished call (and `last`, not recorded yet) found."""
        failed = self.unfinished
        assert failed is not None and failed.result is not None
        later = [*self.turns[failed.index :], *([last] if last else [])]
        return needs.progress(failed.result, [t.result for t in later if t.result], self.question)

    def waiting(self, turn: Turn) -> Turn:
        """`turn`, whose result answers a need of the unfinished call, with a line saying what
        is still missing, or the call to make now (which the next request then requires)."""
        failed = self.unfinished
        assert failed is not None and failed.result is not None
        progress = self.progress(turn)
        if progress.found[-1][0] is None:
            return turn
        if progress.missing:  # another call to find the rest (Qwen answered with the first)
            self.steered = "required"
        else:  # the next request requires the tool: that says it again
            self.steered = failed.result.tool
            self.news(progress)
        return _with_line(
            turn, observation.waiting(failed.result, failed.index, progress, self.s.lang)
        )

    def finished(self, turn: Turn) -> Turn:
        """`turn`, the unfinished call's tool run again: when it ran as shown, with the numbers
        in place, it is the model's own plan for the question done, so the next request asks
        for the answer (a small model goes on subtracting 3776 from each result)."""
        failed = self.unfinished
        assert failed is not None and failed.result is not None and turn.result is not None
        filled = self.progress().filled
        self.unfinished = None
        if filled is None or filled != turn.result.arguments:
            return turn
        self.steered = "none"
        return _with_line(
            turn, self.s.protocol.note("finished", self.s.lang, step=str(failed.index))
        )

    def seen(self) -> str:
        """The question and every tool result so far: a value found here is the run's own."""
        return f"{self.question}\n{self.found()}"

    def found(self) -> str:
        """Every tool result so far (the engine's own notes are not: a format error's hint
        shows a tool's example input, and a copied call never ran)."""
        return "\n".join(
            t.observation or "" for t in self.turns if t.result and t.result.error_kind != "copied"
        )

    def results(self) -> str:
        """What the run's calls found: the observations of the calls that worked (an error's
        text is not, as it shows the tool's example input)."""
        return "\n".join(
            t.observation or "" for t in self.turns if t.result and not t.result.is_error
        )

    def sent_back(self, answer: str) -> tuple[str, str] | None:
        """The note that sends an answer back, and the turn's note: it copies an example's
        answer, only repeats what the model sent to one of its tools, or comes too early (two
        heights looked up, their difference never calculated; or only one of them looked up)."""
        s = self.s
        copy = self.examples.copied_answer(answer, self.seen())
        if copy is not None and self.first_time(copied.fold(copy)) is not None:
            text = observation.copied(
                copy, self.question, s.lang, answer=True, again=self.lost_to_copies
            )
            return text, "copied"
        tool = copied.echoed(answer, self.calls())
        if tool is not None and self.first_time(answer) is not None:
            return observation.echoed(answer, tool, self.question, s.lang), "echo"
        text = None if self.lost_to_copies else self.too_early()  # no tool to finish it with
        return None if text is None else (text, "unfinished")

    def worked(self) -> bool:
        """Whether a call has found something in this run: then a closed-book ask, which
        carries no history, would drop it. A miss (`NotFound`) found nothing: SmolLM2,
        whose lookup of "how many legs a spider has" missed, gave the example's `408` twice;
        taken to have found something, it was never asked the question alone, where it
        says `A spider has 8 legs.`"""
        return any(_found(t.result) for t in self.turns)

    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        """(tool, arguments) of every call the run has made."""
        return [(t.result.tool, t.result.arguments) for t in self.turns if t.result is not None]

    def lost(self, answer: str) -> str | None:
        """The note for an answer that shows the model has lost the thread, None for any other:
        sent back for an example's answer, it gives one again (Qwen, asked how to say "hello"
        in French, answered the example's `Paris`); or, sent back just now for an answer that
        only repeated its own input, it answers with nothing but the question's words, which no
        result backs ("opposite of hot"; its query "clear daytime sky" again). Its own input
        again is not enough: Qwen sent `1969` to the calculator, which refused a lone number,
        and `1969` was its right answer."""
        if self.examples.copied_answer(answer, self.seen()) is not None:
            # `sent_back` sent the first copy back: this one comes after. A model that has
            # found something may mean it ("Yes" may be right however the example answered)
            return "copied" if not self.worked() else None
        if not self.turns or self.turns[-1].note != "echo":
            return None
        restated = copied.restates(answer, self.question, self.found(), self.calls())
        return "echoed" if restated else None

    def closed_book(self, otherwise: StopReason) -> Generator[Effect, Any, StopReason]:
        """A model that has lost the thread is asked the question once more, alone, without
        tools or the protocol's frame: in plain chat Qwen 0.5B answers "Blue" and "cold",
        which after a lookup miss it only echoed. The plain reply is the answer (its turn is
        noted "closed_book"); one that `_plain` reads as no answer, or cut off, leaves the
        answer it came after (an echo, a copy), or where there is none (two replies cut off)
        ends the run as it would have ended without the ask (`otherwise`)."""
        s = self.s
        note = templates.note("closed_book", s.lang)  # the same for every protocol: no frame
        plain = [{"role": "system", "content": note}, {"role": "user", "content": self.question}]
        asked = yield from self.ask(Request(plain), read=_plain)
        if asked is None:
            self.answer = None  # as for any model error: the echo was no answer
            return "model_error"
        _, turn = asked
        if isinstance(turn.step, FinalAnswer) and turn.finish_reason not in _CUT:
            self.answer = turn.step.answer
        yield from self.record(dataclasses.replace(turn, note="closed_book", preface=note))
        return "final_answer" if self.answer is not None else otherwise

    def too_early(self) -> str | None:
        """The note for an answer given while a call that needed other things found first has
        not run again: once for each state of what is still missing (the result that found the
        last of them said so already, and the next request required the call)."""
        failed = self.unfinished
        if failed is None or failed.result is None:
            return None
        progress = self.progress()
        if not self.news(progress):
            return None  # told this already: once for each thing found, at most
        return observation.unfinished(
            failed.result, failed.index, progress, self.question, self.s.lang
        )

    def news(self, progress: needs.Progress) -> bool:
        """Whether this state of the unfinished call is news to the model (now it is not)."""
        assert self.unfinished is not None
        told = f"unfinished {self.unfinished.index}: {progress.missing}"
        return self.first_time(told) is not None

    def first_time(self, value: str | None) -> str | None:
        """`value` when the model was not sent back for it before (and now it has been)."""
        if value is None or value in self.told:
            return None
        self.told[value] = self.requests
        return value

    def others(self, tool: str) -> list[str]:
        """The names of the tools offered besides `tool`, which a hint may point the model to."""
        return [t.name for t in self.tools if t.name != tool]

    def observed(self, turn: Turn, result: ToolResult) -> Turn:
        text = observation.observe(
            result, limit=self.s.observation_limit, lang=self.s.lang,
            others=self.others(result.tool),
        )  # fmt: skip
        return dataclasses.replace(turn, result=result, observation=text)

    def last_chance(self) -> Generator[Effect, Any, None]:
        """At the step limit, one request without tools for a best-effort answer; the Result
        says when the answer came from it."""
        s = self.s
        note = s.protocol.note("best_effort", s.lang, max_steps=str(s.max_steps))
        asked = yield from self.ask(self.request(preface=note, tool_choice="none"))
        if asked is None:
            return
        _, turn = asked
        if isinstance(turn.step, FinalAnswer) and turn.finish_reason not in _CUT:
            self.answer, self.best_effort = turn.step.answer, True
        yield from self.record(dataclasses.replace(turn, note="best_effort", preface=note))

    def result(self, stop: StopReason) -> Result:
        return Result(
            answer=self.answer,
            stop_reason=stop,
            steps=tuple(self.turns),
            messages=self.conversation(),
            usage=sum((turn.usage for turn in self.turns), Usage()),
            best_effort=self.best_effort,
            error=self.error,
            seconds=time.perf_counter() - self.started,
            protocol=self.s.protocol.name,
        )


def _plain(completion: Completion, tools: Any) -> Reading:
    """A reply no protocol framed, read the same under every protocol: a Final Answer, or
    the whole text when it is a short keyword-less answer ("Blue", which the text protocol
    calls a fragment); anything else (a call, a stated intention, a reply longer than
    CLOSED_BOOK_CHARS when a few words were asked for) is no answer."""
    text = completion.text.strip()
    step = parse(text)
    if isinstance(step, FormatError) and step.problem == "fragment" and not completion.tool_calls:
        step = FinalAnswer(text, implicit=True)
    if isinstance(step, FinalAnswer) and len(step.answer) > CLOSED_BOOK_CHARS:
        step = FormatError(f"a reply of {len(step.answer)} characters, not a few words", "")
    return Reading((step,), text)


def _with_line(turn: Turn, line: str) -> Turn:
    """`turn` with the engine's `line` after its result, where the model reads it next."""
    return dataclasses.replace(turn, observation=f"{turn.observation}\n{line}")


def _found(result: ToolResult | None) -> bool:
    """Whether a call worked and found something: not an error, an empty result or a miss."""
    if result is None or result.is_error or isinstance(result.value, NotFound):
        return False
    return bool((result.text or "").strip())


def _finished_action(step: object) -> bool:
    """An action the model completed before the token limit cut its later rambling."""
    return isinstance(step, Action) and bool(step.discarded_text)


def check_reply(reply: object, model: object) -> Completion:
    """A custom model's reply must be a Completion; anything else is the model's fault and
    ends the run as a model error rather than a crash deep in the loop."""
    if not isinstance(reply, Completion):
        raise ModelError(
            f"{type(model).__name__}.complete returned {type(reply).__name__}, not a "
            "textreact Completion; return Completion(text, finish_reason, usage)"
        )
    return reply
