"""Action Input (text or dict) -> validated arguments, or a ToolArgumentError for the model.

The chain, each step named in the returned repairs so a transcript shows what was fixed:
text-level repair by `textreact.jsonish` (fences, Python literals, trailing commas, quotes, a
truncated tail when unambiguous); a plain string or bare value mapped to the tool's single
parameter; parameter names matched ignoring case and `_`/`-`/space; nulls dropped for optional
parameters; types coerced from the schema (`"3"` -> 3, `3.0` -> 3, `"true"` -> True, `7` ->
`"7"`, a JSON string -> an array or object, an enum value in the wrong case). Nothing is ever
dropped silently: a value that cannot be kept as written, or turned losslessly into what the
schema asks for, is an error whose message names the parameter, what was expected, what was
received, and shows a correct example.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, Final

from textreact import jsonish
from textreact.tools.schema import resolve, type_label, types_of

MAX_STRING: Final = 10_000
MAX_ITEMS: Final = 1_000
MAX_INTEGER: Final = 2**63 - 1
MAX_DEPTH: Final = 32
#: Values in all (every member of every array and object) of arguments given as a dict.
MAX_VALUES: Final = 10_000
#: Characters of a received value quoted in a problem line.
_SHOWN: Final = 60
_INTEGER: Final = re.compile(r"[+-]?\d{1,19}(?:\.0*)?")
_NUMBER: Final = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d{1,3})?")
_BOOLEANS: Final = {"true": True, "false": False}
_SURROGATE: Final = re.compile(r"[\ud800-\udfff]")


class _Check:
    """What one validation pass found: repairs applied and problems, each a line for the model."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.repairs: list[str] = []
        self.problems: list[str] = []

    def repair(self, name: str) -> None:
        if name not in self.repairs:
            self.repairs.append(name)

    def problem(self, path: str, expected: str, value: object) -> None:
        self.problems.append(f'"{path}": expected {expected}, received {_show(value)}')


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
        check.repair("string_to_number")
        text = value.strip()
        return int(text) if _INTEGER.fullmatch(text) and "." not in text else float(text)
    return value


def _to_string(value: object, check: _Check) -> object:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        check.repair("number_to_string")
        return str(value)
    return value


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
            try:
                decoded, _ = jsonish.loads(value)
            except jsonish.JsonishError:
                return value
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
    """`value` made to fit `schema` where that is lossless; problems recorded in `check`."""
    schema = resolve(schema, check.root)
    if depth > MAX_DEPTH:
        check.problem(path, f"at most {MAX_DEPTH} levels of nesting", "...")
        return value
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return _first_branch(value, schema[key], path, check, depth)
    for sub in schema.get("allOf", ()):
        value = conform(value, sub, path, check, depth + 1)
    kinds = types_of(schema)
    if kinds and not any(_IS.get(kind, _anything)(value) for kind in kinds):
        for kind in kinds:
            coerced = _COERCE.get(kind, _unchanged)(value, check)
            if _IS.get(kind, _anything)(coerced):
                value = coerced
                break
        else:
            check.problem(path, type_label(schema, check.root), value)
            return value
    return _constrain(value, schema, path, check, depth)


def _anything(value: object) -> bool:
    return True


def _unchanged(value: object, check: _Check) -> object:
    return value


def _first_branch(value: object, branches: list, path: str, check: _Check, depth: int) -> Any:
    for branch in branches:
        trial = _Check(check.root)
        result = conform(value, branch, path, trial, depth + 1)
        if not trial.problems:
            for name in trial.repairs:
                check.repair(name)
            return result
    labels = " or ".join(dict.fromkeys(type_label(b, check.root) for b in branches))
    check.problem(path, labels, value)
    return value


def _constrain(value: Any, schema: dict[str, Any], path: str, check: _Check, depth: int) -> Any:
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        folded = [v for v in enum if isinstance(v, str) and isinstance(value, str)
                  and v.casefold() == value.strip().casefold()]  # fmt: skip
        if len(folded) != 1:
            check.problem(path, type_label(schema, check.root), value)
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


def _check_string(value: str, schema: dict[str, Any], path: str, check: _Check) -> None:
    if len(value) > min(schema.get("maxLength", MAX_STRING), MAX_STRING):
        check.problem(path, f"at most {schema.get('maxLength', MAX_STRING)} characters", value)
    elif _SURROGATE.search(value):
        check.problem(path, "text without lone surrogate characters", value)
    elif (
        not value.strip() and schema.get("minLength", 1) > 0 and value not in schema.get("enum", ())
    ):
        check.problem(path, f"a non-empty {type_label(schema, check.root)}", value)
    elif "pattern" in schema and not re.search(schema["pattern"], value):
        check.problem(path, f"text matching {schema['pattern']}", value)


def _check_bounds(value: float, schema: dict[str, Any], path: str, check: _Check) -> None:
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(low, (int, float)) and value < low:
        check.problem(path, f"a number >= {low}", value)
    if isinstance(high, (int, float)) and value > high:
        check.problem(path, f"a number <= {high}", value)


def _conform_array(value: list, schema: dict[str, Any], path: str, check: _Check, depth: int):
    if len(value) > MAX_ITEMS:
        check.problem(path, f"at most {MAX_ITEMS} items", value)
        return value
    items = schema.get("items")
    if not isinstance(items, dict):
        items = {}
    return [conform(v, items, f"{path}[{i}]", check, depth + 1) for i, v in enumerate(value)]


def conform_object(
    value: dict, schema: dict[str, Any], path: str, check: _Check, depth: int = 0
) -> dict[str, Any]:
    """The object's properties conformed; names repaired, nulls of optional ones dropped."""
    properties: dict[str, Any] = schema.get("properties", {})
    required = schema.get("required", ())
    extra = schema.get("additionalProperties", depth > 0 or not properties)
    by_key = {_key(name): name for name in properties}
    result: dict[str, Any] = {}
    for name, item in value.items():
        known = name if name in properties else by_key.get(_key(str(name)))
        where = _where(path, name)
        if known is None:
            if extra is False:
                check.problems.append(
                    f'"{where}": not a parameter (expected one of: {", ".join(properties)})'
                )
            elif isinstance(name, str) and _SURROGATE.search(name):
                check.problem(where, "a name without lone surrogate characters", name)
            else:
                sub = extra if isinstance(extra, dict) else {}
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
            label = type_label(properties[name], check.root)
            check.problems.append(f'"{_where(path, name)}": missing (expected {label})')
    return result


def _where(path: str, name: object) -> str:
    return f"{path}.{name}" if path else str(name)


def _all_types(schema: dict[str, Any]) -> list[str]:
    kinds = types_of(schema)
    for key in ("anyOf", "oneOf"):
        kinds += [t for branch in schema.get(key, ()) for t in types_of(branch)]
    return kinds


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
