"""`closed_book`: a run about to end because the model was cut off by the token limit twice in
a row, with nothing found yet, asks the question once more alone, without tools (failure
class: a small model caught in a runaway calculation or list). The plain reply is the answer,
marked `Result.answer_source == "closed_book"`; a cut reply is never taken."""

from __future__ import annotations

from textreact.policy import AskAlone, Policy, RunView, found

__all__ = ["ClosedBook"]


class ClosedBook(Policy):
    """Asks the question alone instead of ending a run as "truncated" while nothing is found
    (the ask carries no history, so it would drop what was)."""

    name = "closed_book"

    def at_stop(self, run: RunView, reason: str) -> AskAlone | None:
        if reason != "truncated" or any(found(t.result) for t in run.turns):
            return None
        return AskAlone("cut_off_twice")
