"""The agent: settings checked once, and the two drivers of the one loop (`textreact.loop`). The
sync driver (`iter`, `run`) and the async one (`aiter`, `arun`) differ only in how they call the
model, run a tool and ask `before_call` (awaiting what is awaitable); events and transcripts are
the same `_Session` for both."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import os
import time
from collections.abc import AsyncIterator, Callable, Generator, Sequence
from typing import Any

from textreact import grammar, loop, observation
from textreact.constrain import TOOL_CHOICES
from textreact.effects import check_reply
from textreact.errors import ConfigError, ModelError
from textreact.exemplars import checked_examples
from textreact.loop import Ask, BeforeCall, Consult, Effect, RunTool
from textreact.memory import MemoryConfig
from textreact.models import Message
from textreact.policy import Policy
from textreact.protocols import Protocol, resolve
from textreact.protocols.choice import choose
from textreact.steps import Completion, Event, Request, Result, StopReason, Turn
from textreact.tools import Tool, ToolBox, builtin_tools
from textreact.tools.box import asettled, settled
from textreact.transcript import Transcript

__all__ = [
    "Agent",
    "Event",
    "NativeAgent",
    "Result",
    "StopReason",
    "check_limits",
    "checked_tool_choice",
]


class Agent:
    """Runs questions through a chat model with tools, through one loop, over the protocol
    chosen for the model (`protocol="auto"`, the default: own-first for a model whose chat
    template has a tool format that measured ahead, else the text protocol;
    `textreact.protocols.choice`) or the one named: "text", "native" (the model's native tool
    calling), "own", "own-first" or a protocol object. `best_effort`
    lets the loop make one tool-less request at the step limit. `policies` are opt-in
    behaviours that steer a small model when it gets lost (`textreact.policies`); none by
    default. `max_tools` offers each request only that many tools, the most relevant to the
    step (the `tool_budget` policy, before the others; extra `budget`), for a model given
    more tools than it can choose among (an MCP server's). `decision_bias` (text protocol)
    chooses each turn's call or answer from the model's log-probabilities, that many log-odds
    in favour of calling (`TextProtocol(decision_bias=...)`). `examples` is the text protocol's
    worked example: "bundled" (the default, but for a server that takes no grammar under
    `protocol="auto"`, which gets "built"), "built" from the offered tools, "none", or a
    list of user/assistant messages (`textreact.exemplars`). `parallel_calls` lets one reply
    of the text protocol make several calls (`TextProtocol(parallel_calls=True)`), run in
    order, each observed, the observations sent back together; off by default (a second
    call is then discarded). Native tool calling runs every call of a reply either way."""

    def __init__(
        self,
        model: Any,
        tools: Sequence[Tool] | None = None,
        *,
        protocol: str | Protocol = "auto",
        max_steps: int = 8,
        lang: str = "en",
        max_format_errors: int = 3,
        best_effort: bool = True,
        observation_limit: int = observation.DEFAULT_LIMIT,
        memory: MemoryConfig = MemoryConfig(),
        examples: str | Sequence[Message] | None = None,
        on_event: Callable[[Event], None] | None = None,
        before_call: BeforeCall | None = None,
        tool_choice: str = "auto",
        policies: Sequence[Policy] = (),
        max_tools: int | None = None,
        decision_bias: float | None = None,
        parallel_calls: bool = False,
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
        chosen = None
        if protocol == "auto":  # before the options take their defaults: they steer the choice
            chosen = choose(
                model,
                examples=examples,
                decision_bias=decision_bias,
                parallel_calls=parallel_calls,
            )
        examples = checked_examples(examples)
        for name, hook in (("on_event", on_event), ("before_call", before_call)):
            if hook is not None and not callable(hook):
                raise ConfigError(f"{name} must be a function or None, got {hook!r}")
        self.model = model
        if chosen is None:
            self.protocol = resolve(
                protocol,
                model,
                examples=examples,
                decision_bias=decision_bias,
                parallel_calls=parallel_calls,
            )
        else:
            self.protocol = chosen.protocol
        #: Why `protocol="auto"` chose this protocol (also `Result.protocol_reason`).
        self.protocol_reason = None if chosen is None else chosen.reason
        if self.protocol.name == "native" and not {"tools", "**"} & _parameters(type(model)):
            raise ConfigError(
                f"native tool calling needs a model whose complete() takes tools= "
                f"(OpenAICompatModel, AnthropicModel, ScriptedModel); {type(model).__name__}."
                "complete does not"
            )
        self.toolbox = ToolBox(builtin_tools() if tools is None else list(tools))
        self.max_steps = max_steps
        self.lang = lang
        self.max_format_errors = max_format_errors
        self.best_effort = best_effort
        self.observation_limit = observation_limit
        self.memory = memory
        if not all(isinstance(p, Policy) for p in policies):
            raise ConfigError(
                "policies must be textreact.policy.Policy objects, e.g. "
                f"textreact.policies.small_model(), got {list(policies)!r}"
            )
        self.policies = tuple(policies)
        if max_tools is not None:
            from textreact.policies.budget import ToolBudget

            self.policies = (ToolBudget(max_tools), *self.policies)
        self.on_event = on_event
        self.before_call = before_call
        self.tool_choice = checked_tool_choice(tool_choice, self.toolbox)

    def __repr__(self) -> str:
        tools = list(self.toolbox.names)
        return f"Agent(model={self.model!r}, protocol={self.protocol!r}, tools={tools})"

    def settings(self) -> loop.Settings:
        return loop.Settings(
            protocol=self.protocol,
            toolbox=self.toolbox,
            max_steps=self.max_steps,
            max_format_errors=self.max_format_errors,
            best_effort=self.best_effort,
            observation_limit=self.observation_limit,
            memory=self.memory,
            lang=self.lang,
            before_call=self.before_call,
            tool_choice=self.tool_choice,
            policies=self.policies,
            protocol_reason=self.protocol_reason,
        )

    def iter(
        self, question: str, *, transcript: str | os.PathLike[str] | None = None
    ) -> Generator[Turn, None, Result]:
        """Each turn as it happens; the generator's return value is the Result (`run` drains
        it). With `transcript`, each turn is on disk as soon as it happens."""
        check_question(question)
        with _Session(self, question, transcript) as session:
            step = session.advance(None)
            while not isinstance(step, Result):
                try:
                    sent = self._perform(step, session)
                except KeyboardInterrupt:
                    return session.interrupt()
                if isinstance(step, Turn):
                    yield step
                step = session.advance(sent)
            return step

    def run(self, question: str, *, transcript: str | os.PathLike[str] | None = None) -> Result:
        """Answer `question`; never raises for the model's mistakes (see `Result.stop_reason`)."""
        turns = self.iter(question, transcript=transcript)
        while True:
            try:
                next(turns)
            except StopIteration as stop:
                return stop.value

    async def aiter(
        self, question: str, *, transcript: str | os.PathLike[str] | None = None
    ) -> AsyncIterator[Turn]:
        """Each turn as it happens, for async code. The model may be async
        (`AsyncOpenAICompatModel`) or sync (run in a worker thread); `async def` tools are
        awaited on the running loop."""
        async for item in self._adrive(question, transcript):
            if isinstance(item, Turn):
                yield item

    async def arun(
        self, question: str, *, transcript: str | os.PathLike[str] | None = None
    ) -> Result:
        """`run` for async code: many questions can run at once on one event loop."""
        async for item in self._adrive(question, transcript):
            if isinstance(item, Result):
                return item
        raise AssertionError("the loop ended without a Result")  # pragma: no cover

    async def _adrive(
        self, question: str, transcript: str | os.PathLike[str] | None
    ) -> AsyncIterator[Turn | Result]:
        """The async driver: each turn, then the Result (an async generator returns none)."""
        check_question(question)
        with _Session(self, question, transcript) as session:
            step = session.advance(None)
            while not isinstance(step, Result):
                try:
                    sent = await self._aperform(step, session)
                except KeyboardInterrupt:
                    step = session.interrupt()
                    break
                if isinstance(step, Turn):
                    yield step
                step = session.advance(sent)
            yield step

    def _perform(self, effect: Effect, session: _Session) -> Any:
        if isinstance(effect, RunTool):
            return self.toolbox.execute(effect.call, present=effect.present)
        if isinstance(effect, Consult):
            return settled(functools.partial(self._consult, effect))
        if isinstance(effect, Turn):
            return session.turned(effect)
        request, options, started = session.asking(effect)
        try:
            reply = self.model.complete(request.messages, stop=request.stop, **options)
            if inspect.isawaitable(reply):
                _close(reply)
                raise ModelError(
                    f"{type(self.model).__name__}.complete is async: use `await "
                    "agent.arun(...)` or `agent.aiter(...)` with an async model"
                )
            return session.replied(reply, started)
        except ModelError as error:
            return error

    async def _aperform(self, effect: Effect, session: _Session) -> Any:
        if isinstance(effect, RunTool):
            return await self.toolbox.aexecute(effect.call, present=effect.present)
        if isinstance(effect, Consult):
            return await asettled(functools.partial(self._consult, effect))
        if isinstance(effect, Turn):
            return session.turned(effect)
        request, options, started = session.asking(effect)
        complete = self.model.complete
        try:
            if inspect.iscoroutinefunction(complete):
                reply = await complete(request.messages, stop=request.stop, **options)
            else:
                reply = await asyncio.to_thread(
                    complete, request.messages, stop=request.stop, **options
                )
            return session.replied(reply, started)
        except ModelError as error:
            return error

    def _consult(self, effect: Consult) -> Any:
        assert self.before_call is not None  # the loop consults only where there is one
        return self.before_call(effect.tool, effect.arguments)


class NativeAgent(Agent):
    """`Agent(..., protocol=NativeProtocol(...))`, kept for one release: the same loop."""

    def __init__(
        self, model: Any, tools: Sequence[Tool] | None = None, *, system: str | None = None,
        **settings: Any,
    ) -> None:  # fmt: skip
        from textreact.protocols.native import NativeProtocol

        dialect = getattr(model, "tool_dialect", "openai")
        protocol = NativeProtocol(dialect=dialect, system=system)
        super().__init__(model, tools, protocol=protocol, **settings)


class _Session:
    """What both drivers share around the loop: stepping it, the bookkeeping of a model call,
    events and the transcript. The drivers differ only in how they wait."""

    def __init__(self, agent: Agent, question: str, path: str | os.PathLike[str] | None) -> None:
        self.agent = agent
        self.question = question
        self.path = path
        self.core = loop.run(agent.settings(), question)
        self._stack = contextlib.ExitStack()
        self.log: Callable[..., None] = lambda record_type, **fields: None

    def __enter__(self) -> _Session:
        if self.path is not None:
            self.log = self._stack.enter_context(Transcript(self.path)).write
        agent = self.agent
        self.log(
            "start", question=self.question, tools=list(agent.toolbox.names), lang=agent.lang,
            protocol=agent.protocol.name,
        )  # fmt: skip
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stack.close()

    def advance(self, sent: Any) -> Effect | Result:
        """The loop's next effect, or its Result once it has ended."""
        try:
            return self.core.send(sent)
        except StopIteration as stop:
            return self.finish(stop.value)

    def interrupt(self) -> Result:
        """Ctrl-C while the driver waited: the loop ends the run as "interrupted"."""
        try:
            self.core.throw(KeyboardInterrupt())
        except StopIteration as stop:
            return self.finish(stop.value)
        raise AssertionError("the loop went on after an interrupt")  # pragma: no cover

    def asking(self, effect: Ask) -> tuple[Request, dict[str, Any], float]:
        """Before a model call: the request, the options this model takes, the start time."""
        self.emit(Event("request", messages=effect.request.messages))
        return effect.request, _options(self.agent.model, effect.request), time.perf_counter()

    def replied(self, reply: object, started: float) -> tuple[Completion, float]:
        return check_reply(reply, self.agent.model), time.perf_counter() - started

    def emit(self, event: Event) -> None:
        if self.agent.on_event is not None:
            self.agent.on_event(event)

    def turned(self, turn: Turn) -> None:
        self.log("step", **turn.to_dict())
        self.emit(Event("turn", turn=turn))

    def finish(self, result: Result) -> Result:
        self.log("stop", **{k: v for k, v in result.to_dict().items() if k != "steps"})
        self.emit(Event("finish", result=result))
        return result


def _options(model: Any, request: Request) -> dict[str, Any]:
    """The request's options that `model.complete` takes: a grammar or a tool choice is an
    offer a client without the parameter declines (a plain `complete(messages, *, stop)`
    ChatModel still runs the text protocol); tools are a need, so they are always passed."""
    options = request.options()
    accepts = _parameters(type(model))
    return {k: v for k, v in options.items() if k == "tools" or "**" in accepts or k in accepts}


@functools.cache
def _parameters(model_class: type) -> frozenset[str]:
    try:
        signature = inspect.signature(model_class.complete)
    except (TypeError, ValueError):
        return frozenset({"**"})
    return frozenset(
        "**" if p.kind is p.VAR_KEYWORD else p.name for p in signature.parameters.values()
    )


def _close(awaitable: Any) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()


#: The least value of each loop limit (observations shorter than 20 characters cannot carry a
#: hint).
_LEAST = {"max_steps": 1, "max_format_errors": 1, "observation_limit": 20}


def checked_tool_choice(choice: object, toolbox: ToolBox, flag: str = "tool_choice") -> str:
    """`choice` as the loop takes it (a tool's name as registered); ConfigError if it is none
    of "auto", "required", "none" or an offered tool's name."""
    tool = toolbox.resolve(choice) if isinstance(choice, str) else None
    if tool is not None:
        return tool.name
    if choice not in TOOL_CHOICES:
        raise ConfigError(
            f"{flag} must be one of {', '.join(TOOL_CHOICES)} or a tool's name "
            f"({', '.join(toolbox.names) or 'no tools'}), got {choice!r}"
        )
    return str(choice)


def check_limits(**limits: int) -> None:
    """Refuse a loop limit that is not an integer at least its least value."""
    for name, value in limits.items():
        least = _LEAST[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ConfigError(f"{name} must be an integer >= {least}, got {value!r}")


def check_question(question: object) -> None:
    if not isinstance(question, str) or not question.strip():
        raise ConfigError(f"question must be a non-empty string, got {question!r}")
