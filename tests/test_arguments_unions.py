"""Unions in parse_arguments: the branch a value belongs to is found by a shallow look first
(type, required names, members pinned by `const`), so valid inputs pick the right branch and
recursive unions cost work in proportion to the input, never branches ** depth."""

from __future__ import annotations

import importlib
import json
from datetime import date
from typing import Annotated, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from textreact.errors import ConfigError, ToolArgumentError
from textreact.tools import Tool, tool
from textreact.tools import arguments as arguments_module
from textreact.tools.arguments import branches_anywhere

# --- the models of the audit ------------------------------------------------------------------


class Task(BaseModel):
    title: str
    sub: Node | None = None
    due: date


class Bug(BaseModel):
    title: str
    sub: Node | None = None
    severity: int


class Note(BaseModel):
    title: str
    sub: Node | None = None


Node = Task | Bug | Note
for _model in (Task, Bug, Note):
    _model.model_rebuild()


@tool
def put(item: Node) -> str:
    """Use this to file an item."""
    return type(item).__name__


#: The same schema with no pydantic behind it: what parse_arguments itself costs.
PUT_SCHEMA = Tool.from_schema("put_schema", "Use this to file an item.", put.parameters)


class ById(BaseModel):
    kind: Literal["id"]
    key: int


class ByName(BaseModel):
    kind: Literal["name"]
    key: str


@tool
def find(target: ById | ByName) -> str:
    """Use this to find a record."""
    return f"{type(target).__name__}:{target.key!r}"


PICK = Tool.from_schema(
    "pick",
    "Use it.",
    {
        "type": "object",
        "properties": {
            "target": {
                "oneOf": [
                    {
                        "type": "object",
                        "properties": {"kind": {"const": "num"}, "n": {"type": "integer"}},
                        "required": ["kind", "n"],
                    },
                    {
                        "type": "object",
                        "properties": {"kind": {"const": "text"}, "n": {"type": "string"}},
                        "required": ["kind", "n"],
                    },
                ]
            }
        },
        "required": ["target"],
    },
)

#: The audit's hand-written schema: anyOf of three objects, each requiring another name.
TREE = Tool.from_schema(
    "tree",
    "Use it.",
    {
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/N"}},
        "required": ["n"],
        "$defs": {
            "N": {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {letter: {"type": "string"}, "sub": {"$ref": "#/$defs/N"}},
                        "required": [letter],
                    }
                    for letter in "abc"
                ]
            }
        },
    },
)


def _chain(depth: int) -> dict:
    """A valid Note chain: {"title": "n", "sub": {"title": "n", "sub": ...}}, `depth` Notes."""
    value: dict = {"title": "n"}
    for _ in range(depth - 1):
        value = {"title": "n", "sub": value}
    return value


@pytest.fixture
def checks(monkeypatch):
    """Counts the (value, schema) checks parse_arguments makes."""
    count = [0]
    inner = arguments_module._conform

    def counted(*args):
        count[0] += 1
        return inner(*args)

    monkeypatch.setattr(arguments_module, "_conform", counted)
    return count


# --- finding 2: recursive unions are checked in time linear in the input -----------------------


def test_the_audit_chain_of_depth_12_is_accepted_as_written(checks) -> None:
    raw = json.dumps({"item": _chain(12)})  # the audit's shape, which took 59 s
    assert PUT_SCHEMA.parse_arguments_with_repairs(raw) == ({"item": _chain(12)}, ())
    assert checks[0] < 12 * 10


@pytest.mark.parametrize("depth", [1, 8, 25])
def test_a_deep_valid_chain_costs_a_few_checks_per_level(checks, depth: int) -> None:
    # 3 ** 25 branch trials before the fix: years, not seconds.
    assert PUT_SCHEMA.parse_arguments({"item": _chain(depth)}) == {"item": _chain(depth)}
    assert checks[0] < depth * 10


def test_a_deep_chain_with_a_wrong_leaf_names_the_leaf(checks) -> None:
    item = _chain(25)
    leaf = item
    while "sub" in leaf:
        leaf = leaf["sub"]
    leaf["title"] = ["not", "text"]
    with pytest.raises(ToolArgumentError) as caught:
        PUT_SCHEMA.parse_arguments({"item": item})
    path = "item" + ".sub" * 24 + ".title"
    assert f'"{path}": expected string, received ["not", "text"] (an array)' in str(caught.value)
    assert checks[0] < 25 * 20


def test_a_shallow_chain_still_goes_through_pydantic() -> None:
    assert put.parse_arguments({"item": _chain(8)}) == {"item": _chain(8)}
    assert put.invoke({"item": _chain(8)}) == "Note"


def test_a_chain_pydantic_would_take_hours_on_is_refused_before_it_runs() -> None:
    # pydantic tries every member of a plain Union at every level (3 ** 25 validations here);
    # the arguments are refused with a message for the model instead.
    with pytest.raises(ToolArgumentError) as caught:
        put.parse_arguments({"item": _chain(25)})
    assert "nest alternatives too deeply to be checked" in str(caught.value)
    assert "send fewer nested levels" in str(caught.value)


class Leaf(BaseModel):
    kind: Literal["leaf"]


class Branch(BaseModel):
    kind: Literal["branch"]
    sub: Annotated[Leaf | Branch, Field(discriminator="kind")]


Branch.model_rebuild()


@tool
def grow(tree: Annotated[Leaf | Branch, Field(discriminator="kind")]) -> str:
    """Use this to grow a tree."""
    return "grown"


def test_a_discriminated_union_is_linear_for_pydantic_too_so_any_depth_passes() -> None:
    tree: dict = {"kind": "leaf"}
    for _ in range(30):
        tree = {"kind": "branch", "sub": tree}
    assert grow.parse_arguments({"tree": tree}) == {"tree": tree}


@pytest.mark.parametrize("depth", [5, 30])
def test_the_hand_written_union_refuses_a_deep_invalid_input_in_linear_time(checks, depth) -> None:
    # Every level names a, b and c, so every branch may hold it; the leaf's sub is no object.
    text = '{"a": 1, "sub": 5}'
    for _ in range(depth):
        text = '{"a": "x", "b": "x", "c": "x", "sub": ' + text + "}"
    with pytest.raises(ToolArgumentError) as caught:
        TREE.parse_arguments('{"n": ' + text + "}")
    where = "n" + ".sub" * (depth + 1)
    assert (
        f'"{where}": expected object with "a" or object with "b" or object with "c", '
        "received 5 (an integer)"
    ) in str(caught.value)
    assert checks[0] < (depth + 1) * 20


def test_the_hand_written_union_says_which_names_an_object_lacks() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        TREE.parse_arguments('{"n": {"z": 1, "sub": {"z": 1, "sub": {"z": 1}}}}')
    assert '"n": expected object with "a" or object with "b" or object with "c"' in str(
        caught.value
    )
    assert TREE.parse_arguments('{"n": {"b": "y", "sub": {"c": 7}}}') == {
        "n": {"b": "y", "sub": {"c": "7"}}
    }


def test_a_union_past_the_work_budget_is_too_complex_not_slow(monkeypatch) -> None:
    monkeypatch.setattr(arguments_module, "MAX_STEPS", 50)
    with pytest.raises(ToolArgumentError) as caught:
        PUT_SCHEMA.parse_arguments({"item": _chain(30)})
    message = str(caught.value)
    assert "- the Action Input is too complex to check against this tool's parameters" in message
    assert message.count("\n- ") == 1  # that alone: nothing else found on the way is listed


def test_json_text_inside_json_text_is_decoded_once_per_string(checks) -> None:
    value: dict = {"title": "n"}
    for _ in range(10):
        value = {"title": "n", "sub": json.dumps(value)}
    parsed, repairs = PUT_SCHEMA.parse_arguments_with_repairs({"item": value})
    assert parsed == {"item": _chain(11)} and repairs == ("string_to_object",)
    assert checks[0] < 11 * 25  # 3 ** 10 decodings of the innermost text before


def test_a_union_that_holds_itself_is_no_crash() -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/A"}},
        "required": ["x"],
        "$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "string"}]}},
    }
    looped = Tool.from_schema("looped", "Use it.", schema)
    assert looped.parse_arguments({"x": 5}) == {"x": "5"}
    circular = {**schema, "$defs": {"A": {"allOf": [{"$ref": "#/$defs/A"}]}}}
    with pytest.raises(ConfigError, match="does not fit"):
        Tool.from_schema("circular", "Use it.", circular, example={"x": "a"})


# --- finding 3: const picks the branch ----------------------------------------------------------


def test_const_decides_the_branch_before_any_coercion() -> None:
    raw = '{"target": {"kind": "name", "key": "007"}}'
    assert find.parse_arguments(raw) == {"target": {"kind": "name", "key": "007"}}
    assert find.invoke(find.parse_arguments(raw)) == "ByName:'007'"
    assert find.parse_arguments_with_repairs('{"target": {"kind": "id", "key": "007"}}') == (
        {"target": {"kind": "id", "key": 7}},
        ("string_to_integer",),
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"target": {"kind": "text", "n": "007"}}, {"target": {"kind": "text", "n": "007"}}),
        ({"target": {"kind": "num", "n": "007"}}, {"target": {"kind": "num", "n": 7}}),
        ({"target": {"kind": "TEXT", "n": "x"}}, {"target": {"kind": "text", "n": "x"}}),
    ],
)
def test_a_one_of_from_a_json_schema_keeps_each_member_to_its_branch(raw, expected) -> None:
    assert PICK.parse_arguments(raw) == expected


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"kind": "bogus", "n": 1}, '"target.kind": expected one of "num", "text", received '
         '"bogus" (a string)'),
        ({"n": 1}, '"target.kind": missing (expected one of "num", "text")'),
        ({"kind": "num"}, '"target.n": missing (expected integer)'),
        ({"kind": "num", "n": "x"}, '"target.n": expected integer, received "x" (a string)'),
        ({"kind": "text", "n": [1]}, '"target.n": expected string, received [1] (an array)'),
    ],
)  # fmt: skip
def test_a_wrong_one_of_is_told_what_its_tag_or_member_should_be(raw, problem) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        PICK.parse_arguments({"target": raw})
    assert problem in str(caught.value)
    assert str(caught.value).count("\n- ") == 1


MODE = Tool.from_schema(
    "mode",
    "Use it.",
    {"type": "object", "properties": {"mode": {"const": "fast"}}, "required": ["mode"]},
)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"mode": "slow"}, '"mode": expected "fast", received "slow" (a string)'),
        ({"mode": True}, '"mode": expected "fast", received true (a boolean)'),
    ],
)
def test_const_is_enforced(raw, problem) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        MODE.parse_arguments(raw)
    assert problem in str(caught.value)
    assert str(caught.value).endswith('Correct example: {"mode": "fast"}')


def test_const_in_another_case_is_repaired_like_an_enum() -> None:
    assert MODE.parse_arguments_with_repairs({"mode": "Fast"}) == ({"mode": "fast"}, ("enum_case",))


@pytest.mark.parametrize(
    ("keyword", "allowed", "value"),
    [("const", 1, True), ("const", True, 1), ("enum", [1, 2], True), ("enum", [False], 0)],
)
def test_true_is_not_one_and_one_is_not_true(keyword, allowed, value) -> None:
    t = Tool.from_schema(
        "t", "Use it.", {"type": "object", "properties": {"v": {keyword: allowed}}}
    )
    with pytest.raises(ToolArgumentError):
        t.parse_arguments({"v": value})


EITHER = Tool.from_schema(
    "either",
    "Use it.",
    {
        "type": "object",
        "properties": {
            "v": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "w": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
            "x": {"anyOf": [{"type": "string", "pattern": "^a"}, {"type": "null"}]},
        },
        "required": ["v"],
    },
)


def test_a_branch_that_fits_as_written_wins_over_one_that_needs_a_coercion() -> None:
    assert EITHER.parse_arguments_with_repairs({"v": "007"}) == ({"v": "007"}, ())
    assert EITHER.parse_arguments_with_repairs({"v": 7}) == ({"v": 7}, ())
    assert EITHER.parse_arguments_with_repairs({"v": 1, "w": "true"}) == (
        {"v": 1, "w": True},
        ("string_to_boolean",),
    )


def test_a_value_no_branch_takes_is_told_what_its_own_type_needs() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        EITHER.parse_arguments({"v": 1, "w": "x", "x": "b"})
    message = str(caught.value)
    assert '"w": expected integer or boolean, received "x" (a string)' in message
    assert '"x": expected text matching the pattern ^a, received "b" (a string)' in message


def test_an_optional_model_reports_what_the_model_lacks() -> None:
    @tool
    def plan(task: Task | None = None) -> str:
        """Use this to plan a task."""
        return "planned"

    with pytest.raises(ToolArgumentError) as caught:
        plan.parse_arguments({"task": {"title": "t"}})
    assert '"task.due": missing (expected string)' in str(caught.value)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
    | st.sampled_from(["id", "name", "num", "text", "n", "2024-01-31"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["kind", "key", "n", "title", "sub", "due", "x"]),
                          inner, max_size=4)
    ),
    max_leaves=12,
)  # fmt: skip


@given(_JSON)
def test_any_value_for_a_union_gives_arguments_or_a_tool_argument_error(value) -> None:
    for t, name in ((find, "target"), (PICK, "target"), (put, "item"), (TREE, "n")):
        try:
            parsed = t.parse_arguments({name: value})
        except ToolArgumentError as error:
            assert str(error).startswith(f"Invalid Action Input for {t.name}:")
            continue
        assert set(parsed) == {name}


def test_unions_nested_past_any_use_are_too_complex_not_a_recursion_error() -> None:
    defs = {
        f"A{i}": {"anyOf": [{"$ref": f"#/$defs/A{i + 1}"}, {"type": "null"}]} for i in range(400)
    }
    defs["A400"] = {"type": "string"}
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/A0"}}, "$defs": defs}
    deep = Tool.from_schema("deep", "Use it.", schema)
    assert deep.example == {}  # no value for x could be checked
    assert _problem_lines(deep, {"x": "a"}) == [
        "the Action Input is too complex to check against this tool's parameters: send fewer "
        "values, or less deeply nested ones"
    ]


def _problem_lines(t: Tool, raw) -> list[str]:
    with pytest.raises(ToolArgumentError) as caught:
        t.parse_arguments(raw)
    return [line.removeprefix("- ") for line in str(caught.value).splitlines()[1:-1]]


# --- union_work is skipped where nothing branches ----------------------------------------------


class Holder(BaseModel):
    key: int | str


@tool
def hold(holder: Holder) -> str:
    """Use this to hold a key."""
    return repr(holder.key)


@tool
def count(times: int, names: list[str]) -> str:
    """Use this to count names."""
    return f"{times}:{names}"


@pytest.fixture
def walks(monkeypatch):
    """The arguments parse_arguments hands to union_work."""
    tool_module = importlib.import_module("textreact.tools.tool")
    walked: list[object] = []
    inner = tool_module.union_work

    def counted(value, schema):
        walked.append(value)
        return inner(value, schema)

    monkeypatch.setattr(tool_module, "union_work", counted)
    return walked


def test_arguments_for_a_schema_without_a_union_are_not_walked(walks) -> None:
    assert count.parse_arguments({"times": "3", "names": ["a"]}) == {"times": 3, "names": ["a"]}
    assert walks == []


def test_a_union_only_behind_a_ref_is_still_walked(walks) -> None:
    assert hold.parse_arguments({"holder": {"key": 7}}) == {"holder": {"key": 7}}
    assert walks == [{"holder": {"key": 7}}]


@pytest.mark.parametrize(
    ("schema", "branches"),
    [
        ({"type": "object", "properties": {"a": {"type": "array", "items": {}}}}, False),
        ({"properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"oneOf": []}}}, True),
        ({"properties": {"a": {"items": {"anyOf": [{"type": "null"}]}}}}, True),
        ({"properties": {"a": {"allOf": [{"type": "integer"}]}}}, True),
    ],
)
def test_a_branching_keyword_is_found_anywhere_in_the_document(schema, branches) -> None:
    assert branches_anywhere(schema) is branches


def test_without_a_union_each_value_counts_once_far_below_the_limit() -> None:
    # Why the walk may be skipped: arguments that passed hold at most MAX_STEPS values.
    assert arguments_module.MAX_STEPS < arguments_module.MAX_UNION_WORK
    values = {"times": 3, "names": ["a"] * 999}
    assert arguments_module.union_work(values, count.parameters) == 1 + 1 + 1 + 999
