"""The ReAct loop: the only module that knows the order of things. Each turn renders the
messages, asks the model, parses the reply, runs the tool, formats the observation and stores
the turn; stop reasons are decided here and nowhere else."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from textreact import grammar, observation, prompt, templates
from textreact.calls import Calls
from textreact.errors import ConfigError, ModelError
from textreact.memory import MemoryConfig, build_messages
from textreact.models import ChatModel, Message
from textreact.parser import parse
from textreact.parsing.messages import forms_hint
from textreact.steps import Action, Completion, FinalAnswer, FormatError, Turn, Usage
from textreact.tools import Tool, ToolBox, builtin_tools
from textreact.transcript import Transcript

StopReason = Literal[
    "final_answer", "max_steps", "truncated", "format_errors", "model_error", "interrupted"
]


@dataclass(frozen=True)
class Result:
    """What a run produced, and why it stopped."""

    answer: str | None
    stop_reason: StopReason
    steps: tuple[Turn, ...]
    #: The conversation as it stands at the end, rendered the way the model saw it.
    messages: list[Message]
    usage: Usage
    #: True when the answer came from the one tool-less request made at the step limit.
    best_effort: bool = False
    #: The model's error message when `stop_reason == "model_error"`.
    error: str | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data: the shape `textreact run --json` prints."""
        return {
            "answer": self.answer,
            "stop_reason": self.stop_reason,
            "best_effort": self.best_effort,
            "error": self.error,
            "steps": [turn.to_dict() for turn in self.steps],
            "usage": self.usage.to_dict(),
            "seconds": round(self.seconds, 4),
        }


@dataclass(frozen=True)
class Event:
    """Told to `on_event` as the run goes: before each model call, after each turn, at the end."""

    kind: Literal["request", "turn", "finish"]
    messages: Sequence[Message] = ()
    turn: Turn | None = None
    result: Result | None = None


class Agent:
    """Runs questions through a chat model with tools over the text protocol."""

    def __init__(
        self,
        model: ChatModel,
        tools: Sequence[Tool] | None = None,
        *,
        max_steps: int = 8,
        lang: str = "en",
        max_format_errors: int = 3,
        best_effort: bool = True,
        observation_limit: int = observation.DEFAULT_LIMIT,
        memory: MemoryConfig = MemoryConfig(),
        examples: Sequence[Message] | None = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        if not callable(getattr(model, "complete", None)):
            raise ConfigError(
                f"model must have a complete(messages, *, stop) method (a ChatModel), got "
                f"{type(model).__name__}; use OpenAICompatModel(...) or ScriptedModel([...])"
            )
        check_limits(
            max_steps=max_steps,
            max_format_errors=max_format_errors,
            observation_limit=observation_limit,
        )
        if lang not in grammar.LANGUAGES:
            raise ConfigError(f"lang must be one of {grammar.LANGUAGES}, got {lang!r}")
        if not isinstance(memory, MemoryConfig):
            raise ConfigError(f"memory must be a MemoryConfig(...), got {memory!r}")
        if examples is not None and not all(
            isinstance(m, dict) and m.get("role") in ("user", "assistant") for m in examples
        ):
            raise ConfigError(
                "examples must be a list of {'role': 'user' | 'assistant', 'content': str} "
                "messages, alternating, starting with a user turn"
            )
        self.model = model
        self.toolbox = ToolBox(builtin_tools() if tools is None else list(tools))
        self.max_steps = max_steps
        self.lang = lang
        self.max_format_errors = max_format_errors
        self.best_effort = best_effort
        self.observation_limit = observation_limit
        self.memory = memory
        self.examples = examples
        self.on_event = on_event

    def run(self, question: str, *, transcript: str | os.PathLike[str] | None = None) -> Result:
        """Answer `question`; never raises for the model's mistakes (see `Result.stop_reason`).
        With `transcript`, each turn is on disk as soon as it happens."""
        check_question(question)
        with _transcript(transcript) as log:
            state = _Run(self, question, log)
            log("start", question=question, tools=list(self.toolbox.names), lang=self.lang)
            try:
                while state.stop_reason is None:
                    state.advance()
            except KeyboardInterrupt:
                state.stop("interrupted")
            result = state.result()
            log("stop", **{k: v for k, v in result.to_dict().items() if k != "steps"})
        self._emit(Event("finish", result=result))
        return result

    def _emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)


#: The least value of each loop limit (observations shorter than 20 characters cannot carry a
#: hint).
_LEAST = {"max_steps": 1, "max_format_errors": 1, "observation_limit": 20}


def check_limits(**limits: int) -> None:
    """Refuse a loop limit that is not an integer at least its least value (shared by the
    text and the native loop, so both accept exactly the same settings)."""
    for name, value in limits.items():
        least = _LEAST[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ConfigError(f"{name} must be an integer >= {least}, got {value!r}")


def check_question(question: object) -> None:
    if not isinstance(question, str) or not question.strip():
        raise ConfigError(f"question must be a non-empty string, got {question!r}")


@contextlib.contextmanager
def _transcript(path: str | os.PathLike[str] | None) -> Iterator[Callable[..., None]]:
    if path is None:
        yield lambda record_type, **fields: None
        return
    with Transcript(path) as transcript:
        yield transcript.write


class _Run:
    """The state of one run: the turns so far and the counters the stop rules read."""

    def __init__(self, agent: Agent, question: str, log: Callable[..., None]) -> None:
        self.agent = agent
        self.log = log
        tools = agent.toolbox.tools
        self.opening = prompt.opening_messages(
            question, tools, lang=agent.lang, examples=agent.examples
        )
        self.turns: list[Turn] = []
        self.stop_reason: StopReason | None = None
        self.answer: str | None = None
        self.error: str | None = None
        self.best_effort = False
        self.format_errors_in_row = 0
        self.truncations_in_row = 0
        self.calls = Calls(agent.toolbox, limit=agent.observation_limit, lang=agent.lang)
        #: The conversation as the model last saw it, when memory cannot render it.
        self.final_messages: list[Message] | None = None
        self.started = time.perf_counter()

    def stop(self, reason: StopReason) -> None:
        self.stop_reason = reason

    def messages(self) -> list[Message]:
        agent = self.agent
        return build_messages(self.opening, self.turns, config=agent.memory, lang=agent.lang)

    def advance(self) -> None:
        """One turn: ask, parse, then act on what came back."""
        asked = self.ask(self.messages())
        if asked is None:
            self.stop("model_error")
            return
        turn = self.parsed_turn(*asked)
        step, completion = turn.step, asked[0]
        if completion.finish_reason == "length" and not _finished_action(step):
            turn = self.truncated(turn)
        elif isinstance(step, FinalAnswer):
            self.answer = step.answer
            self.stop("final_answer")
        elif isinstance(step, FormatError):
            turn = self.format_error(turn, step)
        else:
            turn = self.act(turn, step)
        self.record(turn)
        if self.stop_reason is None and len(self.turns) >= self.agent.max_steps:
            self.at_step_limit()

    def ask(self, messages: list[Message]) -> tuple[Completion, float] | None:
        """The model's reply and its time; None (with `error` set) when the model failed."""
        self.agent._emit(Event("request", messages=messages))
        started = time.perf_counter()
        try:
            completion = self.agent.model.complete(messages, stop=grammar.STOP_SEQUENCES)
        except ModelError as exc:
            self.error = str(exc)
            return None
        return completion, time.perf_counter() - started

    def parsed_turn(self, completion: Completion, seconds: float) -> Turn:
        """The completion parsed, keeping the text minus what the parser discarded."""
        step = parse(completion.text)
        return Turn(
            index=len(self.turns) + 1,
            text=completion.text[: len(completion.text) - len(step.discarded_text)],
            step=step,
            finish_reason=completion.finish_reason,
            usage=completion.usage,
            model_seconds=seconds,
        )

    def record(self, turn: Turn) -> None:
        self.turns.append(turn)
        self.log("step", **turn.to_dict())
        self.agent._emit(Event("turn", turn=turn))

    def truncated(self, turn: Turn) -> Turn:
        self.truncations_in_row += 1
        if self.truncations_in_row > 1:
            self.stop("truncated")
            return dataclasses.replace(turn, note="truncated")
        text = templates.note("truncated", self.agent.lang)
        return dataclasses.replace(turn, note="truncated", observation=text)

    def format_error(self, turn: Turn, step: FormatError) -> Turn:
        self.truncations_in_row = 0
        self.format_errors_in_row += 1
        if self.format_errors_in_row >= self.agent.max_format_errors:
            self.stop("format_errors")
            return turn
        lang = self.agent.lang
        if self.format_errors_in_row == 1:
            hint = self.concrete(step.hint)
            text = templates.note("format_error", lang, message=step.message, hint=hint)
        else:
            rules = prompt.format_section(self.agent.toolbox.tools, lang)
            text = templates.note("format_error_again", lang, message=step.message, rules=rules)
        return dataclasses.replace(turn, observation=text)

    def concrete(self, hint: str) -> str:
        """The parser's generic hint shown with a real tool and its example instead."""
        tools = self.agent.toolbox.tools
        for lang in grammar.LANGUAGES:
            if tools and hint == forms_hint(lang):
                return forms_hint(lang, tools[0].name, grammar.render_input(tools[0].example))
        return hint

    def act(self, turn: Turn, step: Action) -> Turn:
        self.format_errors_in_row = self.truncations_in_row = 0
        again = bool(self.turns) and self.turns[-1].note == "repeated_call"
        return self.calls.run(turn, step.tool, step.input, again=again)

    def at_step_limit(self) -> None:
        self.stop("max_steps")
        if not self.agent.best_effort:
            return
        messages = self.messages()
        note = templates.note("best_effort", self.agent.lang, max_steps=str(self.agent.max_steps))
        messages[-1] = {**messages[-1], "content": f"{messages[-1]['content']}\n\n{note}"}
        asked = self.ask(messages)
        if asked is None:
            return
        turn = self.parsed_turn(*asked)
        if isinstance(turn.step, FinalAnswer) and turn.finish_reason != "length":
            self.answer, self.best_effort = turn.step.answer, True
        self.record(dataclasses.replace(turn, note="best_effort"))
        # Memory would render this last exchange without the note the model was shown.
        self.final_messages = [*messages, {"role": "assistant", "content": turn.text}]

    def result(self) -> Result:
        usage = sum((turn.usage for turn in self.turns), Usage())
        return Result(
            answer=self.answer,
            stop_reason=self.stop_reason or "interrupted",
            steps=tuple(self.turns),
            messages=self.final_messages or self.messages(),
            usage=usage,
            best_effort=self.best_effort,
            error=self.error,
            seconds=time.perf_counter() - self.started,
        )


def _finished_action(step: object) -> bool:
    """An action the model completed before the token limit cut its later rambling."""
    return isinstance(step, Action) and bool(step.discarded_text)
