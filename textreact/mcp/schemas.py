"""An MCP tool's `inputSchema` (any JSON Schema 2020-12, from an untrusted server) -> a `Tool`
that never fails to build, whose validation still checks everything the schema says.

`Tool` reads most of JSON Schema for its prompt line, its grammar and its validation, and
refuses what it cannot make sense of (a root that is not an object, a `required` name with no
property, a schema no example can satisfy, nesting past its bound). Such a schema degrades to a
looser rule, step by step, down to "any object": the model is shown and constrained by less,
but every keyword the schema has (`if`/`then`, `dependentRequired`, `unevaluatedProperties`,
`contains`, ...) is still checked by a 2020-12 validator before the call is sent, and a failure
is an argument error the model reads, as any other. Descriptions and titles in the schema are
untrusted text, defused as tool output is (`untrusted.defuse`)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, Final

import regex

from textreact import untrusted
from textreact.errors import ConfigError, ToolArgumentError
from textreact.tools import Tool

__all__ = ["build_tool", "defused_schema"]

#: Characters of one description or title in a schema kept: a tool's prompt line stays short.
DESCRIPTION_LIMIT: Final = 1000
#: Problems one argument error lists at most.
_PROBLEMS: Final = 5
#: Characters of a received value shown in a problem line.
_SHOWN: Final = 60
#: Seconds a `patternProperties` name match may take (the server's regex is untrusted).
_PATTERN_SECONDS: Final = 0.05
_TEXT_KEYS: Final = frozenset({"description", "title"})
#: The Tool fields whose ConfigError is the caller's, not the schema's.
_CALLERS: Final = frozenset({"name", "description", "timeout", "result_limit"})


def defused_schema(schema: Any) -> Any:
    """`schema` with every `description` and `title` string defused (cut, control tokens
    broken, protocol keywords quoted); nothing else changes."""
    if isinstance(schema, dict):
        return {
            key: untrusted.defuse(value, DESCRIPTION_LIMIT)
            if key in _TEXT_KEYS and isinstance(value, str)
            else defused_schema(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [defused_schema(item) for item in schema]
    return schema


def build_tool(
    name: str, description: str, schema: Any, fn: Callable[..., Any], **options: Any
) -> Tool:
    """The Tool for one MCP tool: its schema as it is where `Tool` takes it, else the first of
    looser ones it takes; the whole schema validated before each call wherever a validator
    can read it: as the Tool's own argument check where the Tool's example passes it, else
    (a schema no example of textreact's fits) inside the call, where a failure is the tool's
    error with the validator's words. `options` go to `Tool` (timeout, result_limit, cache)."""
    shown = defused_schema(schema) if isinstance(schema, dict) else {}
    convert = _validator(schema)
    looser = _looser(shown)
    checked = fn if convert is None else _checked(fn, convert)
    ladder = [(shown, fn, convert), (looser, fn, convert), (shown, checked, None)]
    ladder.append((looser, checked, None))
    for parameters, call, check in ladder:
        tool = _tool(name, description, parameters, call, check, options)
        if tool is not None:
            return tool
    return Tool(name, description, {"type": "object"}, checked, **options)


def _tool(
    name: str,
    description: str,
    parameters: dict[str, Any],
    fn: Callable[..., Any],
    convert: Callable[[dict[str, Any]], dict[str, Any]] | None,
    options: dict[str, Any],
) -> Tool | None:
    """The Tool, or None where the schema is what `Tool` refused."""
    try:
        return Tool(name, description, parameters, fn, convert=convert, **options)
    except ConfigError as error:
        if error.field in _CALLERS:  # the caller's mistake, not the server's schema
            raise
        return None


def _checked(
    fn: Callable[..., Any], convert: Callable[[dict[str, Any]], dict[str, Any]]
) -> Callable[..., Any]:
    """`fn`, with the arguments validated first."""

    async def call(**arguments: Any) -> Any:
        convert(arguments)
        value = fn(**arguments)
        return await value if inspect.isawaitable(value) else value

    return call


def _looser(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An object of the same properties, none required, any other property allowed."""
    properties = schema.get("properties")
    kept = {
        key: value
        for key, value in (properties.items() if isinstance(properties, dict) else ())
        if isinstance(value, dict)
    }
    return {"type": "object", "properties": kept, "additionalProperties": True}


def _validator(schema: Any) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """A check of arguments against the whole schema, as JSON Schema 2020-12 reads it; None for
    a schema that is not valid JSON Schema (the server still checks its own calls).

    `pattern` is left to textreact's own validation, which bounds its time; a `patternProperties`
    name is matched with a timeout. A reference the validator cannot resolve (a remote `$ref`;
    nothing is fetched) lets the call through to the server."""
    import jsonschema

    if not isinstance(schema, (dict, bool)):
        return None
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError:
        return None
    except RecursionError:  # nested past Python's stack: textreact's own rules still apply
        return None
    validator = _bounded()(schema)

    def convert(arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            found = sorted(validator.iter_errors(arguments), key=jsonschema.exceptions.relevance)
        except Exception:  # an unresolvable $ref or the like: the server checks its own calls
            return arguments
        if found:
            details = tuple(
                (".".join(map(str, e.absolute_path)), e.message[:200], repr(e.instance)[:_SHOWN])
                for e in found[:_PROBLEMS]
            )
            raise ToolArgumentError("; ".join(d[1] for d in details), details)
        return arguments

    return convert


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Any:
    """2020-12 `patternProperties`, each name matched under a time bound (a match that runs
    out of time counts as no match)."""
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            try:
                matched = regex.search(pattern, name, timeout=_PATTERN_SECONDS)
            except (regex.error, TimeoutError):
                continue
            if matched:
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _ignored(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
    """A keyword another check covers."""
    return iter(())


@functools.cache
def _bounded() -> Any:
    """The 2020-12 validator class with the two keywords above replaced (made once)."""
    import jsonschema

    return jsonschema.validators.extend(
        jsonschema.Draft202012Validator,
        {"pattern": _ignored, "patternProperties": _pattern_properties},
    )
