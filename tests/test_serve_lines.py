"""An SSE line ends at CR, LF or CRLF only: a raw U+2028, U+2029 or NEL inside a streamed
event's JSON is part of the event, never a cut that makes it "not JSON" and loses the answer.
What the proxy writes (events, bodies) and what transcripts write hold no such character raw,
so a reader that splits lines as `str.splitlines` does (httpx's `iter_lines`) reads them whole."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2 as httpx
import pytest
from fakeserver import Reply
from serve_support import QUESTION, WEATHER, proxy

from textreact.serve import sse
from textreact.transcript import Transcript, read_transcript

SEPARATORS = ["\u2028", "\u2029", "\x85", "\x1c", "\x0b"]
SSE_TYPE = {"content-type": "text/event-stream"}


def _upstream_stream(pieces: list[str], newline: str = "\n") -> Reply:
    """A streamed upstream reply whose JSON is written with every character raw."""

    def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": reason}
        return {"id": "c", "object": "chat.completion.chunk", "model": "up", "choices": [choice]}

    events = [chunk({"content": piece}) for piece in pieces] + [chunk({}, "stop")]
    end = newline * 2
    body = "".join(f"data: {json.dumps(e, ensure_ascii=False)}{end}" for e in events)
    return Reply(body=(body + f"data: [DONE]{end}").encode(), headers=SSE_TYPE)


def _streamed(url: str, tools: bool = True) -> tuple[str, list[str]]:
    """The content the proxy streamed, and the lines it wrote: read by `iter_lines` (which
    splits as `str.splitlines` does) where the proxy wrote them, by an SSE reader where it
    passed the upstream's bytes through as they came."""
    body = {"model": "m", "messages": QUESTION, "stream": True}
    if tools:
        body["tools"] = [WEATHER]
    with httpx.stream("POST", url + "/chat/completions", json=body, timeout=30) as response:
        lines = list(response.iter_lines()) if tools else asyncio.run(_sse_lines(response.read()))
    events = [json.loads(line[5:]) for line in lines if line.startswith("data: {")]
    assert not [e for e in events if "error" in e], events
    text = "".join(
        e["choices"][0]["delta"].get("content") or "" for e in events if e.get("choices")
    )
    return text, lines


async def _sse_lines(body: bytes) -> list[str]:
    async def source() -> Any:
        yield body

    return [line async for line in sse.lines(source())]


@pytest.mark.parametrize("separator", SEPARATORS)
@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_a_line_separator_in_a_streamed_answer_is_kept(separator, newline) -> None:
    answer = f"Paris is sunny{separator} 18 C{separator}with light wind."
    pieces = ["Final Answer: ", answer[:16], answer[16:]]
    with proxy([_upstream_stream(pieces, newline)]) as (_, url):
        text, _ = _streamed(url)
    assert text == answer


@pytest.mark.parametrize("separator", SEPARATORS)
def test_a_passed_through_stream_keeps_its_events_whole(separator) -> None:
    answer = f"one{separator}two"
    with proxy([_upstream_stream([answer])]) as (_, url):
        text, _ = _streamed(url, tools=False)
    assert text == answer


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_a_passed_through_stream_ends_events_at_any_line_ending(newline) -> None:
    with proxy([_upstream_stream(["a", "b"], newline)]) as (_, url):
        text, lines = _streamed(url, tools=False)
    assert text == "ab" and "data: [DONE]" in lines


def test_every_split_of_a_body_reads_as_the_same_lines() -> None:
    body = 'data: {"x": "a\u2028b\x85c"}\r\n\r\ndata: 2\rdata: 3\n\ndata: [DONE]\r\n'.encode()

    async def read(chunks: list[bytes]) -> list[str]:
        async def source() -> Any:
            for chunk in chunks:
                yield chunk

        return [line async for line in sse.lines(source())]

    whole = asyncio.run(read([body]))
    assert whole == ['data: {"x": "a\u2028b\x85c"}', "", "data: 2", "data: 3", "", "data: [DONE]"]
    for at in range(1, len(body)):
        for step in (1, 7):
            chunks = [body[:at], *(body[i : i + step] for i in range(at, len(body), step))]
            assert asyncio.run(read(chunks)) == whole, (at, step)


def test_what_the_proxy_writes_has_no_raw_separator() -> None:
    event = sse.event({"content": "".join(SEPARATORS) + "\ud800"})
    assert len(event.decode("utf-8").splitlines()) == 2  # the event, and the blank line
    assert json.loads(event[6:])["content"] == "".join(SEPARATORS) + "\ud800"


def test_a_transcript_line_is_one_line_to_any_reader(tmp_path) -> None:
    path = tmp_path / "run.jsonl"
    with Transcript(path) as transcript:
        for separator in SEPARATORS:
            transcript.write("step", observation=f"a{separator}b")
    assert len(path.read_text(encoding="utf-8").splitlines()) == len(SEPARATORS)
    assert [r["observation"] for r in read_transcript(path)] == [f"a{s}b" for s in SEPARATORS]
