"""`tool_hiding`: a tool whose failed call the model just repeated, or that refused its input
as meant for another tool, is left out of the next request (failure class: a small model
retrying what cannot work). Tools are left out only where the protocol shows them as text (the
text protocol, the model's own format): a native request must keep every tool its history
calls, so there the policy does nothing. The prompt is written once per run, so a tool left out
is left out of the grammar alone: without one (a server that takes none) hiding changes nothing.
(A model that repeats the same call twice in a row is offered no tool next by the loop itself.)"""

from __future__ import annotations

from textreact.policy import Offer, Policy, RunView

__all__ = ["ToolHiding"]


class ToolHiding(Policy):
    """Hides a tool for one request after a repeated failure or a wrong-tool refusal."""

    name = "tool_hiding"

    def steer(self, run: RunView, offer: Offer) -> Offer:
        last = run.turns[-1] if run.turns else None
        if last is None or last.result is None:
            return offer
        failed = last.result.is_error and (
            last.note == "repeated_call" or last.result.error_kind == "wrong_tool"
        )
        if not failed or not run.protocol.holds_arguments:
            return offer
        if offer.tool_choice == last.result.tool:
            return offer
        kept = tuple(t for t in offer.tools if t.name != last.result.tool)
        return Offer(kept or offer.tools, offer.tool_choice)
