"""The text protocol: tools described in the system prompt, replies written as
`Thought:` / `Action:` / `Action Input:` / `Final Answer:` and read by the tolerant parser,
results sent back as `Observation:` user turns. It needs nothing of the server but plain
completions and stop sequences."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from textreact import exemplars, grammar, prompt, templates
from textreact.errors import ConfigError
from textreact.memory import MemoryConfig, RenderTurn, build_messages, turn_messages
from textreact.parser import parse
from textreact.parsing import messages
from textreact.parsing.calls import MAX_CALLS, parse_calls
from textreact.protocols.interface import Reading
from textreact.steps import Action, Branch, Completion, Decision, FormatError, Request, Turn

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
    (docs/protocol.md, "The decision, scored"). With `parallel_calls`, a reply may make up to
    MAX_CALLS calls, `Action:` / `Action Input:` pairs one after another: the format rules say
    so, the grammar allows them, `read` returns each (`textreact.parsing.calls`), and their
    observations go back together in the next user message; off (the default), the prompt,
    the grammar and the reading are the single call's, and a second call is discarded."""

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
        parallel_calls: bool = False,
    ) -> None:
        self.examples = exemplars.checked_examples(examples)
        self.constrain = constrain
        self.decision_bias = checked_bias(decision_bias)
        if not isinstance(parallel_calls, bool):
            raise ConfigError(f"parallel_calls must be True or False, got {parallel_calls!r}")
        #: The calls one reply may make: MAX_CALLS with `parallel_calls`, else 1.
        self.max_calls = MAX_CALLS if parallel_calls else 1
        self._decisions: dict[tuple[tuple[Tool, ...], str], Decision] = {}
        self._grammars: dict[tuple[tuple[Tool, ...], str, str], str] = {}

    def __repr__(self) -> str:
        several = ", parallel_calls=True" if self.max_calls > 1 else ""
        return f"TextProtocol(constrain={self.constrain}{several})"

    def opening(self, question: str, tools: Sequence[Tool], lang: str) -> list[Message]:
        shown = exemplars.worked_examples(self.examples, tools, lang)
        return prompt.opening_messages(
            question, tools, lang=lang, examples=shown, max_calls=self.max_calls
        )

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
        render = turn_messages if self.max_calls == 1 else _with_calls(turns)
        conversation = build_messages(
            opening, turns, config=memory, lang=lang, render=render, preface=preface
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
                name: branch_grammar(tools, name, lang=lang, max_calls=self.max_calls)
                if self.constrain
                else None
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
            self._grammars[key] = tools_grammar(
                tools, tool_choice=tool_choice, lang=lang, max_calls=self.max_calls
            )
        return self._grammars[key]

    def read(self, completion: Completion, tools: Sequence[Tool]) -> Reading:
        """The reply's step; with parallel calls, each of its calls. A call the token limit
        may have cut (the last of several, with nothing after it) is not read: the calls
        before it stand, as one call stands that the model completed before the limit cut
        what followed. Every step read carries what the reply discards after the last."""
        text = completion.text
        if self.max_calls == 1:
            step = parse(text)
            return Reading((step,), text[: len(text) - len(step.discarded_text)])
        steps = parse_calls(text, self.max_calls)
        if completion.finish_reason == "length" and len(steps) > 1 and not steps[-1].discarded_text:
            steps = steps[:-1]
        rest = steps[-1].discarded_text
        read = tuple(dataclasses.replace(step, discarded_text=rest) for step in steps)
        return Reading(read, text[: len(text) - len(rest)])

    def note(self, name: str, lang: str, **slots: str) -> str:
        return templates.note(name, lang, **slots)

    def explain(self, error: FormatError, tools: Sequence[Tool], lang: str, *, again: bool) -> str:
        """What was wrong and the exact form, shown with a real tool and its example (small
        models copy a placeholder literally); a model that breaks the format again is shown
        the whole rules."""
        if again:
            rules = prompt.format_section(tools, lang, self.max_calls)
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


def _with_calls(turns: Sequence[Turn]) -> RenderTurn:
    """The text protocol's rendering of `turns` where a reply may make several calls: the
    reply once, as the model wrote it (or, summarised, each of its calls in canonical form),
    then each call's observation, all of them in the one user message that follows it. The
    later calls of a reply (`Turn.joined`) add only their observations."""
    later: dict[int, list[Turn]] = {}
    head: Turn | None = None
    for turn in turns:
        if turn.joined and head is not None:
            later[id(head)].append(turn)
        else:
            head, later[id(turn)] = turn, []

    def render(turn: Turn, whole: bool, shown: str | None, lang: str) -> list[Message]:
        if turn.joined:
            said = grammar.render_observation(shown, lang) if shown is not None else None
            return [] if said is None else [{"role": "user", "content": said}]
        rendered = turn_messages(turn, whole, shown, lang)
        calls = [turn.step, *(t.step for t in later.get(id(turn), ()))]
        if not whole and len(calls) > 1:
            text = "\n".join(
                grammar.render_step(dataclasses.replace(step, thought=None), lang)
                for step in calls
                if isinstance(step, Action)
            )
            rendered[0] = {"role": "assistant", "content": text}
        return rendered

    return render
