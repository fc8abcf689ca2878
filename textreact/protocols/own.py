"""The model's own tool format, in text: the tools, calls and results written the way the
model's chat template writes them for a native conversation (`textreact.protocols.families`),
sent as plain messages, so a server that does not parse the model's calls still shows the model
the format it was trained on, and the model decides between a call and an answer in it.

A reply is read as a call when it holds one in that format or as a bare JSON object naming an
offered tool (`native.call_written_as_text`, the native protocol's recovery); as an answer
otherwise; a reply that begins a call that cannot be read is a format error. Where the client
can constrain decoding, each request carries `constrain.calls.calls_grammar`: the call held to
the tools' schemas, the choice between call and answer left to the model."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from textreact import templates
from textreact.errors import ConfigError
from textreact.memory import MemoryConfig, build_messages
from textreact.protocols.families import Family, detect, family
from textreact.protocols.interface import Reading
from textreact.protocols.native import NativeProtocol, call_written_as_text, recovered_call
from textreact.steps import Action, Completion, FinalAnswer, FormatError, Request, Turn

if TYPE_CHECKING:
    from textreact.models import Message
    from textreact.tools import Tool

#: The format errors the native protocol words (its notes say nothing of its dialect).
_NATIVE_PROBLEMS = frozenset({"empty_reply", "tool_required", "tool_forbidden"})
#: What the prompt files are written in: the families' templates are English whatever the
#: question's language.
_PROMPT_LANG = "en"


class OwnFormatProtocol:
    """The tool format the model was trained on, in plain messages. `family` names it
    ("hermes", "llama3", "mistral"); or `template`, the model's chat template, tells it
    (`protocol="own"` reads the template from the server). `system` replaces the system
    message's opening line (hermes), or the system message itself (llama3). With `constrain` (the
    default) each request carries the grammar of a call in this format."""

    name = "own"
    #: The tools are prompt text and grammar only, as in the text protocol.
    holds_arguments = True

    def __init__(
        self,
        *,
        family: str | None = None,
        template: str | None = None,
        system: str | None = None,
        constrain: bool = True,
    ) -> None:
        self.family: Family = _family(family, template)
        self.system = system
        self.constrain = constrain
        self._native = NativeProtocol()

    def __repr__(self) -> str:
        return f"OwnFormatProtocol(family={self.family.name!r}, constrain={self.constrain})"

    def opening(self, question: str, tools: Sequence[Tool], lang: str) -> list[Message]:
        f = self.family
        slots = {"tools": f.tools_text(tools), "question": question}
        if f.tools_in == "user":
            listed: list[Message] = [
                {"role": "user", "content": templates.render(f.prompt, _PROMPT_LANG, slots)}
            ]
            if f.system is None:
                return listed
            system = self.system or templates.render(f.system, _PROMPT_LANG, {})
            return [{"role": "system", "content": system}, *listed]
        system = self.system or templates.render("own/system.md", _PROMPT_LANG, {})
        tools_text = templates.render(f.prompt, _PROMPT_LANG, {**slots, "system": system})
        return [{"role": "system", "content": tools_text}, {"role": "user", "content": question}]

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
        rules = self.grammar(tools, tool_choice)
        return Request(messages, stop=self.family.stop, grammar=rules, tool_choice=tool_choice)

    def grammar(self, tools: Sequence[Tool], tool_choice: str) -> str | None:
        """The grammar of one reply with these tools, or None (no constraining, no call)."""
        if not self.constrain:
            return None
        from textreact.constrain.calls import calls_grammar

        f = self.family
        return calls_grammar(
            tools, arguments=f.arguments, call_open=f.call_open, call_close=f.call_close,
            tool_choice=tool_choice,
        )  # fmt: skip

    def render_turn(self, turn: Turn, whole: bool, shown: str | None, lang: str) -> list[Message]:
        """One turn as the template writes it: a call in the family's form (after its thought,
        when the turn is shown whole) and its result in the family's role and wrapping; any
        other reply as written, and the engine's note as a user turn."""
        step = turn.step
        if not isinstance(step, Action):
            reply: list[Message] = [{"role": "assistant", "content": turn.text}]
            return reply + [{"role": "user", "content": shown}] * (shown is not None)
        call = self.family.call_text(step.tool, step.input)
        thought = whole and step.thought and self.family.call_thought
        text = f"{step.thought}\n{call}" if thought else call
        messages: list[Message] = [{"role": "assistant", "content": text}]
        if shown is not None:
            result = self.family.result_text(shown)
            messages.append({"role": self.family.result_role, "content": result})
        return messages

    def read(self, completion: Completion, tools: Sequence[Tool]) -> Reading:
        text = completion.text
        if not text.strip():
            empty = FormatError(
                "the reply had neither text nor tool calls", "", problem="empty_reply"
            )
            return Reading((empty,), text)
        names = list(dict.fromkeys(n for t in tools for n in (t.name, t.api_name)))
        written = call_written_as_text(text, names)
        if written is not None:
            starts = [i for i in (text.find(self.family.trigger), text.find("{")) if i >= 0]
            thought = text[: min(starts)].strip(" \t\r\n[") or None
            call = dataclasses.replace(recovered_call(written, text), thought=thought, call_id=None)
            return Reading((call,), text)
        if self._begins_call(text):
            unread = FormatError(
                f"a reply that begins a call in the {self.family.name} format, which could not "
                "be read as a call of an offered tool",
                "",
                problem="own_call",
            )
            return Reading((unread,), text)
        return Reading((FinalAnswer(text.strip()),), text)

    def _begins_call(self, text: str) -> bool:
        head = text.lstrip()
        return head.startswith(("{", "[{", "```json")) or self.family.trigger in text

    def note(self, name: str, lang: str, **slots: str) -> str:
        return self._native.note(name, lang, **slots)

    def explain(self, error: FormatError, tools: Sequence[Tool], lang: str, *, again: bool) -> str:
        if error.problem in _NATIVE_PROBLEMS:
            return self._native.explain(error, tools, lang, again=again)
        if error.problem == "own_call" and tools:
            example = self.family.call_text(tools[0].api_name, tools[0].example)
            slots = {"tools": ", ".join(t.api_name for t in tools), "example": example}
            return templates.render("own/unread.md", _PROMPT_LANG, slots)
        return error.message


def _family(name: str | None, template: str | None) -> Family:
    """The family named, or the one `template` speaks; a ConfigError that says what to do when
    neither tells one."""
    if name is not None:
        return family(name)
    found = detect(template)
    if found is not None:
        return found
    if template is None:
        raise ConfigError(
            "OwnFormatProtocol needs the model's chat template or a family: the server did "
            "not give its template (llama.cpp gives it in GET /props); pass "
            "OwnFormatProtocol(family='hermes'|'llama3'|'mistral'), or use protocol='text'"
        )
    raise ConfigError(
        "the model's chat template has no tool format textreact knows (no <tool_call>, "
        "[TOOL_CALLS] or Llama 3's ipython calls), so the model was not trained on one it can "
        "write: use protocol='text', or name a family with OwnFormatProtocol(family=...)"
    )
