"""A reply as it is generated -> what can be sent to the client now and never taken back.

Content is sent only for an answer the request accepts (a `Final Answer:` under
`tool_choice` auto or none), as it grows, holding back whatever could still turn out to be
protocol (a line that may become a keyword line, the start of a label at the end of a line).
A call is sent once its `Action Input` is a complete JSON object that fits the tool's schema:
its name, then its arguments in pieces. Thoughts go out as `reasoning_content` (and as
content with `--show-thoughts`) when the step they belong to is committed. A reply with no
keyword at all is known to be an answer only when it ends, so it is sent then."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Final, Union

from textreact import grammar
from textreact.models import Message
from textreact.parser import parse
from textreact.serve.errors import ServeError
from textreact.serve.reply import DONE, Chunks, sse
from textreact.serve.stops import Stops
from textreact.serve.turn import Answer, Call, Judge, Problem, Verdict
from textreact.serve.upstream import Delta, Stream
from textreact.steps import Action, Completion, FinalAnswer, Usage

#: A line shorter than this that does not start with a keyword may still become a keyword line.
_HOLD_LINE: Final = 24
#: Every label as written in a reply, with its colon: a line ending in the start of one is held.
_LABELS: Final = tuple(
    grammar.label(keyword, lang) for lang in grammar.LANGUAGES for keyword in grammar.KEYWORDS
)
_LONGEST_LABEL: Final = max(len(label) for label in _LABELS)

#: ("content" | "reasoning", text) or ("call", Call).
Event = Union[tuple[str, str], tuple[str, Call]]  # noqa: UP007


class Committer:
    """Reads one reply as it grows; says what can be sent without ever being taken back."""

    def __init__(self, judge: Judge, *, show_thoughts: bool = False) -> None:
        self.judge = judge
        self.show_thoughts = show_thoughts
        #: The answer text sent so far.
        self.sent = ""
        self.answering = False
        self.call: Call | None = None
        self._settled = -1

    def feed(self, text: str) -> list[Event]:
        """What the reply so far (`text`, the whole of it) lets us send now."""
        if self.call is not None:
            return []
        settled = _settled(text)
        if len(settled) == self._settled:
            return []
        self._settled = len(settled)
        step = parse(settled)
        if isinstance(step, FinalAnswer) and not step.implicit and self._answers_allowed():
            return self._answer(step.answer.rstrip(), step.thought)
        if isinstance(step, Action) and not self.answering:
            return self._maybe_call(text)
        return []

    def finish(self, text: str, finish_reason: str) -> tuple[Verdict, list[Event]]:
        """The verdict on the whole reply and what is left to send; content once sent stands,
        whatever the whole reply turns out to be."""
        if self.call is not None:
            return self.call, []
        verdict = self.judge.read(Completion(text, finish_reason))
        if isinstance(verdict, Answer):
            return verdict, self._answer(verdict.text, verdict.thought)
        if self.answering:  # the whole reply reads otherwise: what was sent is the answer
            return Answer(self.sent, finish_reason=finish_reason), []
        if isinstance(verdict, Call):
            return verdict, [*self._thought(verdict.thought), ("call", verdict)]
        return verdict, []

    def settle(self, verdict: Answer | Call) -> list[Event]:
        """A whole verdict not streamed before: the note after a failed re-ask, or a call
        repeated after the model was asked not to."""
        if isinstance(verdict, Call):
            return [*self._thought(verdict.thought), ("call", verdict)]
        return [*self._thought(verdict.thought), ("content", verdict.text)]

    def _answers_allowed(self) -> bool:
        """Whether an answer may go out as it grows: one the request accepts, and that need
        not be checked whole first (an answer `response_format` shapes is sent at the end)."""
        return self.judge.tool_choice in ("auto", "none") and self.judge.answer_format is None

    def _answer(self, answer: str, thought: str | None) -> list[Event]:
        events: list[Event] = []
        if not self.answering:
            self.answering = True
            events += self._thought(thought)
        if answer.startswith(self.sent) and len(answer) > len(self.sent):
            events.append(("content", answer[len(self.sent) :]))
            self.sent = answer
        return events

    def _maybe_call(self, text: str) -> list[Event]:
        """The call, once its Action Input line is complete, strict JSON, and valid."""
        lines = text[: text.rfind("\n") + 1]
        step = parse(lines) if lines else None
        if not isinstance(step, Action) or not _complete_object(step.raw_input):
            return []
        kept = lines[: len(lines) - len(step.discarded_text)]
        verdict = self.judge.judge(step, kept)
        if not isinstance(verdict, Call):
            return []
        self.call = verdict
        return [*self._thought(verdict.thought), ("call", verdict)]

    def _thought(self, thought: str | None) -> list[Event]:
        if not thought:
            return []
        events: list[Event] = [("reasoning", thought)]
        if self.show_thoughts:
            events.append(("content", f"{thought}\n\n"))
        return events


def _settled(text: str) -> str:
    """The part of `text` that later text cannot change the meaning of."""
    start = text.rfind("\n") + 1
    line = text[start:]
    if len(line) < _HOLD_LINE and grammar.KEYWORD_LINE.match(line) is None:
        return text[:start]
    return text[: len(text) - _risky_tail(line)]


def _risky_tail(line: str) -> int:
    """How many characters at the end of `line` may be the start of a label, or blanks."""
    for size in range(min(len(line), _LONGEST_LABEL), 0, -1):
        tail = line[-size:]
        if any(label.startswith(tail) for label in _LABELS):
            return size
    return len(line) - len(line.rstrip())


def _complete_object(raw: str) -> bool:
    try:
        return isinstance(json.loads(raw), dict)
    except ValueError:
        return False


Reopen = Callable[[Sequence[Message]], Awaitable[Stream]]


async def events(
    first: Stream,
    *,
    judge: Judge,
    messages: Sequence[Message],
    reopen: Reopen,
    chunks: Chunks,
    show_thoughts: bool = False,
    stops: Stops,
) -> AsyncIterator[bytes]:
    """The SSE bytes of one streamed request: the reply read as it comes (cut at the stops
    that are the proxy's to apply), one re-ask (a second upstream stream) when it cannot be
    used, the finish and the usage. An upstream failure after the response has begun is an
    error event, as OpenAI sends one. The role
    goes out with the first upstream event, so that every chunk names the model the upstream
    says it is, as a whole reply does.

    At a stop of the proxy's the upstream stream is closed, not read to its end: closing the
    connection is what makes the upstream stop generating what no one will read. A client that
    asked for the usage is sent the true one, which servers send last, so then the rest is read
    for it, and only for it, for at most the upstream timeout."""
    usage, source, verdict = Usage(), first, None
    try:
        for attempt in range(2):
            committer = Committer(judge, show_thoughts=show_thoughts)
            text, reason, stopped = "", "stop", False
            deltas = aiter(source)
            async for delta in deltas:
                if not chunks.begun:
                    chunks.model = delta.model or chunks.model
                    yield chunks.role()
                usage += delta.usage
                reason = delta.finish_reason or reason
                if delta.text:
                    start = stops.resume(len(text))
                    text += delta.text
                    for piece in _encoded(committer.feed(stops.readable(text, start)), chunks):
                        yield piece
                    text, stopped = stops.cut(text, start)
                    if stopped:
                        if chunks.include_usage:  # the usage comes last: read on, for it only
                            usage += await _usage_after(deltas, source.timeout)
                        await deltas.aclose()
                        await source.aclose()
                        break
            verdict, left = committer.finish(text, "stop" if stopped else reason)
            for piece in _encoded(left, chunks):
                yield piece
            if not isinstance(verdict, Problem):
                break
            if attempt == 0:
                messages = judge.reask(messages, verdict)
                source = await reopen(messages)
            else:
                verdict = judge.give_up(verdict)
                for piece in _encoded(committer.settle(verdict), chunks):
                    yield piece
    except ServeError as error:
        yield sse(error.body())
        yield DONE
        return
    finally:
        await source.aclose()
    finish = "tool_calls" if isinstance(verdict, Call) else verdict.finish_reason
    for piece in chunks.finish(finish, usage):
        yield piece


async def _usage_after(deltas: AsyncIterator[Delta], limit: float) -> Usage:
    """The usage the rest of a stream reports, read for at most `limit` seconds in all (an
    upstream that goes on generating past the proxy's stop counts what it made, and one that
    never ends must not hold the finish back); a failure or the limit leaves what came first.
    The answer is complete by then, so nothing here may turn it into an error."""
    counted = [Usage()]

    async def read() -> None:
        async for rest in deltas:
            counted[0] += rest.usage

    with contextlib.suppress(asyncio.TimeoutError, ServeError):
        await asyncio.wait_for(read(), limit)
    return counted[0]


def _encoded(events: list[Event], chunks: Chunks) -> Iterator[bytes]:
    for kind, value in events:
        if kind == "call":
            yield from chunks.call(value)  # type: ignore[arg-type]
        elif kind == "reasoning":
            yield chunks.reasoning(value)  # type: ignore[arg-type]
        else:
            yield chunks.content(value)  # type: ignore[arg-type]
