"""The native protocol: the same tools through the server's own tool calling, in OpenAI's
`tools=` / `tool_calls` dialect or Anthropic's `tool_use` / `tool_result` one, for comparison
with the text protocol on the same model through the same loop.

A server that refuses `tools=`, ignores them, or lets the model write the call as JSON text is
reported as such (a comparison says which: `textreact.compare.runner.capability`), never as a
crash. A call written as JSON text runs as the call it is (the turn is noted "call_as_text"):
the model decided to call, and only the server's template failed to turn its words into a
call."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from textreact import jsonish, templates
from textreact.errors import ConfigError
from textreact.memory import MemoryConfig, build_messages
from textreact.protocols.interface import Reading
from textreact.steps import (
    Action,
    Completion,
    FinalAnswer,
    FormatError,
    Request,
    Step,
    Turn,
)

if TYPE_CHECKING:
    from textreact.models import Message
    from textreact.tools import Tool

#: How `Result.error` begins when the server refused `tools=` (NativeToolsUnsupportedError).
UNSUPPORTED = "native tool calling unsupported"
Dialect = Literal["openai", "anthropic"]
#: How the id of a call recovered from text begins; the rest is unique in the process, as a
#: history's call ids must be.
TEXT_CALL_ID = "call_text_"
_TEXT_CALLS = itertools.count(1)
#: The notes this protocol words without the text protocol's keywords.
_OWN_NOTES = frozenset({"truncated", "best_effort", "repeated_call_again"})


class NativeProtocol:
    """Native tool calling. `dialect` is the client's wire format ("openai" for
    `OpenAICompatModel`, "anthropic" for `AnthropicModel`); `system` is an optional system
    message (None sends none, so the server's template alone presents the tools: the purest
    measure of the native protocol)."""

    name = "native"
    #: tools= carries the tools' own schemas: every tool a call names stays offered as it is.
    holds_arguments = False

    def __init__(self, *, dialect: Dialect = "openai", system: str | None = None) -> None:
        if dialect not in ("openai", "anthropic"):
            raise ConfigError(f'dialect must be "openai" or "anthropic", got {dialect!r}')
        self.dialect = dialect
        self.system = system

    def __repr__(self) -> str:
        return f"NativeProtocol(dialect={self.dialect!r})"

    def opening(self, question: str, tools: Sequence[Tool], lang: str) -> list[Message]:
        system = [{"role": "system", "content": self.system}] if self.system else []
        return [*system, {"role": "user", "content": question}]

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
        messages = build_messages(
            opening, turns, config=memory, lang=lang, render=self.render_turn, preface=preface
        )
        specs = [
            t.anthropic_spec() if self.dialect == "anthropic" else t.openai_spec() for t in tools
        ]
        # Tools stay offered at the step limit too: servers reject tool history without them.
        return Request(_joined(messages), tools=tuple(specs), tool_choice=tool_choice)

    def render_turn(self, turn: Turn, whole: bool, shown: str | None, lang: str) -> list[Message]:
        """One turn in the dialect: the assistant message (its calls included) and what the
        engine answered: a tool result for a call, a user note for anything else."""
        step = turn.step
        text = turn.text if whole and not written_as_text(step) else ""  # the call says it
        if not isinstance(step, Action) or step.call_id is None:
            reply: list[Message] = [{"role": "assistant", "content": text}]
            return reply + [{"role": "user", "content": shown}] * (shown is not None)
        if self.dialect == "anthropic":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] * bool(text)
            blocks.append(
                {"type": "tool_use", "id": step.call_id, "name": step.tool, "input": _input(step)}
            )
            answer = {"type": "tool_result", "tool_use_id": step.call_id, "content": shown or ""}
            answer["is_error"] = turn.is_error
            return [
                {"role": "assistant", "content": blocks, "joined": turn.joined},
                {"role": "user", "content": [answer]},
            ]
        call = {
            "id": step.call_id,
            "type": "function",
            "function": {"name": step.tool, "arguments": step.raw_input},
        }
        return [
            {
                "role": "assistant",
                "content": text or None,
                "tool_calls": [call],
                "joined": turn.joined,
            },
            {"role": "tool", "tool_call_id": step.call_id, "content": shown or ""},
        ]

    def read(self, completion: Completion, tools: Sequence[Tool]) -> Reading:
        text = completion.text
        if completion.tool_calls:
            thought = text.strip() or None
            steps: tuple[Step, ...] = tuple(
                Action(
                    tool=call.name,
                    input=_decoded(call.arguments),
                    thought=thought,
                    raw_input=call.arguments,
                    call_id=call.id,
                )
                for call in completion.tool_calls
            )
            return Reading(steps, text)
        if not text.strip():
            empty = FormatError(
                "the reply had neither text nor tool calls", "", problem="empty_reply"
            )
            return Reading((empty,), text)
        written = call_written_as_text(text, [t.name for t in tools])
        if written is None:
            return Reading((FinalAnswer(text),), text)
        return Reading((recovered_call(written, text),), text, "call_as_text")

    def note(self, name: str, lang: str, **slots: str) -> str:
        return templates.note(f"native_{name}" if name in _OWN_NOTES else name, lang, **slots)

    def explain(self, error: FormatError, tools: Sequence[Tool], lang: str, *, again: bool) -> str:
        if error.problem == "empty_reply":
            return templates.note("native_empty", lang)
        if error.problem == "tool_required" and error.tool is not None:
            return templates.note("native_tool_required_named", lang, tool=error.tool)
        return templates.note(f"native_{error.problem}", lang)


def _joined(messages: list[Message]) -> list[Message]:
    """The calls of one reply back in one assistant message, each turn's call having been
    rendered on its own (`Turn.joined`), so the server sees the reply as the model sent it."""
    out: list[Message] = []
    for message in messages:
        joined = message.pop("joined", False)
        if joined and out:
            head = next(m for m in reversed(out) if m["role"] == "assistant")
            key = "tool_calls" if "tool_calls" in message else "content"
            head[key] = [*head[key], *message[key]]
            continue
        out.append(message)
    return out


def _input(step: Action) -> dict[str, Any]:
    return step.input if isinstance(step.input, dict) else {}


def _decoded(arguments: str) -> dict[str, Any] | str:
    """The arguments as an object where they are one exactly as written; else the text, which
    validation reads as it reads an Action Input: a key set twice is refused there, as in the
    text protocol, never settled by keeping the last."""
    value = jsonish.strict_object(arguments)
    return value if value is not None else arguments


def recovered_call(written: dict[str, Any], text: str) -> Action:
    """A call the model wrote as JSON text, as the call it meant: it runs, and the history
    shows it as a native call (with an id of its own), so the next request is the one a
    server that parsed the call itself would have been sent."""
    name = written.get("name") or written.get("function") or written.get("tool")
    arguments = written.get("arguments", written.get("parameters", {}))
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    call_id = f"{TEXT_CALL_ID}{next(_TEXT_CALLS)}"
    return Action(tool=str(name), input=_decoded(raw), raw_input=raw, call_id=call_id)


def written_as_text(step: object) -> bool:
    """Whether `step` is a call the model wrote as text (`recovered_call`), not a native call."""
    return isinstance(step, Action) and (step.call_id or "").startswith(TEXT_CALL_ID)


def call_written_as_text(content: str | None, names: Sequence[str]) -> dict[str, Any] | None:
    """The tool call a model wrote as JSON in its text instead of as a native call, if any.

    Models whose chat template has no tool support often answer `{"name": ..., "arguments": ...}`
    (bare, fenced, or inside `<tool_call>` tags); that is a protocol failure, not an answer."""
    if not content or "{" not in content:
        return None
    decoder = json.JSONDecoder()
    start = content.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(content, start)
        except (json.JSONDecodeError, RecursionError):
            value = None
        if isinstance(value, dict):
            name = value.get("name") or value.get("function") or value.get("tool")
            if isinstance(name, str) and name in names:
                return value
        start = content.find("{", start + 1)
    return None
