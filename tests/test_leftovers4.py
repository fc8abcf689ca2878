"""Round three's leftovers (issue 36, class 10): a body over serve's limit is a 413 the client
reads, then a clean end, however it keeps sending; `--json` and transcripts keep a refused
input an object, its numbers as written (`1e-400`); an async tool's Ctrl-C ends `arun` as it
ends `run`; what the parser reads as a blank is one set, so a run before a step reads the same
at any length; the calculator refuses deep nesting as nesting; and docs/serve.md's table of
limits holds the numbers the code enforces. Serve is driven over raw sockets on loopback."""

from __future__ import annotations

import asyncio
import importlib
import json
import re
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from fakeserver import FakeServer, Reply, chat_completion
from serve_support import proxy, text

import textreact.serve
from textreact import Agent, ScriptedModel, jsonline, parse, tool
from textreact.cli import EXIT_OK, main
from textreact.errors import CalculatorError
from textreact.parser import SCAN_LIMIT
from textreact.parsing.blanks import BLANKS
from textreact.parsing.window import Window
from textreact.serve.body import MAX_BODY_BYTES
from textreact.serve.config import ServeConfig
from textreact.serve.protocol import DRAIN_BYTES
from textreact.tools.calculator import evaluate
from textreact.transcript import read_transcript

ROOT = Path(__file__).resolve().parents[1]

# --- a body over the limit: a 413 the client reads, then a clean end -------------------------

BODY_BYTES = 50 * 1024 * 1024  # the size that was reset
PIECE = b"x" * (1024 * 1024)


@pytest.fixture(scope="module")
def served():
    # a long --client-timeout: the end after the 413 is the server's doing, not its deadline's
    with proxy([text("Final Answer: fine")] * 4, client_timeout=60) as (upstream, url):
        yield upstream, url


def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=20)


def _head(framing: str, length: int = BODY_BYTES) -> bytes:
    size = "Transfer-Encoding: chunked" if framing == "chunked" else f"Content-Length: {length}"
    return (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
        f"Content-Type: application/json\r\n{size}\r\n\r\n"
    ).encode()


def _send(sock: socket.socket, framing: str, total: int) -> int:
    """Send `total` bytes of body, as a client that sends it all before it reads; the bytes
    sent before the server stopped taking them."""
    sent = 0
    try:
        while sent < total:
            piece = b"%x\r\n%s\r\n" % (len(PIECE), PIECE) if framing == "chunked" else PIECE
            sock.sendall(piece)
            sent += len(PIECE)
        if framing == "chunked":
            sock.sendall(b"0\r\n\r\n")
    except OSError:  # the server closed the connection: what it answered is still readable
        pass
    return sent


def _read(sock: socket.socket) -> tuple[bytes, str]:
    """What the server sent, and how the connection ended: "closed" (the server's end came
    after its answer), "reset", or "open" (nothing more within the socket's timeout)."""
    data = b""
    sock.settimeout(10)
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        return data, "reset"
    except TimeoutError:
        return data, "open"
    return data, "closed"


def _answer(data: bytes) -> tuple[str, dict[str, str], dict[str, Any]]:
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines)
    return status, headers, json.loads(body)


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_body_over_the_limit_is_a_413_the_client_reads_then_a_clean_end(served, framing) -> None:
    upstream, url = served
    before = len(upstream.posts)
    with _connect(url) as sock:
        sock.sendall(_head(framing))
        assert _send(sock, framing, BODY_BYTES) == BODY_BYTES  # the client sent it all
        data, end = _read(sock)
    status, headers, body = _answer(data)
    assert status.startswith("HTTP/1.1 413")
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["code"] == "request_too_large"
    assert str(MAX_BODY_BYTES) in body["error"]["message"]
    assert headers.get("connection") == "close" and end == "closed"
    assert len(upstream.posts) == before


def test_what_follows_a_refused_body_is_read_only_so_far(served) -> None:
    """A client declaring a terabyte and sending until it is stopped: the server reads a
    bounded amount after its 413, then ends the connection; the 413 is still there to read."""
    _, url = served
    with _connect(url) as sock:
        sock.sendall(_head("content-length", 1 << 40))
        sent = _send(sock, "content-length", 4 * DRAIN_BYTES)
        data, _ = _read(sock)
    # socket buffers on both sides hold a few MiB more than the server read
    assert sent < 2 * DRAIN_BYTES, sent
    status, _, body = _answer(data)
    assert status.startswith("HTTP/1.1 413") and body["error"]["code"] == "request_too_large"


# --- --json and transcripts keep a refused input an object -----------------------------------

CALL = (
    "Thought: scale it\nAction: calculator\n"
    'Action Input: {"expression": "2+2", "scale": 1e-400, "big": 1e400, "exact": 1.10}'
)
WRITTEN = '{"expression": "2+2", "scale": 1e-400, "big": 1e400, "exact": 1.10}'


def test_run_json_keeps_an_input_with_1e_400_an_object(capsys) -> None:
    """Cause: no float holds 1e-400 (it reads as 0.0), so the call is refused and the loop
    keeps its input as the text written; --json printed that text as a string."""
    replies = [Reply(body=chat_completion(CALL)), Reply(body=chat_completion("Final Answer: 4"))]
    with FakeServer(replies) as server:
        argv = ["run", "q", "--base-url", server.base_url, "--model", "m", "--json"]
        assert main(argv) == EXIT_OK
    out = capsys.readouterr().out
    step = json.loads(out)["steps"][0]
    assert isinstance(step["input"], dict) and step["input"]["expression"] == "2+2"
    assert step["is_error"] and "too small" in step["observation"]  # still refused
    compact = re.sub(r"\s+", " ", out)
    assert '"scale": 1e-400, "big": 1e400, "exact": 1.10' in compact  # the numbers as written


def test_a_transcript_keeps_a_refused_input_an_object(tmp_path) -> None:
    path = tmp_path / "run.jsonl"
    Agent(ScriptedModel([CALL, "Final Answer: 4"])).run("q", transcript=path)
    line = path.read_text(encoding="utf-8").splitlines()[1]
    assert WRITTEN in line
    record = read_transcript(path)[1]
    assert record["type"] == "step" and isinstance(record["input"], dict)


@pytest.mark.parametrize(
    "written",
    [
        '{"a": 1e-400}',
        '{"a": [1e400, -2.50e-999, 0.1], "b": {"c": 12345678901234567890}}',
        '{"a": "textreact-number-0", "b": 1.0}',
    ],
)
def test_numbers_read_as_written_are_written_back_the_same(written) -> None:
    assert jsonline.encode(jsonline.as_written(written)) == written
    assert jsonline.dumps({"input": jsonline.as_written(written)}) == f'{{"input": {written}}}'


@pytest.mark.parametrize("text", ['{"a": 1, "a": 2}', '{"a": NaN}', '{"a": Infinity}', "{"])
def test_what_is_not_one_json_reading_is_refused(text) -> None:
    with pytest.raises(ValueError):
        jsonline.as_written(text)


# --- an async tool's Ctrl-C ends arun as it ends run -----------------------------------------


@tool
async def interrupted(x: str) -> str:
    """A tool the user stops with Ctrl-C."""
    raise KeyboardInterrupt


@tool
def interrupted_sync(x: str) -> str:
    """The same, synchronous."""
    raise KeyboardInterrupt


def _agent(which: Any) -> Agent:
    call = f'Action: {which.name}\nAction Input: {{"x": "a"}}'
    return Agent(ScriptedModel([call, "Final Answer: never"]), [which])


@pytest.mark.parametrize("which", [interrupted, interrupted_sync], ids=["async", "sync"])
def test_an_async_tools_ctrl_c_ends_arun_as_run_ends(which, tmp_path) -> None:
    ran = _agent(which).run("q")
    try:
        result = asyncio.run(_agent(which).arun("q", transcript=tmp_path / "run.jsonl"))
    except KeyboardInterrupt:
        pytest.fail("the KeyboardInterrupt left the event loop instead of ending the run")
    assert (result.stop_reason, result.answer) == (ran.stop_reason, ran.answer)
    assert result.stop_reason == "interrupted"
    assert read_transcript(tmp_path / "run.jsonl")[-1]["stop_reason"] == "interrupted"


# --- the parser: one set of blanks, the same step at any run length --------------------------

ANSWER = "Final Answer: 4"
#: Characters the scan reads as text (a control character, a word joiner, a direction mark).
TEXT_CHARACTERS = ["\x01", "\x7f", "\u2060", "\u200e"]


def _took_the_keyword(text: str) -> bool:
    step = parse(text)
    return step.kind == "final" and step.answer == "4"  # type: ignore[union-attr]


@pytest.mark.parametrize("char", sorted(BLANKS) + TEXT_CHARACTERS, ids=ascii)
def test_a_run_before_a_step_reads_the_same_at_any_length(char: str) -> None:
    """A run of blanks before the step is nothing at any length; a run of text is text at any
    length (a long run of `\\x01` or `\\r` was skipped as blank, a short one read as text)."""
    read = [_took_the_keyword(char * n + ANSWER) for n in (1, 1_000, 20_000, 100_000)]
    assert read == [char in BLANKS] * 4


@pytest.mark.parametrize("char", sorted(BLANKS), ids=ascii)
def test_what_a_value_is_stripped_of_is_a_blank_to_the_scan(char: str) -> None:
    """`\\rFinal Answer: 4` was the answer "Final Answer: 4": the scan read `\\r` as text and
    the strip took it off the answer."""
    assert _took_the_keyword(char + ANSWER) and _took_the_keyword(f"Thought: x{char}\n{ANSWER}")


@pytest.mark.parametrize("count", [1, 10, 100_000])
def test_blanks_before_a_reasoning_block_leave_it_reasoning(count: int) -> None:
    step = parse("\x00" * count + "<think>plan it</think>" + ANSWER)
    assert step.kind == "final" and step.answer == "4"  # type: ignore[union-attr]


@pytest.mark.parametrize("char", ["\x00", " ", "\x01", "\u2060"], ids=ascii)
def test_the_scan_covers_at_most_its_limit_after_the_blanks(char: str) -> None:
    text = char * 100_000 + ANSWER
    window = Window(text)
    start = window.start or 0
    assert window.stop - start <= SCAN_LIMIT
    assert start == (100_000 if char in BLANKS else 0)


# --- the calculator refuses deep nesting as nesting ------------------------------------------


def _nested(shape: str, levels: int) -> str:
    return {
        "parentheses": "(" * levels + "1" + ")" * levels,
        "signs": "-" * levels + "1",
        "signs and parentheses": "-(" * levels + "1" + ")" * levels,
        "power tower": "2**" * levels + "2",
        "calls": "f(" * levels + "1" + ")" * levels,
    }[shape]


SHAPES = ["parentheses", "signs", "signs and parentheses", "power tower", "calls"]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("levels", [13, 40, 60])
def test_an_expression_nested_past_the_bound_is_refused_as_nested(shape, levels) -> None:
    with pytest.raises(CalculatorError, match="nested too deeply"):
        evaluate(_nested(shape, levels))  # at most 181 characters: within the length limit


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("levels", [1_000, 100_000])
def test_deeper_still_is_refused_for_its_length_before_it_is_parsed(shape, levels) -> None:
    with pytest.raises(CalculatorError, match="characters long"):
        evaluate(_nested(shape, levels))


def test_a_long_flat_sum_is_still_too_long_not_nested() -> None:
    with pytest.raises(CalculatorError, match="more than 50 parts"):
        evaluate("1+" * 60 + "1")
    assert evaluate("-" * 11 + "1") == -1  # within the bound: an answer


# --- docs/serve.md's Limits table holds the numbers the code enforces ------------------------


def _limits_table() -> list[list[str]]:
    doc = (ROOT / "docs" / "serve.md").read_text(encoding="utf-8")
    section = doc.split("\n## Limits\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def _number(written: str) -> float:
    match = re.match(r"([\d,]+)\s*(MiB)?", written)
    assert match is not None, written
    value = int(match[1].replace(",", ""))
    return value * 1024 * 1024 if match[2] else value


def _constant(where: str) -> Any:
    """`textreact.serve.body.MAX_BODY_BYTES` or `--flag (ServeConfig.field)` -> its value;
    None for a row that names no constant."""
    setting = re.search(r"\(`ServeConfig\.(\w+)`\)", where)
    if setting:
        return getattr(ServeConfig, setting[1])
    named = re.fullmatch(r"`(textreact\.[\w.]+)\.([A-Z_]+)`", where)
    if named is None:
        return None
    return getattr(importlib.import_module(named[1]), named[2])


def test_every_number_in_the_limits_table_is_the_codes() -> None:
    checked = 0
    for what, most, where, *_ in _limits_table():
        value = _constant(where)
        if value is not None:
            assert _number(most) == value, (what, most, value)
            checked += 1
    assert checked >= 10


def test_every_limit_constant_of_serve_is_in_the_table() -> None:
    named = {row[2] for row in _limits_table()}
    package = Path(textreact.serve.__file__).parent
    for path in sorted(package.glob("*.py")):
        module = f"textreact.serve.{path.stem}"
        for name in re.findall(r"^(MAX_\w+|DRAIN_\w+)\b", path.read_text(), re.MULTILINE):
            assert f"`{module}.{name}`" in named, f"{module}.{name} is not in docs/serve.md"
