"""A tool's return value -> short text: strings as they are, numbers cleanly, records as
numbered lines, mappings as compact JSON (`format_value`), before any of it is defused or cut.

Whatever a tool returned, formatting is bounded in size and never raises, and never calls a
method that a subclass of a builtin type overrides; only `str()` of a foreign object can take
long, which is why callers run it inside the tool's time bound."""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["format_number", "format_value"]

#: Integers longer than this (about 3,000 digits) are shown in scientific form: str() of a
#: much longer one is slow, and past 4,300 digits it raises.
_MAX_INT_BITS = 10_000
#: Containers nested deeper than this are shown as `…`.
_MAX_NESTING = 8
#: The builtin types whose data format_value reads through their own slots (bool before int).
_BASES = (str, bool, int, float, list, tuple, dict, bytes, bytearray, set, frozenset)
_CONTAINERS = frozenset({list, tuple, dict, set, frozenset})
_EXACT = {base: base for base in _BASES}


def _base(value: Any) -> type | None:
    """The builtin type among _BASES that `value` is an instance of, or None for any other.
    Decided by `type()`: `isinstance` would consult a `__class__` the object may fake; and
    looked up by hash only for a class whose metaclass is `type` (a metaclass's own `__hash__`
    or `__eq__` could raise)."""
    kind = type(value)
    if type(kind) is type:
        found = _EXACT.get(kind)
        if found is not None:
            return found
    return next((base for base in _BASES if issubclass(kind, base)), None)


def _text(value: str) -> str:
    """A str's own characters as an exact str: a subclass's `__str__`, `__len__` or
    `__getitem__` is never called (`str.__str__` copies the data of a subclass)."""
    return value if type(value) is str else str.__str__(value)


def _members(base: type, value: Any) -> tuple[Any, int]:
    """An iterator over a container's items ((key, value) pairs for a dict), and its length,
    both through the base type, so an overridden `__iter__`, `__len__` or `items` never runs."""
    if base is dict:
        return iter(dict.items(value)), dict.__len__(value)
    return base.__iter__(value), base.__len__(value)


def _type_name(value: Any) -> str:
    """The type's own name; `type(value).__name__` would run a metaclass's `__name__`."""
    return vars(type)["__name__"].__get__(type(value))


def format_number(value: float) -> str:
    """Whole floats as integers; float noise (0.1 + 0.2) rounded to 12 significant digits.
    Anything else as format_value shows it."""
    if _base(value) is not float:
        return format_value(value)
    value = float.__float__(value)
    if not math.isfinite(value):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.12g}"


def format_value(value: Any, limit: int = 20_000) -> str:
    """A tool's return value as short text: strings as they are, numbers cleanly, records as
    numbered lines, mappings as compact JSON.

    Bounded and never raising, whatever a tool returns: containers are shown until about
    `limit` characters (then how many items were left out), nesting to a few levels, cycles and
    huge integers without walking or converting them whole. Subclasses of the builtin types are
    read through the builtin's own methods, so an overridden `__str__`, `__iter__`, `__len__`,
    `items`, `__eq__` or `__hash__` never runs here; any other object is shown by its `str()`
    (which may hang: callers bound formatting in time), or by its type name when that raises.
    Only a top-level string comes back whole (slicing it is free)."""
    if _base(value) is str:
        return _text(value)
    return _Render(limit).show(value, 0)


def _integer(value: int) -> str:
    if value.bit_length() <= _MAX_INT_BITS:
        return str(value)
    exponent = math.log10(abs(value))
    digits = math.floor(exponent)
    sign = "-" if value < 0 else ""
    return f"{sign}{10 ** (exponent - digits):.6f}e+{digits} (an integer of {digits + 1} digits)"


def _foreign(value: Any) -> str:
    """str() of an object that is not a builtin value; its failure is shown, not raised."""
    try:
        text = str(value)
    except Exception as error:
        return f"<{_type_name(value)} object: str() failed with {_type_name(error)}>"
    return _text(text)  # a `__str__` may return a str subclass with hostile methods of its own


class _Render:
    """One rendering with a character budget shared by every piece of it (each item costs at
    least one, so even a million empty strings stop at the budget)."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    def show(self, value: Any, depth: int) -> str:
        """Plain text: numbered lines for sequences, JSON for mappings."""
        if depth > _MAX_NESTING:
            return self.spend("…")
        base = _base(value)
        if base is list or base is tuple:
            lines, more = self.items(base, value, lambda item: self.record(item, depth + 1))
            numbered = [f"{i}. {line}" for i, line in enumerate(lines, 1)]
            return "\n".join([*numbered, more] if more else numbered)
        if base is dict:
            return self.json(value, depth) if dict.__len__(value) else ""
        if base is set or base is frozenset:
            return "{" + self.joined(base, value, lambda v: self.json(v, depth + 1)) + "}"
        return self.scalar(value, base)

    def scalar(self, value: Any, base: type | None) -> str:
        if value is None:
            text = ""
        elif base is bool:
            text = "True" if value else "False"  # bool cannot be subclassed
        elif base is int:
            text = _integer(int.__int__(value))
        elif base is float:
            text = format_number(value)
        elif base is bytes or base is bytearray:
            text = repr(bytes(base.__getitem__(value, slice(0, max(self.left, 0)))))
        elif base is str:
            text = _text(value)
        else:
            text = _foreign(value)
        return self.spend(text)

    def spend(self, text: str) -> str:
        text = text[: max(self.left, 0) + 1]
        self.left -= len(text)
        return text

    def items(self, base: type, value: Any, show: Any) -> tuple[list[str], str | None]:
        """The items shown within the budget, and the note on those left out (or None)."""
        members, length = _members(base, value)
        shown: list[str] = []
        try:
            for item in members:
                if self.left <= 0:
                    return shown, f"… ({length - len(shown)} more)"
                self.left -= 1
                shown.append(show(item))
        except RuntimeError:  # an item's str() changed the container under the iterator
            return shown, "…"
        return shown, None

    def joined(self, base: type, value: Any, show: Any, separator: str = ", ") -> str:
        shown, more = self.items(base, value, show)
        return separator.join([*shown, more] if more else shown)

    def record(self, item: Any, depth: int) -> str:
        if _base(item) is dict and depth <= _MAX_NESTING:
            pairs = self.joined(
                dict, item, lambda pair: f"{self.key(pair[0])}: {self.show(pair[1], depth)}"
            )
            return pairs.replace("\n", " ")
        return self.show(item, depth).replace("\n", " ")

    def key(self, key: Any) -> str:
        base = _base(key)
        if base is tuple or base is frozenset:  # the hashable containers
            inner = self.joined(base, key, self.key)
            return f"({inner})" if base is tuple else "{" + inner + "}"
        return self.scalar(key, base)

    def json(self, value: Any, depth: int) -> str:
        """Compact JSON (other types as their text), cut at the budget and at deep nesting."""
        if depth > _MAX_NESTING:
            return self.spend("…")
        base = _base(value)
        if base is dict:
            pairs = self.joined(
                dict,
                value,
                lambda pair: f"{self.quoted(self.key(pair[0]))}: {self.json(pair[1], depth + 1)}",
            )
            return "{" + pairs + "}"
        if base in _CONTAINERS:
            return "[" + self.joined(base, value, lambda v: self.json(v, depth + 1)) + "]"
        if base is float and not math.isfinite(float.__float__(value)):
            return self.spend(json.dumps(float.__float__(value)))
        text = self.scalar(value, base)
        if base is None or base is str or base is bytes or base is bytearray:
            return "null" if value is None else self.quoted(text)
        return text.lower() if base is bool else text

    @staticmethod
    def quoted(text: str) -> str:
        return json.dumps(text, ensure_ascii=False)
