"""One validation pass over an Action Input: what it found (`Check`), what every pass over the
same input shares (`Shared`, the language of its problem lines included), and the words its
problem lines are made of (a value shown short, a member's path, a parameter matched by name).
The words themselves are the `argument_*` sections of prompts/[lang/]notes.md (`say`).

The bottom of argument validation: `coercion`, `keywords`, `unions` and `arguments` all record
into a `Check`, and this module imports none of them.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Final

from textreact import jsonish, templates
from textreact.tools.schema import type_label

#: Seconds all `pattern` matches of one Action Input may take together (`regex` timeout).
PATTERN_SECONDS: Final = 0.2
#: Characters of a received value quoted in a problem line.
_SHOWN: Final = 60
SURROGATE: Final = re.compile(r"[\ud800-\udfff]")
#: The schema of anything (one object, so that it is one schema to the memo).
ANY: Final[dict[str, Any]] = {}


class Shared:
    """What every pass over one Action Input shares: each conformed (value, schema) pair, the
    checks done so far, the time left for patterns, and the language problems are told in."""

    def __init__(self, lang: str = "en") -> None:
        self.lang = lang
        self.memo: dict[tuple[int, int, str, int], tuple] = {}
        self.open: set[tuple[int, str, int]] = set()
        self.steps = 0
        self.exhausted = False
        self.pattern_seconds = PATTERN_SECONDS
        self._names: dict[int, tuple[dict, dict[str, str]]] = {}
        self._decoded: dict[int, tuple[str, object]] = {}
        self.labels: dict[int, tuple[dict, str]] = {}

    def decoded(self, text: str) -> object:
        """The JSON value a string holds (None if none), decoded once per string: every branch
        that reads it then meets the same objects, which the memo already knows."""
        if id(text) not in self._decoded:
            try:
                value, _ = jsonish.loads(text)
            except jsonish.JsonishError:
                value = None
            self._decoded[id(text)] = text, value
        return self._decoded[id(text)][1]

    def names(self, properties: dict[str, Any]) -> dict[str, str]:
        """The properties by their names' keys (`name_key`), made once per properties object."""
        if id(properties) not in self._names:
            self._names[id(properties)] = properties, {name_key(str(n)): n for n in properties}
        return self._names[id(properties)][1]


class Check:
    """What one validation pass found: repairs applied and problems, each a line for the model."""

    def __init__(self, root: dict[str, Any], shared: Shared | None = None) -> None:
        self.root = root
        self.shared = shared if shared is not None else Shared()
        self.repairs: list[str] = []
        self.problems: list[str] = []

    def repair(self, name: str) -> None:
        if name not in self.repairs:
            self.repairs.append(name)

    def problem(self, path: str, expected: str, value: object) -> None:
        received = show(value, self.shared.lang)
        self.problems.append(self.say("problem", path=path, expected=expected, received=received))

    def say(self, name: str, **slots: str) -> str:
        """The words `## argument_<name>`, in the pass's language."""
        return say(name, self.shared.lang, **slots)

    def label(self, schema: dict[str, Any]) -> str:
        """`type_label` of a schema, made once per Action Input (a union's is made of all of
        its branches')."""
        labels = self.shared.labels
        if id(schema) not in labels:
            labels[id(schema)] = schema, type_label(schema, self.root, lang=self.shared.lang)
        return labels[id(schema)][1]

    def trial(self) -> Check:
        """A pass of its own (a union branch tried), sharing what is remembered."""
        return Check(self.root, self.shared)

    def take(self, repairs: tuple[str, ...] | list[str], problems: tuple | list) -> None:
        for name in repairs:
            self.repair(name)
        self.problems.extend(problems)


def say(name: str, lang: str, **slots: str) -> str:
    """The words of argument validation `name`: the section `## argument_<name>` of
    prompts/[lang/]notes.md, its slots filled."""
    return templates.note(f"argument_{name}", lang, **slots)


def show(value: object, lang: str = "en") -> str:
    """A short preview of a JSON value and its kind; bounded, whatever the value's size or
    depth. The value is quoted as it is, its kind named in `lang`."""
    text = _preview(value, _SHOWN + 1, lang)
    if SURROGATE.search(text):
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    kind = {str: "string", bool: "boolean", int: "integer", float: "number"}.get(
        type(value), "array" if isinstance(value, (list, tuple)) else "object"
    )
    kind = say(f"kind_{'null' if value is None else kind}", lang)
    shown = f"{text[:_SHOWN]}{'...' if len(text) > _SHOWN else ''}"
    return say("shown", lang, value=shown, kind=kind)


def _preview(value: object, room: int, lang: str = "en") -> str:
    """At least `room` characters of the value's JSON (fewer when it is shorter)."""
    if isinstance(value, (list, tuple, dict)):
        pieces: list[str] = []
        used = 1
        items = value.items() if isinstance(value, dict) else value
        for item in items:
            if used > room:
                break
            piece = (
                f"{_preview(str(item[0]), room, lang)}: {_preview(item[1], room - used, lang)}"
                if isinstance(value, dict)
                else _preview(item, room - used, lang)
            )
            pieces.append(piece)
            used += len(piece) + 2
        opener, closer = ("{", "}") if isinstance(value, dict) else ("[", "]")
        return opener + ", ".join(pieces) + closer
    if isinstance(value, str):
        return json.dumps(value[:room], ensure_ascii=False)
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return say("big_integer", lang, bits=str(value.bit_length()))
    return json.dumps(value)


def member_path(path: str, name: object) -> str:
    """The path of an object's member, as problem lines name it (`target.kind`)."""
    return f"{path}.{name}" if path else str(name)


def property_for(name: object, properties: dict[str, Any], check: Check) -> str | None:
    """The property a given name stands for: itself, else the one it matches ignoring case and
    `_`/`-`/space (`"Kind"` for `kind`)."""
    if name in properties:
        return str(name)
    return check.shared.names(properties).get(name_key(str(name)))


@functools.lru_cache(maxsize=4096)
def name_key(name: str) -> str:
    """What a parameter name is matched on: case, quotes and `_`/`-`/space runs aside."""
    return re.sub(r"[\s_-]+", "_", name.strip().strip("\"'`")).casefold()
