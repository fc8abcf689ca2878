"""A reply as it is generated -> what can be sent to the client now and never taken back.

Content is sent only for an answer the request accepts (a `Final Answer:` under
`tool_choice` auto or none), as it grows, holding back whatever could still turn out to be
protocol (a line that may become a keyword line, the start of a label at the end of a line).
A call is sent once its `Action Input` is a complete JSON object that fits the tool's schema:
its name, then its arguments in pieces. Where the reply may make several calls (the client
allows parallel calls), its calls are sent when it ends, each in turn: a later call may still
be unusable, and then the whole reply is re-asked, which nothing sent may contradict.
With `--stream-arguments`, a constrained reply's calls go out as they are written instead,
each name at the end of its line and its arguments as they come (`textreact.serve.early`);
such a reply is not re-asked, and what was sent stands only if the whole reply's judgement
makes the same calls with the same arguments: else the stream ends with an error that
withdraws them.
Thoughts go out as `reasoning_content` (and as content with `--show-thoughts`) when the step
they belong to is committed. A reply with no keyword at all is known to be an answer only
when it ends, so it is sent then.

Each delta's text is read by a parse, except where a parse is known to read what it adds as
the answer's own text (`_Plain`): so an answer of any length streams in time linear in it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Final, Union

from textreact import grammar
from textreact.models import Message
from textreact.parser import SCAN_LIMIT, parse
from textreact.parsing.calls import MAX_CALLS
from textreact.parsing.keywords import AS_NEWLINE, BLANKS, JUNK, Scanner, strip
from textreact.parsing.messages import may_be_placeholder
from textreact.parsing.window import Window
from textreact.serve.early import EarlyCalls, withdrawn
from textreact.serve.errors import ServeError
from textreact.serve.reply import Chunks
from textreact.serve.sse import DONE, event
from textreact.serve.stops import Stops
from textreact.serve.turn import Answer, Call, Calls, Judge, Problem, Verdict, calls_of
from textreact.serve.upstream import Delta, Stream
from textreact.steps import Action, Completion, FinalAnswer, Usage

#: A line shorter than this that does not start with a keyword may still become a keyword line.
_HOLD_LINE: Final = 24
#: Every label as written in a reply, with its colon: a line ending in the start of one is held.
_LABELS: Final = tuple(
    grammar.label(keyword, lang) for lang in grammar.LANGUAGES for keyword in grammar.KEYWORDS
)
#: Every start of a label, the whole label too.
_LABEL_STARTS: Final = frozenset(
    label[:end] for label in _LABELS for end in range(1, len(label) + 1)
)
_LONGEST_LABEL: Final = max(len(label) for label in _LABELS)
#: The blanks that end a line: what `str.rstrip()` strips, but the line break.
_LINE_BLANKS: Final = BLANKS.translate(dict.fromkeys(map(ord, JUNK + "\n")))
#: Characters that, added to a line, may complete what the parser reads specially: a think
#: tag or an end-of-turn token (each ends in `>`), a heading, a bold label, a fence.
_MARKS: Final = frozenset("<>`*_#")
_COLONS: Final = frozenset(grammar.COLONS.values())

#: ("content" | "reasoning", text) or ("call", Call).
Event = Union[tuple[str, str], tuple[str, Call]]  # noqa: UP007


class Committer:
    """Reads one reply as it grows; says what can be sent without ever being taken back."""

    def __init__(self, judge: Judge, *, show_thoughts: bool = False, early: bool = False) -> None:
        self.judge = judge
        self.show_thoughts = show_thoughts
        #: The calls sent as they are written (`early`: the reply is constrained and the
        #: server streams arguments), or None: each call is sent once it has been judged.
        calls = MAX_CALLS if judge.parallel_calls else 1
        self.early = EarlyCalls(judge.box, judge.lang, calls) if early else None
        #: The answer text sent so far, in pieces (one string grown a piece at a time would be
        #: copied whole each time): see `sent`.
        self._sent: list[str] = []
        self.answering = False
        self.call: Call | None = None
        self._settled = -1
        #: The last parse's answer when it is all that was sent, and what it shows of how the
        #: settled text goes on (made from it when first needed).
        self._base: FinalAnswer | None = None
        self._plain: _Plain | None = None
        #: Parses to let go by before the next `_Plain.read` after one found no plain answer,
        #: twice as many after each such read in a row: an answer never plain (a pseudo-tool's
        #: input) then costs few reads beside its parses.
        self._wait = self._backoff = 0

    @property
    def sent(self) -> str:
        """The answer text sent so far."""
        self._sent = ["".join(self._sent)]
        return self._sent[0]

    def feed(self, text: str) -> list[Event]:
        """What the reply so far (`text`, the whole of it, grown from the last call's) lets us
        send now."""
        if self.call is not None:
            return []
        early = self.early
        if early is not None and not early.off:
            begun = early.begun
            events: list[Event] = [*early.feed(text)]
            if early.begun and not begun:
                events = [*self._thought(early.thought), *events]
            if not early.off or early.begun:
                return events
        if early is not None and early.begun:  # the rest, out of the grammar's shape, is
            return []  # the judgement's to read when the reply ends
        settled = _settled(text)
        if settled == self._settled:
            return []
        if self._base is not None and (events := self._run_on(text, settled)) is not None:
            return events
        self._settled, self._base, self._plain = settled, None, None
        step = parse(text[:settled])
        if isinstance(step, FinalAnswer) and not step.implicit and self._answers_allowed():
            if not self.answering and may_be_placeholder(step.answer):
                return []  # the whole reply may read as a format error yet
            events = self._answer(step.answer.rstrip(), step.thought)
            self._base = step if self.sent == step.answer else None
            return events
        if isinstance(step, Action) and not self.answering and not self.judge.parallel_calls:
            return self._maybe_call(text)
        return []

    def _run_on(self, text: str, settled: int) -> list[Event] | None:
        """What the settled text's growth to `settled` adds to an answer that all was sent,
        without a parse, or None when a parse must tell: what is added must be inert on the
        line it extends and make only plain lines (`_Plain.grow`)."""
        added = text[self._settled : settled]
        first, *lines = added.split("\n")
        if not _inert(first) or not all(_plain_line(line) for line in lines if line):
            return None
        if self._plain is None:
            if self._wait:
                self._wait -= 1
                return None
            self._plain = _Plain.read(text[: self._settled], self._base)
            self._backoff = 0 if self._plain else 2 * self._backoff or 1
            self._wait = self._backoff
        piece = None if self._plain is None else self._plain.grow(added, first, settled)
        if piece is None:
            return None
        self._settled = settled
        if not piece:
            return []
        self._sent.append(piece)
        return [("content", piece)]

    def finish(self, text: str, finish_reason: str) -> tuple[Verdict, list[Event]]:
        """The verdict on the whole reply and what is left to send; content once sent stands,
        whatever the whole reply turns out to be."""
        if self.call is not None:
            return self.call, []
        verdict = self.judge.read(Completion(text, finish_reason))
        if self.early is not None and self.early.begun:
            return self._written(verdict, text)
        if isinstance(verdict, Answer):
            return verdict, self._answer(verdict.text, verdict.thought)
        if self.answering:  # the whole reply reads otherwise: what was sent is the answer
            return Answer(self.sent, finish_reason=finish_reason), []
        if isinstance(verdict, (Call, Calls)):
            return verdict, self.settle(verdict)
        return verdict, []

    def _written(self, verdict: Verdict, text: str) -> tuple[Call | Calls, list[Event]]:
        """The verdict on a reply whose calls went out as they were written, and the rest
        of them. It cannot be re-asked (what was sent cannot be taken back), so it is what a
        failed re-ask gives (`Judge.give_up`): a call that repeats an earlier one stands, as
        it validates. What was sent stands if the verdict makes those calls, first, with the
        same arguments; else the stream ends with an error that withdraws them."""
        assert self.early is not None
        early = self.early
        events: list[Event] = [*early.finish(text)]
        judged = self.judge.give_up(verdict) if isinstance(verdict, Problem) else verdict
        rest = early.rest(judged)
        if rest is None:
            raise withdrawn(early.calls, verdict)
        return judged, [*events, *(("call", call) for call in rest)]

    def settle(self, verdict: Answer | Call | Calls) -> list[Event]:
        """A whole verdict not streamed before: the note after a failed re-ask, a call (or
        the calls) repeated after the model was asked not to, the calls of a reply that may
        make several."""
        if isinstance(verdict, (Call, Calls)):
            calls: list[Event] = [("call", call) for call in calls_of(verdict)]
            return [*self._thought(verdict.thought), *calls]
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
            self._sent = [answer]
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


def _settled(text: str) -> int:
    """How much of `text` later text cannot change the meaning of. Only the end of the last
    line is read, so a long line costs what a short one does: whether it is shorter than
    _HOLD_LINE, the start of a label at its end, and its trailing blanks."""
    end = len(text)
    start = text.rfind("\n", max(0, end - _HOLD_LINE)) + 1
    if (start or end < _HOLD_LINE) and grammar.KEYWORD_LINE.match(text[start:]) is None:
        return start
    return end - (_label_start(text[max(start, end - _LONGEST_LABEL) :]) or _blanks_at_end(text))


def _label_start(tail: str) -> int:
    """How many characters at the end of `tail` (a line's last few) may be the start of a label."""
    return next((size for size in range(len(tail), 0, -1) if tail[-size:] in _LABEL_STARTS), 0)


def _blanks_at_end(text: str) -> int:
    """How many blanks end the last line of `text`, read back only as far as they reach."""
    size = 1
    while True:
        tail = text[-size:]
        kept = tail.rstrip(_LINE_BLANKS)
        if kept or size >= len(text):
            return len(tail) - len(kept)
        size *= 2


def _inert(text: str, *, colons: bool = False) -> bool:
    """Whether `text`, added to a line, can complete nothing the parser reads specially:
    printable (so no line break, tab, or other character the parser reads as a blank or a
    line break), none of `_MARKS`, and no colon (unless `colons`: a keyword line's colon
    follows its keyword, so one already in a line the parser read as no keyword line makes
    none)."""
    return text.isprintable() and _MARKS.isdisjoint(text) and (colons or _COLONS.isdisjoint(text))


@cache
def _lead() -> re.Pattern[str]:
    return re.compile(grammar.LEAD_PATTERN)


def _plain_line(line: str, *, colons: bool = False) -> bool:
    """Whether a line stays plain text of an answer whatever inert text is added to it: it is
    inert itself, and after its lead (indentation, a list marker) it holds two words, where a
    stop residue (`Observ`, alone on the last line) is one."""
    words = line[_lead().match(line).end() :]  # type: ignore[union-attr]
    return _inert(line, colons=colons) and " " in words.rstrip(" ")


@dataclass
class _Plain:
    """An answer that a parse read as the settled text's own from a point on, to its end,
    and how that text may grow with the parse reading the growth as more of the answer: by
    inert text on a line that may grow, and by plain lines. Nothing that growth adds makes a
    keyword line, a heading, a stop residue, a fence, a think tag or an end-of-turn token,
    so the answer stays the last keyword's value, unmasked, running to the end; and the
    parser's window keeps its start while the text stays on one side of where it is set
    anew (`limit`)."""

    #: Whether the settled text ends where a line starts.
    ended: bool
    #: Whether its last line may grow: the answer's keyword line, or a plain line.
    open: bool
    #: The blanks after the answer's last character, in pieces.
    blanks: list[str]
    #: The window's start plus SCAN_LIMIT: a text longer than the window's start and the
    #: limit sets its start anew (past a long run of empty keywords), once and for good.
    limit: int
    #: Whether the settled text was longer than `limit` already.
    past: bool

    @classmethod
    def read(cls, text: str, answer: FinalAnswer) -> _Plain | None:
        """What `answer`, the parse of `text`, shows, if it is the value of the text's last
        keyword, a Final Answer, as written (no think block in it) to the end: with nothing
        discarded, that keyword decided and nothing cut its value short (an end-of-turn
        token, a residue, a fence); and the reply was not read again with bare keywords,
        as an Action Input, or nothing, deciding asks for."""
        window = Window(text)
        scanner = Scanner(text, window)
        tokens = scanner.tokens()
        last = tokens[-1]
        if (
            answer.discarded_text
            or last.kind != grammar.FINAL_ANSWER
            or (scanner.bare_lines and any(t.kind == grammar.ACTION_INPUT for t in tokens))
            or strip(text[last.value :]) != answer.answer
        ):
            return None
        start = max(map(text.rfind, "\n" + AS_NEWLINE)) + 1
        line = text[start:]
        limit = (window.start or 0) + SCAN_LIMIT
        return cls(
            ended=not line,
            open=start <= last.start or _plain_line(line, colons=True),
            blanks=[text[len(text.rstrip(BLANKS)) :]],
            limit=limit,
            past=len(text) > limit,
        )

    def grow(self, added: str, first: str, length: int) -> str | None:
        """What the answer gains when the settled text gains `added` (to `length` in all),
        whose first line `first` is inert and whose later lines are plain, or None when only
        a parse can tell."""
        if length > self.limit and not self.past:
            return None
        if first and not (_plain_line(first) if self.ended else self.open):
            return None
        self.ended, self.open = added.endswith("\n"), True
        kept = added.rstrip(BLANKS)
        if not kept:
            self.blanks.append(added)
            return ""
        piece = "".join(self.blanks) + kept
        self.blanks = [added[len(kept) :]]
        return piece


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
    early: bool = False,
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
    for it, and only for it, for at most the upstream timeout. `early`: send the calls of
    the reply as they are written (the reply is constrained and the server streams
    arguments)."""
    usage, source, verdict = Usage(), first, None
    try:
        for attempt in range(2):
            committer = Committer(judge, show_thoughts=show_thoughts, early=early)
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
        yield event(error.body())
        yield DONE
        return
    finally:
        await source.aclose()
    finish = "tool_calls" if isinstance(verdict, (Call, Calls)) else verdict.finish_reason
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
        elif kind == "begin":
            yield chunks.begin_call(value)  # type: ignore[arg-type]
        elif kind == "arguments":
            yield chunks.arguments(value)  # type: ignore[arg-type]
        elif kind == "reasoning":
            yield chunks.reasoning(value)  # type: ignore[arg-type]
        else:
            yield chunks.content(value)  # type: ignore[arg-type]
