"""A schema's `pattern` is ECMA-262 (JSON Schema's dialect) wherever arguments are checked: in
the text protocol, in native tool calls and behind `textreact serve`. Python's reading differs
(`$` before a final newline, Unicode `\\d \\w`, `.` across `\\r`), and each difference would let
a value the schema forbids reach the tool."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from serve_support import QUESTION, client, closing_clients, proxy, text

from textreact import Agent, ScriptedModel, Tool
from textreact.errors import ToolArgumentError
from textreact.tools.ecma import PatternError, to_regex
from textreact.tools.schema import compiled_pattern

close_clients = pytest.fixture(autouse=True)(closing_clients)

#: (pattern, a value ECMA-262 refuses that Python's reading takes, a value both take)
DIFFERENCES = [
    (r"^[a-z]+\.txt$", "evil.txt\n", "notes.txt"),
    (r"^\d{3}$", "١٢٣", "123"),  # Arabic-Indic digits are \d to Python only
    (r"^\w+$", "héllo", "hello_1"),
    (r"^a.b$", "a\rb", "a-b"),  # `.` stops at every line terminator
    (r"^a.b$", "a\u2028b", "a b"),
    (r"^\bcat$", "écat", "cat"),  # \b on ASCII word characters: é is none
    (r"^[^\W]+$", "ünï", "uni"),
    (r"^x{,3}$", "xx", "x{,3}"),  # a brace that opens no repetition is a brace
    (r"^[]?$", "]", ""),  # [] matches nothing
    (r"^ok\Z", "ok\n", "ok"),  # \Z, which ECMA-262 lacks, is the end of the text
]


@pytest.mark.parametrize(("pattern", "refused", "taken"), DIFFERENCES)
def test_the_validator_reads_a_pattern_as_ecma_262(pattern: str, refused: str, taken: str):
    compiled = compiled_pattern(pattern)
    assert compiled is not None
    assert compiled.search(taken) is not None
    assert compiled.search(refused) is None


@pytest.mark.parametrize(
    ("pattern", "value"),
    [
        (r"^\s$", "\u00a0"),  # ECMA-262's white space: no-break space, BOM, line separators
        (r"^\s$", "\ufeff"),
        (r"^[^]$", "\n"),  # [^] is any character
        (r"^\u{1F600}$", "😀"),
        (r"^\uD83D\uDE00$", "😀"),  # a surrogate pair is one character
        (r"^(?<q>['\x22])x\k<q>$", "'x'"),
        (r"^\cJ$", "\n"),
        (r"^\p{L}+$", "Zoë"),
        (r"^[\d-]+$", "1-2"),  # a hyphen after a class escape is a hyphen
    ],
)
def test_ecma_262_escapes_and_classes_are_read(pattern: str, value: str) -> None:
    compiled = compiled_pattern(pattern)
    assert compiled is not None and compiled.search(value) is not None


@pytest.mark.parametrize("pattern", [r"\h+", r"\N{DIGIT ONE}", "[a-z", "x\\", r"[\A]"])
def test_what_ecma_262_would_not_compile_is_refused_with_a_reason(pattern: str) -> None:
    with pytest.raises(PatternError, match=r"ECMA-262|never closed|backslash"):
        to_regex(pattern)
    assert compiled_pattern(pattern) is None  # and left unchecked, as before, never a crash


FILES: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "pattern": r"^[a-z]+\.txt$"}},
    "required": ["path"],
}


def _reader() -> Tool:
    return Tool.from_schema("read_file", "Read a file.", FILES, fn=lambda path: f"read {path}")


@pytest.mark.parametrize("given", ["evil.txt\n", "évil.txt", "a.txt\r"])
def test_a_tool_refuses_what_its_pattern_forbids(given: str) -> None:
    with pytest.raises(ToolArgumentError, match="pattern"):
        _reader().parse_arguments({"path": given})
    with pytest.raises(ToolArgumentError, match="pattern"):
        _reader().parse_arguments(json.dumps({"path": given}))


@pytest.mark.parametrize("protocol", ["text", "native"])
def test_no_protocol_runs_a_call_the_pattern_forbids(protocol: str) -> None:
    arguments = {"path": "evil.txt\n"}
    call = (
        ScriptedModel.calls(("read_file", arguments))
        if protocol == "native"
        else f"Action: read_file\nAction Input: {json.dumps(arguments)}"
    )
    answer = "done" if protocol == "native" else "Final Answer: done"
    model = ScriptedModel([call, answer])
    result = Agent(model, [_reader()], protocol=protocol).run("Read evil.txt")
    (turn, _) = result.steps
    assert turn.is_error and turn.result is not None and turn.result.error_kind == "arguments"
    assert "read evil" not in (turn.observation or "")


def test_the_proxy_does_not_send_a_call_the_pattern_forbids() -> None:
    reader = {"type": "function", "function": {"name": "read_file", "parameters": FILES}}
    bad = 'Action: read_file\nAction Input: {"path": "evil.txt\\n"}'
    good = 'Action: read_file\nAction Input: {"path": "notes.txt"}'
    with proxy([text(bad), text(good)]) as (upstream, url):
        reply = client(url).chat.completions.create(model="m", messages=QUESTION, tools=[reader])
    (call,) = reply.choices[0].message.tool_calls
    assert json.loads(call.function.arguments) == {"path": "notes.txt"}
    assert len(upstream.posts) == 2  # the forbidden call was sent back to the model


def test_the_async_driver_refuses_it_too() -> None:
    model = ScriptedModel(
        ['Action: read_file\nAction Input: {"path": "a.txt\\n"}', "Final Answer: x"]
    )
    result = asyncio.run(Agent(model, [_reader()]).arun("Read a.txt"))
    assert result.steps[0].is_error
