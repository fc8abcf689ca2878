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
    """The completion follows neither form; `hint` shows the model the exact form expected,
    and `problem` says what was missing as a code, so the loop need not decode `message`."""

    kind: ClassVar[Literal["error"]] = "error"
    message: str
    hint: str
    discarded_text: str = field(default="", compare=False)
    #: What was wrong, as a short code ("no_input", "ambiguous_input", "fragment", ...; the
    #: parser's codes are listed in docs/protocol.md); "other" when the producer gave none.
    problem: str = field(default="other", compare=False)
    #: The tool the completion named, when it named one (the hint can then show that tool).
    tool: str | None = field(default=None, compare=False)


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

    def to_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


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


@dataclass(frozen=True)
class Turn:
    """One model call of a run and what the engine did with it; memory renders messages from
    these, so summarising old turns changes how they are shown, never what is stored."""

    index: int
    #: The completion as kept in the conversation: the model's text minus `discarded_text`.
    text: str
    step: Step
    #: What went back to the model (without the `Observation:` label); None when the run ended.
    observation: str | None = None
    result: ToolResult | None = None
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)
    model_seconds: float = 0.0
    #: Why the engine handled this turn specially: "truncated", "repeated_call", "best_effort".
    note: str | None = None

    @property
    def thought(self) -> str | None:
        return None if isinstance(self.step, FormatError) else self.step.thought

    @property
    def tool(self) -> str | None:
        """The tool called (its registered name once resolved); None when no call was made,
        also for an action that was never run (cut off, or written in a best-effort reply)."""
        return self.result.tool if self.result is not None else None

    @property
    def input(self) -> dict[str, Any] | str | None:
        """The arguments after repair and validation (as written when they were not valid);
        None when no call was made."""
        return self.result.arguments if self.result is not None else None

    @property
    def is_error(self) -> bool:
        return (
            isinstance(self.step, FormatError)
            or self.note == "truncated"
            or (self.result is not None and self.result.is_error)
        )

    @property
    def repairs(self) -> tuple[str, ...]:
        parsed = self.step.repairs if isinstance(self.step, Action) else ()
        return parsed + (self.result.repairs if self.result is not None else ())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record, the shape of `textreact run --json` steps and transcripts."""
        return {
            "index": self.index,
            "kind": self.step.kind,
            "thought": self.thought,
            "tool": self.tool,
            "input": self.input,
            "observation": self.observation,
            "is_error": self.is_error,
            "answer": self.step.answer if isinstance(self.step, FinalAnswer) else None,
            "note": self.note,
            "repairs": list(self.repairs),
            "text": self.text,
            "discarded_text": self.step.discarded_text,
            "finish_reason": self.finish_reason,
            "model_seconds": round(self.model_seconds, 4),
            "tool_seconds": round(self.result.seconds, 4) if self.result is not None else 0.0,
            "usage": self.usage.to_dict(),
        }


def step_to_dict(step: Step) -> dict[str, Any]:
    """A parsed step as JSON-ready data (what `textreact parse` prints)."""
    data: dict[str, Any] = {"kind": step.kind}
    if isinstance(step, Action):
        data.update(tool=step.tool, input=step.input, thought=step.thought)
        data.update(raw_input=step.raw_input, repairs=list(step.repairs))
    elif isinstance(step, FinalAnswer):
        data.update(answer=step.answer, thought=step.thought, implicit=step.implicit)
    else:
        data.update(message=step.message, hint=step.hint)
    data["discarded_text"] = step.discarded_text
    return data
