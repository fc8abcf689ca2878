"""A tool -> its entry in the prompt's <tools> section, at a bounded cost.

The entry goes into every request's system prompt, and a schema may come from an untrusted
server: an `enum` of 200,000 values or 5,000 properties, listed whole, made a 3.2 MB prompt.
So an entry lists at most MOST_ARGUMENTS arguments in at most ARGUMENT_ROOM characters (the
required ones are given room first; those listed keep the schema's order), names each type
in about `schema.LABEL_ROOM` characters, and shows its example input in at most EXAMPLE_ROOM;
what is left out is counted in the entry itself, so the model knows it is there. Every bound
is far above what real tools use (the largest of BFCL's 1,916 functions takes 766 characters
in all), so their entries are as they always were. Validation and the grammar still read the
whole schema: a call may use any argument or value, shown or not."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from textreact import templates
from textreact.tools.schema import type_label

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["ARGUMENT_ROOM", "EXAMPLE_ROOM", "MOST_ARGUMENTS", "entry", "example_text"]

#: Arguments one entry lists at most.
MOST_ARGUMENTS: Final = 100
#: Characters the argument lines of one entry take at most, together.
ARGUMENT_ROOM: Final = 16_000
#: Characters of an example input shown at most.
EXAMPLE_ROOM: Final = 4_000


def entry(
    name: str, description: str, parameters: Mapping[str, Any], example: Mapping[str, Any]
) -> str:
    """A tool's entry, from its name, description, normalised `parameters` schema and example
    input: name and when to use it, one line per argument with its type, then a complete
    example input (each bounded as the module says). Compact on purpose: a 135M-parameter
    model reads it."""
    properties = parameters["properties"]
    required = frozenset(parameters.get("required", ()))
    lines = [f"{name}: {' '.join(description.split())}"]
    room = ARGUMENT_ROOM
    listed: dict[str, str] = {}
    for argument in _listed_first(properties, required):
        line = _argument(argument, properties[argument], argument in required, parameters)
        if len(line) < room:  # one that does not fit leaves room for shorter ones
            room -= len(line) + 1
            listed[argument] = line
    lines += [listed[a] for a in properties if a in listed]  # the schema's order
    if len(listed) < len(properties):
        left = f"{len(properties) - len(listed):,}"
        needed = f"{len(required - listed.keys()):,}"
        lines.append("  " + templates.note("tool_arguments_left", count=left, required=needed))
    lines.append(f"  Example input: {example_text(example)}")
    return "\n".join(lines)


def example_text(example: Mapping[str, Any], lang: str = "en") -> str:
    """An example input as JSON, cut to EXAMPLE_ROOM characters with a note in `lang` that says
    so (one with thousands of required arguments would be written whole into every prompt,
    and into every argument error)."""
    text = json.dumps(example, ensure_ascii=False)
    if len(text) <= EXAMPLE_ROOM:
        return text
    shown, count = text[:EXAMPLE_ROOM], f"{len(text):,}"
    return templates.note("tool_example_cut", lang, shown=shown, count=count)


def _listed_first(properties: Mapping[str, Any], required: frozenset[str]) -> list[str]:
    """The arguments an entry may list, in the order they are given room: the required ones
    first (a call cannot do without them), then the others, each in the schema's order."""
    return sorted(properties, key=lambda name: name not in required)[:MOST_ARGUMENTS]


def _argument(name: str, spec: Any, needed: bool, root: Any) -> str:
    need = "required" if needed else "optional"
    about = " ".join(str(spec.get("description", "")).split())
    label = type_label(spec, root)
    return f"  {name} ({label}, {need}){': ' + about if about else ''}"
