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

#: Grammars kept per protocol object, the oldest dropped first.
_GRAMMARS = 64


class TextProtocol:
    """ReAct in plain text. `examples` replaces the bundled worked example (a list of
    user/assistant messages; `[]` sends none). With `constrain` (the default), each request
    carries the tools' grammar, which a client that can constrain decoding sends to its
    server (see `OpenAICompatModel(constrain=...)`); the parser reads every reply either way."""

    name = "text"
    #: The offered tools shape only the grammar (the prompt was written at the opening), so
    #: the loop may offer a copy of a tool whose arguments are held to the run's words.
    holds_arguments = True

    def __init__(
        self, *, examples: Sequence[Message] | None = None, constrain: bool = True
    ) -> None:
        self.examples = None if examples is None else [dict(m) for m in examples]
        self.constrain = constrain
        self._grammars: dict[tuple[tuple[Tool, ...], str, str], str] = {}

    def __repr__(self) -> str:
        return f"TextProtocol(constrain={self.constrain})"

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
        tool_choice: str = "auto",
    ) -> Request:
        messages = build_messages(
            opening, turns, config=memory, lang=lang, render=turn_messages, preface=preface
        )
        rules = self.grammar(tools, tool_choice, lang)
        return Request(
            messages, stop=grammar.STOP_SEQUENCES, grammar=rules, tool_choice=tool_choice
        )

    def grammar(self, tools: Sequence[Tool], tool_choice: str, lang: str) -> str | None:
        """The grammar of one step with these tools (built once per tool set and choice)."""
        if not self.constrain or not tools:
            return None
        key = (tuple(tools), tool_choice, lang)
        if key not in self._grammars:
            from textreact.constrain import tools_grammar

            if len(self._grammars) >= _GRAMMARS:  # held tools are new objects for each run
                self._grammars.pop(next(iter(self._grammars)), None)
            self._grammars[key] = tools_grammar(tools, tool_choice=tool_choice, lang=lang)
        return self._grammars[key]

    def read(self, completion: Completion, tools: Sequence[Tool]) -> Reading:
        step = parse(completion.text)
        kept = completion.text[: len(completion.text) - len(step.discarded_text)]
        return Reading((step,), kept)

    def note(self, name: str, lang: str, **slots: str) -> str:
        return templates.note(name, lang, **slots)

    def explain(self, error: FormatError, tools: Sequence[Tool], lang: str, *, again: bool) -> str:
        return observation.format_error(error, tools, lang, again=again)
