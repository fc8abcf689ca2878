"""`tool_hiding`: a tool whose failed call the model just repeated, or that refused its input
as meant for another tool, is left out of the next request; a model that repeats the same call
twice in a row is offered no tool next (failure class: a small model retrying what cannot
work). Tools are left out only where the protocol shows them as text (the text protocol): a
native request must keep every tool its history calls, so there only the tool choice changes.
The text protocol writes its prompt once per run, so a tool left out is left out of the
grammar alone: without one (a server that takes none) hiding changes nothing."""

from __future__ import annotations

from textreact.policy import Offer, Policy, RunView

__all__ = ["ToolHiding"]


class ToolHiding(Policy):
    """Hides a tool for one request after a repeated failure or a wrong-tool refusal, and
    offers none after two repeats in a row (under tool_choice "auto")."""

    name = "tool_hiding"

    def steer(self, run: RunView, offer: Offer) -> Offer:
        turns = [t for t in run.turns if not t.joined]
        last = run.turns[-1] if run.turns else None
        if last is None or last.result is None:
            return offer
        repeats = [t.note == "repeated_call" for t in turns[-2:]]
        if len(repeats) == 2 and all(repeats) and offer.tool_choice == "auto":
            return Offer(offer.tools, "none")
        failed = last.result.is_error and (
            last.note == "repeated_call" or last.result.error_kind == "wrong_tool"
        )
        if not failed or not run.protocol.holds_arguments:
            return offer
        if offer.tool_choice == last.result.tool:
            return offer
        kept = tuple(t for t in offer.tools if t.name != last.result.tool)
        return Offer(kept or offer.tools, offer.tool_choice)
