"""A value against a schema's `type`: whether it is of one of the types (`is_kind`), and the
lossless coercions into one (`"3"` -> 3, `3.0` -> 3, `"true"` -> True, `7` -> `"7"` (but not
`1.10`, whose float no longer holds the text), a JSON
string -> an array or object), each named in the pass's repairs. Anything that would lose or
guess something is left as it is, for the caller to refuse."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Final

from textreact import jsonish
from textreact.tools.checks import Check

_INTEGER: Final = re.compile(r"[+-]?\d{1,19}(?:\.0*)?")
_NUMBER: Final = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d{1,3})?")
_BOOLEANS: Final = {"true": True, "false": False}


def is_kind(value: object, kinds: list[str]) -> bool:
    """Whether the value is of one of the JSON types `kinds` (an unknown type allows anything)."""
    return any(_IS.get(kind, _anything)(value) for kind in kinds)


def coerced(value: object, kinds: list[str], check: Check) -> object:
    """The value as the first of `kinds` it turns into losslessly; else unchanged."""
    for kind in kinds:
        turned = _COERCE.get(kind, _unchanged)(value, check)
        if _IS.get(kind, _anything)(turned):
            return turned
    return value


def _anything(value: object) -> bool:
    return True


def _unchanged(value: object, check: Check) -> object:
    return value


def _to_integer(value: object, check: Check) -> object:
    if isinstance(value, float) and value.is_integer():
        check.repair("float_to_integer")
        return int(value)
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        check.repair("string_to_integer")
        return int(value.strip().partition(".")[0])  # "9007199254740993.0" stays exact
    return value


def _to_number(value: object, check: Check) -> object:
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        text = value.strip()
        number = int(text) if _INTEGER.fullmatch(text) and "." not in text else float(text)
        # "1" * 400 and "1e-400" are no number a float can hold: left as text
        if math.isfinite(number) and not jsonish.underflows(text, number):
            check.repair("string_to_number")
            return number
    return value


def _to_string(value: object, check: Check) -> object:
    """An integer as the text it was written as, exactly, whatever its size (up to Python's
    limit on integer digits, past which it stays a number and is refused). A number with a
    fraction or an exponent is left as it is, to be refused: its float no longer holds the
    text (`1.10` would become "1.1", `1e2` "100.0"), and a string is text as written."""
    if isinstance(value, bool) or not isinstance(value, int):
        return value
    try:
        text = str(value)
    except ValueError:  # more digits than sys.get_int_max_str_digits() allows
        return value
    check.repair("number_to_string")
    return text


def _to_boolean(value: object, check: Check) -> object:
    if isinstance(value, str) and value.strip().lower() in _BOOLEANS:
        check.repair("string_to_boolean")
        return _BOOLEANS[value.strip().lower()]
    return value


def _from_json_text(kind: type, repair: str) -> Callable[[object, Check], object]:
    def coerce(value: object, check: Check) -> object:
        if isinstance(value, tuple) and kind is list:
            return list(value)
        if isinstance(value, str):
            decoded = check.shared.decoded(value)
            if isinstance(decoded, kind):
                check.repair(repair)
                return decoded
        return value

    return coerce


_IS: Final[dict[str, Callable[[object], bool]]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}
_COERCE: Final[dict[str, Callable[[object, Check], object]]] = {
    "string": _to_string,
    "integer": _to_integer,
    "number": _to_number,
    "boolean": _to_boolean,
    "array": _from_json_text(list, "string_to_array"),
    "object": _from_json_text(dict, "string_to_object"),
}
