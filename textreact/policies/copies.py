"""`copied_example`: a call or an answer copied from the bundled worked example instead of
worked out for the question is sent back once, with the question restated; the same copy again
is the model lost (failure class: a small model, unsure what to do, repeats the example it was
shown). Only the example exchange counts, never a tool's own example input, which can be the
right call for the question."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textreact.policies.examples import Examples, examples, fold
from textreact.policies.notes import copied
from textreact.policy import AskAlone, Offer, Policy, RunView, SendBack, found, results

if TYPE_CHECKING:
    from textreact.tools.box import Prepared

__all__ = ["CopiedExample"]


class CopiedExample(Policy):
    """Sends a copied call or answer back once. A call copied again after that is not run and,
    under tool_choice "auto", no tool is offered from then on; an answer copied again while no
    call has found anything asks the question alone (with `ask_alone`)."""

    name = "copied_example"

    def __init__(self, *, ask_alone: bool = True) -> None:
        self.ask_alone = ask_alone

    def reset(self, run: RunView) -> None:
        self.examples: Examples = examples(run.opening, run.tools, run.protocol.read)
        self.told: dict[str, int] = {}  # each copy sent back, and at which request
        self.lost = False
        self.hidden: str | None = None

    def steer(self, run: RunView, offer: Offer) -> Offer:
        hidden, self.hidden = self.hidden, None
        if self.lost and offer.tool_choice == "auto":  # never over the user's or another's
            return Offer(offer.tools, "none")
        text = run.protocol.holds_arguments  # tools only shape the grammar
        if hidden and text and hidden != offer.tool_choice:
            kept = tuple(t for t in offer.tools if t.name != hidden)
            return Offer(kept or offer.tools, offer.tool_choice)
        return offer

    def check_call(self, run: RunView, call: Prepared) -> SendBack | None:
        copying = self.examples.copied_input(call.arguments, _seen(run))
        if copying is None:
            return None
        argument, value = copying
        told_at = self.told.setdefault(fold(value), run.requests)
        again = told_at < run.requests  # sent back at an earlier reply, not this one
        self.lost = self.lost or again
        self.hidden = call.tool.name
        text = copied(value, run.question, run.lang, answer=False, again=again)
        return SendBack(text, "copied_call_again" if again else "copied_call", (argument,))

    def check_answer(self, run: RunView, answer: str) -> SendBack | AskAlone | None:
        copy = self.examples.copied_answer(answer, _seen(run))
        if copy is None:
            return None
        if fold(copy) not in self.told:
            self.told[fold(copy)] = run.requests
            text = copied(copy, run.question, run.lang, answer=True, again=self.lost)
            return SendBack(text, "copied_answer")
        worked = any(found(t.result) for t in run.turns)
        return AskAlone("copied_answer_again") if self.ask_alone and not worked else None


def _seen(run: RunView) -> str:
    """The question and what the calls found: a value found here is the run's own."""
    return f"{run.question}\n{results(run.turns)}"
