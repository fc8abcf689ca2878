"""The interface between the loop and its policies: the fixed points where the loop asks each
policy, what a policy may answer, and the read-only view of a run it decides from.

A policy exists because small models get lost in ways the core loop should not guess at: it
is opt-in (`Agent(policies=[...])`), named, and everything it changes is recorded on the turn
(`Turn.policy_notes`) and, for an answer it asked for, in `Result.answer_source`. The loop
never learns which policies exist; a policy never calls the model or a tool itself."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from textreact.steps import PolicyNote, Turn
from textreact.tools.tool import NotFound

if TYPE_CHECKING:
    from textreact.models import Message
    from textreact.protocols.interface import ReactProtocol
    from textreact.steps import ToolResult
    from textreact.tools import Tool
    from textreact.tools.box import Prepared

__all__ = ["AskAlone", "Offer", "Policies", "Policy", "RunView", "SendBack", "found", "results"]


@dataclass(frozen=True)
class Offer:
    """What the next request offers: the tools as the model sees them, and the tool choice."""

    tools: tuple[Tool, ...]
    tool_choice: str
    #: The prompt lists only these tools too. Otherwise a protocol that lists the tools once,
    #: at the opening (the text protocol), keeps that list and narrows only its grammar (a
    #: tool left out for one request); a policy that picks the tools of every step sets this.
    #: Once a policy sets it, the later ones' offers keep it.
    relist: bool = False

    def listed(self, tools: Sequence[Tool]) -> list[Tool] | None:
        """The tools the prompt lists, in `tools`' order, when `relist`; else None."""
        names = {t.name for t in self.tools}
        return [t for t in tools if t.name in names] if self.relist else None


@dataclass(frozen=True)
class SendBack:
    """Do not accept this answer, or run this call: the model reads `observation` instead.
    `reason` names the case in the turn's note; `arguments`, the arguments it concerns."""

    observation: str
    reason: str
    arguments: tuple[str, ...] = ()


@dataclass(frozen=True)
class AskAlone:
    """Ask the question once more alone, without tools or history; the plain reply is the
    answer (`Result.answer_source == "closed_book"`)."""

    reason: str


@dataclass(frozen=True)
class RunView:
    """What a policy may read of the run it steers, as it stands when the policy is asked: the
    loop makes one for each fixed point, so a policy reads the run and never changes it."""

    question: str
    #: The tools the run offers, before any steering.
    tools: tuple[Tool, ...]
    turns: tuple[Turn, ...]
    opening: tuple[Message, ...]
    #: The model calls made so far.
    requests: int
    #: What the last request offered, after every policy's steering.
    offered: Offer
    lang: str
    protocol: ReactProtocol
    #: The tool choice the user asked for (a policy changes only an "auto" one).
    tool_choice: str


class Policy:
    """A named behaviour the loop consults at fixed points; every hook does nothing here.

    `start` gives each run its own copy, so per-run state never leaks between runs (or
    between concurrent runs of one agent): keep configuration in `__init__` and per-run state
    in `reset`."""

    name: ClassVar[str] = "policy"

    def start(self, run: RunView) -> Policy:
        fresh = copy.copy(self)
        fresh.reset(run)
        return fresh

    def reset(self, run: RunView) -> None:
        """Set up per-run state."""

    def steer(self, run: RunView, offer: Offer) -> Offer:
        """Before each request: the tools and tool choice to offer."""
        return offer

    def check_call(self, run: RunView, call: Prepared) -> SendBack | None:
        """Before a validated call runs: None lets it run."""
        return None

    def after_call(self, run: RunView, turn: Turn) -> str | None:
        """After a call was observed: a line the model reads after its result, or None."""
        return None

    def check_answer(self, run: RunView, answer: str) -> SendBack | AskAlone | None:
        """Before an answer is accepted: None accepts it."""
        return None

    def at_stop(self, run: RunView, reason: str) -> AskAlone | None:
        """When the run is about to end without an answer for `reason` ("truncated")."""
        return None


class Policies:
    """One run's policies, asked in order at each fixed point: the first that acts decides,
    and what it did comes back as the `PolicyNote` the loop puts on the turn."""

    def __init__(self, policies: Sequence[Policy], view: Callable[[], RunView]) -> None:
        self.view = view  # the run as it stands, read anew at each fixed point
        self.policies = [p.start(view()) for p in policies]

    def steer(self, offer: Offer) -> tuple[Offer, tuple[PolicyNote, ...]]:
        notes = []
        run = self.view()
        for policy in self.policies:
            steered = policy.steer(run, offer)
            named = steered.tool_choice not in ("auto", "required", "none")
            if named and steered.tool_choice not in {t.name for t in steered.tools}:
                continue  # a steering that leaves out the tool the choice names is not taken
            steered = replace(steered, relist=steered.relist or offer.relist)
            if steered != offer:
                notes.append(steering(policy.name, offer, steered))
            offer = steered
        return offer, tuple(notes)

    def check_call(self, call: Prepared) -> tuple[PolicyNote, SendBack] | None:
        run = self.view()
        for policy in self.policies:
            check = policy.check_call(run, call)
            if check is not None:
                return PolicyNote(policy.name, "not_run", check.reason, check.arguments), check
        return None

    def after_call(self, turn: Turn) -> Turn:
        run = self.view()
        for policy in self.policies:
            line = policy.after_call(run, turn)
            if line is not None:
                note = PolicyNote(policy.name, "added_line", "after_result")
                turn = noted(turn, note, observation=f"{turn.observation}\n{line}")
        return turn

    def check_answer(self, answer: str) -> tuple[PolicyNote, SendBack | AskAlone] | None:
        run = self.view()
        for policy in self.policies:
            check = policy.check_answer(run, answer)
            if check is not None:
                action = "sent_back" if isinstance(check, SendBack) else "asked_alone"
                arguments = check.arguments if isinstance(check, SendBack) else ()
                return PolicyNote(policy.name, action, check.reason, arguments), check
        return None

    def at_stop(self, reason: str) -> PolicyNote | None:
        run = self.view()
        for policy in self.policies:
            check = policy.at_stop(run, reason)
            if check is not None:
                return PolicyNote(policy.name, "asked_alone", check.reason)
        return None


def steering(policy: str, before: Offer, after: Offer) -> PolicyNote:
    """The note of one steering; one that left tools out names those offered, and counts the
    rest."""
    if before.tools == after.tools and before.relist == after.relist:
        return PolicyNote(policy, "steered", "tool_choice")
    offered = tuple(t.name for t in after.tools)
    left_out = len({t.name for t in before.tools} - set(offered))
    if not left_out:
        return PolicyNote(policy, "steered", "tools")
    return PolicyNote(policy, "steered", "tools", offered=offered, left_out=left_out)


def noted(turn: Turn, note: PolicyNote, **changes: Any) -> Turn:
    """`turn` with what a policy did added to its notes (and `changes`)."""
    return replace(turn, policy_notes=(*turn.policy_notes, note), **changes)


def found(result: ToolResult | None) -> bool:
    """Whether a call worked and found something: not an error, an empty result or a miss."""
    if result is None or result.is_error or isinstance(result.value, NotFound):
        return False
    return bool((result.text or "").strip())


def results(turns: Sequence[Turn]) -> str:
    """What the run's calls found: the observations of the calls that worked (an error's text
    is not, as it shows the tool's example input)."""
    return "\n".join(t.observation or "" for t in turns if t.result and not t.result.is_error)


def calls(turns: Sequence[Turn]) -> list[tuple[str, Any]]:
    """(tool, arguments) of every call the run has made."""
    return [(t.result.tool, t.result.arguments) for t in turns if t.result is not None]
