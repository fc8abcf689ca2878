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

The work is split by what it owns, and imports run one way, down this list: this module walks
the value (`conform`: arrays, objects, the memo and the budget) and is the entry point;
`unions` decides a union's branch, trying it with the `conform` it is handed; `keywords` checks
`enum`, `const` and a string's or number's keywords; `coercion` turns a value into a type
losslessly; `checks` holds what a pass found and shares.

Every problem line is told in the language `check_arguments` is given (`lang`, the run's),
in the words of the `argument_*` and `json_*` sections of prompts/[lang/]notes.md; the names
and values quoted from the Action Input are shown as they were written.
"""

from __future__ import annotations

import math
from typing import Any, Final

from textreact import jsonish
from textreact.tools.checks import (
    ANY,
    PATTERN_SECONDS,
    SURROGATE,
    Check,
    Shared,
    member_path,
    name_key,
    property_for,
    say,
    show,
)
from textreact.tools.coercion import coerced, is_kind
from textreact.tools.keywords import MAX_INTEGER, MAX_STRING, constrain, count_keyword
from textreact.tools.schema import properties_of, resolve, types_of
from textreact.tools.unions import MAX_UNION_WORK, branches_anywhere, one_branch, union_work

__all__ = [
    "MAX_DEPTH",
    "MAX_INTEGER",
    "MAX_ITEMS",
    "MAX_STEPS",
    "MAX_STRING",
    "MAX_UNION_WORK",
    "MAX_VALUES",
    "PATTERN_SECONDS",
    "branches_anywhere",
    "check_arguments",
    "conform",
    "conform_object",
    "single_parameter",
    "union_work",
]

MAX_ITEMS: Final = 1_000
MAX_DEPTH: Final = 32
#: Values in all (every member of every array and object) of arguments given as a dict.
MAX_VALUES: Final = 10_000
#: (value, schema) pairs one Action Input may be checked on: a few per value for the largest
#: inputs, far above what any real call needs, far below what a hostile union would take.
MAX_STEPS: Final = 100_000
#: (value, schema) pairs open at once: MAX_DEPTH levels of a value, a few schemas each (a union,
#: its branch); past it a schema nests unions in unions so deep that Python's stack would not.
_DEEPEST: Final = 4 * MAX_DEPTH
#: Strings at least this long are conformed once and remembered (they may hold JSON, or meet a
#: slow pattern); shorter ones, and numbers, are checked again where a union meets them again.
_REMEMBERED: Final = 64


def _not_json(value: object, lang: str) -> str | None:
    """The first thing in a dict given by a program (not decoded from text) that is not a JSON
    value, as a problem line; checked before anything else reads the value, so no foreign
    object's __eq__, __str__ or __hash__ runs and no cycle or depth is followed."""
    stack: list[tuple[object, str, int]] = [(value, "", 0)]
    seen = 0
    while stack:
        item, path, depth = stack.pop()
        seen += 1
        if depth > MAX_DEPTH or seen > MAX_VALUES:
            limit = say("limits", lang, depth=str(MAX_DEPTH), count=str(MAX_VALUES))
            return say("expected", lang, path=path or say("root", lang), expected=limit)
        if isinstance(item, dict):
            if len(item) > MAX_ITEMS:
                most = say("members_at_most", lang, count=str(MAX_ITEMS))
                return say("expected", lang, path=path or say("root", lang), expected=most)
            for key, member in item.items():
                if not isinstance(key, str):
                    kind = say("key_type", lang, kind=type(key).__name__)
                    keys = say("text_keys", lang)
                    where = path or say("root", lang)
                    return say("problem", lang, path=where, expected=keys, received=kind)
                stack.append((member, member_path(path, key), depth + 1))
        elif isinstance(item, (list, tuple)):
            if len(item) > MAX_ITEMS:
                most = say("items_at_most", lang, count=str(MAX_ITEMS))
                return say("expected", lang, path=path, expected=most)
            stack.extend((member, f"{path}[{i}]", depth + 1) for i, member in enumerate(item))
        elif isinstance(item, float) and not math.isfinite(item):
            finite = say("finite", lang)
            return say("problem", lang, path=path, expected=finite, received=str(item))
        elif not isinstance(item, (str, int, float)) and item is not None:
            kind = say("object_type", lang, kind=type(item).__name__)
            json_value = say("json_value", lang)
            return say("problem", lang, path=path, expected=json_value, received=kind)
    return None


def conform(value: object, schema: dict[str, Any], path: str, check: Check, depth: int = 0) -> Any:
    """`value` made to fit `schema` where that is lossless; problems recorded in `check`.

    Each (value, schema, path, depth) is conformed once per Action Input: union branches that
    share a subschema (every branch of a recursive model holds the same `sub`) reuse its result
    instead of checking the subtree again. `depth` counts levels of the value, not of the
    schema, so a union or an `allOf` costs no nesting; a schema that reaches itself without
    going a level into the value is caught by its being entered again at the same place."""
    schema = resolve(schema, check.root) if isinstance(schema, dict) else ANY
    shared = check.shared
    key = (id(value), id(schema), path, depth)
    here = (id(schema), path, depth)
    if shared.steps >= MAX_STEPS or len(shared.open) > _DEEPEST:
        shared.exhausted = True
        check.problems.append(check.say("too_complex"))
        return value
    if here in shared.open:  # the schema again, at the same place in the value: a loop
        check.problems.append(check.say("self_reference", path=path or check.say("root")))
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


def _conform(value: object, schema: dict[str, Any], path: str, check: Check, depth: int) -> Any:
    if depth > MAX_DEPTH:
        check.problem(path, check.say("nesting", depth=str(MAX_DEPTH)), "...")
        return value
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return one_branch(value, schema[key], path, check, depth, conform)
    for sub in schema.get("allOf", ()):
        if isinstance(sub, dict):
            value = conform(value, sub, path, check, depth)
    kinds = types_of(schema)
    if kinds and not is_kind(value, kinds):
        value = coerced(value, kinds, check)
        if not is_kind(value, kinds):
            check.problem(path, check.label(schema), value)
            return value
    value, allowed = constrain(value, schema, path, check)
    if not allowed:
        return value
    if isinstance(value, list):
        return _conform_array(value, schema, path, check, depth)
    if isinstance(value, dict):
        return conform_object(value, schema, path, check, depth)
    return value


def _conform_array(value: list, schema: dict[str, Any], path: str, check: Check, depth: int):
    if len(value) > MAX_ITEMS:
        check.problem(path, check.say("items_at_most", count=str(MAX_ITEMS)), value)
        return value
    fewest, most = count_keyword(schema, "minItems"), count_keyword(schema, "maxItems")
    if fewest is not None and len(value) < fewest:
        check.problem(path, check.say("array_at_least", count=str(fewest)), value)
    if most is not None and len(value) > most:
        check.problem(path, check.say("array_at_most", count=str(most)), value)
    items = schema.get("items")
    if not isinstance(items, dict):
        items = ANY
    return [conform(v, items, f"{path}[{i}]", check, depth + 1) for i, v in enumerate(value)]


def conform_object(
    value: dict, schema: dict[str, Any], path: str, check: Check, depth: int = 0
) -> dict[str, Any]:
    """The object's properties conformed; names repaired, nulls of optional ones dropped."""
    properties = properties_of(schema)
    required = [name for name in schema.get("required", ()) if isinstance(name, str)]
    extra = schema.get("additionalProperties", depth > 0 or not properties)
    result: dict[str, Any] = {}
    for name, item in value.items():
        known = property_for(name, properties, check)
        where = member_path(path, name)
        if known is None:
            if extra is False:
                names = ", ".join(properties)
                check.problems.append(check.say("not_parameter", path=where, names=names))
            elif isinstance(name, str) and SURROGATE.search(name):
                check.problem(where, check.say("name_surrogates"), name)
            else:
                sub = extra if isinstance(extra, dict) else ANY
                result[name] = conform(item, sub, where, check, depth + 1)
            continue
        if known != name:
            check.repair("parameter_name")
            if known in value or known in result:
                twice = check.say("given_twice", path=where, known=known, written=str(name))
                check.problems.append(twice)
                continue
        if item is None and known not in required and "null" not in _all_types(properties[known]):
            check.repair("drop_null")
            continue
        result[known] = conform(item, properties[known], where, check, depth + 1)
    for name in required:
        if name not in result and name not in value:
            label = check.label(properties.get(name, ANY))
            where = member_path(path, name)
            check.problems.append(check.say("missing", path=where, expected=label))
    return result


def _all_types(schema: dict[str, Any]) -> list[str]:
    if not isinstance(schema, dict):
        return []
    kinds = types_of(schema)
    for key in ("anyOf", "oneOf"):
        kinds += [t for branch in schema.get(key, ()) for t in types_of(branch)]
    return kinds


def single_parameter(schema: dict[str, Any]) -> str | None:
    """The parameter a bare value maps to: the only required one, else the only one."""
    required = schema.get("required", ())
    names = list(required) if required else list(schema.get("properties", {}))
    return names[0] if len(names) == 1 else None


def check_arguments(
    raw: str | dict, schema: dict[str, Any], lang: str = "en", *, root: dict[str, Any] | None = None
) -> tuple[dict[str, Any], tuple[str, ...], list[str]]:
    """(arguments, repairs, problems): the whole chain, problems as lines for the model, in
    `lang`. `root` is the document the schema's `$ref`s point into, when the schema is a
    wrapper made around it (serve checks a scalar answer as the one member of an object)."""
    check = Check(schema if root is None else root, Shared(lang))
    if isinstance(raw, dict):
        value: object = raw
        problem = _not_json(raw, lang)
        if problem is not None:
            return {}, (), [problem]
    elif isinstance(raw, str):
        value = _decode(raw, schema, check)
    else:
        raise TypeError(f"arguments must be a str or a dict, not {type(raw).__name__}")
    if not isinstance(value, dict):
        if not check.problems:
            check.problems.append(check.say("not_object", received=show(value, lang)))
        return {}, tuple(check.repairs), check.problems
    arguments = conform_object(_rename_lone_argument(value, schema, check), schema, "", check)
    if check.shared.exhausted:  # whatever else was found, this is what the model can act on
        return {}, tuple(check.repairs), [check.say("too_complex")]
    return arguments, tuple(check.repairs), check.problems


def _rename_lone_argument(value: dict, schema: dict[str, Any], check: Check) -> dict:
    """One argument under another name, for a tool of one parameter, is that parameter: small
    models copy the name from another tool's example (`{"expression": "capital of Japan"}` for
    lookup_fact). Nothing is lost or guessed, so it is renamed rather than refused."""
    properties = schema.get("properties", {})
    if len(properties) != 1 or len(value) != 1 or schema.get("additionalProperties"):
        return value
    ((name, _),), ((given, item),) = properties.items(), value.items()
    if name_key(str(given)) == name_key(name):
        return value
    check.repair("renamed_parameter")
    return {name: item}


def _decode(raw: str, schema: dict[str, Any], check: Check) -> object:
    single = single_parameter(schema)
    text = raw.strip()
    if not text and not schema.get("properties"):
        return {}
    try:
        value, repairs = jsonish.loads(raw)
    except jsonish.JsonishError as error:
        if single is None or text.startswith("{"):
            check.problems.append(check.say("not_json", reason=error.say(check.shared.lang)))
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
