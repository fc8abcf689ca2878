"""Argument schemas, as any source writes them -> one JSON Schema dialect, with example values.

OpenAI function definitions, MCP tool listings, pydantic and the Berkeley Function Calling
Leaderboard (`"type": "dict"`, `"float"`, `"tuple"`, `"any"`) all describe arguments with
JSON Schema or something close to it; `normalize` maps every one of them to standard JSON Schema
so that rendering and validation have one dialect to handle. `example_value` makes a value that
fits a schema, so that every tool can show the model a correct call.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Final

from textreact.errors import ConfigError

#: Type names of other dialects (BFCL, Python spellings) -> JSON Schema; None means "any type".
_TYPE_ALIASES: Final[dict[str, str | None]] = {
    "dict": "object", "float": "number", "tuple": "array", "any": None, "int": "integer",
    "str": "string", "bool": "boolean", "list": "array", "double": "number", "long": "integer",
}  # fmt: skip
#: Keywords that are not JSON Schema and that strict consumers reject (BFCL's "optional").
_NON_STANDARD: Final = frozenset({"optional"})
_SUBSCHEMA_LISTS: Final = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS: Final = ("properties", "$defs", "definitions", "patternProperties")
_SUBSCHEMAS: Final = ("items", "additionalProperties", "not")


def normalize(parameters: object, *, where: str = "parameters") -> dict[str, Any]:
    """A deep copy of `parameters` in standard JSON Schema, its root an object schema."""
    if not isinstance(parameters, dict):
        raise ConfigError(
            f"{where} must be a JSON Schema dict like "
            f'{{"type": "object", "properties": {{...}}}}, not {type(parameters).__name__}'
        )
    schema = _normalize(copy.deepcopy(parameters))
    if schema.get("type") is None and ("properties" in schema or not schema):
        schema["type"] = "object"
    if schema.get("type") != "object":
        raise ConfigError(f'{where} must describe an object ("type": "object"), got {parameters}')
    schema.setdefault("properties", {})
    unknown = [name for name in schema.get("required", ()) if name not in schema["properties"]]
    if unknown:
        raise ConfigError(f"{where}: required names {unknown} are not among its properties")
    return schema


def _normalize(schema: dict[str, Any]) -> dict[str, Any]:
    for key in _NON_STANDARD & schema.keys():
        del schema[key]
    if "type" in schema:
        schema["type"] = _type(schema["type"])
        if schema["type"] is None:
            del schema["type"]
    for key in _SUBSCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            schema[key] = [_normalize(s) if isinstance(s, dict) else s for s in schema[key]]
    for key in _SUBSCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            schema[key] = {
                name: _normalize(s) if isinstance(s, dict) else s for name, s in schema[key].items()
            }
    for key in _SUBSCHEMAS:
        if isinstance(schema.get(key), dict):
            schema[key] = _normalize(schema[key])
    return schema


def _type(declared: object) -> str | list[str] | None:
    if isinstance(declared, list):
        types = [_TYPE_ALIASES.get(t, t) for t in declared]
        return None if None in types else types
    return _TYPE_ALIASES.get(declared, declared) if isinstance(declared, str) else declared


def resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """Follow a local `$ref` (`#/$defs/Name`, as pydantic writes them)."""
    seen = 0
    while "$ref" in schema and seen < 32:
        target: Any = root
        for part in str(schema["$ref"]).removeprefix("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        schema, seen = target, seen + 1
    return schema


def types_of(schema: dict[str, Any]) -> list[str]:
    declared = schema.get("type")
    return [declared] if isinstance(declared, str) else list(declared or [])


def example_value(schema: dict[str, Any], root: dict[str, Any], depth: int = 0) -> Any:
    """A value that fits `schema`: its own example, default or first enum value when it has one,
    else a plain value of its type (required properties only, for objects)."""
    schema = resolve(schema, root)
    for key in ("examples", "enum"):
        if isinstance(schema.get(key), list) and schema[key]:
            return schema[key][0]
    for key in ("example", "default", "const"):
        if key in schema and schema[key] is not None:
            return schema[key]
    for key in ("anyOf", "oneOf"):
        branches = [b for b in schema.get(key, ()) if types_of(resolve(b, root)) != ["null"]]
        if branches:
            return example_value(branches[0], root, depth + 1)
    kind = next((t for t in types_of(schema) if t != "null"), "string")
    if kind == "object" and depth < 4:
        properties = schema.get("properties", {})
        return {
            name: example_value(properties[name], root, depth + 1)
            for name in schema.get("required", ())
            if name in properties
        }
    if kind == "array" and depth < 4:
        items = schema.get("items")
        return [example_value(items, root, depth + 1)] if isinstance(items, dict) else ["text"]
    return _PLAIN[kind](schema) if kind in _PLAIN else "text"


def _number(schema: dict[str, Any], whole: bool) -> int | float:
    low, high = schema.get("minimum"), schema.get("maximum")
    value: int | float = 1 if whole else 1.5
    if isinstance(low, (int, float)) and value < low:
        value = low
    if isinstance(high, (int, float)) and value > high:
        value = high
    return int(value) if whole else value


_PLAIN: Final = {
    "integer": lambda s: _number(s, True),
    "number": lambda s: _number(s, False),
    "boolean": lambda s: True,
    "string": lambda s: {"date": "2024-01-31", "date-time": "2024-01-31T12:00:00Z"}.get(
        s.get("format"), "text"
    ),
    "object": lambda s: {},
    "array": lambda s: [],
}


def type_label(schema: dict[str, Any], root: dict[str, Any]) -> str:
    """A short name of what a schema accepts, for the prompt: `integer`, `array of string`."""
    schema = resolve(schema, root)
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            labels = [type_label(b, root) for b in schema[key]]
            return " or ".join(dict.fromkeys(label for label in labels if label != "null"))
    if schema.get("enum"):
        return "one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    kinds = [t for t in types_of(schema) if t != "null"] or ["any"]
    items = schema.get("items")
    if kinds == ["array"] and isinstance(items, dict):
        return f"array of {type_label(items, root)}"
    return " or ".join(kinds)
