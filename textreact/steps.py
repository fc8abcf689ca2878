"""The records that pass between stages: what the parser returns, what a tool call produced,
what the model sent back. Frozen, so a stored step can be re-rendered but never changed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Union


@dataclass(frozen=True)
class Action:
    """The model asks for one tool call."""

    kind: ClassVar[Literal["action"]] = "action"
    tool: str
    input: dict[str, Any] | str
    thought: str | None = None
    #: Text the parser cut after the action (hallucinated observations, later steps, an answer
    #: written before the observation was seen). Always a suffix of the parsed text.
    discarded_text: str = field(default="", compare=False)
    #: The Action Input exactly as written, so a tool that knows its schema can repair it again.
    raw_input: str = field(default="", compare=False)
    #: Names of the lenient repairs the parser applied to the Action Input (e.g. "trailing_comma").
    repairs: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class FinalAnswer:
    """The model ends the run with an answer."""

    kind: ClassVar[Literal["final"]] = "final"
    answer: str
    thought: str | None = None
    #: True when the text had no protocol keyword at all and was taken whole as the answer.
    implicit: bool = field(default=False, compare=False)
    discarded_text: str = field(default="", compare=False)


@dataclass(frozen=True)
class FormatError:
    """The completion follows neither form; `hint` shows the model the exact form expected."""

    kind: ClassVar[Literal["error"]] = "error"
    message: str
    hint: str
    discarded_text: str = field(default="", compare=False)


Step = Union[Action, FinalAnswer, FormatError]  # noqa: UP007 (a runtime alias works on 3.10)


@dataclass(frozen=True)
class Usage:
    """Token counts as reported by the server (0 where it reports none)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Completion:
    """One reply of a chat model. `finish_reason == "length"` means the text was cut off."""

    text: str
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class ToolResult:
    """What one tool call produced: a value, or an error message written for the model."""

    tool: str
    #: The arguments after repair and validation; the raw input when they could not be parsed.
    arguments: dict[str, Any] | str
    value: Any = None
    error: str | None = None
    #: "unknown_tool" | "arguments" | "timeout" | "exception" when `error` is set.
    error_kind: str | None = None
    repairs: tuple[str, ...] = ()
    seconds: float = 0.0

    @property
    def is_error(self) -> bool:
        return self.error is not None
