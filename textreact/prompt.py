"""Question + tools -> the messages that open a run: the system prompt rendered from `prompts/`
and the worked example sent as real user/assistant turns.

Very small models follow the format only when they have seen it done, so the example is part of
the conversation, not a paragraph of the system prompt, and it is sent whatever the tools are:
without it, a small model under `tool_choice="auto"` copies the format's closing lines as its
first reply and answers from memory. Its tools (the built-in calculator and lookup) need not
be offered: its observations must be real text, and a user's tool cannot be run to make one
(it may have side effects), while an example call of the user's own tool invites copying its
example values into every call. Every keyword in the templates comes from `grammar`, so the
prompt teaches exactly what the parser accepts."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from textreact import grammar, templates
from textreact.errors import ConfigError
from textreact.models import Message
from textreact.tools.entry import EXAMPLE_ROOM

if TYPE_CHECKING:
    from textreact.tools import Tool

_TURN_HEADER = re.compile(r"^### (user|assistant)[ \t]*$", re.MULTILINE)


def format_section(tools: Sequence[Tool], lang: str = "en", max_calls: int = 1) -> str:
    """The `<format>` rules; also restated to a model that keeps breaking them. The Action
    Input they show is the first tool's example, or the next one's where it is longer than
    an entry may show (a tool with thousands of required arguments). With `max_calls` above
    1 (parallel calls), a last line says that a reply may make that many calls
    (`prompts/several.md`); with 1, the rules are the single call's, word for word."""
    slots = templates.labels(lang)
    inputs = (grammar.render_input(t.example) for t in tools)
    fitting = next((i for i in inputs if len(i) <= EXAMPLE_ROOM), None)
    slots["example_input"] = fitting if fitting is not None else grammar.render_input({})
    several = {**slots, "max_calls": str(max_calls)}
    slots["several"] = "\n" + templates.render("several.md", lang, several) if max_calls > 1 else ""
    return templates.render("format.md", lang, slots)


def system_prompt(tools: Sequence[Tool], lang: str = "en", max_calls: int = 1) -> str:
    """The system prompt: what the tools are for and the exact reply format (`max_calls`:
    the calls one reply may make, see `format_section`)."""
    tool_text = "\n".join(t.text_spec() for t in tools) or "(no tools: answer directly)"
    slots = {"tools": tool_text, "format": format_section(tools, lang, max_calls)}
    return templates.render("system.md", lang, slots)


def parse_exchange(text: str) -> list[Message]:
    """`### user` / `### assistant` blocks -> chat messages."""
    parts = _TURN_HEADER.split(text)
    if parts[0].strip():
        raise ConfigError("example text must start with a '### user' or '### assistant' line")
    return [
        {"role": role, "content": content.strip()}
        for role, content in zip(parts[1::2], parts[2::2], strict=True)
    ]


def example_messages(lang: str = "en") -> list[Message]:
    """The bundled worked example as real turns."""
    return parse_exchange(templates.render("example.md", lang, templates.labels(lang)))


def opening_messages(
    question: str,
    tools: Sequence[Tool],
    *,
    lang: str = "en",
    examples: Sequence[Message] | None = None,
    max_calls: int = 1,
) -> list[Message]:
    """System prompt, worked example (the bundled one unless `examples` is given), question;
    `max_calls`: the calls one reply may make (`format_section`)."""
    shown = example_messages(lang) if examples is None else list(examples)
    return [
        {"role": "system", "content": system_prompt(tools, lang, max_calls)},
        *shown,
        {"role": "user", "content": question},
    ]
