"""A client's tool schema -> checked before a `Tool` is made of it: every keyword textreact
reads holds what JSON Schema says it holds, so a malformed schema is a 400 that names the
place and says what to write there, never a crash when a reply is validated against it.

Checked, not judged: a keyword textreact does not read passes as it is, and `true` (the
schema every value fits) is written as `{}`, which the rest of textreact reads the same way."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final

import regex

from textreact.tools.regexcost import CostlyPattern, check_cost
from textreact.tools.schema import followed

#: JSON Schema's type names.
JSON_TYPES: Final = ("string", "number", "integer", "boolean", "object", "array", "null")
#: Those and the other dialects' names that `textreact.tools.schema` maps (BFCL, Python's).
TYPE_NAMES: Final = frozenset(JSON_TYPES) | {
    "any", "bool", "dict", "double", "float", "int", "list", "long", "str", "tuple",
}  # fmt: skip
#: Deepest nesting of schemas taken (textreact validates arguments 32 levels deep).
MAX_DEPTH: Final = 32
#: The most schemas one tool's parameters may hold: its prompt, grammar and checks grow with it.
MAX_SCHEMAS: Final = 2048

_SCHEMA_MAPS: Final = ("properties", "patternProperties", "$defs", "definitions")
_SCHEMA_LISTS: Final = ("anyOf", "oneOf", "allOf", "prefixItems")
#: Keywords that hold a schema or a boolean (`additionalProperties: false`), kept as written.
_SCHEMA_OR_BOOLEAN: Final = (
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "not",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
)
_NUMBERS: Final = ("minimum", "maximum")
_COUNTS: Final = ("minLength", "maxLength", "minItems", "maxItems", "minProperties")
_EXAMPLE = '{"type": "string", "description": "..."}'


class SchemaProblem(ValueError):
    """What is wrong with a schema, where, and what to write instead (the client's message)."""


def checked_schema(parameters: Mapping[str, Any], where: str) -> dict[str, Any]:
    """`parameters` (an object schema, `where` naming it for the client) checked, with `true`
    subschemas written as `{}`; raises SchemaProblem for the first problem found."""
    if not isinstance(parameters, dict):
        raise SchemaProblem(
            f'{where} must be a JSON Schema object such as {{"type": "object", "properties": '
            f"{{...}}}}, got {_shown(parameters)}"
        )
    return _Checker(parameters).schema(parameters, where, 0)


class _Checker:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.count = 0

    def schema(self, value: Any, where: str, depth: int) -> dict[str, Any]:
        if value is True:
            return {}
        if value is False:
            raise SchemaProblem(
                f"{where} is false, a schema that no value fits: leave the parameter out"
            )
        if not isinstance(value, dict):
            raise SchemaProblem(
                f"{where} must be a JSON Schema object such as {_EXAMPLE}, got {_shown(value)}"
            )
        if depth > MAX_DEPTH:
            raise SchemaProblem(f"{where} is nested more than {MAX_DEPTH} schemas deep")
        self.count += 1
        if self.count > MAX_SCHEMAS:
            raise SchemaProblem(
                f"{where}: a tool's parameters may hold at most {MAX_SCHEMAS} schemas (each "
                "property, item and alternative is one); split the tool, or take a free-form "
                'object ({"type": "object"}) where the details do not matter'
            )
        out = dict(value)
        for key, check in _KEYWORDS.items():
            if key in value:
                out[key] = check(self, value[key], f"{where}.{key}", depth)
        for key in _SCHEMA_MAPS:
            if key in value:
                out[key] = self.schema_map(value[key], f"{where}.{key}", depth, key)
        for key in _SCHEMA_LISTS:
            if key in value:
                out[key] = self.schema_list(value[key], f"{where}.{key}", depth)
        for key in _SCHEMA_OR_BOOLEAN:
            if key in value and not isinstance(value[key], bool):
                out[key] = self.schema(value[key], f"{where}.{key}", depth + 1)
        return out

    def schema_map(self, value: Any, where: str, depth: int, key: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise SchemaProblem(
                f'{where} must be an object of schemas such as {{"city": {_EXAMPLE}}}, '
                f"got {_shown(value)}"
            )
        if key == "patternProperties":
            for pattern in value:
                _regex(pattern, f"{where} (the name {_shown(pattern)})")
        return {name: self.schema(sub, f"{where}.{name}", depth + 1) for name, sub in value.items()}

    def schema_list(self, value: Any, where: str, depth: int) -> list[dict[str, Any]]:
        if not isinstance(value, list) or not value:
            raise SchemaProblem(
                f"{where} must be a non-empty array of schemas such as "
                f'[{{"type": "string"}}, {{"type": "null"}}], got {_shown(value)}'
            )
        return [self.schema(sub, f"{where}[{i}]", depth + 1) for i, sub in enumerate(value)]

    def items(self, value: Any, where: str, depth: int) -> Any:
        if isinstance(value, bool):
            return value
        if isinstance(value, list):  # the older tuple form: one schema per position
            return self.schema_list(value, where, depth)
        return self.schema(value, where, depth + 1)

    def ref(self, value: Any, where: str, depth: int) -> str:
        if not isinstance(value, str) or not value.startswith("#"):
            raise SchemaProblem(
                f'{where} must point into this schema, such as "#/$defs/Name", got '
                f"{_shown(value)}; put the definitions the tool needs under $defs"
            )
        target = followed({"$ref": value}, self.root)  # as validation follows it
        if target is None:
            raise SchemaProblem(
                f"{where} is {_shown(value)}, which names no schema in this one: write a JSON "
                'Pointer such as "#/$defs/Name" (~1 for a / in a name, ~0 for a ~), or "#"'
            )
        if "$ref" in target:
            raise SchemaProblem(
                f"{where} is {_shown(value)}, which leads only to other $refs (in a circle, or "
                "more than 32 in a row): point one of them at a schema"
            )
        return value


def _type(checker: _Checker, value: Any, where: str, depth: int) -> Any:
    names = value if isinstance(value, list) else [value]
    if not names or not all(isinstance(n, str) and n in TYPE_NAMES for n in names):
        raise SchemaProblem(
            f"{where} must be a JSON Schema type name ({', '.join(JSON_TYPES)}) or an array of "
            f'them such as ["string", "null"], got {_shown(value)}'
        )
    return value


def _required(checker: _Checker, value: Any, where: str, depth: int) -> Any:
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise SchemaProblem(
            f'{where} must be an array of property names such as ["city"], got {_shown(value)}'
        )
    return value


def _enum(checker: _Checker, value: Any, where: str, depth: int) -> Any:
    if not isinstance(value, list) or not value:
        raise SchemaProblem(
            f'{where} must be a non-empty array of the allowed values such as ["C", "F"], got '
            f"{_shown(value)}"
        )
    return value


def _pattern(checker: _Checker, value: Any, where: str, depth: int) -> Any:
    return _regex(value, where)


def _regex(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise SchemaProblem(f"{where} must be a regular expression string, got {_shown(value)}")
    try:  # compiled as validation compiles it (tools.schema.compiled_pattern): `\p{L}` is fine
        check_cost(value)  # first: a pattern of a few characters may take gigabytes to compile
        regex.compile(value)
    except CostlyPattern as exc:
        raise SchemaProblem(f"{where} is {_shown(value)}: {exc}") from None
    except (regex.error, RecursionError, OverflowError) as exc:
        detail = getattr(exc, "msg", None) or "it cannot be compiled"
        raise SchemaProblem(
            f"{where} is {_shown(value)}, which is not a valid regular expression ({detail}); "
            "escape special characters such as ( with a backslash"
        ) from None
    return value


def _number(checker: _Checker, value: Any, where: str, depth: int) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SchemaProblem(f"{where} must be a number, got {_shown(value)}")
    return value


def _exclusive(checker: _Checker, value: Any, where: str, depth: int) -> Any:
    if isinstance(value, bool):  # draft 4: a flag on minimum / maximum
        return value
    return _number(checker, value, where, depth)


def _multiple(checker: _Checker, value: Any, where: str, depth: int) -> Any:
    if _number(checker, value, where, depth) <= 0:
        raise SchemaProblem(f"{where} must be a number > 0, got {_shown(value)}")
    return value


def _count(checker: _Checker, value: Any, where: str, depth: int) -> Any:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SchemaProblem(f"{where} must be an integer >= 0, got {_shown(value)}")
    return value


def _text(checker: _Checker, value: Any, where: str, depth: int) -> Any:
    if not isinstance(value, str):
        raise SchemaProblem(f"{where} must be a string, got {_shown(value)}")
    return value


def _flag(checker: _Checker, value: Any, where: str, depth: int) -> Any:
    if not isinstance(value, bool):
        raise SchemaProblem(f"{where} must be true or false, got {_shown(value)}")
    return value


def _list(checker: _Checker, value: Any, where: str, depth: int) -> Any:
    if not isinstance(value, list):
        raise SchemaProblem(f"{where} must be an array of example values, got {_shown(value)}")
    return value


_Check = Callable[[_Checker, Any, str, int], Any]
_KEYWORDS: Final[dict[str, _Check]] = {
    "type": _type,
    "required": _required,
    "enum": _enum,
    "pattern": _pattern,
    **dict.fromkeys(_NUMBERS, _number),
    "exclusiveMinimum": _exclusive,
    "exclusiveMaximum": _exclusive,
    "multipleOf": _multiple,
    **dict.fromkeys((*_COUNTS, "maxProperties"), _count),
    "$ref": _Checker.ref,
    "items": _Checker.items,
    "format": _text,
    "nullable": _flag,
    "uniqueItems": _flag,
    "examples": _list,
}


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, default=str, ensure_ascii=False)
    except (ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 60 else text[:60] + "..."
