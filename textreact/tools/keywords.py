"""The keywords that check a value as a whole, once its type fits: `enum` and `const` (a string
in the wrong case repaired), a string's `minLength`, `maxLength` and `pattern`, a number's
bounds and `multipleOf`; and the hard limits that hold whatever the schema says (MAX_STRING,
MAX_INTEGER, no lone surrogates). Members of arrays and objects are `arguments`' to walk.

A `pattern` is matched with `regex` under a budget shared by the whole Action Input
(`Shared.pattern_seconds`, PATTERN_SECONDS in all): one that does not compile, or that would
backtrack past the budget, is left unchecked and the pass names `pattern_unchecked`, rather
than hang the run or refuse a value that may well fit.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import Any, Final

from textreact.tools.checks import SURROGATE, Check
from textreact.tools.schema import bounds, compiled_pattern, number_keyword, pinned

MAX_STRING: Final = 10_000
MAX_INTEGER: Final = 2**63 - 1
_NUMERIC: Final = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)


def constrain(value: Any, schema: dict[str, Any], path: str, check: Check) -> tuple[Any, bool]:
    """(the value, whether it is among the allowed ones): `enum`/`const` first, then the
    keywords of the value's type. A value outside `enum`/`const` is refused as a whole, so the
    caller does not go on into its members."""
    allowed = pinned(schema) if "const" in schema else schema.get("enum")
    if isinstance(allowed, list) and not any(same(value, v) for v in allowed):
        folded = [v for v in allowed if isinstance(v, str) and isinstance(value, str)
                  and v.casefold() == value.strip().casefold()]  # fmt: skip
        if len(folded) != 1:
            check.problem(path, check.label(schema), value)
            return value, False
        check.repair("enum_case")
        value = folded[0]
    if isinstance(value, str):
        _check_string(value, schema, path, check)
    elif isinstance(value, float) and not math.isfinite(value):
        check.problem(path, check.say("finite"), value)
    elif isinstance(value, int) and not isinstance(value, bool):
        _check_bounds(value, schema, path, check)
        if abs(value) > MAX_INTEGER:
            check.problem(path, check.say("integer_limit", limit=str(MAX_INTEGER)), value)
    elif isinstance(value, float):
        _check_bounds(value, schema, path, check)
    return value, True


def same(value: object, other: object) -> bool:
    """JSON equality: `true` is not 1, 1 is 1.0, arrays and objects member by member."""
    if isinstance(value, bool) or isinstance(other, bool):
        return isinstance(value, bool) and isinstance(other, bool) and value == other
    if isinstance(value, (int, float)) and isinstance(other, (int, float)):
        return value == other
    if isinstance(value, (list, tuple)) and isinstance(other, (list, tuple)):
        return len(value) == len(other) and all(map(same, value, other))
    if isinstance(value, dict) and isinstance(other, dict):
        return value.keys() == other.keys() and all(same(value[k], other[k]) for k in value)
    return type(value) is type(other) and value == other


def count_keyword(schema: dict[str, Any], key: str) -> int | None:
    """A non-negative whole-number keyword (`minLength`, `maxItems`), else None."""
    count = number_keyword(schema, key)
    if isinstance(count, float):
        count = int(count) if count.is_integer() else None
    return count if count is not None and count >= 0 else None


def _check_string(value: str, schema: dict[str, Any], path: str, check: Check) -> None:
    longest, shortest = count_keyword(schema, "maxLength"), count_keyword(schema, "minLength")
    limit = MAX_STRING if longest is None else min(longest, MAX_STRING)
    if len(value) > limit:
        check.problem(path, check.say("characters_at_most", count=str(limit)), value)
    elif SURROGATE.search(value):
        check.problem(path, check.say("text_surrogates"), value)
    elif (
        not value.strip()
        and (1 if shortest is None else shortest) > 0
        and not _allowed(value, schema)
    ):
        check.problem(path, check.say("non_empty", label=check.label(schema)), value)
    elif shortest is not None and len(value) < shortest:
        check.problem(path, check.say("characters_at_least", count=str(shortest)), value)
    elif isinstance(schema.get("pattern"), str):
        found = _matches(schema["pattern"], value, check)
        if found is None:
            check.repair("pattern_unchecked")
        elif not found:
            check.problem(path, check.say("pattern", pattern=schema["pattern"]), value)


def _allowed(value: object, schema: dict[str, Any]) -> bool:
    allowed = pinned(schema) if "const" in schema else schema.get("enum")
    return isinstance(allowed, list) and any(same(value, v) for v in allowed)


def _matches(pattern: str, value: str, check: Check) -> bool | None:
    """Whether the pattern is found in the value; None where that could not be decided (no
    compiled pattern, or the Action Input's PATTERN_SECONDS ran out)."""
    compiled = compiled_pattern(pattern)
    shared = check.shared
    if compiled is None or shared.pattern_seconds <= 0:
        return None
    started = time.monotonic()
    try:
        return compiled.search(value, timeout=shared.pattern_seconds) is not None
    except TimeoutError:
        return None
    finally:
        shared.pattern_seconds -= time.monotonic() - started


def _check_bounds(value: float, schema: dict[str, Any], path: str, check: Check) -> None:
    if _NUMERIC.isdisjoint(schema):
        return
    low, above, high, below = bounds(schema)
    if low is not None and value < low:
        check.problem(path, check.say("minimum", bound=str(low)), value)
    if above is not None and value <= above:
        check.problem(path, check.say("exclusive_minimum", bound=str(above)), value)
    if high is not None and value > high:
        check.problem(path, check.say("maximum", bound=str(high)), value)
    if below is not None and value >= below:
        check.problem(path, check.say("exclusive_maximum", bound=str(below)), value)
    step = number_keyword(schema, "multipleOf")
    if step is not None and step > 0 and not _multiple(value, step):
        check.problem(path, check.say("multiple", step=str(step)), value)


def _multiple(value: float, step: float) -> bool:
    """Whether `value` is a whole number of `step`s, in decimal as written: 0.3 is a multiple
    of 0.1, though not in binary floating point."""
    ratio = _decimal(value) / _decimal(step)
    return ratio.denominator == 1


def _decimal(number: float) -> Fraction:
    """A number as the decimal it was written as (an integer of any size exactly)."""
    return Fraction(number) if isinstance(number, int) else Fraction(str(number))
