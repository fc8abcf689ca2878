"""A strict model that replays given completions: for tests, demos and offline runs.

It never looks at the prompt to decide its reply (fakes that do are brittle); it records every
request so a test can assert what the loop sent."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from textreact.errors import ScriptExhaustedError
from textreact.models import decision
from textreact.models.chat import Message
from textreact.steps import Completion, ToolCall


class ScriptedModel:
    """Replays `completions` in order; a str is a completion that finished normally, a
    `Completion` with `tool_calls` scripts native tool calls (see `ScriptedModel.calls`), and
    one with log-probabilities a scored decision (see `ScriptedModel.scored`)."""

    def __init__(self, completions: Sequence[str | Completion]) -> None:
        self.completions = [c if isinstance(c, Completion) else Completion(c) for c in completions]
        #: Each request's message list, copied at the time of the call (messages are flat
        #: dicts of strings, so a copy of each dict is a full copy).
        self.requests: list[list[Message]] = []
        #: The stop sequences of each request.
        self.stops: list[tuple[str, ...]] = []
        #: The other options of each request (`tools`, `grammar`), as passed.
        self.options: list[dict[str, Any]] = []

    @staticmethod
    def calls(*calls: tuple[str, dict[str, Any] | str], text: str = "") -> Completion:
        """A reply with native tool calls: `ScriptedModel.calls(("calculator", {"expression":
        "2+2"}))`; ids are `call_1`, `call_2`, ... and arguments are sent as JSON text."""
        return Completion(
            text,
            "tool_calls",
            tool_calls=tuple(
                ToolCall(f"call_{i}", name, args if isinstance(args, str) else json.dumps(args))
                for i, (name, args) in enumerate(calls, 1)
            ),
        )

    @staticmethod
    def scored(text: str, *, call: float, answer: float, lang: str = "en") -> Completion:
        """A reply whose branch point carries log-probabilities, as a server that returns
        them sends it: `ScriptedModel.scored("Thought: t\\nFinal Answer: 4", call=-0.4,
        answer=-1.1)`. A request that carries a `Decision` is decided from them, as
        `OpenAICompatModel` decides; where the choice differs from `text`'s branch, the next
        completion of the script is the continuation of the prefill, and is recorded as its
        own request (the prefill its last message)."""
        return decision.scripted(text, call=call, answer=answer, lang=lang)

    def complete(
        self, messages: Sequence[Message], *, stop: Sequence[str] = (), **options: Any
    ) -> Completion:
        reply = self._next(messages, stop, options)
        posed = options.get("decision")
        if posed is None:
            return reply
        choice = decision.decide(reply, posed)
        if choice.prefill is None:
            return choice.completion
        grammar = {} if choice.grammar is None else {"grammar": choice.grammar}
        return choice.join(self._next(choice.messages(messages), stop, grammar))

    def _next(
        self, messages: Sequence[Message], stop: Sequence[str], options: dict[str, Any]
    ) -> Completion:
        if len(self.requests) >= len(self.completions):
            raise ScriptExhaustedError(
                f"ScriptedModel was called {len(self.requests) + 1} times but has only "
                f"{len(self.completions)} completions; add completions to the script or check "
                "why the loop asked for another turn"
            )
        self.requests.append([dict(message) for message in messages])
        self.stops.append(tuple(stop))
        self.options.append(options)
        return self.completions[len(self.requests) - 1]

    @property
    def remaining(self) -> int:
        """How many scripted completions have not been used yet."""
        return len(self.completions) - len(self.requests)

    def assert_exhausted(self) -> None:
        """Raise AssertionError unless every scripted completion was used."""
        if self.remaining:
            raise AssertionError(
                f"ScriptedModel has {self.remaining} unused completion(s) of "
                f"{len(self.completions)}; the loop stopped earlier than the script expected"
            )
