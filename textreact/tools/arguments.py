"""Action Input (text or dict) -> validated arguments, or a ToolArgumentError for the model.

The chain, each step named in the returned repairs so a transcript shows what was fixed:
text-level repair by `textreact.jsonish` (fences, Python literals, trailing commas, quotes, a
truncated tail when unambiguous); a plain string or bare value mapped to the tool's single
parameter; parameter names matched ignoring case and `_`/`-`/space; nulls dropped for optional
parameters; types coerced from the schema (`"3"` -> 3, `3.0` -> 3, `"true"` -> True, `7` ->
`"7"`, a JSON string -> an array or object, an enum or const value in the wrong case). Nothing
is ever dropped silently: a value that cannot be kept as written, or turned losslessly into what
the schema asks for, is an error whose message names the parameter, what was expected, what was
received, and shows a correct example. A `pattern` that does not compile, or that backtracks
past PATTERN_SECONDS, is left to the tool (and to pydantic, for `@tool`): the repairs then
name `pattern_unchecked`.

The work is bounded whatever the schema: each (value, schema) pair is conformed once and
remembered, a union is decided by a shallow look at each branch before any branch is entered,
and an input that still needs more than MAX_STEPS checks is refused as too complex.
"""

from __future__ import annotations

import functools
import json
import math
import re
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Final

from textreact import jsonish
from textreact.tools.schema import (
    compiled_pattern,
    kinds_of,
    pinned,
    properties_of,
    resolve,
    type_label,
    types_of,
)

MAX_STRING: Final = 10_000
MAX_ITEMS: Final = 1_000
MAX_INTEGER: Final = 2**63 - 1
MAX_DEPTH: Final = 32
#: Values in all (every member of every array and object) of arguments given as a dict.
MAX_VALUES: Final = 10_000
#: (value, schema) pairs one Action Input may be checked on: a few per value for the largest
#: inputs, far above what any real call needs, far below what a hostile union would take.
MAX_STEPS: Final = 100_000
#: Seconds all `pattern` matches of one Action Input may take together (`regex` timeout).
PATTERN_SECONDS: Final = 0.2
#: Checks a validator that tries every branch of every union may need (`union_work`): about
#: half a second of pydantic's time (2-4 million a second), past which `@tool` arguments are
#: refused rather than handed to it.
MAX_UNION_WORK: Final = 1_000_000
#: (value, schema) pairs open at once: MAX_DEPTH levels of a value, a few schemas each (a union,
#: its branch); past it a schema nests unions in unions so deep that Python's stack would not.
_DEEPEST: Final = 4 * MAX_DEPTH
#: Strings at least this long are conformed once and remembered (they may hold JSON, or meet a
#: slow pattern); shorter ones, and numbers, are checked again where a union meets them again.
_REMEMBERED: Final = 64
#: Characters of a received value quoted in a problem line.
_SHOWN: Final = 60
_INTEGER: Final = re.compile(r"[+-]?\d{1,19}(?:\.0*)?")
_NUMBER: Final = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d{1,3})?")
_BOOLEANS: Final = {"true": True, "false": False}
_SURROGATE: Final = re.compile(r"[\ud800-\udfff]")
_TOO_COMPLEX: Final = (
    "the Action Input is too complex to check against this tool's parameters: send fewer "
    "values, or less deeply nested ones"
)


class _Shared:
    """What every pass over one Action Input shares: each conformed (value, schema) pair, the
    checks done so far, and the time left for patterns."""

    def __init__(self) -> None:
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
        """The properties by their names' keys (`_key`), made once per properties object."""
        if id(properties) not in self._names:
            self._names[id(properties)] = properties, {_key(str(n)): n for n in properties}
        return self._names[id(properties)][1]


class _Check:
    """What one validation pass found: repairs applied and problems, each a line for the model."""

    def __init__(self, root: dict[str, Any], shared: _Shared | None = None) -> None:
        self.root = root
        self.shared = shared if shared is not None else _Shared()
        self.repairs: list[str] = []
        self.problems: list[str] = []

    def repair(self, name: str) -> None:
        if name not in self.repairs:
            self.repairs.append(name)

    def problem(self, path: str, expected: str, value: object) -> None:
        self.problems.append(f'"{path}": expected {expected}, received {_show(value)}')

    def label(self, schema: dict[str, Any]) -> str:
        """`type_label` of a schema, made once per Action Input (a union's is made of all of
        its branches')."""
        labels = self.shared.labels
        if id(schema) not in labels:
            labels[id(schema)] = schema, type_label(schema, self.root)
        return labels[id(schema)][1]

    def trial(self) -> _Check:
        """A pass of its own (a union branch tried), sharing what is remembered."""
        return _Check(self.root, self.shared)

    def take(self, repairs: tuple[str, ...] | list[str], problems: tuple | list) -> None:
        for name in repairs:
            self.repair(name)
        self.problems.extend(problems)


def _show(value: object) -> str:
    """A short preview of a JSON value; bounded, whatever the value's size or depth."""
    text = _preview(value, _SHOWN + 1)
    if _SURROGATE.search(text):
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    kind = {str: "a string", bool: "a boolean", int: "an integer", float: "a number"}.get(
        type(value), "an array" if isinstance(value, (list, tuple)) else "an object"
    )
    kind = "null" if value is None else kind
    return f"{text[:_SHOWN]}{'...' if len(text) > _SHOWN else ''} ({kind})"


def _preview(value: object, room: int) -> str:
    """At least `room` characters of the value's JSON (fewer when it is shorter)."""
    if isinstance(value, (list, tuple, dict)):
        pieces: list[str] = []
        used = 1
        items = value.items() if isinstance(value, dict) else value
        for item in items:
            if used > room:
                break
            piece = (
                f"{_preview(str(item[0]), room)}: {_preview(item[1], room - used)}"
                if isinstance(value, dict)
                else _preview(item, room - used)
            )
            pieces.append(piece)
            used += len(piece) + 2
        opener, closer = ("{", "}") if isinstance(value, dict) else ("[", "]")
        return opener + ", ".join(pieces) + closer
    if isinstance(value, str):
        return json.dumps(value[:room], ensure_ascii=False)
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"an integer of {value.bit_length()} bits"
    return json.dumps(value)


def _not_json(value: object) -> str | None:
    """The first thing in a dict given by a program (not decoded from text) that is not a JSON
    value, as a problem line; checked before anything else reads the value, so no foreign
    object's __eq__, __str__ or __hash__ runs and no cycle or depth is followed."""
    stack: list[tuple[object, str, int]] = [(value, "", 0)]
    seen = 0
    while stack:
        item, path, depth = stack.pop()
        seen += 1
        if depth > MAX_DEPTH or seen > MAX_VALUES:
            limit = f"at most {MAX_DEPTH} levels of nesting and {MAX_VALUES} values in all"
            return f'"{path or "arguments"}": expected {limit}'
        if isinstance(item, dict):
            if len(item) > MAX_ITEMS:
                return f'"{path or "arguments"}": expected at most {MAX_ITEMS} members'
            for key, member in item.items():
                if not isinstance(key, str):
                    where, kind = path or "arguments", type(key).__name__
                    return f'"{where}": expected text keys, received a key of type {kind}'
                stack.append((member, _where(path, key), depth + 1))
        elif isinstance(item, (list, tuple)):
            if len(item) > MAX_ITEMS:
                return f'"{path}": expected at most {MAX_ITEMS} items'
            stack.extend((member, f"{path}[{i}]", depth + 1) for i, member in enumerate(item))
        elif isinstance(item, float) and not math.isfinite(item):
            return f'"{path}": expected a finite number, received {item}'
        elif not isinstance(item, (str, int, float)) and item is not None:
            return (
                f'"{path}": expected a JSON value, received an object of type {type(item).__name__}'
            )
    return None


def _to_integer(value: object, check: _Check) -> object:
    if isinstance(value, float) and value.is_integer():
        check.repair("float_to_integer")
        return int(value)
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        check.repair("string_to_integer")
        return int(value.strip().partition(".")[0])  # "9007199254740993.0" stays exact
    return value


def _to_number(value: object, check: _Check) -> object:
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        text = value.strip()
        number = int(text) if _INTEGER.fullmatch(text) and "." not in text else float(text)
        if math.isfinite(number):  # "1" * 400 is no number a float can hold: left as text
            check.repair("string_to_number")
            return number
    return value


def _to_string(value: object, check: _Check) -> object:
    """A number as the text it was written as: an integer exactly, whatever its size (up to
    Python's limit on integer digits, past which it stays a number and is refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return value
    try:
        text = str(value)
    except ValueError:  # more digits than sys.get_int_max_str_digits() allows
        return value
    check.repair("number_to_string")
    return text


def _to_boolean(value: object, check: _Check) -> object:
    if isinstance(value, str) and value.strip().lower() in _BOOLEANS:
        check.repair("string_to_boolean")
        return _BOOLEANS[value.strip().lower()]
    return value


def _from_json_text(kind: type, repair: str) -> Callable[[object, _Check], object]:
    def coerce(value: object, check: _Check) -> object:
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
_COERCE: Final[dict[str, Callable[[object, _Check], object]]] = {
    "string": _to_string,
    "integer": _to_integer,
    "number": _to_number,
    "boolean": _to_boolean,
    "array": _from_json_text(list, "string_to_array"),
    "object": _from_json_text(dict, "string_to_object"),
}


def conform(value: object, schema: dict[str, Any], path: str, check: _Check, depth: int = 0) -> Any:
    """`value` made to fit `schema` where that is lossless; problems recorded in `check`.

    Each (value, schema, path, depth) is conformed once per Action Input: union branches that
    share a subschema (every branch of a recursive model holds the same `sub`) reuse its result
    instead of checking the subtree again. `depth` counts levels of the value, not of the
    schema, so a union or an `allOf` costs no nesting; a schema that reaches itself without
    going a level into the value is caught by its being entered again at the same place."""
    schema = resolve(schema, check.root) if isinstance(schema, dict) else _ANY
    shared = check.shared
    key = (id(value), id(schema), path, depth)
    here = (id(schema), path, depth)
    if shared.steps >= MAX_STEPS or len(shared.open) > _DEEPEST:
        shared.exhausted = True
        check.problems.append(_TOO_COMPLEX)
        return value
    if here in shared.open:  # the schema again, at the same place in the value: a loop
        where = path or "arguments"
        check.problems.append(f'"{where}": expected a value its schema can describe (it refers '
                              "to itself without describing one)")  # fmt: skip
        return value
    if not isinstance(value, (dict, list, tuple, str)) or (
        isinstance(value, str) and len(value) < _REMEMBERED
    ):  # a leaf costs less to check again than to remember
        shared.steps += 1
        shared.open.add(here)
        try:
            return _conform(value, schema, path, check, depth)
        finally:
            shared.open.discard(here)
    if key not in shared.memo:
        shared.steps += 1
        shared.open.add(here)
        inner = check.trial()
        result = _conform(value, schema, path, inner, depth)
        shared.open.discard(here)
        # The value and schema are kept so that their ids are not reused while the memo lives.
        shared.memo[key] = (value, schema, result, tuple(inner.repairs), tuple(inner.problems))
    _, _, result, repairs, problems = shared.memo[key]
    check.take(repairs, problems)
    return result


def _conform(value: object, schema: dict[str, Any], path: str, check: _Check, depth: int) -> Any:
    if depth > MAX_DEPTH:
        check.problem(path, f"at most {MAX_DEPTH} levels of nesting", "...")
        return value
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _one_branch(value, schema[key], path, check, depth)
    for sub in schema.get("allOf", ()):
        if isinstance(sub, dict):
            value = conform(value, sub, path, check, depth)
    kinds = types_of(schema)
    if kinds and not _is_kind(value, kinds):
        value = _coerced(value, kinds, check)
        if not _is_kind(value, kinds):
            check.problem(path, check.label(schema), value)
            return value
    return _constrain(value, schema, path, check, depth)


def _is_kind(value: object, kinds: list[str]) -> bool:
    return any(_IS.get(kind, _anything)(value) for kind in kinds)


def _coerced(value: object, kinds: list[str], check: _Check) -> object:
    """The value as the first of `kinds` it turns into losslessly; else unchanged."""
    for kind in kinds:
        coerced = _COERCE.get(kind, _unchanged)(value, check)
        if _IS.get(kind, _anything)(coerced):
            return coerced
    return value


def _anything(value: object) -> bool:
    return True


def _unchanged(value: object, check: _Check) -> object:
    return value


# --- unions -----------------------------------------------------------------------------------


def _one_branch(value: object, branches: list, path: str, check: _Check, depth: int) -> Any:
    """The value conformed to the branch of `anyOf`/`oneOf` it belongs to.

    A branch that cannot hold an array or object is passed over without being entered: its
    type (after the lossless coercions), its required names, its closed set of names, and every
    member pinned to one value (`"kind": {"const": "id"}`) are looked at first. A scalar is
    simply tried on each branch, once. Among the branches that fit, the first that fits without
    a repair wins, else the first that fits at all (pydantic's "smart" union: `"007"` stays a
    string where a string is allowed). When none fits, the problems are those of the branch the
    value is nearest to, or else what each branch expects."""
    resolved = [resolve(b, check.root) for b in branches if isinstance(b, dict)]
    container = isinstance(value, (dict, list, tuple))
    fitted: tuple[_Check, Any] | None = None
    tried: dict[int, _Check] = {}
    for branch in resolved:
        if container and not _may_hold(value, branch, path, check, depth):
            continue
        trial = tried[id(branch)] = check.trial()
        result = conform(value, branch, path, trial, depth)
        if trial.problems:
            continue
        if not trial.repairs:
            check.take(trial.repairs, ())
            return result
        if fitted is None:
            fitted = trial, result
    if fitted is not None:
        check.take(fitted[0].repairs, ())
        return fitted[1]
    if container and tried:
        nearest = min(tried.values(), key=lambda trial: len(trial.problems))
        check.take((), nearest.problems)
        return value
    return _no_branch(value, resolved, path, check, depth, tried)


def _may_hold(value: object, branch: dict[str, Any], path: str, check: _Check, depth: int) -> bool:
    """Whether `branch` may hold the array or object `value`, looked at from the outside."""
    if not _kind_fits(value, branch, check):
        return False
    if not isinstance(value, dict):
        return True
    return (
        _missing(value, branch, check) == 0
        and _closed_fits(value, branch, check)
        and _pins_fit(value, branch, path, check, depth)
    )


def _kind_fits(value: object, branch: dict[str, Any], check: _Check) -> bool:
    kinds = kinds_of(branch)
    return (
        not kinds
        or _is_kind(value, kinds)
        or _is_kind(_coerced(value, kinds, check.trial()), kinds)
    )


def _known(name: object, properties: dict[str, Any], check: _Check) -> str | None:
    """The property a given name stands for: itself, else the one it matches ignoring case and
    `_`/`-`/space (`"Kind"` for `kind`)."""
    if name in properties:
        return str(name)
    return check.shared.names(properties).get(_key(str(name)))


def _missing(value: dict, branch: dict[str, Any], check: _Check) -> int:
    """How many of the branch's required names the object lacks."""
    properties = properties_of(branch)
    given = {_known(name, properties, check) for name in value} | set(value)
    required = branch.get("required", ())
    return sum(1 for name in required if isinstance(name, str) and name not in given)


def _closed_fits(value: dict, branch: dict[str, Any], check: _Check) -> bool:
    properties = properties_of(branch)
    return branch.get("additionalProperties") is not False or all(
        _known(name, properties, check) is not None for name in value
    )


def _pins_fit(value: dict, branch: dict[str, Any], path: str, check: _Check, depth: int) -> bool:
    properties = properties_of(branch)
    for name, member in value.items():
        known = _known(name, properties, check)
        if known is None or isinstance(member, (dict, list, tuple)):
            continue
        if not isinstance(properties[known], dict):
            continue
        if pinned(resolve(properties[known], check.root)) is not None:
            trial = check.trial()
            conform(member, properties[known], _where(path, name), trial, depth + 1)
            if trial.problems:
                return False
    return True


def _no_branch(
    value: object, branches: list[dict], path: str, check: _Check, depth: int, tried: dict
) -> Any:
    """No branch may hold `value`: the problems of the one branch it is nearest to (of its type;
    with its pinned member's value; lacking the fewest required names), else what the
    branches expect (`"target.kind": expected one of "id", "name"` where they differ by a pin).
    `tried` holds the passes already made, by branch, so that none is made twice."""
    near = [b for b in branches if _kind_fits(value, b, check)]
    if isinstance(value, dict) and len(near) > 1:
        tag = _tag(near, check.root)
        if tag is not None:
            given = next((n for n in value if n == tag or _key(str(n)) == _key(tag)), None)
            pins = [pinned(resolve(properties_of(b)[tag], check.root)) for b in near]
            allowed = "one of " + ", ".join(
                dict.fromkeys(json.dumps(pin[0], ensure_ascii=False) for pin in pins if pin)
            )
            if given is None:
                check.problems.append(f'"{_where(path, tag)}": missing (expected {allowed})')
                return value
            near = [b for b in near if _pins_fit(value, b, path, check, depth)]
            if not near:
                check.problem(_where(path, given), allowed, value[given])
                return value
        if len(near) > 1:
            fewest = min(_missing(value, b, check) for b in near)
            near = [b for b in near if _missing(value, b, check) == fewest]
    if len(near) == 1:
        if id(near[0]) in tried:
            check.take((), tried[id(near[0])].problems)
            return value
        return conform(value, near[0], path, check, depth)
    labels = (_branch_label(b, check) for b in near or branches)
    check.problem(path, " or ".join(dict.fromkeys(labels)), value)
    return value


def _tag(branches: list[dict], root: dict[str, Any]) -> str | None:
    """The property that every branch pins to a value of its own, if there is one."""
    common: dict[str, None] | None = None
    for branch in branches:
        pins = {
            name: None
            for name, schema in properties_of(branch).items()
            if isinstance(schema, dict) and pinned(resolve(schema, root)) is not None
        }
        common = pins if common is None else {n: None for n in common if n in pins}
    return next(iter(common or {}), None)


def _branch_label(branch: dict[str, Any], check: _Check) -> str:
    label = check.label(branch)
    required = [json.dumps(n) for n in branch.get("required", ()) if isinstance(n, str)]
    return f"object with {', '.join(required)}" if label == "object" and required else label


# --- constraints ------------------------------------------------------------------------------


def _constrain(value: Any, schema: dict[str, Any], path: str, check: _Check, depth: int) -> Any:
    allowed = pinned(schema) if "const" in schema else schema.get("enum")
    if isinstance(allowed, list) and not any(_same(value, v) for v in allowed):
        folded = [v for v in allowed if isinstance(v, str) and isinstance(value, str)
                  and v.casefold() == value.strip().casefold()]  # fmt: skip
        if len(folded) != 1:
            check.problem(path, check.label(schema), value)
            return value
        check.repair("enum_case")
        value = folded[0]
    if isinstance(value, str):
        _check_string(value, schema, path, check)
    elif isinstance(value, float) and not math.isfinite(value):
        check.problem(path, "a finite number", value)
    elif isinstance(value, int) and not isinstance(value, bool):
        _check_bounds(value, schema, path, check)
        if abs(value) > MAX_INTEGER:
            check.problem(path, f"an integer of at most {MAX_INTEGER}", value)
    elif isinstance(value, float):
        _check_bounds(value, schema, path, check)
    elif isinstance(value, list):
        return _conform_array(value, schema, path, check, depth)
    elif isinstance(value, dict):
        return conform_object(value, schema, path, check, depth)
    return value


def _same(value: object, other: object) -> bool:
    """JSON equality: `true` is not 1, 1 is 1.0, arrays and objects member by member."""
    if isinstance(value, bool) or isinstance(other, bool):
        return isinstance(value, bool) and isinstance(other, bool) and value == other
    if isinstance(value, (int, float)) and isinstance(other, (int, float)):
        return value == other
    if isinstance(value, (list, tuple)) and isinstance(other, (list, tuple)):
        return len(value) == len(other) and all(map(_same, value, other))
    if isinstance(value, dict) and isinstance(other, dict):
        return value.keys() == other.keys() and all(_same(value[k], other[k]) for k in value)
    return type(value) is type(other) and value == other


def _check_string(value: str, schema: dict[str, Any], path: str, check: _Check) -> None:
    longest, shortest = _count(schema, "maxLength"), _count(schema, "minLength")
    limit = MAX_STRING if longest is None else min(longest, MAX_STRING)
    if len(value) > limit:
        check.problem(path, f"at most {limit} characters", value)
    elif _SURROGATE.search(value):
        check.problem(path, "text without lone surrogate characters", value)
    elif (
        not value.strip()
        and (1 if shortest is None else shortest) > 0
        and not _allowed(value, schema)
    ):
        check.problem(path, f"a non-empty {check.label(schema)}", value)
    elif shortest is not None and len(value) < shortest:
        check.problem(path, f"at least {shortest} characters", value)
    elif isinstance(schema.get("pattern"), str):
        found = _matches(schema["pattern"], value, check)
        if found is None:
            check.repair("pattern_unchecked")
        elif not found:
            check.problem(path, f"text matching the pattern {schema['pattern']}", value)


def _allowed(value: object, schema: dict[str, Any]) -> bool:
    allowed = pinned(schema) if "const" in schema else schema.get("enum")
    return isinstance(allowed, list) and any(_same(value, v) for v in allowed)


def _count(schema: dict[str, Any], key: str) -> int | None:
    """A non-negative whole-number keyword (`minLength`, `maxItems`), else None."""
    count = schema.get(key)
    if isinstance(count, float) and count.is_integer():
        count = int(count)
    return count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None


def _matches(pattern: str, value: str, check: _Check) -> bool | None:
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


def _limit(schema: dict[str, Any], key: str) -> int | float | None:
    limit = schema.get(key)
    if isinstance(limit, bool) or not isinstance(limit, (int, float)):
        return None
    return limit if not isinstance(limit, float) or math.isfinite(limit) else None


def _check_bounds(value: float, schema: dict[str, Any], path: str, check: _Check) -> None:
    if _NUMERIC.isdisjoint(schema):
        return
    low, high = _limit(schema, "minimum"), _limit(schema, "maximum")
    above, below = _limit(schema, "exclusiveMinimum"), _limit(schema, "exclusiveMaximum")
    if schema.get("exclusiveMinimum") is True:  # draft 4: a flag on `minimum`
        low, above = None, low
    if schema.get("exclusiveMaximum") is True:
        high, below = None, high
    if low is not None and value < low:
        check.problem(path, f"a number >= {low}", value)
    if above is not None and value <= above:
        check.problem(path, f"a number > {above}", value)
    if high is not None and value > high:
        check.problem(path, f"a number <= {high}", value)
    if below is not None and value >= below:
        check.problem(path, f"a number < {below}", value)
    step = _limit(schema, "multipleOf")
    if step is not None and step > 0 and not _multiple(value, step):
        check.problem(path, f"a multiple of {step}", value)


_NUMERIC: Final = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)


def _multiple(value: float, step: float) -> bool:
    """Whether `value` is a whole number of `step`s, in decimal as written: 0.3 is a multiple
    of 0.1, though not in binary floating point."""
    ratio = _decimal(value) / _decimal(step)
    return ratio.denominator == 1


def _decimal(number: float) -> Fraction:
    """A number as the decimal it was written as (an integer of any size exactly)."""
    return Fraction(number) if isinstance(number, int) else Fraction(str(number))


def _conform_array(value: list, schema: dict[str, Any], path: str, check: _Check, depth: int):
    if len(value) > MAX_ITEMS:
        check.problem(path, f"at most {MAX_ITEMS} items", value)
        return value
    fewest, most = _count(schema, "minItems"), _count(schema, "maxItems")
    if fewest is not None and len(value) < fewest:
        check.problem(path, f"an array of at least {fewest} items", value)
    if most is not None and len(value) > most:
        check.problem(path, f"an array of at most {most} items", value)
    items = schema.get("items")
    if not isinstance(items, dict):
        items = _ANY
    return [conform(v, items, f"{path}[{i}]", check, depth + 1) for i, v in enumerate(value)]


#: The schema of anything (one object, so that it is one schema to the memo).
_ANY: Final[dict[str, Any]] = {}


def conform_object(
    value: dict, schema: dict[str, Any], path: str, check: _Check, depth: int = 0
) -> dict[str, Any]:
    """The object's properties conformed; names repaired, nulls of optional ones dropped."""
    properties = properties_of(schema)
    required = [name for name in schema.get("required", ()) if isinstance(name, str)]
    extra = schema.get("additionalProperties", depth > 0 or not properties)
    result: dict[str, Any] = {}
    for name, item in value.items():
        known = _known(name, properties, check)
        where = _where(path, name)
        if known is None:
            if extra is False:
                check.problems.append(
                    f'"{where}": not a parameter (expected one of: {", ".join(properties)})'
                )
            elif isinstance(name, str) and _SURROGATE.search(name):
                check.problem(where, "a name without lone surrogate characters", name)
            else:
                sub = extra if isinstance(extra, dict) else _ANY
                result[name] = conform(item, sub, where, check, depth + 1)
            continue
        if known != name:
            check.repair("parameter_name")
            if known in value or known in result:
                check.problems.append(f'"{where}": given twice (as "{known}" and "{name}")')
                continue
        if item is None and known not in required and "null" not in _all_types(properties[known]):
            check.repair("drop_null")
            continue
        result[known] = conform(item, properties[known], where, check, depth + 1)
    for name in required:
        if name not in result and name not in value:
            label = check.label(properties.get(name, _ANY))
            check.problems.append(f'"{_where(path, name)}": missing (expected {label})')
    return result


def _where(path: str, name: object) -> str:
    return f"{path}.{name}" if path else str(name)


def _all_types(schema: dict[str, Any]) -> list[str]:
    if not isinstance(schema, dict):
        return []
    kinds = types_of(schema)
    for key in ("anyOf", "oneOf"):
        kinds += [t for branch in schema.get(key, ()) for t in types_of(branch)]
    return kinds


@functools.lru_cache(maxsize=4096)
def _key(name: str) -> str:
    return re.sub(r"[\s_-]+", "_", name.strip().strip("\"'`")).casefold()


def single_parameter(schema: dict[str, Any]) -> str | None:
    """The parameter a bare value maps to: the only required one, else the only one."""
    required = schema.get("required", ())
    names = list(required) if required else list(schema.get("properties", {}))
    return names[0] if len(names) == 1 else None


def check_arguments(
    raw: str | dict, schema: dict[str, Any]
) -> tuple[dict[str, Any], tuple[str, ...], list[str]]:
    """(arguments, repairs, problems): the whole chain, problems as lines for the model."""
    check = _Check(schema)
    if isinstance(raw, dict):
        value: object = raw
        problem = _not_json(raw)
        if problem is not None:
            return {}, (), [problem]
    elif isinstance(raw, str):
        value = _decode(raw, schema, check)
    else:
        raise TypeError(f"arguments must be a str or a dict, not {type(raw).__name__}")
    if not isinstance(value, dict):
        if not check.problems:
            check.problems.append(f"expected a JSON object of arguments, received {_show(value)}")
        return {}, tuple(check.repairs), check.problems
    arguments = conform_object(_rename_lone_argument(value, schema, check), schema, "", check)
    if check.shared.exhausted:  # whatever else was found, this is what the model can act on
        return {}, tuple(check.repairs), [_TOO_COMPLEX]
    return arguments, tuple(check.repairs), check.problems


def _rename_lone_argument(value: dict, schema: dict[str, Any], check: _Check) -> dict:
    """One argument under another name, for a tool of one parameter, is that parameter: small
    models copy the name from another tool's example (`{"expression": "capital of Japan"}` for
    lookup_fact). Nothing is lost or guessed, so it is renamed rather than refused."""
    properties = schema.get("properties", {})
    if len(properties) != 1 or len(value) != 1 or schema.get("additionalProperties"):
        return value
    ((name, _),), ((given, item),) = properties.items(), value.items()
    if _key(str(given)) == _key(name):
        return value
    check.repair("renamed_parameter")
    return {name: item}


def _decode(raw: str, schema: dict[str, Any], check: _Check) -> object:
    single = single_parameter(schema)
    text = raw.strip()
    if not text and not schema.get("properties"):
        return {}
    try:
        value, repairs = jsonish.loads(raw)
    except jsonish.JsonishError as error:
        if single is None or text.startswith("{"):
            check.problems.append(f"the Action Input is not a JSON object ({error})")
            return None
        check.repair("plain_string")
        return {single: text}
    for name in repairs:
        check.repair(name)
    if isinstance(value, dict):
        return value
    if value is None and not schema.get("properties"):
        return {}
    if single is None:
        return value
    if repairs:  # a repaired non-object is a guess; the text as written is what the model meant
        check.repairs.clear()
        check.repair("plain_string")
        return {single: text}
    check.repair("bare_value")
    return {single: value}


def union_work(value: object, schema: dict[str, Any], limit: int = MAX_UNION_WORK) -> int:
    """How many values a validator that enters every branch of every union would check to
    validate `value` (arguments that passed `check_arguments`) against `schema`, up to
    `limit + 1`. pydantic's unions work that way (they try every member on anything but an
    exact instance), so a union of models that nest each other costs it branches ** depth:
    the figure lets a caller refuse such arguments before pydantic runs, rather than hang."""
    root = schema
    seen: dict[tuple[int, int], int] = {}

    def work(value: object, schema: object, hops: int) -> int:
        schema = resolve(schema, root) if isinstance(schema, dict) else _ANY
        key = (id(value), id(schema))
        if key in seen or hops > 8:
            return seen.get(key, 1)  # a schema that reaches itself costs one check
        seen[key] = 1
        total = 0
        parts = [s for k in ("anyOf", "oneOf", "allOf") for s in _subschemas(schema, k)]
        tag = schema.get("discriminator")
        if isinstance(tag, dict) and isinstance(tag.get("propertyName"), str):
            parts = _tagged(value, parts, tag["propertyName"], root)  # one branch, looked up
        for part in parts:  # a branch of another type is refused at once
            kinds = kinds_of(part)
            total += work(value, part, hops + 1) if not kinds or _is_kind(value, kinds) else 1
            if total > limit:
                break
        if not parts or schema.get("allOf"):
            total += 1
            for member, sub in _members(value, schema):
                total += work(member, sub, 0)
                if total > limit:
                    break
        seen[key] = min(total, limit + 1)
        return seen[key]

    return work(value, schema, 0)


def _tagged(value: object, branches: list[dict], name: str, root: dict[str, Any]) -> list[dict]:
    """The branches of a discriminated union (pydantic's `Field(discriminator=...)`) that
    the value's tag selects: the validator goes straight to them."""
    if not isinstance(value, dict) or name not in value:
        return []
    chosen = []
    for branch in branches:
        schema = properties_of(resolve(branch, root)).get(name)
        pin = pinned(resolve(schema, root)) if isinstance(schema, dict) else None
        if pin is None or any(_same(value[name], v) for v in pin):
            chosen.append(branch)
    return chosen


def _subschemas(schema: dict[str, Any], key: str) -> list[dict[str, Any]]:
    parts = schema.get(key)
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _members(value: object, schema: dict[str, Any]) -> list[tuple[object, object]]:
    if isinstance(value, dict):
        properties, extra = properties_of(schema), schema.get("additionalProperties")
        return [(v, properties.get(k, extra if isinstance(extra, dict) else _ANY))
                for k, v in value.items()]  # fmt: skip
    if isinstance(value, list):
        items = schema.get("items")
        return [(v, items if isinstance(items, dict) else _ANY) for v in value]
    return []
