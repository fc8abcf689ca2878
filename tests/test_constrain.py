"""Constrained decoding: the tools' GBNF grammar (checked offline with the recogniser, and by
the real llama.cpp server where the embedded model is there), the request fields per server
kind, and the detection of a server from what it says about itself."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx2 as httpx
import pytest
from fakeserver import FakeServer
from hypothesis import given
from hypothesis import strategies as st

from textreact import grammar, parse
from textreact.constrain import (
    GrammarSyntaxError,
    ServerInfo,
    detect_server,
    matches,
    parse_gbnf,
    request_fields,
    schema_grammar,
    tools_grammar,
)
from textreact.errors import ConfigError
from textreact.steps import Action, FinalAnswer
from textreact.tools import Tool, builtin_tools

WEATHER = Tool.from_schema(
    "get_weather",
    "Use this for the weather in a city.",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
            "unit": {"enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    },
)


def step_text(step: Action | FinalAnswer, lang: str = "en") -> str:
    return grammar.render_step(step, lang)


def call(tool: str, arguments: dict[str, Any] | str, thought: str = "I will call it.") -> str:
    return step_text(Action(tool=tool, input=arguments, thought=thought))


def answer(text: str, thought: str = "I know it now.") -> str:
    return step_text(FinalAnswer(answer=text, thought=thought))


# the step grammar


def test_each_tool_name_is_tied_to_its_own_arguments() -> None:
    text = tools_grammar([*builtin_tools(), WEATHER])
    assert matches(text, call("calculator", {"expression": "2 + 3"}))
    assert matches(text, call("lookup_fact", {"query": "capital of Japan"}))
    assert matches(text, call("get_weather", {"city": "Oslo", "days": 3, "unit": "celsius"}))
    assert not matches(text, call("calculator", {"query": "capital of Japan"}))
    assert not matches(text, call("lookup_fact", {"expression": "2 + 3"}))
    assert not matches(text, call("get_weather", {"days": 3}))  # city is required
    assert not matches(text, call("get_weather", {"city": "Oslo", "days": 9}))  # range 1..7
    assert not matches(text, call("get_weather", {"city": "Oslo", "unit": "kelvin"}))
    assert not matches(text, call("search", {"query": "x"}))  # not a tool


@pytest.mark.parametrize(
    ("choice", "calculator", "lookup", "final"),
    [
        ("auto", True, True, True),
        ("required", True, True, False),
        ("none", False, False, True),
        ("lookup_fact", False, True, False),
        ("calculator", True, False, False),
    ],
)
def test_tool_choice_keeps_only_the_branches_it_allows(
    choice: str, calculator: bool, lookup: bool, final: bool
) -> None:
    text = tools_grammar(builtin_tools(), tool_choice=choice)
    assert matches(text, call("calculator", {"expression": "1+1"})) is calculator
    assert matches(text, call("lookup_fact", {"query": "x"})) is lookup
    assert matches(text, answer("42")) is final


def test_with_no_tools_only_a_final_answer_is_allowed() -> None:
    text = tools_grammar([])
    assert matches(text, answer("hello"))
    assert not matches(text, call("calculator", {"expression": "1"}))
    assert tools_grammar([], tool_choice="none") == text


@pytest.mark.parametrize("lang", grammar.LANGUAGES)
def test_the_keywords_are_those_of_the_language(lang: str) -> None:
    text = tools_grammar(builtin_tools(), lang=lang)
    action = Action(tool="calculator", input={"expression": "6*7"}, thought="算一下")
    final = FinalAnswer(answer="四十二\n就是这样", thought="好")
    assert matches(text, step_text(action, lang))
    assert matches(text, step_text(final, lang))
    other = next(o for o in grammar.LANGUAGES if o != lang)
    assert not matches(text, step_text(action, other))
    for keyword in (grammar.THOUGHT, grammar.ACTION, grammar.ACTION_INPUT, grammar.FINAL_ANSWER):
        assert grammar.label(keyword, lang) in text


def test_the_thought_is_one_bounded_line_without_a_colon() -> None:
    text = tools_grammar(builtin_tools(), max_thought=40)
    assert matches(text, answer("5", thought="x" * 40))
    assert not matches(text, answer("5", thought="x" * 41))
    assert not matches(text, answer("5", thought=""))
    assert not matches(text, answer("5", thought="first\nsecond"))
    # a colon would let the thought hold a keyword the parser reads before the forced step
    assert not matches(text, answer("5", thought="so Final Answer: 4"))
    assert not matches(text, answer("5", thought="所以最终答案：4"))
    assert not matches(text, "Action: calculator\nAction Input: {}")  # no thought at all


def test_a_chinese_thought_is_bounded_tighter_than_an_english_one() -> None:
    """A Chinese character costs SmolLM2 a token or two: 133 of them ran to the 200-token
    limit before its action. A bound passed is the bound, in any language."""
    english, chinese = tools_grammar(builtin_tools()), tools_grammar(builtin_tools(), lang="zh")
    long_line = FinalAnswer(answer="四十二", thought="好" * 81)
    assert matches(english, answer("5", thought="x" * 300))
    assert not matches(chinese, step_text(long_line, "zh"))
    assert matches(chinese, step_text(FinalAnswer(answer="四十二", thought="好" * 80), "zh"))
    wide = tools_grammar(builtin_tools(), lang="zh", max_thought=200)
    assert matches(wide, step_text(long_line, "zh"))


def test_what_the_grammar_allows_is_what_the_parser_reads() -> None:
    text = tools_grammar([*builtin_tools(), WEATHER])
    for arguments in ({"city": "São Paulo"}, {"city": 'a "quoted" name', "days": 2}):
        written = call("get_weather", arguments)
        assert matches(text, written)
        step = parse(written)
        assert step.kind == "action"
        assert WEATHER.parse_arguments(step.input) == arguments
    written = answer("line one\nline two")
    assert matches(text, written)
    assert parse(written) == FinalAnswer(answer="line one\nline two", thought="I know it now.")


def test_misuse_is_a_config_error_that_names_the_choices() -> None:
    with pytest.raises(ConfigError, match=r"auto, required, none or a tool's name \(calculator"):
        tools_grammar(builtin_tools(), tool_choice="search")
    with pytest.raises(ConfigError, match="needs at least one tool"):
        tools_grammar([], tool_choice="required")
    with pytest.raises(ConfigError, match=r"given twice: \['calculator'\]"):
        tools_grammar([*builtin_tools(), builtin_tools()[0]])
    with pytest.raises(ConfigError, match="lang must be one of en, zh"):
        tools_grammar(builtin_tools(), lang="fr")
    with pytest.raises(ConfigError, match="max_thought"):
        tools_grammar(builtin_tools(), max_thought=0)


def test_shared_rules_are_written_once() -> None:
    many = [
        Tool.from_schema(f"tool_{i}", "Use it.", {"properties": {"q": {"type": "string"}}})
        for i in range(50)
    ]
    text = tools_grammar(many)
    rules = parse_gbnf(text)
    assert sum(1 for name in rules if name.startswith("string")) == 1
    assert len(text) < 50 * 200


# JSON Schema -> GBNF, one value


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


SCHEMA_CASES = [
    ({"type": "integer"}, [0, -5, 1234567], [1.5, "1", True]),
    ({"type": "integer", "minimum": 0}, [0, 7], [-1]),
    ({"type": "integer", "minimum": 1, "maximum": 5}, [1, 3, 5], [0, 6]),
    ({"type": "number"}, [1.5, -2, 1e5, 0.25], ["x", None]),
    ({"type": "boolean"}, [True, False], ["true", 1]),
    ({"type": "null"}, [None], [0, ""]),
    ({"type": "string"}, ["a", "two words", "é 日本", 'say "hi"', "a\nb"], ["", " lead", 3]),
    ({"type": "string", "maxLength": 3}, ["abc"], ["abcd"]),
    ({"type": "string", "minLength": 0}, ["", "x"], [None]),
    ({"type": "string", "format": "date"}, ["2024-01-31"], ["31/01/2024", "today"]),
    ({"enum": ["a", 'b"c', 2, None]}, ["a", 'b"c', 2, None], ["c", "A", 3]),
    ({"const": {"k": [1]}}, [{"k": [1]}], [{"k": [2]}]),
    ({"anyOf": [{"type": "string"}, {"type": "null"}]}, ["x", None], [1]),
    ({"type": ["integer", "null"]}, [3, None], ["3"]),
    ({"type": "number", "nullable": True}, [1.5, None], ["x"]),
    ({"type": "array", "items": {"type": "integer"}}, [[], [1], [1, 2, 3]], [["a"], [1.5]]),
    ({"type": "array", "minItems": 1, "maxItems": 2}, [[1], ["a", None]], [[], [1, 2, 3]]),
    (
        {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
        [["a", 1]],
        [[1, "a"], ["a"]],
    ),
    ({"type": "object"}, [{}, {"any": [1, {"x": None}]}], [[], "x"]),
    (
        {"type": "object", "additionalProperties": {"type": "integer"}},
        [{"a": 1, "b": 2}],
        [{"a": "x"}],
    ),
    ({"allOf": [{"type": "string"}, {"minLength": 2}]}, ["x", 1, None], []),  # falls back: any
    ({}, [1, "x", [True], {"a": None}], []),
]


@pytest.mark.parametrize(("schema", "good", "bad"), SCHEMA_CASES)
def test_a_value_matches_exactly_when_it_fits_the_schema(
    schema: dict[str, Any], good: list[Any], bad: list[Any]
) -> None:
    text = schema_grammar(schema)
    for value in good:
        assert matches(text, _json(value)), (value, text)
    for value in bad:
        assert not matches(text, _json(value)), (value, text)


#: No lone surrogates (UTF-8 cannot carry them) and no raw DEL (written as \u007f instead).
TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x7f"), max_size=40)


@given(value=TEXT)
def test_any_string_matches_as_json_when_it_is_not_blank_at_its_start(value: str) -> None:
    text = schema_grammar({"type": "string"})
    written = json.dumps(value, ensure_ascii=False)
    blank = not value or value[0] in " \t\n\r"
    assert matches(text, written) is (not blank), written
    assert matches(text, json.dumps(value)) is (not blank)  # \uXXXX escapes too


@given(value=st.integers(min_value=-(10**16) + 1, max_value=10**16 - 1), extra=st.booleans())
def test_any_integer_of_at_most_16_digits_matches(value: int, extra: bool) -> None:
    text = schema_grammar({"type": "integer"})
    assert matches(text, str(value))
    assert not matches(text, f"{value}.5" if extra else f"0{abs(value)}")


def test_object_members_come_in_schema_order_optional_ones_left_out_at_will() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "integer"},
            "c": {"type": "integer"},
        },
        "required": ["a", "c"],
    }
    text = schema_grammar(schema)
    for good in ('{"a": 1, "c": 2}', '{"a": 1, "b": 2, "c": 3}', '{"a":1,"c":2}'):
        assert matches(text, good), good
    for bad in ('{"c": 2, "a": 1}', '{"a": 1}', '{"a": 1, "c": 2, "d": 3}', '{"a": 1,, "c": 2}',
                '{ "a": 1, "c": 2 }', '{"a": 1,\n"c": 2}', '{"a" : 1, "c": 2}'):  # fmt: skip
        assert not matches(text, bad), bad
    loose = schema_grammar({**schema, "required": []})
    for good in ("{}", '{"b": 1}', '{"a": 1, "c": 3}', '{"c": 3}'):
        assert matches(loose, good), good
    assert not matches(loose, '{"b": 1, "a": 2}')
    assert not matches(loose, '{, "b": 1}')


def test_strings_and_arrays_are_bounded_so_a_model_cannot_ramble() -> None:
    text = schema_grammar({"type": "string"}, max_string=10)
    assert matches(text, _json("x" * 10))
    assert not matches(text, _json("x" * 11))
    text = schema_grammar({"type": "array", "items": {"type": "integer"}}, max_items=3)
    assert matches(text, "[1, 2, 3]")
    assert not matches(text, "[1, 2, 3, 4]")
    assert not matches(schema_grammar({"type": "integer"}), "1" * 17)


def test_a_recursive_ref_ends_and_nests() -> None:
    schema = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
                "required": ["name"],
            }
        },
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/node"}},
        "required": ["tree"],
    }
    text = schema_grammar(schema)
    assert matches(text, '{"tree": {"name": "a", "kids": [{"name": "b", "kids": []}]}}')
    assert not matches(text, '{"tree": {"kids": []}}')


# the recogniser itself


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('root ::= "a', 'line 1: expected `"`'),
        ("root ::= a", "rule 'a' is used but not defined"),
        ('root ::= "a"{3,1}', "m <= n"),
        ('root ::= ("a"', "expected `)`"),
        ('root ::= "a"\nroot ::= "b"', "one definition of 'root'"),
        ("root ::= [a-", "expected `]`"),
        (r'root ::= "\x4"', "2 hex digits"),
    ],
)
def test_malformed_grammars_are_refused_with_the_place(text: str, message: str) -> None:
    with pytest.raises(GrammarSyntaxError, match=re.escape(message)):
        parse_gbnf(text)


def test_the_recogniser_reads_the_gbnf_repetitions_and_classes() -> None:
    text = 'root ::= "a"+ [^b-d]? x{2} ("y" | "z"){1,}\nx ::= [0-9]'
    assert matches(text, "aaae12yzy")
    assert matches(text, "a12z")
    assert not matches(text, "ac12y")
    assert not matches(text, "a1y")
    assert not matches(text, "12y")
    with pytest.raises(GrammarSyntaxError, match="no rule 'start'"):
        matches(text, "a12y", rule="start")


# request fields


def test_request_fields_per_server_kind() -> None:
    text = tools_grammar(builtin_tools())
    assert request_fields(text, "llama.cpp") == {"grammar": text}
    assert request_fields(text, "vllm") == {"structured_outputs": {"grammar": text}}
    assert request_fields(text, "vllm", version="0.11.0") == {
        "structured_outputs": {"grammar": text}
    }
    assert request_fields(text, "vllm", version="0.10.1.post1") == {"guided_grammar": text}
    assert request_fields(text, "vllm", version="0.10.2rc1") == {
        "structured_outputs": {"grammar": text}
    }
    assert request_fields(text, "sglang") == {"ebnf": text}
    assert ServerInfo("vllm", True, "0.8.5").request_fields(text) == {"guided_grammar": text}
    with pytest.raises(ConfigError, match=r"server_kind must be one of llama\.cpp, vllm, sglang"):
        request_fields(text, "ollama")
    with pytest.raises(ConfigError, match="needs the grammar's text"):
        request_fields("  ", "llama.cpp")


# detection, through httpx's MockTransport (the client code runs as it would on the wire)

LLAMA_PROPS = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1,
               "build_info": "b6500-abc"}  # fmt: skip


def _models(owner: str) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": owner}]}


def _client(routes: dict[str, Any], seen: list[httpx.Request]) -> httpx.Client:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        reply = routes.get(f"{request.method} {request.url.path}")
        if isinstance(reply, Exception):
            raise reply
        if reply is None:
            return httpx.Response(404, json={"error": "no such route"})
        if isinstance(reply, httpx.Response):
            return reply
        return httpx.Response(200, json=reply)

    return httpx.Client(transport=httpx.MockTransport(handle))


SGLANG_OFF = {"grammar_backend": "none", "version": "0.5.1"}
REFUSED = {"GET /props": httpx.ConnectError("refused"), "GET /v1/models": httpx.ReadTimeout("x")}


@pytest.mark.parametrize(
    ("routes", "expected"),
    [
        ({"GET /props": LLAMA_PROPS}, ServerInfo("llama.cpp", True, "b6500-abc", "GET /props")),
        (
            {"GET /v1/models": _models("llamacpp")},
            ServerInfo("llama.cpp", True, None, "owned_by llamacpp"),
        ),
        (
            {"GET /v1/models": _models("vllm"), "GET /version": {"version": "0.9.2"}},
            ServerInfo("vllm", True, "0.9.2", "owned_by vllm"),
        ),
        ({"GET /v1/models": _models("vllm")}, ServerInfo("vllm", True, None, "owned_by vllm")),
        (
            {"GET /v1/models": _models("sglang"), "GET /get_server_info": SGLANG_OFF},
            ServerInfo("sglang", False, "0.5.1", "owned_by sglang"),
        ),
        (
            {"GET /v1/models": _models("sglang"), "GET /server_info": {"grammar_backend": "xg"}},
            ServerInfo("sglang", True, None, "owned_by sglang"),
        ),
        ({"GET /v1/models": _models("openai")}, None),
        ({"GET /v1/models": _models("library")}, None),  # Ollama
        ({"GET /props": {"unrelated": True}, "GET /v1/models": {"data": "?"}}, None),
        ({"GET /props": httpx.Response(200, text="<html>")}, None),
        (REFUSED, None),
        ({}, None),
    ],
)
def test_detection_reads_what_each_server_says_and_never_raises(
    routes: dict[str, Any], expected: ServerInfo | None
) -> None:
    seen: list[httpx.Request] = []
    with _client(routes, seen) as client:
        assert detect_server("http://h:1/v1", http_client=client) == expected
    assert all(r.method == "GET" for r in seen)  # no probe unless asked for


def test_detection_asks_the_root_for_props_with_the_key() -> None:
    seen: list[httpx.Request] = []
    with _client({"GET /props": LLAMA_PROPS}, seen) as client:
        for base in ("http://h:1/v1", "http://h:1/v1/", "http://h:1"):
            assert detect_server(base, api_key="k", http_client=client) is not None
    assert [str(r.url) for r in seen] == ["http://h:1/props"] * 3
    assert all(r.headers["authorization"] == "Bearer k" for r in seen)


@pytest.mark.parametrize(
    ("content", "expected"),
    [("yes", ServerInfo("llama.cpp", True, None, "probe")), ("No.", None), (None, None)],
)
def test_a_probe_tells_a_server_that_obeys_a_grammar(
    content: str | None, expected: ServerInfo | None
) -> None:
    reply = {"choices": [{"message": {"role": "assistant", "content": content}}]}
    seen: list[httpx.Request] = []
    with _client({"POST /v1/chat/completions": reply}, seen) as client:
        assert detect_server("http://h:1/v1", http_client=client, probe_model="m") == expected
    probe = json.loads(seen[-1].content)
    assert (probe["model"], probe["grammar"], probe["max_tokens"]) == ("m", 'root ::= "yes"', 2)


def test_detection_over_real_http_on_loopback() -> None:
    with FakeServer(models=["fake-model"]) as server:
        assert detect_server(server.base_url, timeout=5) is None
        paths = [(r.method, r.path) for r in server.requests]
    assert paths[:2] == [("GET", "/props"), ("GET", "/v1/models")]
    assert detect_server("http://127.0.0.1:9/v1", timeout=2) is None  # nothing listens there


# against the real llama.cpp server (the embedded model)

from test_local_model import TIMEOUT, needs_model  # noqa: E402
from test_local_model import base_url as base_url  # noqa: E402  (the module's one server)

from textreact.models import local  # noqa: E402


def _post(base_url: str, body: dict[str, Any]) -> httpx.Response:
    payload = {"model": local.MODEL_NAME, "temperature": 0, "cache_prompt": False, **body}
    return httpx.post(base_url + "/chat/completions", json=payload, timeout=TIMEOUT)


@pytest.mark.usefixtures("base_url")
class TestRealServer:
    pytestmark = needs_model

    def test_the_embedded_server_is_detected_as_llama_cpp(self, base_url: str) -> None:
        info = detect_server(base_url)
        assert info is not None
        assert (info.kind, info.grammar, info.evidence) == ("llama.cpp", True, "GET /props")
        assert detect_server(base_url, probe_model=local.MODEL_NAME) == info

    @pytest.mark.parametrize(
        ("question", "choice"),
        [
            ("What is 17 * 23?", "auto"),
            ("What is the capital of Japan?", "auto"),
            ("What is the weather in Oslo for the next 3 days?", "required"),
            ("Say hello.", "auto"),
            ("What is 2 + 2?", "none"),
        ],
    )
    def test_a_constrained_reply_is_a_valid_call_or_an_answer(
        self, base_url: str, question: str, choice: str
    ) -> None:
        from textreact import prompt
        from textreact.models.openai_compat import OpenAICompatModel

        tools = [builtin_tools()[0], WEATHER]
        text = tools_grammar(tools, tool_choice=choice)
        fields = {"cache_prompt": False, **request_fields(text, "llama.cpp")}
        with OpenAICompatModel(
            local.MODEL_NAME, base_url, max_tokens=600, timeout=TIMEOUT, extra_body=fields
        ) as model:
            completion = model.complete(prompt.opening_messages(question, tools))
        step = parse(completion.text)
        assert step.kind == {"none": "final", "required": "action"}.get(choice, step.kind)
        assert step.kind in ("action", "final"), completion.text
        if step.kind == "action":  # bounded by the grammar, so complete well within the limit
            assert completion.finish_reason == "stop", completion.text
            assert matches(text, completion.text), completion.text
            tool = next(t for t in tools if t.name == step.tool)
            tool.parse_arguments(step.input)  # raises if the grammar let a bad call through
        elif completion.finish_reason == "stop":  # a free answer may run to the token limit
            assert matches(text, completion.text), completion.text

    def test_a_malformed_grammar_is_refused_and_grammar_with_tools_too(self, base_url: str) -> None:
        messages = [{"role": "user", "content": "Hi"}]
        bad = _post(base_url, {"messages": messages, "max_tokens": 1, "grammar": 'root ::= "a" b'})
        assert bad.status_code == 400
        assert "grammar" in bad.text
        with_tools = _post(
            base_url,
            {
                "messages": messages,
                "max_tokens": 1,
                "grammar": tools_grammar(builtin_tools()),
                "tools": [t.openai_spec() for t in builtin_tools()],
            },
        )
        assert with_tools.status_code == 400
        assert "tools" in with_tools.text

    @pytest.mark.parametrize("lang", grammar.LANGUAGES)
    def test_awkward_names_and_values_make_a_grammar_the_server_accepts(
        self, base_url: str, lang: str
    ) -> None:
        odd = Tool.from_schema(
            "odd.tool-1",
            "Use it.",
            {
                "properties": {
                    'we"ird\\name': {"enum": ['a"b', "c\\d", "e\nf", "日本", 3, None, True]},
                    "t\tab": {"type": "array", "items": {"type": "string", "maxLength": 2}},
                    "nested": {"properties": {"x": {"type": ["number", "null"]}}},
                    "free": {"type": "object"},
                },
                "required": ['we"ird\\name'],
            },
        )
        text = tools_grammar([*builtin_tools(), odd], lang=lang)
        body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1, "grammar": text}
        assert _post(base_url, body).status_code == 200
        written = Action(
            tool=odd.name, input={'we"ird\\name': "e\nf", "t\tab": ["ab"]}, thought="ok"
        )
        assert matches(text, step_text(written, lang))

    def test_a_pattern_makes_a_grammar_the_server_accepts_and_obeys(self, base_url: str) -> None:
        """Escapes, classes, CJK and alternation, as llama.cpp reads them; the reply's value
        matches its pattern."""
        words = r"^(?:population|of|Taipei|台|北|2020|[ ,.]){1,12}$"
        patterns = {
            "code": r"^[A-Z]{3}-\d{2}$",
            "quoted": r'^"[^"\\]*"\\?$',
            "odd": r"^[\]\[^\-]{1,3}\.x{2,4}$",
            "held": words,
        }
        tool = Tool.from_schema(
            "coded",
            "Use it.",
            {"properties": {k: {"type": "string", "pattern": p} for k, p in patterns.items()},
             "required": list(patterns)},
        )  # fmt: skip
        text = tools_grammar([tool], tool_choice="required")
        messages = [{"role": "user", "content": "Call the tool."}]
        reply = _post(base_url, {"messages": messages, "max_tokens": 600, "grammar": text})
        assert reply.status_code == 200, reply.text
        choice = reply.json()["choices"][0]
        assert choice["finish_reason"] == "stop", choice  # each value is bounded
        step = parse(choice["message"]["content"])
        assert step.kind == "action", step
        for name, pattern in patterns.items():
            assert re.search(pattern, step.input[name]), (name, step.input[name])
        tool.parse_arguments(step.input)

    def test_every_bfcl_schema_makes_a_grammar_the_server_accepts(self, base_url: str) -> None:
        from test_bfcl_schemas import BFCL, _functions, _tool

        if not BFCL.is_dir():
            pytest.skip(f"BFCL sample data not found at {BFCL} (kept outside the project)")
        batches: list[list[Tool]] = [[]]
        for function in _functions():
            tool = _tool(function)
            if len(batches[-1]) == 50 or any(t.name == tool.name for t in batches[-1]):
                batches.append([])
            batches[-1].append(tool)
        assert sum(len(b) for b in batches) > 550
        messages = [{"role": "user", "content": "Hi"}]
        for batch in batches:
            body = {"messages": messages, "max_tokens": 1, "grammar": tools_grammar(batch)}
            reply = _post(base_url, body)
            if reply.status_code != 200:  # find the one tool the server refused
                for tool in batch:
                    single = {**body, "grammar": tools_grammar([tool])}
                    assert _post(base_url, single).status_code == 200, tool.name
            assert reply.status_code == 200, reply.text
