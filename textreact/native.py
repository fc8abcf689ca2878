"""The same tools through native tool calling (OpenAI `tools=` / `tool_calls`, or Anthropic
`tool_use` / `tool_result`), for comparison with the text protocol.

The loop returns the text agent's `Result`, one `Turn` per tool call, and every tool result goes
back through `observation.observe`, so a comparison of the two measures the protocol, not the
tools. A server that refuses `tools=`, ignores them, or lets the model write the call as JSON
text is reported as such (see `capability`), never as a crash."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from textreact import observation, templates
from textreact.agent import Result, StopReason, check_limits, check_question
from textreact.calls import Calls
from textreact.errors import ConfigError, ModelError, NativeToolsUnsupportedError
from textreact.models.openai_compat import usage_of
from textreact.steps import Action, FinalAnswer, FormatError, Turn, Usage
from textreact.tools import Tool, ToolBox, builtin_tools

#: How `Result.error` begins when the server refused `tools=`.
UNSUPPORTED = "native tool calling unsupported"
Capability = Literal["supported", "rejected", "as_text", "no_call"]


class NativeModel(Protocol):
    """A client with the OpenAI chat-completions shape (`OpenAICompatModel`); an
    `AnthropicModel` (with `create(messages, *, tools)`) is accepted too."""

    def chat(
        self, messages: Sequence[Mapping[str, Any]], *, tools: Any = None, stop: Sequence[str] = ()
    ) -> Any: ...


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for; `arguments` is the JSON text exactly as sent."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Reply:
    """One assistant message, reduced to what the loop acts on."""

    content: str | None
    calls: tuple[ToolCall, ...]
    finish_reason: str
    usage: Usage


def openai_reply(response: Any) -> Reply:
    """An SDK ChatCompletion as a Reply; calls without an id get one, as some servers omit it."""
    choice = response.choices[0]
    message = choice.message
    calls = tuple(
        ToolCall(
            call.id or f"call_{i}",
            call.function.name or "",
            call.function.arguments or "",
        )
        for i, call in enumerate(message.tool_calls or ())
    )
    content = message.content if isinstance(message.content, str) else None
    return Reply(content, calls, choice.finish_reason or "stop", usage_of(response.usage))


def assistant_message(reply: Reply) -> dict[str, Any]:
    """The assistant turn as the OpenAI API expects it back, tool calls included."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.calls
        ]
    return message


def anthropic_reply(response: Any) -> Reply:
    """An Anthropic Message as a Reply: text blocks joined, `tool_use` blocks as calls."""
    blocks = response.content
    text = "".join(b.text for b in blocks if b.type == "text") or None
    calls = tuple(
        ToolCall(b.id, b.name, json.dumps(b.input, ensure_ascii=False))
        for b in blocks
        if b.type == "tool_use"
    )
    reason = response.stop_reason or "end_turn"
    usage = Usage(
        int(getattr(response.usage, "input_tokens", 0) or 0),
        int(getattr(response.usage, "output_tokens", 0) or 0),
    )
    return Reply(text, calls, "length" if reason == "max_tokens" else reason, usage)


class _OpenAI:
    """OpenAI's `tools=`: calls in `tool_calls`, each answered by a `tool` message."""

    @staticmethod
    def specs(tools: Sequence[Tool]) -> list[dict[str, Any]]:
        return [tool.openai_spec() for tool in tools]

    @staticmethod
    def ask(model: Any, messages: list[dict[str, Any]], specs: list[dict[str, Any]]) -> Reply:
        return openai_reply(model.chat(messages, tools=specs))

    assistant = staticmethod(assistant_message)

    @staticmethod
    def answer(call: ToolCall, text: str, is_error: bool) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": call.id, "content": text}


class _Anthropic:
    """Anthropic's `tool_use` blocks, each answered by a `tool_result` block (with `is_error`)
    in a user turn; AnthropicModel merges consecutive user turns into one."""

    @staticmethod
    def specs(tools: Sequence[Tool]) -> list[dict[str, Any]]:
        return [tool.anthropic_spec() for tool in tools]

    @staticmethod
    def ask(model: Any, messages: list[dict[str, Any]], specs: list[dict[str, Any]]) -> Reply:
        return anthropic_reply(model.create(messages, tools=specs))

    @staticmethod
    def assistant(reply: Reply) -> dict[str, Any]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": reply.content}] * bool(
            reply.content
        )
        blocks += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": _decoded(c.arguments)}
            for c in reply.calls
        ]
        return {"role": "assistant", "content": blocks or ""}

    @staticmethod
    def answer(call: ToolCall, text: str, is_error: bool) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": call.id, "content": text}
        return {"role": "user", "content": [{**block, "is_error": is_error}]}


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
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            name = value.get("name") or value.get("function") or value.get("tool")
            if isinstance(name, str) and name in names:
                return value
        start = content.find("{", start + 1)
    return None


def capability(result: Result) -> Capability:
    """What one native run shows about the server's tool calling."""
    if result.stop_reason == "model_error" and (result.error or "").startswith(UNSUPPORTED):
        return "rejected"
    if any(isinstance(turn.step, Action) for turn in result.steps):
        return "supported"
    if any(turn.note == "call_as_text" for turn in result.steps):
        return "as_text"
    return "no_call"


class NativeAgent:
    """Runs questions through a chat model with tools over its native tool calling."""

    def __init__(
        self,
        model: NativeModel,
        tools: Sequence[Tool] | None = None,
        *,
        max_steps: int = 8,
        max_format_errors: int = 3,
        best_effort: bool = True,
        observation_limit: int = observation.DEFAULT_LIMIT,
        system: str | None = None,
    ) -> None:
        if callable(getattr(model, "chat", None)):
            self.dialect: type[_OpenAI] | type[_Anthropic] = _OpenAI
        elif callable(getattr(model, "create", None)):
            self.dialect = _Anthropic
        else:
            raise ConfigError(
                f"native tool calling needs a model with a chat(messages, *, tools) method "
                f"(OpenAICompatModel) or create(messages, *, tools) (AnthropicModel), got "
                f"{type(model).__name__}"
            )
        check_limits(
            max_steps=max_steps,
            max_format_errors=max_format_errors,
            observation_limit=observation_limit,
        )
        self.model = model
        self.toolbox = ToolBox(builtin_tools() if tools is None else list(tools))
        self.max_steps = max_steps
        self.max_format_errors = max_format_errors
        self.best_effort = best_effort
        self.observation_limit = observation_limit
        #: An optional system message; None sends none, so the server's template alone presents
        #: the tools (the purest measure of the native protocol).
        self.system = system

    def run(self, question: str) -> Result:
        """Answer `question`; never raises for the model's or the server's refusals."""
        check_question(question)
        state = _NativeRun(self, question)
        try:
            while state.stop_reason is None:
                state.advance()
        except KeyboardInterrupt:
            state.stop_reason = "interrupted"
        return state.result()


class _NativeRun:
    """The state of one native run: the conversation, the turns, the counters."""

    def __init__(self, agent: NativeAgent, question: str) -> None:
        self.agent = agent
        self.dialect = agent.dialect
        self.specs = self.dialect.specs(agent.toolbox.tools)
        self.messages: list[dict[str, Any]] = []
        if agent.system:
            self.messages.append({"role": "system", "content": agent.system})
        self.messages.append({"role": "user", "content": question})
        self.turns: list[Turn] = []
        self.requests = 0
        self.stop_reason: StopReason | None = None
        self.answer: str | None = None
        self.error: str | None = None
        self.best_effort = False
        self.empty_in_row = self.truncations_in_row = 0
        self.calls = Calls(agent.toolbox, limit=agent.observation_limit)
        self.started = time.perf_counter()

    def ask(self) -> tuple[Reply, float] | None:
        self.requests += 1
        started = time.perf_counter()
        try:
            reply = self.dialect.ask(self.agent.model, self.messages, self.specs)
        except NativeToolsUnsupportedError as exc:
            self.error = f"{UNSUPPORTED}: {exc}"
            return None
        except ModelError as exc:
            self.error = str(exc)
            return None
        return reply, time.perf_counter() - started

    def advance(self) -> None:
        asked = self.ask()
        if asked is None:
            self.stop_reason = "model_error"
            return
        reply, seconds = asked
        first = Turn(
            index=len(self.turns) + 1,
            text=reply.content or "",
            step=FinalAnswer(reply.content or ""),
            finish_reason=reply.finish_reason,
            usage=reply.usage,
            model_seconds=seconds,
        )
        if reply.finish_reason == "length":
            self.truncated(first)
        elif reply.calls:
            self.act(reply, first)
        elif not (reply.content or "").strip():
            self.empty(first)
        else:
            self.messages.append(self.dialect.assistant(reply))
            as_text = call_written_as_text(reply.content, self.agent.toolbox.names)
            self.turns.append(dataclasses.replace(first, note="call_as_text" if as_text else None))
            self.answer, self.stop_reason = reply.content, "final_answer"
        if self.stop_reason is None and self.requests >= self.agent.max_steps:
            self.at_step_limit()

    def truncated(self, turn: Turn) -> None:
        """A reply cut by the token limit is never an answer and its calls are never run."""
        self.truncations_in_row += 1
        if self.truncations_in_row > 1:
            self.turns.append(dataclasses.replace(turn, note="truncated"))
            self.stop_reason = "truncated"
            return
        self.messages.append({"role": "assistant", "content": turn.text})
        note = templates.note("native_truncated")
        self.messages.append({"role": "user", "content": note})
        self.turns.append(dataclasses.replace(turn, note="truncated", observation=note))

    def empty(self, turn: Turn) -> None:
        self.empty_in_row += 1
        note = templates.note("native_empty")
        step = FormatError("the reply had neither text nor tool calls", note)
        turn = dataclasses.replace(turn, step=step)
        if self.empty_in_row >= self.agent.max_format_errors:
            self.turns.append(turn)
            self.stop_reason = "format_errors"
            return
        self.messages.append({"role": "assistant", "content": ""})
        self.messages.append({"role": "user", "content": note})
        self.turns.append(dataclasses.replace(turn, observation=note))

    def act(self, reply: Reply, first: Turn) -> None:
        """Run each call of the message in order; each answer is a `tool` message with its id."""
        self.empty_in_row = self.truncations_in_row = 0
        self.messages.append(self.dialect.assistant(reply))
        for i, call in enumerate(reply.calls):
            turn = (
                first
                if i == 0
                else dataclasses.replace(first, text="", usage=Usage(), model_seconds=0.0)
            )
            turn = self.call(call, dataclasses.replace(turn, index=len(self.turns) + 1))
            self.turns.append(turn)
            self.messages.append(self.dialect.answer(call, turn.observation or "", turn.is_error))

    def call(self, call: ToolCall, turn: Turn) -> Turn:
        step = Action(
            tool=call.name,
            input=_decoded(call.arguments),
            thought=turn.text or None,
            raw_input=call.arguments,
        )
        turn = dataclasses.replace(turn, step=step)
        again = bool(self.turns) and self.turns[-1].note == "repeated_call"
        return self.calls.run(turn, call.name, call.arguments, again=again)

    def at_step_limit(self) -> None:
        self.stop_reason = "max_steps"
        if not self.agent.best_effort:
            return
        note = templates.note("native_best_effort", max_steps=str(self.agent.max_steps))
        self.messages.append({"role": "user", "content": note})
        asked = self.ask()  # tools stay offered: servers reject tool history without them
        if asked is None:
            return
        reply, seconds = asked
        text = reply.content or ""
        if text.strip() and not reply.calls and reply.finish_reason != "length":
            self.answer, self.best_effort = text, True
        self.messages.append(self.dialect.assistant(reply))
        self.turns.append(
            Turn(
                index=len(self.turns) + 1,
                text=text,
                step=FinalAnswer(text),
                finish_reason=reply.finish_reason,
                usage=reply.usage,
                model_seconds=seconds,
                note="best_effort",
            )
        )

    def result(self) -> Result:
        return Result(
            answer=self.answer,
            stop_reason=self.stop_reason or "interrupted",
            steps=tuple(self.turns),
            messages=self.messages,
            usage=sum((turn.usage for turn in self.turns), Usage()),
            best_effort=self.best_effort,
            error=self.error,
            seconds=time.perf_counter() - self.started,
        )


def _decoded(arguments: str) -> dict[str, Any] | str:
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError:
        return arguments
    return value if isinstance(value, dict) else arguments
