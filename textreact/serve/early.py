"""A constrained reply's calls as the model writes them -> each call's name, then its
arguments piece by piece, sent before the reply ends (`--stream-arguments`); and, once it has
ended, whether what was sent is exactly what the judgement accepts.

Under the tools' grammar (`textreact.constrain.tools_grammar`) a call is written in one shape:
`Thought: …` on one line, `Action: NAME`, `Action Input: ` and one line of JSON held to the
tool's schema as it is generated, then the next `Action:` where the client allows several. The
name is known at the end of its line, and every character of the JSON line after the label is
part of the arguments, so it can go out as it comes; a later call of a tool the reply has
already called may be a copy of that call, which the reading drops, so it is held, and goes out
whole when the reply ends (`rest`). The reply is read here only while it keeps that shape, from
its first character: a reply that leaves it (a Final Answer, a model the grammar did not hold)
is left to the committer's usual reading, and what was sent stands only if the judgement of the
whole reply (`Judge.read`) makes the same calls, with the same arguments as the JSON that went
out (`matches`). The grammar cannot hold everything a schema says (a range, a pattern it cannot
read), and a later call of the reply can still be unusable: then the call cannot be taken back,
and the stream ends with an error that withdraws it (`withdrawn`), so a client never acts on
arguments that did not validate."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from textreact import grammar
from textreact.serve.errors import ServeError
from textreact.serve.turn import Answer, Call, Calls, Problem, Verdict, calls_of
from textreact.tools import ToolBox

#: Characters of the arguments shown in a withdrawal's message.
_SHOWN = 200


@dataclass
class Written:
    """One call sent as it was written: its name, and its arguments as they went out."""

    name: str
    #: Where in the reply its arguments are read from next.
    at: int
    pieces: list[str] = field(default_factory=list)
    #: Whether its Action Input line has ended (a line break followed it).
    ended: bool = False

    @property
    def arguments(self) -> str:
        return "".join(self.pieces)


class EarlyCalls:
    """Reads one reply as it grows for the grammar's calls, and says what of them can go out."""

    def __init__(self, box: ToolBox, lang: str, max_calls: int = 1) -> None:
        self.box = box
        #: The calls the request allows in one reply: none after them goes out early.
        self.max_calls = max_calls
        self._thought_label = grammar.label(grammar.THOUGHT, lang) + " "
        self._action = grammar.label(grammar.ACTION, lang) + " "
        self._input = grammar.label(grammar.ACTION_INPUT, lang) + " "
        colons = re.escape("".join(dict.fromkeys(grammar.COLONS.values())))
        self._thought_line = re.compile(rf"{re.escape(self._thought_label)}[^{colons}\r\n]+")
        self._longest_name = max((len(tool.name) for tool in box.tools), default=0)
        #: The calls sent so far, in order.
        self.calls: list[Written] = []
        #: The Thought, once its line has been read.
        self.thought: str | None = None
        #: Whether the reply has left the grammar's shape: nothing more goes out early.
        self.off = False
        #: What is read next ("head", "name", "arguments" or "next"), and from where.
        self._phase = "head"
        self._at = 0

    @property
    def begun(self) -> bool:
        """Whether a call has gone out: from then on the reply cannot be re-asked."""
        return bool(self.calls)

    def feed(self, text: str) -> list[tuple[str, str]]:
        """What the reply so far (`text`, the whole of it, grown from the last call's) lets
        go out now: ("begin", a call's name) and ("arguments", a piece of the last call's)."""
        events: list[tuple[str, str]] = []
        readers = {
            "head": self._head,
            "name": self._name,
            "arguments": self._arguments,
            "next": self._next,
        }
        while not self.off:
            read = readers[self._phase](text)
            if read is None:
                break
            events += read
        return events

    def finish(self, text: str) -> list[tuple[str, str]]:
        """The end of the last call's arguments that was not sent yet (held back while it
        might have begun a stop sequence): the whole reply is `text`."""
        if not self.calls or self.calls[-1].ended:
            return []
        return self._line(self.calls[-1], text)[0]

    def rest(self, verdict: Verdict) -> tuple[Call, ...] | None:
        """The calls of `verdict` still to send whole, if the calls sent are its first ones
        with the same names and, as JSON, the same arguments; None if they are not, and
        what was sent must be withdrawn."""
        if not isinstance(verdict, (Call, Calls)):
            return None
        made = calls_of(verdict)
        if len(made) < len(self.calls):
            return None
        for sent, call in zip(self.calls, made[: len(self.calls)], strict=True):
            if sent.name != call.tool.name or not _same(sent.arguments, call.arguments):
                return None
        return made[len(self.calls) :]

    def _head(self, text: str) -> list[tuple[str, str]] | None:
        """The Thought line and the first `Action: `."""
        end = text.find("\n")
        if end < 0:  # its line is read whole, once it has ended
            self.off = not self._thought_label.startswith(text[: len(self._thought_label)])
            return None
        if self._thought_line.fullmatch(text, 0, end) is None:
            self.off = True
            return None
        self.thought = text[len(self._thought_label) : end].strip()
        return self._expect(text, end + 1, self._action, "name")

    def _name(self, text: str) -> list[tuple[str, str]] | None:
        """A tool's name on its own line, then `Action Input: `: the call begins."""
        end = text.find("\n", self._at)
        if end < 0:
            self.off = len(text) - self._at > self._longest_name
            return None
        name = text[self._at : end]
        tool = self.box.resolve(name)
        if tool is None or tool.name != name:
            self.off = True
            return None
        if any(call.name == name for call in self.calls):  # it may be a copy, which the
            self.off = True  # reading drops (parse_calls): held, it goes whole at the end
            return None
        start = end + 1 + len(self._input)
        if len(text) < start:
            self.off = not self._input.startswith(text[end + 1 :])
            return None
        if text[end + 1 : start] != self._input:
            self.off = True
            return None
        self.calls.append(Written(name, start))
        self._phase, self._at = "arguments", start
        return [("begin", name)]

    def _arguments(self, text: str) -> list[tuple[str, str]] | None:
        """The Action Input line as far as it has come; at its end, the next call's label."""
        sent, end = self._line(self.calls[-1], text)
        if end < 0:
            return sent or None
        self._phase, self._at = "next", end + 1
        return sent

    def _next(self, text: str) -> list[tuple[str, str]] | None:
        if len(self.calls) >= self.max_calls:  # the reading discards what follows
            self.off = True
            return None
        return self._expect(text, self._at, self._action, "name")

    def _expect(self, text: str, at: int, label: str, then: str) -> list[tuple[str, str]] | None:
        """`label` at `at`, then `then` after it; wait while the text may still become it."""
        written = text[at : at + len(label)]
        if written != label:
            self.off = not label.startswith(written)
            return None
        self._phase, self._at = then, at + len(label)
        return []

    @staticmethod
    def _line(call: Written, text: str) -> tuple[list[tuple[str, str]], int]:
        """What `text` adds to `call`'s Action Input line, and where the line ends (-1: it
        has not ended yet)."""
        end = text.find("\n", call.at)
        piece = text[call.at : len(text) if end < 0 else end]
        call.at += len(piece)
        call.ended = end >= 0
        if not piece:
            return [], end
        call.pieces.append(piece)
        return [("arguments", piece)], end


def withdrawn(calls: Sequence[Written], verdict: Verdict) -> ServeError:
    """The error that ends a stream whose calls went out as written but are not the reply's
    calls as judged (`verdict`, before any re-ask): what the client has must not be run."""
    names = ", ".join(call.name for call in calls)
    if isinstance(verdict, Problem):
        why = verdict.summary
    elif isinstance(verdict, Answer):
        why = "it reads as text, not as the calls sent"
    else:
        sent = [f"{call.name} {call.arguments[:_SHOWN]}" for call in calls]
        valid = [
            f"{call.tool.name} {json.dumps(call.arguments, ensure_ascii=False)[:_SHOWN]}"
            for call in calls_of(verdict)
        ]
        why = f"the calls as written, {sent}, are not the ones that validate, {valid}"
    return ServeError(
        502,
        f"textreact serve withdrew the tool call(s) it had begun to stream ({names}): the "
        f"model's reply, read whole, could not be used as sent ({why}). Do not run them: "
        "send the request again, or run serve without --stream-arguments, which sends a call "
        "only once it has been checked (and re-asks the model when it cannot be used)",
        type="tool_call_withdrawn",
        code="tool_call_withdrawn",
    )


def _same(written: str, arguments: dict[str, Any]) -> bool:
    """Whether the JSON text `written` is the value `arguments`, as a client reads it: its
    types too (2.0 is not 2, true is not 1), the order of its members aside."""
    try:
        value = json.loads(written, parse_constant=_refused)
    except ValueError:
        return False
    return _canonical(value) == _canonical(arguments)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _refused(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")
