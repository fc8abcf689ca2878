"""The loop, once, without I/O: a generator that asks its driver (`agent.py`) to call the model
(`Ask`), run a tool (`RunTool`) and consult `before_call` (`Consult`), yields each `Turn` and
returns the `Result`. A turn offers the tools, asks, reads the reply through the protocol, judges
it (`verdict.judge`, shared with serve) and acts: a cut reply is re-asked once, a format error is
explained, an answer ends the run, a call is prepared, answered from its first result when it
repeats one (unless its tool's result may change), offered to `before_call`, run and observed;
the calls of a reply that makes several (native calls, the text protocol's parallel calls) are
acted on in order, each observed, and a later one written wrong is answered as a format error.
Stop reasons are decided here alone; the policies (`textreact.policy`) are asked at fixed points:
the offer, a call before it runs, a result, an answer, a stop."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import replace
from typing import Any, Literal

from textreact import observation, steps, templates, values
from textreact.effects import Ask, BeforeCall, Consult, Effect, Reply, RunTool, Settings
from textreact.errors import ModelError
from textreact.policy import AskAlone, Offer, Policies, RunView, noted
from textreact.protocols import Reading, read_plain
from textreact.steps import FinalAnswer, Request, StopReason, ToolResult, Turn, Usage
from textreact.verdict import CUT, FILTERED, Earlier, judge

__all__ = ["Ask", "BeforeCall", "Consult", "RunTool", "Settings", "run"]

_ToolLess = Literal["best_effort", "closed_book"]  # the turns asked without tools


def run(settings: Settings, question: str) -> Generator[Effect, Any, steps.Result]:
    """The loop for one question; a KeyboardInterrupt thrown in ends it as "interrupted"."""
    return _Run(settings, question).run()


class _Run:
    """The state of one run; policies read it through `view`, never the run itself."""

    def __init__(self, settings: Settings, question: str) -> None:
        self.s, self.tools, self.question = settings, settings.toolbox.tools, question
        self.opening = settings.protocol.opening(question, self.tools, settings.lang)
        self.turns: list[Turn] = []
        self.requests = self.asked_at = 0  # asked_at: the turns there were at the last request
        self.answer: str | None = None
        self.error: str | None = None  # the model's, for "model_error"
        self.source: steps.AnswerSource | None = None
        self.errors_in_row = self.cuts_in_row = 0
        self.done: dict[tuple[str, str], Turn] = {}  # calls run, by identity
        self.started = time.perf_counter()
        self.offered = Offer(tuple(self.tools), settings.tool_choice)  # at the last request
        self.policies = Policies(settings.policies, self.view)

    lang = property(lambda self: self.s.lang)

    def view(self) -> RunView:
        """The run as it stands, for the policies to read."""
        s = self.s
        return RunView(
            self.question, tuple(self.tools), tuple(self.turns), tuple(self.opening),
            self.requests, self.offered, s.lang, s.protocol, s.tool_choice,
        )  # fmt: skip

    def run(self) -> Generator[Effect, Any, steps.Result]:
        stop: StopReason | None = None  # decided by `turn`, the step limit or an interrupt
        s = self.s
        try:
            while stop is None:
                stop = yield from self.turn()
                if stop is None and self.requests >= s.max_steps:
                    stop = "max_steps"
                    if s.best_effort:
                        yield from self.best_effort()
        except KeyboardInterrupt:
            stop = "interrupted"
        return self.result(stop)

    def offer(self) -> tuple[Offer, tuple[steps.PolicyNote, ...]]:
        """This turn's offer: "required" until a call worked, a tool until it did; no tool after
        the same call twice in a row (its note asked for the answer: the grammar, where there
        is one, holds the model to it); then steered."""
        wanted = self.s.tool_choice
        if wanted not in ("auto", "none"):
            done = {t.result.tool for t in self.turns if t.result and not t.result.is_error}
            wanted = "auto" if (done if wanted == "required" else wanted in done) else wanted
        repeats = [t.note == "repeated_call" for t in self.turns if not t.joined][-2:]
        if wanted == "auto" and repeats == [True, True]:
            wanted = "none"
        return self.policies.steer(Offer(tuple(self.tools), wanted))

    def request(self, offer: Offer, preface: str | None = None, keep: int = 0) -> Request:
        self.asked_at = len(self.turns)
        memory = replace(self.s.memory, keep_recent=self.s.memory.keep_recent + keep)
        listed, protocol = offer.listed(self.tools), self.s.protocol  # None: the opening's list
        opening = (
            self.opening if listed is None else protocol.opening(self.question, listed, self.lang)
        )
        return protocol.request(
            opening, self.turns, offer.tools, memory=memory, lang=self.lang,
            preface=preface, tool_choice=offer.tool_choice,
        )  # fmt: skip

    def ask(
        self, request: Request, read: Callable[..., Reading]
    ) -> Generator[Effect, Any, tuple[Reading, Turn] | None]:
        """The reply as the request says it is read, else as `read` reads it, and its turn;
        None: the model failed."""
        reply: Reply = yield Ask(request)
        self.requests += 1
        if isinstance(reply, ModelError):
            self.error = str(reply)
            return None
        completion, seconds = reply
        reading = (request.read or read)(completion, self.tools)
        turn = Turn(
            index=len(self.turns) + 1, text=reading.text, step=reading.steps[0],
            finish_reason=completion.finish_reason, usage=completion.usage,
            model_seconds=seconds, note=reading.note, constrained=completion.constrained,
            decision=completion.decision,
        )  # fmt: skip
        return reading, turn

    def record(self, turn: Turn) -> Generator[Effect, Any, None]:
        self.turns.append(turn)
        yield turn

    def end(self, turn: Turn, stop: StopReason | None) -> Generator[Effect, Any, StopReason | None]:
        """`turn` recorded as the last of this model call, and the stop reason it gives."""
        yield from self.record(turn)
        return stop

    def turn(self) -> Generator[Effect, Any, StopReason | None]:
        """One model call and what the engine does with it; the stop reason, if it ends."""
        offer, steered = self.offer()
        self.offered = offer  # what the policies read as the last request's offer
        asked = yield from self.ask(self.request(offer), self.s.protocol.read)
        if asked is None:
            return "model_error"
        reading, turn = asked
        said = turn.step
        verdict = judge(said, turn.finish_reason, offer.tool_choice, self.s.toolbox, self.lang,
                        earlier=Earlier.of(self.turns))  # fmt: skip
        turn = replace(turn, step=verdict.step, policy_notes=steered)
        if verdict.kind == "filtered":
            self.error = FILTERED
            return (yield from self.end(turn, "model_error"))
        if verdict.kind == "cut":
            self.cuts_in_row += 1
            turn = replace(turn, note="truncated")
            if self.cuts_in_row > 1:
                yield from self.record(turn)
                asks = self.policies.at_stop("truncated")
                return "truncated" if asks is None else (yield from self.alone("truncated", asks))
            note = self.s.protocol.note("truncated", self.lang)
            return (yield from self.end(replace(turn, observation=note), None))
        self.cuts_in_row = 0
        # an answer, even one the turn's steered tool choice refuses: a policy may know why
        answered = verdict.kind == "answer" or self.s.tool_choice == "auto"
        checked = (
            answered and isinstance(said, FinalAnswer) and self.policies.check_answer(said.answer)
        )
        if checked:
            note, check = checked
            if isinstance(check, AskAlone):
                self.answer, self.source = said.answer, "model"  # unless the ask brings one
                yield from self.record(noted(turn, note))
                return (yield from self.alone("final_answer"))
            turn = noted(turn, note, step=said, observation=check.observation)
            return (yield from self.end(turn, None))
        if verdict.kind == "format_error":
            assert isinstance(verdict.step, steps.FormatError)
            self.errors_in_row += 1
            if self.errors_in_row >= self.s.max_format_errors:
                return (yield from self.end(turn, "format_errors"))
            again = self.errors_in_row > 1
            text = self.s.protocol.explain(verdict.step, self.tools, self.lang, again=again)
            return (yield from self.end(replace(turn, observation=text), None))
        self.errors_in_row = 0
        if isinstance(verdict.step, FinalAnswer):
            self.answer, self.source = verdict.step.answer, "model"
            return (yield from self.end(turn, "final_answer"))
        for i, action in enumerate(reading.steps):
            call = turn.joined_by(len(self.turns) + 1, action) if i else replace(turn, step=action)
            if isinstance(action, steps.FormatError):  # a later call of several, written wrong
                text = self.s.protocol.explain(action, self.tools, self.lang, again=False)
                yield from self.record(replace(call, observation=text))
                continue
            yield from self.record((yield from self.act(call)))
        return None

    def act(self, turn: Turn) -> Generator[Effect, Any, Turn]:
        """`turn` with its call's result and observation."""
        step, s = turn.step, self.s
        prepared = s.toolbox.prepare(step.tool, step.input, s.lang)  # type: ignore[union-attr]
        if isinstance(prepared, ToolResult):
            return self.observed(turn, prepared)
        tool, arguments = prepared.tool.name, prepared.arguments
        refused = self.policies.check_call(prepared)
        if refused is not None:
            note, check = refused
            result = ToolResult(tool, arguments, error=check.observation, error_kind="not_run")
            return noted(turn, note, result=result, observation=check.observation)
        earlier = self.done.get(prepared.key) if prepared.tool.cache else None
        if earlier is not None:  # twice in a row, the model is asked to answer (`again`)
            text = observation.repeated_call(
                tool, earlier.index, earlier.observation or "", s.lang,
                again=bool(self.turns) and self.turns[-1].note == "repeated_call",
                failed=earlier.is_error, question=self.question,
                others=self.others(tool),
                found=[t.observation or "" for t in self.done.values() if not t.is_error],
                note=s.protocol.note,
            )  # fmt: skip
            return replace(turn, result=earlier.result, observation=text, note="repeated_call")
        veto = (yield Consult(tool, arguments)) if s.before_call else None
        if veto is not None:
            result = ToolResult(tool, arguments, error=str(veto), error_kind="vetoed")
            return self.observed(replace(turn, note="vetoed"), result)
        limit = prepared.tool.result_limit or s.observation_limit
        present = lambda value: values.format_value(value, 4 * limit)  # noqa: E731
        result = yield RunTool(prepared, present)
        turn = self.done[prepared.key] = self.observed(turn, result)
        return self.policies.after_call(turn)

    def others(self, tool: str) -> list[str]:
        """The tools a hint may suggest instead of `tool`: those this turn offered."""
        return [t.name for t in self.offered.tools if t.name != tool]

    def observed(self, turn: Turn, result: ToolResult) -> Turn:
        tool = self.s.toolbox.resolve(result.tool)
        limit = (tool.result_limit if tool is not None else None) or self.s.observation_limit
        others = self.others(result.tool)
        text = observation.observe(result, limit=limit, lang=self.lang, others=others)
        return replace(turn, result=result, observation=text)

    def best_effort(self) -> Generator[Effect, Any, None]:
        """At the step limit, one request without tools for a best-effort answer."""
        s = self.s
        note = s.protocol.note("best_effort", self.lang, max_steps=str(s.max_steps))
        request = self.request(Offer(tuple(self.tools), "none"), preface=note)
        yield from self.tool_less(request, note, "best_effort", s.protocol.read)

    def alone(
        self, otherwise: StopReason, note: steps.PolicyNote | None = None
    ) -> Generator[Effect, Any, StopReason]:
        """The question alone, no tools or history (a policy asked): a short plain reply is the
        answer, else the run keeps its own and ends as `otherwise`."""
        preface = templates.note("closed_book", self.lang)  # every protocol's: no frame
        plain = [{"role": "system", "content": preface}, {"role": "user", "content": self.question}]
        asked = yield from self.tool_less(Request(plain), preface, "closed_book", read_plain, note)
        if not asked:
            self.answer = self.source = None
            return "model_error"
        return "final_answer" if self.answer is not None else otherwise

    def tool_less(
        self, request: Request, preface: str, kind: _ToolLess, read: Callable[..., Reading],
        note: steps.PolicyNote | None = None,
    ) -> Generator[Effect, Any, bool]:  # fmt: skip
        """One more request, a `kind` turn read by `read`; its uncut answer is the run's.
        False: the model failed."""
        asked = yield from self.ask(request, read)
        if asked is None:
            return False
        turn = replace(asked[1], note=kind, preface=preface)
        if isinstance(turn.step, FinalAnswer) and turn.finish_reason not in CUT:
            self.answer, self.source = turn.step.answer, kind
        yield from self.record(turn if note is None else noted(turn, note))
        return True

    def result(self, stop: StopReason) -> steps.Result:
        since = len(self.turns) - self.asked_at  # the last request, the turns since shown whole
        conversation = self.request(Offer(tuple(self.tools), "auto"), keep=since)
        return steps.Result(
            answer=self.answer, stop_reason=stop, steps=tuple(self.turns),
            messages=conversation.messages, usage=sum((t.usage for t in self.turns), Usage()),
            best_effort=self.source == "best_effort", error=self.error,
            seconds=time.perf_counter() - self.started, protocol=self.s.protocol.name,
            protocol_reason=self.s.protocol_reason,
            answer_source=self.source if self.answer is not None else None,
        )  # fmt: skip
