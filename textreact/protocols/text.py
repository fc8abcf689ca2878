"""The text protocol: tools described in the system prompt, replies written as
`Thought:` / `Action:` / `Action Input:` / `Final Answer:` and read by the tolerant parser,
results sent back as `Observation:` user turns. It needs nothing of the server but plain
completions and stop sequences."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from textreact import exemplars, grammar, prompt, templates
from textreact.errors import ConfigError
from textreact.memory import MemoryConfig, build_messages, turn_messages
from textreact.parser import parse
from textreact.parsing import messages
from textreact.protocols.interface import Reading
from textreact.steps import Branch, Completion, Decision, FormatError, Request, Turn

if TYPE_CHECKING:
    from textreact.models import Message
    from textreact.tools import Tool

#: Grammars kept per protocol object, the oldest dropped first.
_GRAMMARS = 64


class TextProtocol:
    """ReAct in plain text. `examples` chooses the worked example: "bundled" (the default),
    "built" from the offered tools (`textreact.exemplars`), "none", or a list of
    user/assistant messages of your own (`[]` sends none). With `constrain` (the default),
    each request carries the tools' grammar, which a client that can constrain decoding sends
    to its server (see `OpenAICompatModel(constrain=...)`); the parser reads every reply
    either way. With `decision_bias` (a number; None, the default, leaves the choice to
    sampling), each request under `tool_choice="auto"` also carries the call-or-answer
    `Decision`: a client that gets log-probabilities chooses `Action:` when log P(call) + bias
    > log P(answer), else `Final Answer:`, and continues the chosen branch under its grammar
    (docs/protocol.md, "The decision, scored")."""

    name = "text"
    #: The offered tools shape only the grammar (the prompt was written at the opening), so
    #: the loop may offer a copy of a tool whose arguments are held to the run's words.
    holds_arguments = True

    def __init__(
        self,
        *,
        examples: str | Sequence[Message] | None = None,
        constrain: bool = True,
        decision_bias: float | None = None,
    ) -> None:
        self.examples = exemplars.checked_examples(examples)
        self.constrain = constrain
        self.decision_bias = checked_bias(decision_bias)
        self._decisions: dict[tuple[tuple[Tool, ...], str], Decision] = {}
        self._grammars: dict[tuple[tuple[Tool, ...], str, str], str] = {}

    def __repr__(self) -> str:
        return f"TextProtocol(constrain={self.constrain})"

    def opening(self, question: str, tools: Sequence[Tool], lang: str) -> list[Message]:
        shown = exemplars.worked_examples(self.examples, tools, lang)
        return prompt.opening_messages(question, tools, lang=lang, examples=shown)

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
        conversation = build_messages(
            opening, turns, config=memory, lang=lang, render=turn_messages, preface=preface
        )
        rules = self.grammar(tools, tool_choice, lang)
        return Request(
            conversation, stop=grammar.STOP_SEQUENCES, grammar=rules, tool_choice=tool_choice,
            decision=self.decision(tools, lang) if tool_choice == "auto" else None,
        )  # fmt: skip

    def decision(self, tools: Sequence[Tool], lang: str) -> Decision | None:
        """The call-or-answer choice for these tools (None without `decision_bias` or tools):
        each branch's opening label and, where the protocol constrains, the grammar of what
        follows it."""
        if self.decision_bias is None or not tools:
            return None
        key = (tuple(tools), lang)
        if key not in self._decisions:
            from textreact.constrain import branch_grammar

            if len(self._decisions) >= _GRAMMARS:
                self._decisions.pop(next(iter(self._decisions)), None)
            grammars = {
                name: branch_grammar(tools, name, lang=lang) if self.constrain else None
                for name in ("action", "final")
            }
            self._decisions[key] = Decision(
                self.decision_bias,
                Branch(grammar.label(grammar.ACTION, lang), grammars["action"]),
                Branch(grammar.label(grammar.FINAL_ANSWER, lang), grammars["final"]),
            )
        return self._decisions[key]

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
        """What was wrong and the exact form, shown with a real tool and its example (small
        models copy a placeholder literally); a model that breaks the format again is shown
        the whole rules."""
        if again:
            rules = prompt.format_section(tools, lang)
            return templates.note("format_error_again", lang, message=error.message, rules=rules)
        named = [t for t in tools if t.name == error.tool] if error.tool is not None else tools[:1]
        hint = error.hint
        if named:
            example = grammar.render_input(named[0].example)
            hint = messages.hint(error.problem, error.lang, named[0].name, example)
        return templates.note("format_error", lang, message=error.message, hint=hint)


def checked_bias(bias: object) -> float | None:
    """`decision_bias` as a float; ConfigError unless it is None or a finite number."""
    if bias is None:
        return None
    if isinstance(bias, bool) or not isinstance(bias, (int, float)) or not math.isfinite(bias):
        raise ConfigError(
            f"decision_bias must be a finite number (the log-odds added in favour of calling; "
            f"0 keeps the model's own odds) or None to leave the choice to sampling, got {bias!r}"
        )
    return float(bias)
