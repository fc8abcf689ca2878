"""`protocol="own-first"`: the first decision in the model's own tool format, the rest of the
run in the ReAct text protocol.

The two protocols fail in opposite places. Asked in the format it was trained on, a model
decides well whether a question needs a tool at all (it abstains where none fits), but once a
result is back it tends to call again, the same call, until the step limit. Asked in the text
protocol, it stops after a result ("I now know the final answer") but calls a tool for nearly
every question. So this protocol asks the opening turn, until the first call has been acted
on, as `OwnFormatProtocol` asks it, and every turn after as `TextProtocol` does, with that
first call shown in the history as a text-protocol `Action` (as if the model had written it
so). A reply in either format is read in the first phase: a labelled `Action:` or
`Final Answer:` is taken as written.

Each phase keeps its own grammar: the call held to the tool's schema under the model's format,
then the text protocol's grammar. The opening prompt changes once, at the first result, so a
server's prompt cache serves the rest of the run from there."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from textreact import grammar
from textreact.memory import MemoryConfig
from textreact.parser import parse
from textreact.protocols.interface import Reading
from textreact.protocols.own import OwnFormatProtocol
from textreact.protocols.text import TextProtocol
from textreact.steps import Action, Completion, FinalAnswer, FormatError, Request, Turn

if TYPE_CHECKING:
    from textreact.models import Message
    from textreact.tools import Tool


class OwnFirstProtocol:
    """The model's own format (`family`, or the one its chat `template` speaks) until the first
    call has been acted on, then the text protocol (`examples`, `decision_bias`: its options).
    `constrain` holds both phases to their grammars where the server takes one."""

    name = "own-first"
    holds_arguments = True

    def __init__(
        self,
        *,
        family: str | None = None,
        template: str | None = None,
        examples: str | Sequence[Message] | None = None,
        decision_bias: float | None = None,
        constrain: bool = True,
    ) -> None:
        self.own = OwnFormatProtocol(family=family, template=template, constrain=constrain)
        self.text = TextProtocol(
            constrain=constrain, examples=examples, decision_bias=decision_bias
        )

    def __repr__(self) -> str:
        return f"OwnFirstProtocol(own={self.own!r}, text={self.text!r})"

    def opening(self, question: str, tools: Sequence[Tool], lang: str) -> list[Message]:
        """The text protocol's opening, which ends with the question as asked (the first phase
        reads it from there)."""
        return self.text.opening(question, tools, lang)

    def request(
        self,
        opening: Sequence[Message],
        turns: Sequence[Turn],
        tools: Sequence[Tool],
        *,
        memory: MemoryConfig,
        lang: str,
        preface: str | None = None,
        tool_choice: str = "auto",
    ) -> Request:
        first = _first_call(turns)
        if first is None:
            question = str(opening[-1]["content"])
            own = self.own.opening(question, tools, lang)
            request = self.own.request(
                own, turns, tools, memory=memory, lang=lang, preface=preface,
                tool_choice=tool_choice,
            )  # fmt: skip
            return dataclasses.replace(request, read=self.read_first)
        shown = [_as_text(t, lang) if i <= first else t for i, t in enumerate(turns)]
        return self.text.request(
            opening, shown, tools, memory=memory, lang=lang, preface=preface,
            tool_choice=tool_choice,
        )  # fmt: skip

    def read_first(self, completion: Completion, tools: Sequence[Tool]) -> Reading:
        """A first-phase reply: a labelled text-protocol step as written, else read in the
        model's own format (a call, or prose that is the answer)."""
        step = parse(completion.text)
        if isinstance(step, Action) or (isinstance(step, FinalAnswer) and not step.implicit):
            return self.text.read(completion, tools)
        return self.own.read(completion, tools)

    def read(self, completion: Completion, tools: Sequence[Tool]) -> Reading:
        return self.text.read(completion, tools)

    def note(self, name: str, lang: str, **slots: str) -> str:
        return self.text.note(name, lang, **slots)

    def explain(self, error: FormatError, tools: Sequence[Tool], lang: str, *, again: bool) -> str:
        if error.problem == "own_call":
            return self.own.explain(error, tools, lang, again=again)
        return self.text.explain(error, tools, lang, again=again)


def _first_call(turns: Sequence[Turn]) -> int | None:
    """The position of the first turn whose call was acted on (run, answered from a repeat,
    refused); None while there is none."""
    return next((i for i, t in enumerate(turns) if t.result is not None), None)


def _as_text(turn: Turn, lang: str) -> Turn:
    """A first-phase call as the text protocol writes it; any other turn as it was."""
    if not isinstance(turn.step, Action):
        return turn
    return dataclasses.replace(turn, text=grammar.render_step(turn.step, lang))
