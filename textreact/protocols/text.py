"""The text protocol: tools described in the system prompt, replies written as
`Thought:` / `Action:` / `Action Input:` / `Final Answer:` and read by the tolerant parser,
results sent back as `Observation:` user turns. It needs nothing of the server but plain
completions and stop sequences."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from textreact import grammar, observation, prompt, templates
from textreact.memory import MemoryConfig, build_messages, turn_messages
from textreact.parser import parse
from textreact.protocols import Reading
from textreact.steps import Completion, FormatError, Request, Turn

if TYPE_CHECKING:
    from textreact.models import Message
    from textreact.tools import Tool


class TextProtocol:
    """ReAct in plain text. `examples` replaces the bundled worked example (a list of
    user/assistant messages; `[]` sends none)."""

    name = "text"

    def __init__(self, *, examples: Sequence[Message] | None = None) -> None:
        self.examples = None if examples is None else [dict(m) for m in examples]

    def __repr__(self) -> str:
        return "TextProtocol()"

    def opening(self, question: str, tools: Sequence[Tool], lang: str) -> list[Message]:
        return prompt.opening_messages(question, tools, lang=lang, examples=self.examples)

    def request(
        self,
        opening: Sequence[Message],
        turns: Sequence[Turn],
        tools: Sequence[Tool],
        *,
        memory: MemoryConfig,
        lang: str,
        preface: str | None = None,
    ) -> Request:
        messages = build_messages(
            opening, turns, config=memory, lang=lang, render=turn_messages, preface=preface
        )
        return Request(messages, stop=grammar.STOP_SEQUENCES)

    def read(self, completion: Completion, tools: Sequence[Tool]) -> Reading:
        step = parse(completion.text)
        kept = completion.text[: len(completion.text) - len(step.discarded_text)]
        return Reading((step,), kept)

    def note(self, name: str, lang: str, **slots: str) -> str:
        return templates.note(name, lang, **slots)

    def explain(self, error: FormatError, tools: Sequence[Tool], lang: str, *, again: bool) -> str:
        return observation.format_error(error, tools, lang, again=again)
