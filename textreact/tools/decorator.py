"""@tool: a plain Python function -> a Tool, its schema and validation built by pydantic from
the signature, the type hints and the docstring."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Mapping
from typing import Any, Final, overload

from textreact.errors import ConfigError, ToolArgumentError
from textreact.tools.tool import Tool, converted

_SECTION: Final = re.compile(
    r"^(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?):\s*$"
)
_ARGUMENT: Final = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = 10.0,
    example: Mapping[str, Any] | None = None,
    cache: bool = True,
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = 10.0,
    example: Mapping[str, Any] | None = None,
    cache: bool = True,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a Tool of a function; usable bare (`@tool`) or with options (`@tool(timeout=5)`).

    - name: the function's name unless given.
    - description: the docstring's first paragraph unless given; write *when* to use the tool.
    - parameter descriptions: the docstring's Google-style `Args:` section (`name: text` or
      `name (type): text`, continuation lines indented).
    - examples: `example={"city": "Paris"}` gives the whole example call; otherwise each
      parameter's first `Annotated[str, Field(examples=["Paris"])]` example, its default, or a
      plain value of its type is used.
    - every parameter needs a type hint; lambdas, *args, **kwargs, positional-only parameters
      and async functions are refused with a ConfigError that says how to fix the function.
    - cache: False for a tool whose result may change between calls (a job's status): a
      repeated call then runs again instead of being answered from the first result.

    The returned Tool is still callable like the function. Pydantic validates the arguments
    (its constraints, e.g. `Field(ge=0)`, included) and converts them to the hinted types.
    """

    def build(function: Callable[..., Any]) -> Tool:
        return _from_function(function, name, description, timeout, example, cache)

    return build if fn is None else build(fn)


def _from_function(
    fn: Callable[..., Any],
    name: str | None,
    description: str | None,
    timeout: float | None,
    example: Mapping[str, Any] | None,
    cache: bool = True,
) -> Tool:
    import pydantic  # deferred: importing textreact must stay fast

    where = f"@tool {getattr(fn, '__name__', fn)!r}"
    if not inspect.isfunction(fn) and not inspect.ismethod(fn):
        raise ConfigError(f"{where}: expected a function defined with def, got {type(fn).__name__}")
    if fn.__name__ == "<lambda>":
        raise ConfigError(
            "@tool cannot use a lambda: it has no name, docstring or type hints. Define it with "
            'def, e.g.\n    def add(a: int, b: int) -> int:\n        """Use to add two numbers."""'
        )
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as error:
        raise ConfigError(f"{where}: its type hints cannot be resolved ({error})") from None
    summary, argument_docs = _docstring(inspect.getdoc(fn) or "")
    description = description or summary
    if not description:
        raise ConfigError(
            f"{where} needs a docstring whose first paragraph says when to use the tool, "
            "or description='...'"
        )
    fields: dict[str, Any] = {}
    missing: list[str] = []
    for parameter in inspect.signature(fn).parameters.values():
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            raise ConfigError(
                f"{where}: parameter {parameter} is not supported; use plain named parameters"
            )
        if parameter.name not in hints:
            missing.append(parameter.name)
            continue
        default = ... if parameter.default is parameter.empty else parameter.default
        info = pydantic.Field(default, description=argument_docs.get(parameter.name))
        fields[parameter.name] = (hints[parameter.name], info)
    if missing:
        shown = ", ".join(f"{p}: str" for p in missing)
        raise ConfigError(
            f"{where}: parameters {', '.join(missing)} have no type hints; write them like "
            f"def {fn.__name__}({shown}) (with the real types)"
        )
    model = pydantic.create_model(
        f"{fn.__name__}_arguments", __config__=pydantic.ConfigDict(extra="forbid"), **fields
    )
    return Tool(
        name or fn.__name__,
        description,
        _without_titles(model.model_json_schema()),
        fn,
        timeout,
        example or {},
        convert=_converter(model),
        cache=cache,
    )


def _converter(model: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    import pydantic

    def convert(arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            validated = model.model_validate(arguments)
        except pydantic.ValidationError as error:
            details = tuple(
                (".".join(map(str, e["loc"])), e["msg"], repr(str(e.get("input"))[:60]))
                for e in error.errors(include_url=False)
            )
            raise ToolArgumentError(converted(details), details) from None
        return {key: getattr(validated, key) for key in arguments}

    return convert


def _docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(first paragraph as one line, {argument: description} from the Args: section)."""
    summary = " ".join(doc.split("\n\n", 1)[0].split())
    arguments: dict[str, str] = {}
    section = current = entry_indent = None
    for line in doc.splitlines():
        heading = _SECTION.match(line.strip())
        if heading and not line.startswith((" ", "\t")):
            section, current, entry_indent = heading.group(1), None, None
            continue
        if section not in ("Args", "Arguments", "Parameters") or not line.strip():
            continue
        entry = _ARGUMENT.match(line.strip())
        indent = len(line) - len(line.lstrip())
        if entry and (entry_indent is None or indent <= entry_indent):
            entry_indent, current = indent, entry.group(1).lstrip("*")
            arguments[current] = entry.group(2).strip()
        elif current:
            arguments[current] = f"{arguments[current]} {line.strip()}".strip()
    return summary, arguments


_SCHEMA_MAPS: Final = ("properties", "$defs")
_SCHEMA_LISTS: Final = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE: Final = ("items", "additionalProperties", "not")


def _without_titles(schema: dict[str, Any]) -> dict[str, Any]:
    """pydantic's schema without its `title` keywords, which only add noise to a prompt (values
    such as defaults and examples, and a property *named* title, are left alone)."""
    cleaned = {key: value for key, value in schema.items() if key != "title"}
    for key in _SCHEMA_MAPS:
        if isinstance(cleaned.get(key), dict):
            cleaned[key] = {name: _without_titles(sub) for name, sub in cleaned[key].items()}
    for key in _SCHEMA_LISTS:
        if isinstance(cleaned.get(key), list):
            cleaned[key] = [_without_titles(sub) for sub in cleaned[key]]
    for key in _SCHEMA_ONE:
        if isinstance(cleaned.get(key), dict):
            cleaned[key] = _without_titles(cleaned[key])
    return cleaned
