"""Protocols: the strategies of the one loop. A protocol owns exactly two jobs: render the
conversation (opening messages plus stored turns) into a `Request`, and read one `Completion`
into steps. It knows no stop rules and does no I/O; the loop (`textreact.loop`) does both, the
same way for every protocol, so a comparison of two protocols measures the protocols."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, runtime_checkable
from typing import Protocol as _Protocol

from textreact.errors import ConfigError
from textreact.parser import parse
from textreact.steps import Completion, FinalAnswer, FormatError, Request, Step, Turn

if TYPE_CHECKING:
    from textreact.memory import MemoryConfig
    from textreact.models import Message
    from textreact.tools import Tool

__all__ = [
    "NativeProtocol",
    "OwnFirstProtocol",
    "OwnFormatProtocol",
    "Protocol",
    "Reading",
    "TextProtocol",
    "read_plain",
    "resolve",
]

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
class Protocol(_Protocol):
    """What the loop needs of a protocol. `TextProtocol` and `NativeProtocol` are the two
    built in; a custom one implements these five methods and a `name`. One whose requests carry
    the offered tools only as prompt text and grammar may also set `holds_arguments = True`:
    policies may then narrow or reshape the offered tools (leave one out for a turn, hold a
    copied argument to the run's words); a protocol that sends the schemas themselves, as
    native tools= does, must not, since its history must keep every tool it calls."""

    name: str

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


def resolve(
    protocol: Any,
    model: object,
    *,
    examples: str | Sequence[Message] | None = None,
    decision_bias: float | None = None,
) -> Protocol:
    """ "text", "native" or a protocol object -> the protocol object for `model` (the text
    protocol with the given worked `examples` and `decision_bias`; the native one in the
    model's tool dialect; with "own", the model's own tool format, told by the chat template
    its server gives; with "own-first", that format for the first decision and the text
    protocol, with `examples`, after the first call)."""
    from textreact.protocols.native import NativeProtocol
    from textreact.protocols.text import TextProtocol

    if protocol == "text":
        return TextProtocol(examples=examples, decision_bias=decision_bias)
    if decision_bias is not None:
        raise ConfigError(
            f'decision_bias scores the text protocol\'s "Action:" / "Final Answer:" branch; '
            f'it needs protocol="text" (or TextProtocol(decision_bias=...)), got {protocol!r}'
        )
    if protocol == "native":
        return NativeProtocol(dialect=getattr(model, "tool_dialect", "openai"))
    if protocol in ("own", "own-first"):
        from textreact.protocols.own import OwnFormatProtocol
        from textreact.protocols.ownfirst import OwnFirstProtocol

        read = getattr(model, "chat_template", None)
        template = read() if callable(read) else None
        if protocol == "own":
            return OwnFormatProtocol(template=template)
        return OwnFirstProtocol(template=template, examples=examples)
    if isinstance(protocol, str) or not isinstance(protocol, Protocol):
        raise ConfigError(
            f'protocol must be "auto", "text", "native", "own", "own-first" or a protocol object '
            f"(TextProtocol(), NativeProtocol(), OwnFormatProtocol(), or one with name, opening, "
            f"request, read, note and explain), got {protocol!r}"
        )
    return protocol


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


def __getattr__(name: str) -> object:
    modules = {
        "TextProtocol": "text", "NativeProtocol": "native", "OwnFormatProtocol": "own",
        "OwnFirstProtocol": "ownfirst",
    }  # fmt: skip
    if name in modules:
        from importlib import import_module

        return getattr(import_module(f"textreact.protocols.{modules[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
