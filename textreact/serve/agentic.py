"""A request that brings no tools, answered by textreact's own loop with the server's MCP tools
(`textreact serve --mcp`): the client's conversation in, the final answer out as `content`,
each step (thought, call, the tool's result) as `reasoning_content`.

The loop is `Agent.aiter`, unchanged; two small adapters fit it to a request:
- `UpstreamModel`: the loop's model is the proxy's own `Upstream`, so a step is asked exactly
  as a text-protocol turn is (the same pool, retries, timeout, upstream key or client key,
  grammar where the upstream takes one, faults as the same HTTP errors);
- `Conversation`: the loop opens on one question, a request brings a conversation. The text
  protocol's opening is replaced by the conversation rendered as a turn with tools is
  (`text_messages`: the tools' system prompt, the client's system messages after it, the
  worked example, the earlier turns); the question is the last user message, already its
  last message. Every later turn is the loop's own."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from textreact import grammar
from textreact.agent import Agent
from textreact.protocols.text import TextProtocol
from textreact.serve.convert import content_text, text_messages
from textreact.serve.errors import ServeError, bad_request
from textreact.serve.reply import Chunks, completion_body
from textreact.serve.sse import DONE, event
from textreact.serve.turn import Answer
from textreact.steps import Action, Completion, Event, FinalAnswer, Result, Turn

if TYPE_CHECKING:
    from textreact.constrain import ServerInfo
    from textreact.models import Message
    from textreact.serve.config import ServeConfig
    from textreact.serve.request import ChatRequest
    from textreact.serve.upstream import Upstream
    from textreact.tools import Tool

__all__ = ["Conversation", "ServerRun", "UpstreamModel", "answers", "question_of", "step_text"]


def answers(call: ChatRequest) -> bool:
    """Whether the server-side loop answers `call`: it brings no tools and no tool history
    (those are the client's own loop: one turn, as without `--mcp`), its last message is the
    user's, and it asks for no `response_format` (the loop does not shape answers); every
    other request is passed through as it is without `--mcp`."""
    if call.tools or call.tool_history or call.body.get("response_format") is not None:
        return False
    return question_of(call) is not None


def question_of(call: ChatRequest) -> str | None:
    """The question the loop answers: the last message, when it is the user's, as text."""
    last = call.messages[-1]
    if last["role"] != "user":
        return None
    text = content_text(last.get("content"), f"messages[{len(call.messages) - 1}]")
    return text if text.strip() else None


class UpstreamModel:
    """The proxy's `Upstream` as the loop's model: each step one plain text request with the
    client's options (`temperature`, `max_tokens`...) and the protocol's stops; the grammar's
    fields where the upstream takes one. An upstream fault is the proxy's `ServeError`, which
    ends the run and reaches the client as the same status it would for a turn."""

    def __init__(
        self,
        upstream: Upstream,
        body: Mapping[str, Any],
        key: str | None,
        server: ServerInfo | None,
    ) -> None:
        self.upstream = upstream
        self.body = dict(body)
        self.key = key
        self.server = server

    async def complete(
        self, messages: Sequence[Message], *, stop: Sequence[str] = (), grammar: str | None = None
    ) -> Completion:
        fields = self.server.request_fields(grammar) if grammar and self.server else {}
        body = {**self.body, "messages": list(messages), "stop": list(stop)}
        completion, _ = await self.upstream.complete(body, self.key, fields)
        return dataclasses.replace(completion, constrained=bool(fields))


class Conversation(TextProtocol):
    """The text protocol, opened on a client's whole conversation instead of one question
    (`render(tools)` gives it); the grammar is made once per tool set for every request."""

    def __init__(self, render: Callable[[Sequence[Tool]], list[Message]], *, constrain: bool):
        super().__init__(constrain=constrain)
        self.render = render

    def opening(self, question: str, tools: Sequence[Tool], lang: str) -> list[Message]:
        return self.render(tools)

    def grammar(self, tools: Sequence[Tool], tool_choice: str, lang: str) -> str | None:
        if not self.constrain or not tools:
            return None
        return _grammar(tuple(tools), tool_choice, lang)


@lru_cache(maxsize=16)
def _grammar(tools: tuple[Tool, ...], tool_choice: str, lang: str) -> str:
    from textreact.constrain import tools_grammar

    return tools_grammar(tools, tool_choice=tool_choice, lang=lang)


class ServerRun:
    """One request answered by the loop: an Agent with the server's tools, lang and observation
    limit, the client's conversation as its opening (one Agent per request: it is cheap, and
    the tools are made once, by the connection). `body()` for `stream: false`, `events()` for
    a stream."""

    def __init__(
        self,
        call: ChatRequest,
        config: ServeConfig,
        model: UpstreamModel,
        tools: Sequence[Tool],
    ) -> None:
        question = question_of(call)
        if question is None:
            raise ValueError("the server-side loop answers a conversation that ends with the user")
        if call.body.get("n", 1) not in (1, None):
            raise bad_request("n must be 1: the server-side loop makes one answer", "n")
        self.question = question
        self.lang = config.lang
        self.show_thoughts = config.show_thoughts
        asked = call.body.get("model")
        #: The model named in the response: the one the client asked for.
        self.named: str = asked if isinstance(asked, str) and asked else call.model
        self.result: Result | None = None

        def render(offered: Sequence[Tool]) -> list[Message]:
            with_tools = dataclasses.replace(call, tools=tuple(offered))
            limit, example = config.observation_limit, config.example
            return text_messages(with_tools, lang=config.lang, limit=limit, example=example)

        protocol = Conversation(render, constrain=model.server is not None)
        limit = config.observation_limit
        self.agent = Agent(
            model, tools, protocol=protocol, lang=config.lang, on_event=self._finished,
            **({"observation_limit": limit} if limit else {}),
        )  # fmt: skip

    def _finished(self, event: Event) -> None:
        if event.kind == "finish":
            self.result = event.result

    async def body(self) -> dict[str, Any]:
        """The whole `chat.completion` body: every step joined in `reasoning_content`, the
        usage summed over the steps."""
        result = await self.agent.arun(self.question)
        answer = self._answer(result)
        extra = {"protocol": "text", "loop": "server", "steps": len(result.steps)}
        extra["stop_reason"] = result.stop_reason
        if answer.note:
            extra["note"] = answer.note
        return completion_body(
            answer, model=self.named, usage=result.usage, show_thoughts=self.show_thoughts,
            extra=extra,
        )  # fmt: skip

    async def events(self, chunks: Chunks) -> AsyncGenerator[bytes, None]:
        """The stream: one `reasoning_content` delta per step as it completes, then the
        answer as content, the finish, the usage when asked for. A fault before the first
        step is raised (the app answers it with its HTTP status); after it, an `error` event
        and `data: [DONE]`, as the proxy's own streams end."""
        steps = 0
        try:
            async for turn in self.agent.aiter(self.question):
                text = step_text(turn, self.lang)
                if text:
                    text = f"\n\n{text}" if steps else text
                    steps += 1
                    yield chunks.reasoning(text)
                    if self.show_thoughts:
                        yield chunks.content(text)
        except ServeError as error:
            if not steps:
                raise
            yield event(error.body())
            yield DONE
            return
        assert self.result is not None  # the loop's finish event came before aiter ended
        answer = self._answer(self.result)
        if self.show_thoughts and steps:
            yield chunks.content("\n\n")
        yield chunks.content(answer.text)
        for piece in chunks.finish(answer.finish_reason, self.result.usage):
            yield piece

    def _answer(self, result: Result) -> Answer:
        """The run's end as the client's answer; a run that ended without one says why (as a
        note, as for a turn the proxy could not use), with "length" when it was cut off."""
        steps = (step_text(turn, self.lang) for turn in result.steps)
        reasoning = "\n\n".join(text for text in steps if text) or None
        if result.answer is not None:
            return Answer(result.answer, reasoning)
        why = result.error or f"the run stopped ({result.stop_reason}) without an answer"
        reason = "length" if result.stop_reason == "truncated" else "stop"
        return Answer(f"[textreact: {why}]", reasoning, reason, note=why)


def step_text(turn: Turn, lang: str) -> str:
    """One step as the client reads it in `reasoning_content`: the thought, the call as run
    (its arguments after repair) and what went back to the model, in the protocol's words.
    A final answer's step shows its thought only: the answer is the content."""
    step = turn.step
    lines = []
    if isinstance(step, Action):
        tool = turn.tool or step.tool
        shown = turn.input if turn.result is not None else step.input
        lines.append(grammar.render_step(Action(tool, shown, step.thought), lang))
    elif isinstance(step, FinalAnswer) and step.thought:
        lines.append(f"{grammar.label(grammar.THOUGHT, lang)} {step.thought}")
    if turn.observation is not None:
        lines.append(grammar.render_observation(turn.observation, lang))
    return "\n".join(lines)
