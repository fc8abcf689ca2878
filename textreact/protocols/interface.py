"""What the loop needs of a protocol (`Protocol`), what a protocol gives back for one reply
(`Reading`), and the reading every protocol shares of a reply no protocol framed
(`read_plain`). The protocols themselves (`text`, `native`, `own`, `ownfirst`) import these
from here; the package re-exports them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, runtime_checkable
from typing import Protocol as _Protocol

from textreact.parser import parse
from textreact.steps import Completion, FinalAnswer, FormatError, Request, Step, Turn

if TYPE_CHECKING:
    from textreact.memory import MemoryConfig
    from textreact.models import Message
    from textreact.tools import Tool

__all__ = ["CLOSED_BOOK_CHARS", "Protocol", "Reading", "read_plain"]

#: The longest reply taken as an answer to a question asked alone: it asked for a few words.
CLOSED_BOOK_CHARS = 500


@dataclass(frozen=True)
class Reading:
    """One reply read by a protocol: the steps it holds (several native calls, or one step),
    the text kept in the conversation, and a note on how it was read ("call_as_text")."""

    steps: tuple[Step, ...]
    text: str
    note: str | None = None


@runtime_checkable
class ReactProtocol(_Protocol):
    """What the loop needs of a protocol. `TextProtocol`, `NativeProtocol` and
    `OwnFormatProtocol` are built in; a custom one implements these five methods, a `name` and
    `holds_arguments`. Public as `Protocol`; the class has a name of its own because `typing`
    skips the members of a class named `Protocol`, and `isinstance` would accept any object."""

    name: str
    #: Whether the requests carry the offered tools only as prompt text and grammar: policies
    #: may then narrow or reshape the offered tools (leave one out for a turn, hold a copied
    #: argument to the run's words). False for a protocol that sends the schemas themselves,
    #: as native tools= does, since its history must keep every tool it calls.
    holds_arguments: bool

    def opening(self, question: str, tools: Sequence[Tool], lang: str) -> list[Message]:
        """The messages that open a run: instructions, examples, the question."""
        ...

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
        """The request for the next turn; `preface` is an engine note the model must read
        first (the best-effort request at the step limit); `tool_choice` is OpenAI's "auto",
        "required", "none" or a tool's name, for this turn."""
        ...

    def read(self, completion: Completion, tools: Sequence[Tool]) -> Reading:
        """One reply as steps; never raises for what a model wrote."""
        ...

    def note(self, name: str, lang: str, **slots: str) -> str:
        """The engine's note `name` ("truncated", "best_effort") as this protocol words it."""
        ...

    def explain(self, error: FormatError, tools: Sequence[Tool], lang: str, *, again: bool) -> str:
        """The observation that answers a format error (`again`: the last turn was one too)."""
        ...


Protocol = ReactProtocol


def read_plain(completion: Completion, tools: Any) -> Reading:
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
