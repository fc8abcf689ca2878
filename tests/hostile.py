"""Builtin subclasses with hostile methods, for the tests of what formats and runs tool results.

Each class overrides every method a formatter might reach for. Disarmed, the methods behave
like the builtin's (so values can be built, hashed and compared); inside `armed(...)`, each
raises `Tripped`, a BaseException that no `except Exception` swallows: a call shows up as a
failing test, never as a quietly different text."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


class Tripped(BaseException):
    """An armed hostile method was called."""


_ARMED = [False]
#: Every method a formatter might reach for.
TRAPS = ("__str__", "__repr__", "__format__", "__iter__", "__reversed__", "__len__",
         "__getitem__", "__contains__", "__eq__", "__ne__", "__lt__", "__hash__", "__bool__",
         "__index__", "__int__", "__float__", "__abs__", "__neg__", "__add__", "__radd__",
         "__mul__", "__bytes__", "__getattribute__", "__sizeof__", "__reduce_ex__", "items",
         "keys", "values", "get", "copy", "is_integer", "bit_length", "hex", "strip", "split",
         "splitlines", "replace", "decode", "count", "index")  # fmt: skip
BASES = (str, int, float, bytes, bytearray, list, tuple, dict, set, frozenset)


def _wired(base: type, name: str) -> Callable[..., Any]:
    original = getattr(base, name, None)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _ARMED[0]:
            raise Tripped(f"{base.__name__}.{name}")
        if original is None:  # __bool__ of a container: what bool() does without it
            return base.__len__(self) > 0
        return original(self, *args, **kwargs)

    return method


def trapped(base: type, traps: Iterable[str] = TRAPS) -> type:
    """A subclass of `base` whose methods named in `traps` trip when armed."""
    names = [n for n in traps if hasattr(base, n) or n == "__bool__"]
    return type(f"Hostile{base.__name__.title()}", (base,), {n: _wired(base, n) for n in names})


HOSTILE: dict[type, type] = {base: trapped(base) for base in BASES}


def armed(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` with every hostile method tripping."""
    _ARMED[0] = True
    try:
        return fn(*args, **kwargs)
    finally:
        _ARMED[0] = False


def hostile_copy(value: Any, classes: dict[type, type] | None = HOSTILE) -> Any:
    """`value` rebuilt from `classes` wherever a builtin can be subclassed; with None, rebuilt
    the same way from the builtins themselves (so a set iterates in the same order)."""
    kind = type(value)
    build = (classes or {}).get(kind, kind)
    if kind is dict:
        return build({hostile_copy(k, classes): hostile_copy(v, classes) for k, v in value.items()})
    if kind in (list, tuple, set, frozenset):
        return build(hostile_copy(item, classes) for item in value)
    return build(value) if kind in BASES else value
