"""Question + tools -> the messages that open a run: the system prompt rendered from `prompts/`
and the worked example sent as real user/assistant turns.

Very small models follow the format only when they have seen it done, so the example is part of
the conversation, not a paragraph of the system prompt. Every keyword in the templates comes from
`grammar`, so the prompt teaches exactly what the parser accepts."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from textreact import grammar
from textreact.errors import ConfigError
from textreact.models import Message

if TYPE_CHECKING:
    from textreact.tools import Tool

#: Tools the bundled worked example calls; it is sent only when all of them are offered.
EXAMPLE_TOOLS = frozenset({"lookup_fact", "calculator"})


_TURN_HEADER = re.compile(r"^### (user|assistant)[ \t]*$", re.MULTILINE)


def _prompts_dir() -> Path:
    # Installed wheels carry the templates as textreact/prompts; a source checkout keeps them in
    # the top-level prompts/ folder beside the package.
    bundled = resources.files("textreact") / "prompts"
    if bundled.is_dir():
        return Path(str(bundled))
    return Path(__file__).resolve().parent.parent / "prompts"


@cache
def load_template(name: str, lang: str = "en") -> str:
    """The text of `prompts/[lang/]name`; a missing file is a ConfigError naming the path."""
    if lang not in grammar.LANGUAGES:
        raise ConfigError(f"unknown prompt language {lang!r}; choose one of {grammar.LANGUAGES}")
    folder = _prompts_dir() if lang == "en" else _prompts_dir() / lang
    path = folder / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"prompt template {path} cannot be read: {exc}") from exc


def fill(template: str, slots: Mapping[str, str], *, name: str = "template") -> str:
    """Fill `$slot`s; a slot the template uses but `slots` lacks is an error, never a blank."""
    try:
        return string.Template(template).substitute(slots)
    except KeyError as exc:
        raise ConfigError(
            f"{name} uses the slot ${exc.args[0]} but no value was given for it; "
            f"known slots: {', '.join(sorted(slots))}"
        ) from exc
    except ValueError as exc:
        raise ConfigError(f"{name} has a malformed slot: {exc}; write a literal $ as $$") from exc


def format_section(tools: Sequence[Tool], lang: str = "en") -> str:
    """The `<format>` rules; also restated to a model that keeps breaking them."""
    slots = {keyword: grammar.label(keyword, lang) for keyword in grammar.KEYWORDS}
    example = tools[0].example if tools else {}
    slots["example_input"] = grammar.render_input(example)
    return fill(load_template("format.md", lang), slots, name=f"prompts/{lang}/format.md").strip()


def system_prompt(tools: Sequence[Tool], lang: str = "en") -> str:
    """The system prompt: what the tools are for and the exact reply format."""
    tool_text = "\n".join(t.text_spec() for t in tools) or "(no tools: answer directly)"
    slots = {"tools": tool_text, "format": format_section(tools, lang)}
    return fill(load_template("system.md", lang), slots, name=f"prompts/{lang}/system.md").strip()


def parse_exchange(text: str) -> list[Message]:
    """`### user` / `### assistant` blocks -> chat messages."""
    parts = _TURN_HEADER.split(text)
    if parts[0].strip():
        raise ConfigError("example text must start with a '### user' or '### assistant' line")
    return [
        {"role": role, "content": content.strip()}
        for role, content in zip(parts[1::2], parts[2::2], strict=True)
    ]


def example_messages(tools: Sequence[Tool], lang: str = "en") -> list[Message]:
    """The worked example as real turns, when the tools it calls are all offered."""
    if not {t.name for t in tools} >= EXAMPLE_TOOLS:
        return []
    return parse_exchange(load_template("example.md", lang))


def opening_messages(
    question: str,
    tools: Sequence[Tool],
    *,
    lang: str = "en",
    examples: Sequence[Message] | None = None,
) -> list[Message]:
    """System prompt, worked example (the bundled one unless `examples` is given), question."""
    shown = example_messages(tools, lang) if examples is None else list(examples)
    return [
        {"role": "system", "content": system_prompt(tools, lang)},
        *shown,
        {"role": "user", "content": question},
    ]
