"""`recheck`: the first answer a run gives after its calls have found something is sent back
once, with the question restated and the two ways on: the same answer again, or the call for
the step that is left (failure class: a small model answers with its first result when the
question needs another step, a conversion, a second lookup, arithmetic on two results).

A copied worked example decides that answer: its one call, then "I now know the answer". The
model is asked again once the answer is written, where the question and the answer sit side
by side, rather than at the branch, where the thought has already decided. An answer given
again is taken; so is any answer after the one send-back, and an answer with nothing found,
which the question alone must judge (`echo`, `closed_book`)."""

from __future__ import annotations

from textreact.policies import notes
from textreact.policy import Policy, RunView, SendBack, found

__all__ = ["Recheck"]


class Recheck(Policy):
    """Sends the run's first answer backed by a result back once, while a tool is offered."""

    name = "recheck"

    def reset(self, run: RunView) -> None:
        self.sent = False

    def check_answer(self, run: RunView, answer: str) -> SendBack | None:
        offered = run.offered.tools and run.offered.tool_choice != "none"
        if self.sent or not offered or not any(found(t.result) for t in run.turns):
            return None
        self.sent = True
        return SendBack(notes.rechecked(answer, run.question, run.lang), "recheck")
