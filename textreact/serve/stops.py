"""Stop sequences: the protocol's and the client's -> what fits the upstream, which may take
no more than four (OpenAI's and Azure's limit), and what the proxy cuts at itself.

The protocol's own stop comes first (`\\nObservation:` in English, `\\n观察` in Chinese: the
model stops before it writes a tool's result), then the client's, up to three, then the
protocol's other spellings while there is room. A spelling left out costs nothing: the parser
cuts any observation the model writes. A client's stop left out (its fourth) is applied by the
proxy: the reply is cut where it first appears, as the upstream would have cut it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from textreact import grammar
from textreact.models.openai_compat import MAX_STOP_SEQUENCES
from textreact.steps import Completion

#: Room kept for the protocol's first stop.
_CLIENT_ROOM: Final = MAX_STOP_SEQUENCES - 1


@dataclass(frozen=True)
class Stops:
    """The stop sequences of one request."""

    #: What the upstream is sent, at most MAX_STOP_SEQUENCES, the protocol's first.
    upstream: tuple[str, ...]
    #: The client's stops that did not fit: the proxy cuts the reply at the first of them.
    local: tuple[str, ...] = ()

    def cut(self, text: str, start: int = 0) -> tuple[str, bool]:
        """The reply up to the first local stop (the stop left out, as an upstream leaves it
        out), and whether one was found; looked for from `start` on (see `resume`)."""
        found = [at for at in (text.find(stop, start) for stop in self.local) if at >= 0]
        return (text[: min(found)], True) if found else (text, False)

    def resume(self, scanned: int) -> int:
        """Where to look for a local stop once a reply whose first `scanned` characters hold
        none has grown: a stop that ends in the new text begins at most its length less one
        before it, so a streamed reply is looked through once, not again at every delta."""
        return max(0, scanned - max(map(len, self.local), default=1) + 1)

    def apply(self, completion: Completion) -> Completion:
        """A whole reply cut at the first local stop; cut there, it ended with "stop"."""
        text, stopped = self.cut(completion.text)
        return replace(completion, text=text, finish_reason="stop") if stopped else completion

    def readable(self, text: str, start: int = 0) -> str:
        """What of a reply still being generated can be read now: up to a local stop (looked
        for from `start`), and short of an ending that may yet grow into one."""
        text, stopped = self.cut(text, start)
        if stopped:
            return text
        held = max((_overlap(text, stop) for stop in self.local), default=0)
        return text[: len(text) - held]


def _overlap(text: str, stop: str) -> int:
    """How many characters at the end of `text` begin `stop` (short of all of it): only the
    places in its last `len(stop) - 1` characters where the stop's first character stands are
    tried, the longest first, not every prefix of the stop against every end."""
    tail = text[max(0, len(text) - len(stop) + 1) :] if len(stop) > 1 else ""
    at = tail.find(stop[0]) if tail else -1
    while at >= 0:
        if stop.startswith(tail[at:]):
            return len(tail) - at
        at = tail.find(stop[0], at + 1)
    return 0


def stops_for(client: Sequence[str], lang: str = "en") -> Stops:
    """The stops of a request whose client sent `client`, for a prompt in `lang`."""
    own = sorted(
        grammar.STOP_SEQUENCES,
        key=lambda stop: not stop.startswith("\n" + grammar.LABELS[lang][grammar.OBSERVATION]),
    )
    theirs = [stop for stop in dict.fromkeys(client) if stop and stop != own[0]]
    sent = theirs[:_CLIENT_ROOM]
    spellings = [stop for stop in own[1:] if stop not in sent]
    room = MAX_STOP_SEQUENCES - 1 - len(sent)
    return Stops((own[0], *spellings[:room], *sent), tuple(theirs[_CLIENT_ROOM:]))
