"""Round four's rules of tool rendering, the tool budget's index and two always-on rules: a
hostile schema's prompt entry has a bounded size and says what it leaves out (validation
still reads the whole schema); the budget's index is built once per tool set; an answer
that is literally a placeholder's words ("The Answer", a band) can be given; and a client's
polling tool can be called again through `textreact serve`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import bm25s
import pytest
from serve_support import (
    CLOCK,
    QUESTION,
    WEATHER,
    client,
    closing_clients,
    proxy,
    sent_messages,
    streamed,
    text,
)

from textreact import Agent, ScriptedModel, Tool, parse, prompt
from textreact.errors import ConfigError, ToolArgumentError
from textreact.serve.cli import CONFIG_VARIABLE, app_from_environment, handed_over
from textreact.serve.config import ServeConfig
from textreact.tools import ToolBox, builtin_tools
from textreact.verdict import judge

close_clients = pytest.fixture(autouse=True)(closing_clients)

#: What one hostile tool's entry may cost at most: far less than the 3.2 MB it cost.
ENTRY_BOUND = 24_000


def _tool(properties: dict, required: list[str], name: str = "hostile") -> Tool:
    schema = {"type": "object", "properties": properties, "required": required}
    return Tool.from_schema(name, "A tool from an untrusted server.", schema)


# class 7: a hostile schema's entry in the prompt


def test_an_enum_of_200000_values_shows_its_first_values_and_counts_the_rest() -> None:
    values = [f"value{i}" for i in range(200_000)]
    hostile = _tool({"v": {"type": "string", "enum": values}}, ["v"])
    entry = hostile.text_spec()
    assert len(entry) < ENTRY_BOUND
    shown = re.findall(r'"value\d+"', entry.splitlines()[1])
    assert shown and shown == [f'"value{i}"' for i in range(len(shown))]
    assert f"… and {200_000 - len(shown):,} more" in entry
    assert len(prompt.system_prompt([hostile])) < ENTRY_BOUND + 5_000
    # validation still reads all of them: a value never shown is a valid call
    assert hostile.parse_arguments({"v": "value199999"}) == {"v": "value199999"}
    with pytest.raises(ToolArgumentError) as refused:
        hostile.parse_arguments({"v": "value200000"})
    assert len(str(refused.value)) < ENTRY_BOUND  # the error names the type the same way


def test_5000_properties_list_the_required_ones_and_count_the_rest() -> None:
    properties = {f"p{i}": {"type": "string", "description": f"field {i}"} for i in range(5_000)}
    required = ["p4998", "p4999"]  # last in the schema: they are given room first
    hostile = _tool(properties, required)
    entry = hostile.text_spec()
    assert len(entry) < ENTRY_BOUND
    listed = re.findall(r"^  (p\d+) \(", entry, re.MULTILINE)
    assert 0 < len(listed) <= 100 and {"p4998", "p4999"} <= set(listed)
    assert listed == sorted(listed, key=lambda name: int(name[1:]))  # the schema's order
    left = 5_000 - len(listed)
    assert f"… and {left:,} more arguments, not listed here (0 of them required)" in entry
    assert "a call is checked against all of them" in entry
    # an argument never listed is a valid call, and a required one is still required
    call = {"p4998": "a", "p4999": "b", "p2500": "c"}
    assert hostile.parse_arguments(call) == call
    with pytest.raises(ToolArgumentError, match="p4999"):
        hostile.parse_arguments({"p4998": "a"})


def test_long_descriptions_fill_the_room_and_the_rest_are_counted() -> None:
    """The character backstop: 60 arguments of 1,000-character descriptions (the most an MCP
    server's description is kept) list as many as fit, and count the others."""
    properties = {f"a{i}": {"type": "string", "description": "word " * 200} for i in range(60)}
    entry = _tool(properties, ["a59"]).text_spec()
    assert len(entry) < ENTRY_BOUND
    listed = re.findall(r"^  (a\d+) \(", entry, re.MULTILINE)
    assert "a59" in listed and 0 < len(listed) < 60
    assert f"… and {60 - len(listed)} more arguments, not listed here (0 of them" in entry


def test_nested_unions_and_arrays_of_huge_enums_are_bounded_too() -> None:
    union = {"anyOf": [{"const": i} for i in range(10_000)]}
    items = {"type": "array", "items": {"enum": list(range(200_000))}}
    nested = {"anyOf": [{"anyOf": [{"const": f"{i}-{j}"} for j in range(300)]} for i in range(300)]}
    hostile = _tool({"u": union, "items": items, "nested": nested}, ["u"])
    entry = hostile.text_spec()
    assert len(entry) < ENTRY_BOUND
    assert "… and 9," in entry and "more" in entry
    call = {"u": 9_999, "items": [199_999]}
    assert hostile.parse_arguments(call) == call


def test_an_example_of_thousands_of_characters_is_cut_with_a_note() -> None:
    properties = {f"p{i}": {"type": "string"} for i in range(1_000)}
    hostile = _tool(properties, list(properties))
    whole = json.dumps(hostile.example, ensure_ascii=False)
    assert len(whole) > 10_000
    example_line = hostile.text_spec().splitlines()[-1]
    assert example_line.startswith("  Example input: " + whole[:100])
    assert f"(cut here: the whole example is {len(whole):,} characters)" in example_line
    assert len(example_line) < 5_000
    # the format section shows the first tool's example that fits
    calculator = builtin_tools()[0]
    section = prompt.format_section([hostile, calculator])
    assert '{"expression": "(12 + 30) * 4"}' in section and len(section) < 5_000


def test_an_ordinary_tool_s_entry_is_what_it_always_was() -> None:
    """Below every bound nothing changes: the entry of a tool with an enum, a union, an array
    and an optional argument, byte for byte."""
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "the city, e.g. 'Paris'"},
            "unit": {"enum": ["celsius", "fahrenheit", "kelvin"]},
            "days": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["city", "unit"],
    }
    entry = Tool.from_schema("weather", "Use it for the weather.", schema).text_spec()
    assert entry == (
        "weather: Use it for the weather.\n"
        "  city (string, required): the city, e.g. 'Paris'\n"
        '  unit (one of "celsius", "fahrenheit", "kelvin", required)\n'
        "  days (integer or null, optional)\n"
        "  tags (array of string, optional)\n"
        '  Example input: {"city": "Paris", "unit": "celsius"}'
    )


# class 9: the tool budget's index, once per tool set


def _made(i: int, words: str = "") -> Tool:
    schema = {"type": "object", "properties": {"q": {"type": "string", "description": "what"}}}
    description = f"Look up record {i} of the register {words}".strip()
    return Tool.from_schema(f"tool_{i}", description, schema, fn=lambda **_: "ok")


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many tools each BM25 index built had: the real build, counted."""
    counted: list[int] = []
    index = bm25s.BM25.index

    def counting(self, corpus, *args, **kwargs):
        counted.append(len(corpus))
        return index(self, corpus, *args, **kwargs)

    monkeypatch.setattr(bm25s.BM25, "index", counting)
    return counted


def _run(tools: list[Tool]) -> None:
    script = ScriptedModel(["Thought: done.\nFinal Answer: ok"])
    assert Agent(script, tools, max_tools=3).run("record 7 of the register").answer == "ok"


def test_the_index_is_built_once_per_tool_set(builds: list[int]) -> None:
    tools = [_made(i, "of births in the parish of Saint Anne") for i in range(60)]
    _run(tools)
    _run(tools)
    _run(list(tools))  # the same tools in another list, as another agent would hold them
    assert builds == [60]


def test_a_changed_tool_set_is_indexed_anew(builds: list[int]) -> None:
    tools = [_made(i, "of deaths in the parish of Saint Mark") for i in range(40)]
    _run(tools)
    _run([*tools, _made(99)])  # one more tool
    reworded = [_made(i, "of deaths in the parish of Saint Luke") for i in range(40)]
    _run(reworded)  # the same names, other words
    _run(tools)  # the first set again: still kept
    assert builds == [40, 41, 40]


# class 11 (a): the placeholder rule, narrowed to a copy of the form

BAND = "Which band released the album Raise a Little Hell?"
SEARCH_RESULT = "Raise a Little Hell is the third album by the rock band The Answer (2011)."


def _search() -> Tool:
    schema = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    return Tool.from_schema("search", "Search the web.", schema, fn=lambda query: SEARCH_RESULT)


def _answer(text: str) -> str:
    return f"Thought: I now know the final answer.\nFinal Answer: {text}"


SEARCH = 'Thought: I should search.\nAction: search\nAction Input: {"query": "Raise a Little Hell"}'


def test_an_answer_a_tool_result_holds_is_taken_though_it_reads_as_the_placeholder() -> None:
    script = ScriptedModel([SEARCH, _answer("The Answer")])
    result = Agent(script, [_search()]).run(BAND)
    assert (result.answer, result.stop_reason) == ("The Answer", "final_answer")
    assert len(script.requests) == 2 and not any(step.is_error for step in result.steps)


def test_a_placeholder_answer_given_again_after_it_was_refused_is_believed() -> None:
    """From memory, no result to hold it: refused once (the copy is caught), then, said
    again, taken as the answer (`答案`, "the answer" in Chinese, may be a title)."""
    script = ScriptedModel([_answer("答案"), _answer("答案")])
    result = Agent(script, [_search()]).run("电影《答案》的片名是什么？")
    assert (result.answer, result.stop_reason) == ("答案", "final_answer")
    assert result.steps[0].is_error and "placeholder" in (result.steps[0].observation or "")


@pytest.mark.parametrize(
    "found",
    [
        "2",  # no words in common
        "The answers differ from source to source.",  # inside a longer word
        "theanswer.example.com is down",
        "According to the docs, the answer is 42.",  # the copy's own words, in prose
    ],
)
def test_a_copied_placeholder_is_still_refused_where_no_result_holds_it(found: str) -> None:
    lookup = Tool.from_schema("lookup", "Look it up.", {"properties": {}}, fn=lambda: found)
    called = "Thought: x\nAction: lookup\nAction Input: {}"
    script = ScriptedModel([called, _answer("the answer"), _answer("42")])
    result = Agent(script, [lookup]).run("What is six times seven?")
    assert (result.answer, result.stop_reason) == ("42", "final_answer")
    assert result.steps[1].is_error and "placeholder" in (result.steps[1].observation or "")


def test_the_judgement_reads_what_the_conversation_held() -> None:
    from textreact.verdict import Earlier

    box = ToolBox(builtin_tools())
    step = parse(_answer("The Answer"))
    assert judge(step, "stop", "auto", box).kind == "format_error"
    held = Earlier(results=(SEARCH_RESULT,))
    assert judge(step, "stop", "auto", box, earlier=held).kind == "answer"
    assert judge(step, "stop", "auto", box, earlier=Earlier(refused=True)).kind == "answer"
    other = Earlier(results=("no band of that name",))
    assert judge(step, "stop", "auto", box, earlier=other).kind == "format_error"
    copied = parse(_answer("the answer"))  # the copy, beside prose that uses the same words
    prose = Earlier(results=("According to the docs, the answer is 42.",))
    assert judge(copied, "stop", "auto", box, earlier=prose).kind == "format_error"


ASKED_SEARCH = [
    {"role": "user", "content": BAND},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "s1", "type": "function",
             "function": {"name": "search", "arguments": '{"query": "Raise a Little Hell"}'}},
        ],
    },
    {"role": "tool", "tool_call_id": "s1", "content": SEARCH_RESULT},
]  # fmt: skip
SEARCH_SPEC = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
}


def test_serve_gives_an_answer_its_tool_results_hold_without_a_reask() -> None:
    with proxy([text(_answer("The Answer"))]) as (upstream, url):
        reply = client(url).chat.completions.create(
            model="m", messages=ASKED_SEARCH, tools=[SEARCH_SPEC]
        )
    assert reply.choices[0].message.content == "The Answer"
    assert len(upstream.posts) == 1


def test_serve_believes_a_placeholder_answer_given_again_after_the_reask() -> None:
    replies = [text(_answer("The Answer")), text(_answer("The Answer"))]
    with proxy(replies) as (upstream, url):
        reply = client(url).chat.completions.create(model="m", messages=QUESTION, tools=[WEATHER])
    assert reply.choices[0].message.content == "The Answer"  # no "[textreact: ...]" note
    assert len(upstream.posts) == 2 and "placeholder" in sent_messages(upstream, 1)[-1]["content"]
    with proxy([streamed(_answer("The Answer")), streamed(_answer("The Answer"))]) as (_, url):
        chunks = client(url).chat.completions.create(
            model="m", messages=QUESTION, tools=[WEATHER], stream=True
        )
        content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == "The Answer"


def test_serve_still_reasks_a_copied_placeholder() -> None:
    with proxy([text(_answer("the answer")), text(_answer("18 °C"))]) as (upstream, url):
        reply = client(url).chat.completions.create(model="m", messages=QUESTION, tools=[WEATHER])
    assert reply.choices[0].message.content == "18 °C"
    assert "placeholder" in sent_messages(upstream, 1)[-1]["content"]


# class 11 (b): a client's polling tool through serve

POLLED = [
    {"role": "user", "content": "Tell me the time in Tokyo again in a moment."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "t1", "type": "function",
             "function": {"name": "get_time", "arguments": '{"zone": "Asia/Tokyo"}'}},
        ],
    },
    {"role": "tool", "tool_call_id": "t1", "content": "09:14"},
]  # fmt: skip
POLL = 'Thought: Again.\nAction: get_time\nAction Input: {"zone": "Asia/Tokyo"}'


@pytest.mark.parametrize("names", [("get_time",), ("*",)])
def test_an_uncached_tool_s_repeated_call_goes_straight_to_the_client(names) -> None:
    with proxy([text(POLL)], uncached_tools=names) as (upstream, url):
        reply = client(url).chat.completions.create(
            model="m", messages=POLLED, tools=[WEATHER, CLOCK]
        )
    (call,) = reply.choices[0].message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_time",
        {"zone": "Asia/Tokyo"},
    )
    assert len(upstream.posts) == 1  # no "do not repeat the call" first
    with proxy([streamed(POLL)], uncached_tools=names) as (upstream, url):
        chunks = list(
            client(url).chat.completions.create(
                model="m", messages=POLLED, tools=[WEATHER, CLOCK], stream=True
            )
        )
    assert chunks[-1].choices[0].finish_reason == "tool_calls" and len(upstream.posts) == 1


@pytest.mark.parametrize("names", [(), ("get_weather",)])
def test_any_other_tool_s_repeated_call_is_still_answered_once_from_the_earlier_result(
    names,
) -> None:
    answer = _answer("It is 09:14 in Tokyo.")
    settings = {"uncached_tools": names} if names else {}  # the default, as it always was
    with proxy([text(POLL), text(answer)], **settings) as (upstream, url):
        reply = client(url).chat.completions.create(
            model="m", messages=POLLED, tools=[WEATHER, CLOCK]
        )
    assert reply.choices[0].message.content == "It is 09:14 in Tokyo."
    said = sent_messages(upstream, 1)[-1]["content"]
    assert "already called get_time" in said and "09:14" in said


def test_the_flag_names_the_uncached_tools_and_workers_get_them(monkeypatch) -> None:
    from textreact.cli import build_parser
    from textreact.serve.cli import config_from

    argv = ["serve", "--uncached-tool", "get_time", "--uncached-tool", "job_status"]
    config = config_from(build_parser().parse_args(argv), {"TEXTREACT_UPSTREAM": "http://h/v1"})
    assert config.uncached_tools == ("get_time", "job_status")
    with handed_over(config) as variables:
        handed = json.loads(Path(variables[CONFIG_VARIABLE]).read_text(encoding="utf-8"))
        assert handed["uncached_tools"] == ["get_time", "job_status"]
        monkeypatch.setenv(CONFIG_VARIABLE, variables[CONFIG_VARIABLE])
        assert callable(app_from_environment())  # a worker reads them back (a tuple)
    with pytest.raises(ConfigError, match="uncached_tools must be a tuple of tool names"):
        ServeConfig("http://h/v1", uncached_tools=("",))


@pytest.mark.parametrize(("lang", "copied"), [("en", "the answer"), ("zh", "答案")])
def test_the_native_protocol_explains_a_copied_placeholder(lang: str, copied: str) -> None:
    """The placeholder rule judges native replies too; the native protocol words its answer
    without the text protocol's keywords, and had no words for this one (a ConfigError)."""
    from textreact.steps import Completion

    model = ScriptedModel([Completion(copied), Completion("42")])
    result = Agent(model, [_search()], protocol="native", lang=lang).run("q")
    assert result.answer == "42" and result.stop_reason == "final_answer"
    refused = result.steps[0].observation
    assert refused and "Final Answer" not in refused and "最终答案" not in refused


@pytest.mark.parametrize("protocol", ["native", "own"])
def test_a_call_repeated_twice_is_asked_for_the_answer_in_its_protocols_words(
    protocol: str,
) -> None:
    """The loop's note to a model that repeats a call twice over asks for the answer; under a
    protocol with no `Final Answer:` label it does not name one (the text protocol's words
    had reached native and own-format models)."""
    from textreact.protocols import OwnFormatProtocol

    same = ScriptedModel.calls(("search", {"query": "x"}))
    if protocol == "own":
        same = '{"name": "search", "arguments": {"query": "x"}}'
    chosen = OwnFormatProtocol(family="hermes") if protocol == "own" else protocol
    model = ScriptedModel([same, same, same, "done"])
    result = Agent(model, [_search()], protocol=chosen).run("q")
    asked = result.steps[2].observation or ""
    assert result.answer == "done" and "best answer" in asked
    assert "Final Answer" not in asked
