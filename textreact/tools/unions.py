"""`anyOf` / `oneOf`: which branch a value belongs to, decided by a shallow look at each branch
before any branch is entered (`one_branch`); what to tell the model when none fits; and how
much work a validator that enters every branch would do on arguments (`union_work`), so that
`@tool` arguments pydantic would take branches ** depth checks over are refused before it runs.

Branches are tried with `arguments.conform`, which the caller passes in: a branch is checked by
the same walk as everything else, and this module stays below `arguments` (no import cycle).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from textreact.tools.checks import ANY, Check, member_path, name_key, property_for
from textreact.tools.coercion import coerced, is_kind
from textreact.tools.keywords import same
from textreact.tools.schema import either, kinds_of, pinned, properties_of, resolve

#: Checks a validator that tries every branch of every union may need (`union_work`): about
#: half a second of pydantic's time (2-4 million a second), past which `@tool` arguments are
#: refused rather than handed to it.
MAX_UNION_WORK: Final = 1_000_000
#: The keywords `union_work` follows into more than one subschema for one value.
_BRANCHING: Final = ("anyOf", "oneOf", "allOf")

#: (value, schema, path, check, depth) -> the value conformed: `arguments.conform`.
Conform = Callable[[object, dict[str, Any], str, Check, int], Any]


def one_branch(
    value: object, branches: list, path: str, check: Check, depth: int, conform: Conform
) -> Any:
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
    fitted: tuple[Check, Any] | None = None
    tried: dict[int, Check] = {}
    for branch in resolved:
        if container and not _may_hold(value, branch, path, check, depth, conform):
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
    return _no_branch(value, resolved, path, check, depth, tried, conform)


def _may_hold(
    value: object, branch: dict[str, Any], path: str, check: Check, depth: int, conform: Conform
) -> bool:
    """Whether `branch` may hold the array or object `value`, looked at from the outside."""
    if not _kind_fits(value, branch, check):
        return False
    if not isinstance(value, dict):
        return True
    return (
        _missing(value, branch, check) == 0
        and _closed_fits(value, branch, check)
        and _pins_fit(value, branch, path, check, depth, conform)
    )


def _kind_fits(value: object, branch: dict[str, Any], check: Check) -> bool:
    kinds = kinds_of(branch)
    return (
        not kinds or is_kind(value, kinds) or is_kind(coerced(value, kinds, check.trial()), kinds)
    )


def _missing(value: dict, branch: dict[str, Any], check: Check) -> int:
    """How many of the branch's required names the object lacks."""
    properties = properties_of(branch)
    given = {property_for(name, properties, check) for name in value} | set(value)
    required = branch.get("required", ())
    return sum(1 for name in required if isinstance(name, str) and name not in given)


def _closed_fits(value: dict, branch: dict[str, Any], check: Check) -> bool:
    properties = properties_of(branch)
    return branch.get("additionalProperties") is not False or all(
        property_for(name, properties, check) is not None for name in value
    )


def _pins_fit(
    value: dict, branch: dict[str, Any], path: str, check: Check, depth: int, conform: Conform
) -> bool:
    properties = properties_of(branch)
    for name, member in value.items():
        known = property_for(name, properties, check)
        if known is None or isinstance(member, (dict, list, tuple)):
            continue
        if not isinstance(properties[known], dict):
            continue
        if pinned(resolve(properties[known], check.root)) is not None:
            trial = check.trial()
            conform(member, properties[known], member_path(path, name), trial, depth + 1)
            if trial.problems:
                return False
    return True


def _no_branch(
    value: object,
    branches: list[dict],
    path: str,
    check: Check,
    depth: int,
    tried: dict,
    conform: Conform,
) -> Any:
    """No branch may hold `value`: the problems of the one branch it is nearest to (of its type;
    with its pinned member's value; lacking the fewest required names), else what the
    branches expect (`"target.kind": expected one of "id", "name"` where they differ by a pin).
    `tried` holds the passes already made, by branch, so that none is made twice."""
    near = [b for b in branches if _kind_fits(value, b, check)]
    if isinstance(value, dict) and len(near) > 1:
        tag = _tag(near, check.root)
        if tag is not None:
            given = next((n for n in value if n == tag or name_key(str(n)) == name_key(tag)), None)
            pins = [pinned(resolve(properties_of(b)[tag], check.root)) for b in near]
            values = dict.fromkeys(json.dumps(pin[0], ensure_ascii=False) for pin in pins if pin)
            allowed = check.say("type_one_of", values=", ".join(values))
            if given is None:
                where = member_path(path, tag)
                check.problems.append(check.say("missing", path=where, expected=allowed))
                return value
            near = [b for b in near if _pins_fit(value, b, path, check, depth, conform)]
            if not near:
                check.problem(member_path(path, given), allowed, value[given])
                return value
        if len(near) > 1:
            fewest = min(_missing(value, b, check) for b in near)
            near = [b for b in near if _missing(value, b, check) == fewest]
    if len(near) == 1:
        if id(near[0]) in tried:
            check.take((), tried[id(near[0])].problems)
            return value
        return conform(value, near[0], path, check, depth)
    labels = [_branch_label(b, check) for b in near or branches]
    check.problem(path, either(labels, check.shared.lang), value)
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


def _branch_label(branch: dict[str, Any], check: Check) -> str:
    label = check.label(branch)
    required = [json.dumps(n) for n in branch.get("required", ()) if isinstance(n, str)]
    if required and label == check.say("type_object"):
        return check.say("object_with", names=", ".join(required))
    return label


# --- the work of a validator that tries every branch ------------------------------------------


def branches_anywhere(schema: dict[str, Any]) -> bool:
    """Whether any part of the schema document (its `$defs` included: every `$ref` lands inside
    it) has `anyOf`, `oneOf` or `allOf`, the keywords on which `union_work` enters more than one
    subschema for a value. Where none has, `union_work` counts each value of the arguments
    once, and arguments that passed `check_arguments` hold at most MAX_STEPS of them, far below
    MAX_UNION_WORK: the walk can be skipped. Any such key counts, wherever it stands (a property
    named `anyOf`, an `enum` value), which at worst walks where nothing branches."""
    stack: list[object] = [schema]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            if any(key in item for key in _BRANCHING):
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def union_work(value: object, schema: dict[str, Any], limit: int = MAX_UNION_WORK) -> int:
    """How many values a validator that enters every branch of every union would check to
    validate `value` (arguments that passed `check_arguments`) against `schema`, up to
    `limit + 1`. pydantic's unions work that way (they try every member on anything but an
    exact instance), so a union of models that nest each other costs it branches ** depth:
    the figure lets a caller refuse such arguments before pydantic runs, rather than hang."""
    root = schema
    seen: dict[tuple[int, int], int] = {}

    def work(value: object, schema: object, hops: int) -> int:
        schema = resolve(schema, root) if isinstance(schema, dict) else ANY
        key = (id(value), id(schema))
        if key in seen or hops > 8:
            return seen.get(key, 1)  # a schema that reaches itself costs one check
        seen[key] = 1
        total = 0
        parts = [s for k in _BRANCHING for s in _subschemas(schema, k)]
        tag = schema.get("discriminator")
        if isinstance(tag, dict) and isinstance(tag.get("propertyName"), str):
            parts = _tagged(value, parts, tag["propertyName"], root)  # one branch, looked up
        for part in parts:  # a branch of another type is refused at once
            kinds = kinds_of(part)
            total += work(value, part, hops + 1) if not kinds or is_kind(value, kinds) else 1
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
        if pin is None or any(same(value[name], v) for v in pin):
            chosen.append(branch)
    return chosen


def _subschemas(schema: dict[str, Any], key: str) -> list[dict[str, Any]]:
    parts = schema.get(key)
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _members(value: object, schema: dict[str, Any]) -> list[tuple[object, object]]:
    if isinstance(value, dict):
        properties, extra = properties_of(schema), schema.get("additionalProperties")
        return [(v, properties.get(k, extra if isinstance(extra, dict) else ANY))
                for k, v in value.items()]  # fmt: skip
    if isinstance(value, list):
        items = schema.get("items")
        return [(v, items if isinstance(items, dict) else ANY) for v in value]
    return []
