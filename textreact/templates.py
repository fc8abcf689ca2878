"""Prompt files -> text: loads the templates in `prompts/` (from the wheel, or from the source
checkout) and fills their `$slots`. Every word the engine says to the model lives in those
files, per language, not in Python strings; the protocol's keywords fill the slots from
`grammar`, so the files cannot teach a keyword the parser does not read."""

from __future__ import annotations

import re
import string
import types
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path

from textreact import grammar
from textreact.errors import ConfigError

_SECTION = re.compile(r"^## ([a-z_]+)[ \t]*$", re.MULTILINE)


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


def render(name: str, lang: str, slots: Mapping[str, str]) -> str:
    """The template `prompts/[lang/]name` with its slots filled."""
    return fill(load_template(name, lang), slots, name=_where(name, lang)).strip()


def _where(name: str, lang: str) -> str:
    return f"prompts/{name}" if lang == "en" else f"prompts/{lang}/{name}"


def labels(lang: str) -> dict[str, str]:
    """Each keyword's slot (`$thought`, `$final_answer`...) filled with its label in `lang`."""
    return {keyword: grammar.label(keyword, lang) for keyword in grammar.KEYWORDS}


@cache
def _notes(lang: str) -> dict[str, str]:
    parts = _SECTION.split(load_template("notes.md", lang))
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def note(name: str, lang: str = "en", **slots: str) -> str:
    """The engine's message `name` from `prompts/[lang/]notes.md`, its slots filled (the
    keywords' labels where no slot of that name is given). Argument validation says its
    problems through here, many to a call, so each section is split at its slots once."""
    first, rest = _split(name, lang)
    if rest is None:  # a malformed slot: `fill` says what is wrong
        return _fill_note(name, lang, slots)
    pieces = [first]
    for slot, literal in rest:
        if slot in slots:
            pieces.append(str(slots[slot]))
        elif slot in (own := _labels(lang)):
            pieces.append(own[slot])
        else:  # a slot with no value: `fill` names it
            return _fill_note(name, lang, slots)
        pieces.append(literal)
    return "".join(pieces)


def _fill_note(name: str, lang: str, slots: Mapping[str, str]) -> str:
    where = _where("notes.md", lang)
    return fill(_section(name, lang), {**labels(lang), **slots}, name=f"{where} ## {name}")


def _section(name: str, lang: str) -> str:
    try:
        return _notes(lang)[name]
    except KeyError:
        raise ConfigError(f"{_where('notes.md', lang)} has no section '## {name}'") from None


@cache
def _labels(lang: str) -> Mapping[str, str]:
    return types.MappingProxyType(labels(lang))


@cache
def _split(name: str, lang: str) -> tuple[str, tuple[tuple[str, str], ...] | None]:
    """The section `name` as its text up to the first slot, then (slot, the text after it)
    pairs; `$$` already read as `$`. (text, None) where a slot is malformed."""
    template = _section(name, lang)
    pieces: list[str] = []
    literal: list[str] = []
    at = 0
    for match in string.Template.pattern.finditer(template):
        literal.append(template[at : match.start()])
        at = match.end()
        if match.group("escaped") is not None:
            literal.append("$")
            continue
        slot = match.group("named") or match.group("braced")
        if slot is None:
            return template, None
        pieces += ["".join(literal), slot]
        literal = []
    literal.append(template[at:])
    pieces.append("".join(literal))
    return pieces[0], tuple(zip(pieces[1::2], pieces[2::2], strict=True))
