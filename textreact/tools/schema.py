"""Argument schemas, as any source writes them -> one JSON Schema dialect, with example values.

OpenAI function definitions, MCP tool listings, pydantic and the Berkeley Function Calling
Leaderboard (`"type": "dict"`, `"float"`, `"tuple"`, `"any"`) all describe arguments with
JSON Schema or something close to it; `normalize` maps every one of them to standard JSON Schema
so that rendering and validation have one dialect to handle. `example_value` makes a value that
fits a schema, so that every tool can show the model a correct call.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import re
import urllib.parse
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any, Final, NamedTuple

import regex

from textreact import jsonish, templates
from textreact.errors import ConfigError
from textreact.tools.ecma import to_regex
from textreact.tools.pattern import shortest
from textreact.tools.regexcost import PatternCache

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
            f'{{"type": "object", "properties": {{...}}}}, not {type(parameters).__name__}',
            field="parameters",
        )
    if _nests_deeper(parameters, MAX_NESTING):
        raise ConfigError(
            f"{where} nest more than {MAX_NESTING} objects and arrays deep (or hold "
            "themselves); name a repeated part once under $defs and point to it with $ref",
            field="parameters",
        )
    try:
        schema = _normalize(copy.deepcopy(parameters))
    except ConfigError as error:  # a `type` that names no type, somewhere inside
        raise ConfigError(f"{where}: {error}", field="parameters") from None
    if schema.get("type") is None and ("properties" in schema or not schema):
        schema["type"] = "object"
    if schema.get("type") != "object":
        raise ConfigError(
            f'{where} must describe an object ("type": "object"), got {parameters}',
            field="parameters",
        )
    schema.setdefault("properties", {})
    unknown = [name for name in schema.get("required", ()) if name not in schema["properties"]]
    if unknown:
        raise ConfigError(
            f"{where}: required names {unknown} are not among its properties", field="parameters"
        )
    return schema


#: The deepest nesting of objects and arrays a tool's parameters may have: far past any real
#: schema (a recursive model is written with $ref), far short of Python's recursion limit.
MAX_NESTING: Final = 128


def _nests_deeper(value: object, limit: int) -> bool:
    """Whether dicts and lists nest in `value` more than `limit` deep (a dict that holds itself
    does), found without recursion."""
    level = [value]
    for _ in range(limit + 1):
        level = [
            member
            for item in level
            if isinstance(item, (dict, list, tuple))
            for member in (item.values() if isinstance(item, dict) else item)
            if isinstance(member, (dict, list, tuple))
        ]
        if not level:
            return False
    return True


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
    if declared is None:
        return None
    if not isinstance(declared, (str, list)) or (
        isinstance(declared, list) and not all(isinstance(t, str) for t in declared)
    ):
        raise ConfigError(
            f'a schema\'s "type" must be a type name such as "string", or a list of them, got '
            f"{declared!r}",
            field="parameters",
        )
    if isinstance(declared, list):
        types = [_TYPE_ALIASES.get(t, t) for t in declared]
        return None if None in types else types
    return _TYPE_ALIASES.get(declared, declared) if isinstance(declared, str) else declared


def pointer(ref: object, root: dict[str, Any]) -> Any:
    """What a local `$ref` names in `root`: `#` is the root itself, `#/$defs/Name` a path of
    names (and of indices into arrays), written as a URI fragment holding a JSON Pointer
    (percent-encoded, then `~1` for `/` and `~0` for `~`, RFC 6901). None where it names
    nothing here: a ref into another document, an anchor, a name that is missing. The one
    reading of a ref: validation follows what this finds, and `textreact serve` refuses a
    tool whose refs it cannot follow, so the two cannot differ."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    path = urllib.parse.unquote(ref[1:])
    if path and not path.startswith("/"):
        return None  # `#name`: an anchor, which nothing textreact reads declares
    target: Any = root
    for part in path.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif isinstance(target, list) and _INDEX.fullmatch(part) and int(part) < len(target):
            target = target[int(part)]
        else:
            return None
    return target


def followed(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any] | None:
    """`schema` with its local `$ref`s followed (`pointer`), `true` read as `{}`; None where
    one names no schema. Refs that lead round in a circle are followed _MOST_REFS times, and
    the schema reached then, its `$ref` still in it, is returned as it is."""
    for _ in range(_MOST_REFS):
        if "$ref" not in schema:
            break
        target = pointer(schema["$ref"], root)
        if target is True:
            return {}
        if not isinstance(target, dict):
            return None
        schema = target
    return schema


def resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """Follow a local `$ref` (`#/$defs/Name`, as pydantic writes them; see `pointer`): `{}`
    (any value) where it names no schema."""
    target = followed(schema, root) if isinstance(schema, dict) else None
    return target if target is not None else {}


#: An array index in a JSON Pointer: digits, no leading zero.
_INDEX: Final = re.compile(r"0|[1-9][0-9]*")
#: How many `$ref`s in a row `followed` follows (a schema from outside may make a circle).
_MOST_REFS: Final = 32


def types_of(schema: dict[str, Any]) -> list[str]:
    """The type names a schema declares; a `type` that is no name or list of names (a schema
    from outside may hold anything there) declares none."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    return [t for t in declared if isinstance(t, str)] if isinstance(declared, list) else []


def kinds_of(schema: dict[str, Any]) -> list[str]:
    """The JSON types a schema allows: its `type`, else object where it lists `properties`."""
    return types_of(schema) or (["object"] if "properties" in schema else [])


def properties_of(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema's `properties` (an empty dict where it has none, or something else)."""
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}


def pinned(schema: dict[str, Any]) -> list[Any] | None:
    """The one value a schema allows (`const`, or an `enum` of one), as a list; else None."""
    if "const" in schema:
        return [schema["const"]]
    enum = schema.get("enum")
    return enum if isinstance(enum, list) and len(enum) == 1 else None


def number_keyword(schema: dict[str, Any], key: str) -> int | float | None:
    """A numeric keyword (`minimum`, `multipleOf`, `maxItems`) as written, where it is a finite
    number (an integer of any size exactly; a boolean is no number here); else None."""
    value = schema.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if not isinstance(value, float) or math.isfinite(value) else None


class Bounds(NamedTuple):
    """A schema's bounds, each a finite number or None: `minimum`, `exclusiveMinimum`,
    `maximum`, `exclusiveMaximum`."""

    low: int | float | None
    above: int | float | None
    high: int | float | None
    below: int | float | None


def bounds(schema: dict[str, Any]) -> Bounds:
    """The bounds a schema sets, read once for validation and for examples alike. Draft 4
    writes `"exclusiveMinimum": true` as a flag that makes `minimum` exclusive: read so, its
    `minimum` is the exclusive bound and there is no inclusive one."""
    low, high = number_keyword(schema, "minimum"), number_keyword(schema, "maximum")
    above = number_keyword(schema, "exclusiveMinimum")
    below = number_keyword(schema, "exclusiveMaximum")
    if schema.get("exclusiveMinimum") is True:  # draft 4: a flag on `minimum`
        low, above = None, low
    if schema.get("exclusiveMaximum") is True:
        high, below = None, high
    return Bounds(low, above, high, below)


@PatternCache
def compiled_pattern(pattern: str) -> regex.Pattern[str] | None:
    """A `pattern` read as ECMA-262 reads it (`textreact.tools.ecma`: `$` is the end of the
    text, `\\d` ASCII) and compiled by `regex` (which reads `\\p{L}`), or None where it does
    not compile: a schema from outside must not crash validation."""
    try:
        return regex.compile(to_regex(pattern))
    except Exception:  # PatternError, regex.error, whatever else a foreign pattern provokes
        return None


def example_value(
    schema: dict[str, Any],
    root: dict[str, Any],
    depth: int = 0,
    *,
    name: str = "",
    fits: Fit | None = None,
) -> Any:
    """A value to show for `schema` in the tool's example: the first of `example_candidates`
    that `fits` accepts (all of them, without `fits`), as `fits` returns it (coerced: `"42"`
    from a description becomes 42 for an integer). NO_EXAMPLE when no candidate fits."""
    candidates = example_candidates(schema, root, depth, name=name, fits=fits)
    for candidate in itertools.islice(candidates, _CANDIDATES):
        if fits is None:
            return candidate
        ok, value = fits(candidate, schema)
        if ok:
            return value
    return NO_EXAMPLE


#: What `example_value` returns when nothing it can make fits the schema.
NO_EXAMPLE: Final = type("NoExample", (), {"__repr__": lambda self: "NO_EXAMPLE"})()


#: (value, schema) -> (whether the value fits, the value as validation leaves it).
Fit = Callable[[Any, dict[str, Any]], tuple[bool, Any]]


def example_candidates(
    schema: dict[str, Any],
    root: dict[str, Any],
    depth: int = 0,
    *,
    name: str = "",
    fits: Fit | None = None,
) -> Iterator[Any]:
    """Values for `schema`, best first: what the schema itself gives (`const`, `examples`,
    `example`, `default`, `enum`), values its description quotes or offers (`e.g. 'San
    Francisco, CA'`, `for instance Boston`, `Default is 3`), a value of its `format` from the
    ranges reserved for documentation (`name@example.com`, 2024-01-31), the shortest string
    of its `pattern` (`AAA-00` for `^[A-Z]{3}-\\d{2}$`), then a neutral value.

    The neutral value of a string is the parameter's name in angle brackets, `"<city>"`: it
    tells the model what belongs there, and a model that copies it sends something no tool
    and no reader takes for data (a placeholder like `"text"` was copied as the real argument
    by a 0.5B model in 11 of 23 misses). Numbers have no such form, so they get the schema's
    lower bound or 1 (0.5 for a number: inside [0, 1], where rates and probabilities live);
    booleans true; arrays one such item; objects their required properties."""
    schema = resolve(schema, root)
    if "const" in schema:
        yield schema["const"]
    for value in schema.get("examples", ()) if isinstance(schema.get("examples"), list) else ():
        yield value
    for key in ("example", "default"):
        if schema.get(key) is not None:
            yield schema[key]
    for value in schema.get("enum", ()) if isinstance(schema.get("enum"), list) else ():
        yield value
    kinds = [t for t in types_of(schema) if t != "null"]
    for value in described_values(str(schema.get("description", ""))):
        yield [value] if kinds == ["array"] and not isinstance(value, list) else value
    for branch in _branches(schema, root) if depth < _DEEPEST else ():
        if types_of(branch) != ["null"]:
            yield from example_candidates(branch, root, depth + 1, name=name, fits=fits)
    kind = kinds[0] if kinds else ("object" if "properties" in schema else "string")
    if kind == "string" and schema.get("format") in _FORMAT_EXAMPLES:
        yield _FORMAT_EXAMPLES[schema["format"]]
    matched = shortest(schema["pattern"]) if kind == "string" and "pattern" in schema else None
    if matched is not None:
        yield matched
    yield from _neutral(kind, schema, root, depth, name, fits)


def _neutral(
    kind: str, schema: dict[str, Any], root: dict[str, Any], depth: int, name: str, fits: Fit | None
) -> Iterator[Any]:
    if kind == "object":
        properties = schema.get("properties", {}) if depth < 4 else {}
        values = {
            key: example_value(properties[key], root, depth + 1, name=key, fits=fits)
            for key in schema.get("required", ())
            if key in properties
        }
        yield {key: value for key, value in values.items() if value is not NO_EXAMPLE}
    elif kind == "array":
        items = schema.get("items") if depth < 4 else None
        item = (
            example_value(items, root, depth + 1, name=name, fits=fits)
            if isinstance(items, dict)
            else f"<{name or 'item'}>"
        )
        count = min(max(1, _whole(schema, "minItems", 1)), _whole(schema, "maxItems", _MOST))
        yield [] if item is NO_EXAMPLE else [item] * count
    elif kind in ("integer", "number"):
        yield from _numbers(schema, whole=kind == "integer")
    elif kind == "boolean":
        yield True
    elif kind == "null":
        yield None
    else:
        label = " ".join(name.replace("_", " ").split()) or "value"
        yield f"<{label}>"
        yield "x" * min(max(1, _whole(schema, "minLength", 1)), _MOST)


#: How deep `example_candidates` and `type_label` follow unions into unions (a schema from
#: outside may make one hold itself).
_DEEPEST: Final = 8
#: Branches of one union `type_label` reads at most (each may be a union, or an `enum`, that
#: costs its own reading); the rest are counted.
_MOST_BRANCHES: Final = 256
#: Candidates `example_value` tries at most (each is validated; a schema whose unions nest
#: each other could otherwise offer branches ** _DEEPEST of them).
_CANDIDATES: Final = 64
#: The most items or characters an example is given, whatever `minItems` or `minLength` says
#: (validation refuses more than this anyway).
_MOST: Final = 1_000


def _whole(schema: dict[str, Any], key: str, default: int) -> int:
    """A count keyword (`minItems`, `maxLength`), between 0 and _MOST; else `default`."""
    value = number_keyword(schema, key)
    return min(max(value, 0), _MOST) if isinstance(value, int) else default


def _numbers(schema: dict[str, Any], whole: bool) -> Iterator[int | float]:
    """Numbers for a schema, plain first: 1 (0.5 for a number), then values at and inside its
    bounds (`minimum`, `exclusiveMinimum`, ...), each a multiple of its `multipleOf`; the
    caller keeps the first that passes validation."""

    def exact(value: int | float | None) -> Fraction | None:
        return None if value is None else Fraction(str(value))

    low, above, high, below = map(exact, bounds(schema))
    step = exact(number_keyword(schema, "multipleOf"))
    step = step if step is not None and step > 0 else (Fraction(1) if whole else None)
    plain = Fraction(1) if whole else Fraction(1, 2)
    clamped = plain if low is None else max(plain, low)
    clamped = clamped if high is None else min(clamped, high)
    near = [clamped, low, high]
    if above is not None:
        near += [above + 1, above + Fraction(1, 2)]
        near += [(above + below) / 2] if below is not None else []
    if below is not None:
        near += [below - 1, below - Fraction(1, 2)]
    for value in near:
        if value is None:
            continue
        if step is not None:
            value = math.ceil(value / step) * step
        yield int(value) if whole else (int(value) if value.denominator == 1 else float(value))


#: One value per `format`, each from a range reserved for documentation (RFC 2606, RFC 5737).
_FORMAT_EXAMPLES: Final = {
    "date": "2024-01-31",
    "date-time": "2024-01-31T12:00:00Z",
    "time": "12:00:00",
    "email": "name@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
}
#: Words after which a description gives a value: `e.g. 'C4'`, `Default is 5`, `such as Boston`.
_CUE: Final = re.compile(
    r"(?i)(?:\b(?:e\.?\s?g|eg|i\.e)\b\.?|\bfor (?:example|instance)\b|\bsuch as\b|\blike\b"
    r"|\bexamples?\b|\bdefaults?(?:\s+(?:value|level))?(?:\s+(?:is|to|of|it's))?\b"
    r"|\b(?:could|can|may) be\b|\beither\b|\boptions are\b)[ \t]*[:,]?[ \t]*"
)
#: The cues after which an unquoted phrase is a value (`e.g. horse`); after `default` it is
#: more often prose (`Default to global if not specified`).
_PHRASE_CUE: Final = re.compile(r"(?i)e\.?\s?g|eg|for (?:example|instance)|such as|like")
_QUOTED: Final = re.compile(r"""'([^'\n]{1,80})'|"([^"\n]{1,80})"|`([^`\n]{1,80})`""")
_LIST: Final = re.compile(r"\[[^\[\]\n]{1,200}\]")
_SCALAR: Final = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.]\w)|true\b|false\b", re.I)
_PHRASE: Final = re.compile(
    r"[^\s,;:()'\"`.][^,;:()\n'\"`]{0,39}?(?=[,;:()\n]|\.(?:\s|$)|$| etc\b| or\b)"
)
#: A quote that opens a value: at the start, after a space or an opening bracket.
_OPENING: Final = re.compile(r"(?:^|(?<=[\s(\[]))(?=['\"`])")
_NOT_A_VALUE: Final = frozenset({"none", "null", "", "n/a"})


def described_values(description: str) -> list[Any]:
    """The values a description gives, in the order it gives them: each value after a cue
    (`e.g.`, `for instance`, `such as`, `default is`, `can be`), then every other quoted one.
    Strings, numbers, booleans and lists as written; callers check that they fit."""
    found: list[Any] = []
    for cue in _CUE.finditer(description):
        value = _value_at(description, cue.end(), phrase=bool(_PHRASE_CUE.match(cue.group())))
        if value is not _NOTHING:
            found.append(value)
    for opening in _OPENING.finditer(description):
        quoted = _QUOTED.match(description, opening.end())
        if quoted:
            found.append(next(g for g in quoted.groups() if g is not None))
    values = []
    for value in found:
        if isinstance(value, str) and value.strip().lower() in _NOT_A_VALUE:
            continue
        if value not in values:
            values.append(value)
    return values


_NOTHING: Final = object()


def _value_at(text: str, at: int, *, phrase: bool) -> Any:
    if quoted := _QUOTED.match(text, at):
        return next(g for g in quoted.groups() if g is not None)
    if listed := _LIST.match(text, at):
        try:
            value, _ = jsonish.loads(listed.group())
        except jsonish.JsonishError:
            return _NOTHING
        return value if isinstance(value, list) else _NOTHING
    if scalar := _SCALAR.match(text, at):
        word = scalar.group().lower()
        return {"true": True, "false": False}.get(word, scalar.group())
    if phrase and (words := _PHRASE.match(text, at)):
        return words.group().strip()
    return _NOTHING


#: The JSON types whose names `type_label` gives in the prompt's language (`## argument_type_*`);
#: any other `type` a schema writes is shown as it is written.
_TYPE_NAMES: Final = ("string", "integer", "number", "boolean", "array", "object", "null")


#: Characters a type label spends on values and branches (see `type_label`): a list of
#: countries' codes is shown whole, one of 200,000 values is not.
LABEL_ROOM: Final = 2_000


def type_label(
    schema: dict[str, Any],
    root: dict[str, Any],
    depth: int = 0,
    *,
    lang: str = "en",
    room: int = LABEL_ROOM,
) -> str:
    """A short name of what a schema accepts, for the prompt and for argument errors, in
    `lang`: `integer`, `array of string`, `number or null` (a null branch is named, never shown
    as `any`); const and enum values are shown as JSON.

    It costs about `room` characters at most, whatever the schema (an `enum` of 200,000 values,
    a union of thousands of branches, each inside the other): the values and branches that fit
    are shown, in order, and the rest are counted (`one of "a", "b" … and 199,998 more`).
    Validation still reads the whole schema."""
    schema = resolve(schema, root)
    nullable = schema.get("nullable") is True
    branches = _branches(schema, root)
    if branches:
        if depth >= _DEEPEST:  # a union that holds itself, or unions nested past reading
            return _type_word("any", lang)
        others = [b for b in branches if b is not schema]
        first = others[:_MOST_BRANCHES]
        labels = (type_label(b, root, depth + 1, lang=lang, room=room) for b in first)
        fitting, read = _fitting(labels, room)
        shown = _alternatives(fitting, lang, nullable=nullable) or _type_word("any", lang)
        return _more(shown, len(others) - read, lang)
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    if schema.get("enum"):
        enum = schema["enum"]
        values, read = _fitting((json.dumps(v, ensure_ascii=False) for v in enum), room)
        return _type_word("one_of", lang, values=_more(", ".join(values), len(enum) - read, lang))
    kinds = kinds_of(schema)
    if not kinds:
        return _type_word("any", lang)
    items = schema.get("items")
    inner = room - len(_type_word("array_of", lang, items=""))
    labels = [
        _type_word(
            "array_of", lang, items=type_label(items, root, depth + 1, lang=lang, room=inner)
        )
        if kind == "array" and isinstance(items, dict) and depth < _DEEPEST
        else _kind_word(kind, lang)
        for kind in kinds
    ]
    return _alternatives(labels, lang, nullable=nullable)


def _fitting(texts: Iterator[str], room: int) -> tuple[list[str], int]:
    """The first of `texts` that fit in `room` characters together, each once, and how many
    were read: the first that does not fit ends the reading, so that the rest are never made
    (a branch's label, a value's JSON)."""
    fitting: list[str] = []
    read = 0
    for text in texts:
        if text not in fitting:
            room -= len(text) + 2
            if room < 0:
                break
            fitting.append(text)
        read += 1
    return fitting, read


def _more(shown: str, left: int, lang: str) -> str:
    """`shown`, and how many values or branches were left out of it (`… and 12 more`)."""
    return _type_word("more", lang, shown=shown, count=f"{left:,}") if left > 0 else shown


def _kind_word(kind: Any, lang: str) -> Any:
    """A JSON type's name in `lang`; a `type` of no dialect as the schema writes it."""
    return _type_word(kind, lang) if kind in _TYPE_NAMES else kind


def _type_word(name: str, lang: str, **slots: str) -> str:
    """`## argument_type_<name>` of prompts/[lang/]notes.md: a type's name, `any`, `array of`,
    `one of`, `or`."""
    return templates.note(f"argument_type_{name}", lang, **slots)


def either(labels: list[str], lang: str = "en") -> str:
    """`a or b or c` in `lang` (each label once, as given); "" for none."""
    unique = list(dict.fromkeys(labels))
    if not unique:
        return ""
    joined = unique[0]
    for label in unique[1:]:
        joined = _type_word("or", lang, first=joined, second=label)
    return joined


def _branches(schema: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    """The branches of the schema's `anyOf` (else `oneOf`), resolved, each schema once."""
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            resolved = [resolve(b, root) for b in schema[key] if isinstance(b, dict)]
            return list({id(b): b for b in resolved}.values())
    return []


def _alternatives(labels: list[str], lang: str, *, nullable: bool = False) -> str:
    """`a or b`, once each, null last (where a reader looks for "may be empty"); null added
    for a `nullable` schema."""
    null = _type_word("null", lang)
    unique = list(dict.fromkeys([*labels, null] if nullable else labels))
    if null in unique and len(unique) > 1:
        unique = [label for label in unique if label != null] + [null]
    return either(unique, lang)
