"""What a client sends wrong is a 400 in OpenAI's shape that names the field and says what to
write, never a 500: malformed tool schemas, roles that are not strings, the legacy
function-calling fields. A property test throws arbitrary JSON at the schema and the messages
and checks that nothing but a ServeError ever comes out, through a reply's validation too."""

from __future__ import annotations

import json
from typing import Any

import httpx2 as httpx
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from serve_support import QUESTION, WEATHER, proxy

from textreact.errors import ToolArgumentError
from textreact.serve.answers import AnswerFormat
from textreact.serve.convert import earlier_calls, text_messages
from textreact.serve.errors import ServeError
from textreact.serve.request import parse_request
from textreact.serve.schemas import checked_schema
from textreact.serve.turn import Judge
from textreact.steps import Completion

#: What Python's own error text looks like: never shown to a client.
PYTHON_WORDS = ("NoneType", "has no attribute", "not iterable", "not subscriptable", "Traceback")


def tool_with(properties: Any, **schema: Any) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, **schema}
    function = {"name": "f", "description": "d", "parameters": parameters}
    return {"type": "function", "function": function}


def _error(body: dict[str, Any]) -> ServeError:
    with pytest.raises(ServeError) as caught:
        parse_request(body)
    return caught.value


@pytest.mark.parametrize(
    ("properties", "where", "said"),
    [
        ([1], "parameters.properties", "an object of schemas"),
        ({"x": "string"}, "parameters.properties.x", 'such as {"type": "string"'),
        ({"x": None}, "parameters.properties.x", "a JSON Schema object"),
        ({"x": {"type": [1]}}, "parameters.properties.x.type", "a JSON Schema type name"),
        ({"x": {"type": "strng"}}, "parameters.properties.x.type", "string, number, integer"),
        ({"x": {"type": "string", "pattern": "("}}, "properties.x.pattern", "escape special"),
        ({"x": {"anyOf": {"type": "string"}}}, "properties.x.anyOf", "a non-empty array"),
        ({"x": {"type": "string", "enum": "abc"}}, "properties.x.enum", "a non-empty array"),
        ({"x": {"type": "integer", "minimum": "a"}}, "properties.x.minimum", "a number"),
        ({"x": {"type": "string", "maxLength": -1}}, "properties.x.maxLength", "integer >= 0"),
        ({"x": {"$ref": "#/$defs/Missing"}}, "properties.x.$ref", "names no schema"),
        ({"x": {"$ref": "https://example.com/s.json"}}, "properties.x.$ref", "under $defs"),
        ({"x": {"$ref": "#/properties/x"}}, "properties.x.$ref", "in a circle, or more than 32"),
        ({"x": {"$ref": "#/properties/y/default"}, "y": {"default": False}}, "x.$ref", "no schema"),
        ({"x": {"$ref": "#x"}}, "properties.x.$ref", "names no schema"),
        ({"x": False}, "parameters.properties.x", "leave the parameter out"),
    ],
)
def test_a_malformed_tool_schema_is_a_400_that_says_where_and_what_to_write(
    properties, where, said
) -> None:
    error = _error({"model": "m", "messages": QUESTION, "tools": [tool_with(properties)]})
    assert error.status == 400 and error.type == "invalid_request_error"
    assert error.param == "tools[0].function.parameters"
    assert error.message.startswith("tools[0].function.") and where in error.message
    assert said in error.message
    assert not any(word in error.message for word in PYTHON_WORDS)


def test_a_schema_no_example_fits_says_to_add_examples() -> None:
    # a lookahead: no example is made from it (`^[0-9]{5}$` gets its shortest match, 00000)
    zip_code = {"zip": {"type": "string", "pattern": "^(?=7)[0-9]{5}$"}}
    tools = [tool_with(zip_code, required=["zip"])]
    error = _error({"model": "m", "messages": QUESTION, "tools": tools})
    assert error.param == "tools[0].function.parameters"
    assert '"zip"' in error.message and 'add "examples"' in error.message
    zip_code["zip"]["examples"] = ["75001"]
    assert parse_request({"model": "m", "messages": QUESTION, "tools": tools}).tools


def test_the_field_of_a_refused_function_comes_from_the_error_not_its_words() -> None:
    """Words of the client's own schema in the message ("its example", a parenthesis in an
    example value) neither move the 400 to another complaint nor garble the problems shown."""
    worded = {"type": "array", "description": "see its example (below)"}
    error = _error({"model": "m", "messages": QUESTION, "tools": [tool_with({}, **worded)]})
    assert error.param == "tools[0].function.parameters"
    assert 'must describe an object ("type": "object")' in error.message
    assert "no example call" not in error.message
    note = {"type": "string", "description": "e.g. 'a (b'"}
    zip_code = {"type": "string", "pattern": "^(?=7)[0-9]{5}$"}  # no example made from it
    tools = [tool_with({"note": note, "zip": zip_code}, required=["note", "zip"])]
    error = _error({"model": "m", "messages": QUESTION, "tools": tools})
    assert "fits it (Invalid Action Input for f:" in error.message
    assert "does not fit its parameters" not in error.message
    named = {"type": "function", "function": {"name": "final_answer", "description": "d"}}
    error = _error({"model": "m", "messages": QUESTION, "tools": [named]})
    assert error.param == "tools[0].function.name" and "Final Answer" in error.message


def test_required_must_be_names() -> None:
    error = _error({"model": "m", "messages": QUESTION, "tools": [tool_with({}, required="x")]})
    assert error.param == "tools[0].function.parameters"
    assert "parameters.required must be an array of property names" in error.message


def test_a_pattern_is_checked_by_the_engine_validation_uses() -> None:
    """`\\p{L}` is ECMA-262 that `regex` reads, as validation does; `re` would refuse it."""
    letters = tool_with({"name": {"type": "string", "pattern": "^\\p{L}+$", "examples": ["Ada"]}})
    (tool,) = parse_request({"model": "m", "messages": QUESTION, "tools": [letters]}).tools
    assert tool.parse_arguments({"name": "Zoë"}) == {"name": "Zoë"}


def test_true_subschemas_and_the_usual_keywords_are_taken() -> None:
    properties = {
        "any": True,
        "city": {"type": "string", "pattern": "^[A-Z]", "examples": ["Paris"]},
        "when": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "days": {"type": "integer", "minimum": 1, "exclusiveMaximum": 15, "multipleOf": 1},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}, "uniqueItems": True},
        "extra": {"type": "object", "additionalProperties": {"type": "number"}},
    }
    schema = tool_with(properties, required=["city"], additionalProperties=False)
    schema["function"]["parameters"]["$defs"] = {"Tag": {"type": "string", "enum": ["a", "b"]}}
    (tool,) = parse_request({"model": "m", "messages": QUESTION, "tools": [schema]}).tools
    assert tool.parameters["properties"]["any"] == {}
    assert tool.parse_arguments({"city": "Paris", "days": 3, "any": [1]})["days"] == 3
    assert checked_schema({"type": "object"}, "p") == {"type": "object"}


def test_every_ref_the_check_takes_is_followed_by_validation() -> None:
    """`#` (the root), `~1` for `/`, `~0` for `~`, percent-encoding, array indices: a value
    that does not fit what a ref names is refused, not waved through as if it named `{}`."""
    properties = {
        "slash": {"$ref": "#/$defs/a~1b"},
        "tilde": {"$ref": "#/$defs/c~0d"},
        "space": {"$ref": "#/$defs/e%20f"},
        "first": {"$ref": "#/properties/pair/prefixItems/0"},
        "pair": {"type": "array", "prefixItems": [{"type": "number"}]},
        "again": {"$ref": "#"},
    }
    schema = tool_with(properties)
    schema["function"]["parameters"]["$defs"] = {
        "a/b": {"type": "integer"},
        "c~d": {"type": "boolean"},
        "e f": {"type": "string", "enum": ["x"]},
    }
    (tool,) = parse_request({"model": "m", "messages": QUESTION, "tools": [schema]}).tools
    good = {"slash": 3, "tilde": True, "space": "x", "first": 1.5, "again": {"slash": 4}}
    assert tool.parse_arguments(good) == good
    bad = {"slash": "abc", "tilde": "maybe", "space": "y", "first": "abc"}
    for name, value in [*bad.items(), ("again", {"slash": "abc"})]:
        with pytest.raises(ToolArgumentError, match=name if name != "again" else "slash"):
            tool.parse_arguments({name: value})


@pytest.mark.parametrize("role", [[], {}, 5, None, "wizard"])
def test_a_role_that_is_not_a_known_string_is_a_400_naming_the_role(role) -> None:
    for tools in ([], [WEATHER]):
        body = {"model": "m", "messages": [{"role": role, "content": "hi"}], "tools": tools}
        error = _error(body)
        assert error.param == "messages[0].role"
        assert "must be one of assistant, developer, system, tool, user" in error.message


def test_content_that_is_neither_text_nor_parts_is_a_400() -> None:
    error = _error({"model": "m", "messages": [{"role": "user", "content": 5}]})
    assert error.param == "messages[0].content" and "a string or an array" in error.message


def test_the_legacy_function_api_is_a_400_that_says_to_send_tools() -> None:
    legacy = {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    error = _error({"model": "m", "messages": QUESTION, "functions": [legacy]})
    assert error.param == "functions" and "send tools=" in error.message
    history = [*QUESTION, {"role": "function", "name": "get_weather", "content": "18 C"}]
    error = _error({"model": "m", "messages": history, "tools": [WEATHER]})
    assert error.param == "messages[1].role" and 'role "tool"' in error.message


@pytest.mark.parametrize(
    "body",
    [
        {"model": "m", "messages": [{"role": [], "content": "hi"}]},
        {"model": "m", "messages": QUESTION, "tools": [tool_with({"x": "string"})]},
        {"model": "m", "messages": QUESTION, "tools": [tool_with({"x": {"pattern": "("}})]},
    ],
)
def test_through_the_proxy_these_are_400s_in_openais_shape(body) -> None:
    with proxy() as (upstream, url):
        reply = httpx.post(url + "/chat/completions", content=json.dumps(body), timeout=10)
        with (
            openai.OpenAI(base_url=url, api_key="client-key", max_retries=0) as client,
            pytest.raises(openai.BadRequestError) as caught,
        ):
            client.chat.completions.create(**body)
    assert reply.status_code == 400 and reply.headers["content-type"] == "application/json"
    assert set(reply.json()["error"]) == {"message", "type", "param", "code"}
    assert caught.value.body["param"] == reply.json()["error"]["param"]
    assert not upstream.posts


def test_json_nested_too_deeply_is_a_400() -> None:
    with proxy() as (_, url):
        reply = httpx.post(url + "/chat/completions", content="[" * 100_000, timeout=10)
    assert reply.status_code == 400 and "nested too deeply" in reply.json()["error"]["message"]


# anything at all: a ServeError or a working request, and replies judged without a crash

_KEYWORDS = [
    "type", "properties", "required", "items", "anyOf", "oneOf", "allOf", "enum", "const",
    "pattern", "minimum", "maximum", "minLength", "maxLength", "minItems", "$ref", "$defs",
    "additionalProperties", "prefixItems", "not", "default", "format", "nullable", "x", "city",
]  # fmt: skip
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.sampled_from(["string", "integer", "object", "array", "null", "number", "(", "#/$defs/x"]),
    st.text(max_size=4),
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYWORDS), inner, max_size=4)
    ),
    max_leaves=12,
)


_NAMES = st.sampled_from(["x", "city", "$defs", "a b"])
#: Object schemas whose parts are anything: what reaches validation most often.
_OBJECTS = st.builds(
    lambda properties, extra: {**extra, "type": "object", "properties": properties},
    st.dictionaries(_NAMES, _JSON, max_size=3),
    st.dictionaries(st.sampled_from(_KEYWORDS), _JSON, max_size=2),
)


@given(
    parameters=_JSON | _OBJECTS,
    arguments=st.dictionaries(_NAMES, _JSON, max_size=3),
    role=_JSON,
)
def test_no_schema_or_role_ever_escapes_as_anything_but_a_400(parameters, arguments, role):
    tool = {"type": "function", "function": {"name": "f", "description": "d"}}
    tool["function"]["parameters"] = parameters
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    messages = [
        {"role": role, "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    try:
        request = parse_request({"model": "m", "messages": messages, "tools": [tool]})
        text_messages(request)
        judge = Judge(request.tools, earlier=earlier_calls(request))
    except ServeError as error:
        assert error.status == 400 and error.param
        assert not any(word in error.message for word in PYTHON_WORDS)
        return
    reply = f"Action: f\nAction Input: {json.dumps(arguments)}"
    judge.read(Completion(reply, "stop"))


# every field of a whole request, replaced in turn by each of a set of odd values

_BASE = {
    "model": "m",
    "tools": [WEATHER],
    "tool_choice": "auto",
    "stop": ["x"],
    "response_format": {"type": "json_object"},
    "messages": [
        {"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": "t", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "P"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
    ],
}  # fmt: skip
_ODD = [None, 0, 1.5, True, "", "x", [], {}, [1], {"a": 1}, [None], [{"type": "text", "text": 5}]]


def _paths(value: Any, path: tuple = ()):
    if path:
        yield path
    items = value.items() if isinstance(value, dict) else enumerate(value)
    if isinstance(value, (dict, list)):
        for key, item in items:
            yield from _paths(item, (*path, key))


@pytest.mark.parametrize("path", list(_paths(_BASE)), ids=str)
def test_no_odd_value_anywhere_in_a_request_is_anything_but_a_400(path) -> None:
    for odd in _ODD:
        body = json.loads(json.dumps(_BASE))
        parent = body
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = odd
        try:
            request = parse_request(body)
            json.dumps(text_messages(request))
            earlier = earlier_calls(request)
            judge = Judge(request.tools, request.tool_choice, earlier=earlier,
                          answer_format=request.answer_format)  # fmt: skip
            judge.read(Completion('Action: get_weather\nAction Input: {"city": "Lyon"}'))
            judge.read(Completion('Final Answer: {"city": "Lyon"}'))
        except ServeError as error:
            assert error.status == 400 and not any(w in error.message for w in PYTHON_WORDS)


@pytest.mark.parametrize(
    ("schema", "answer", "english"),
    [
        ({"type": "object", "properties": {"n": {"type": "integer"}}}, '{"n": "x"}', "expected"),
        ({"type": "integer", "minimum": 3}, "1", "expected"),
    ],
)
def test_a_response_format_problem_is_told_in_the_run_s_language(
    schema: dict, answer: str, english: str
) -> None:
    """The model reads why its answer does not fit in the language it is spoken to in."""
    fmt = AnswerFormat(schema)
    _, told_en = fmt.read(answer, "en")
    _, told_zh = fmt.read(answer, "zh")
    assert told_en is not None and english in told_en
    assert told_zh is not None and english not in told_zh and "应为" in told_zh


@pytest.mark.parametrize(
    ("schema", "fits", "misfits"),
    [
        # a recursive array: `#` is the client's schema, not the wrapper serve checks it in
        (
            {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"$ref": "#"}]}},
            "[1, [2, 3]]",
            '[1, ["x"]]',
        ),
        (
            {"$defs": {"N": {"type": "integer"}}, "type": "array", "items": {"$ref": "#/$defs/N"}},
            "[1, 2]",
            '["x"]',
        ),
    ],
)
def test_a_scalar_response_format_s_refs_point_into_the_client_s_schema(
    schema: dict, fits: str, misfits: str
) -> None:
    fmt = AnswerFormat(schema)
    assert fmt.read(fits) == (json.dumps(json.loads(fits)), None)
    assert fmt.read(misfits)[1] is not None
