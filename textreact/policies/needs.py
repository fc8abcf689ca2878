"""`needs`: what a call refused for needing other things found first (a WrongToolError with
needs) still waits for, and that call once everything is found (failure class: a small model
that has found the parts does not put them together).

A small model that sent "Mount Everest - Mount Fuji" to the calculator and then looked both
heights up still does not know what to do with them: it answers with the last height, writes
the names again, or swaps the numbers. So the policy keeps the refused call, says after each
result what is still missing, and once nothing is, shows the refused call with each name
replaced by the number found for it, in the model's own order: `8849 - 3776`
(`textreact.policies.progress` says when a number is put in, and in which order)."""

from __future__ import annotations

from textreact.policies.notes import unfinished, waiting
from textreact.policies.progress import Progress, progress
from textreact.policy import Offer, Policy, RunView, SendBack
from textreact.steps import Turn


class Needs(Policy):
    """After a refused call with needs: a line after each result that answers one of them
    (what is still missing, or the call to make now with the numbers in place); the next
    request steered to a call while something is missing (only where another tool can find
    it), to the refused tool once nothing is, and to no tool once it has run as shown (only
    ever a tool choice still "auto"); and an answer given before the call has run again sent
    back once for each state of what is missing, while a tool is offered."""

    name = "needs"

    def reset(self, run: RunView) -> None:
        self.unfinished: Turn | None = None  # the refused call, while its tool has not run since
        self.steered: str | None = None  # the next request's tool choice, once
        self.told: set[str] = set()

    def steer(self, run: RunView, offer: Offer) -> Offer:
        steered, self.steered = self.steered, None
        if steered is None or offer.tool_choice != "auto":  # the user's, or another's steering
            return offer
        return Offer(offer.tools, steered)

    def after_call(self, run: RunView, turn: Turn) -> str | None:
        result, failed = turn.result, self.unfinished
        if result is None:
            return None
        if result.needs:
            self.unfinished = turn
            if any(t.name != result.tool for t in run.tools):  # another tool can find them
                self.steered = "required"
            return None
        if failed is None or failed.result is None or result.is_error:
            return None
        if result.tool == failed.result.tool:  # the refused call's tool ran again
            self.unfinished = None
            filled = self._progress(run, failed).filled
            if filled is None or filled != result.arguments:
                return None
            self.steered = "none"  # the model's own plan, done with the numbers in place
            return run.protocol.note("finished", run.lang, step=str(failed.index))
        progress = self._progress(run, failed, turn)
        if progress.found[-1][0] is None:  # this result answers none of the needs
            return None
        if progress.missing:
            self.steered = "required"
        else:
            self.steered = failed.result.tool
            self._news(failed, progress)
        return waiting(failed.result, failed.index, progress, run.lang)

    def check_answer(self, run: RunView, answer: str) -> SendBack | None:
        failed = self.unfinished
        if failed is None or failed.result is None or run.offered.tool_choice == "none":
            return None  # nothing refused, or no tool to finish it with
        progress = self._progress(run, failed)
        if not self._news(failed, progress):
            return None  # told this already: once for each thing found, at most
        text = unfinished(failed.result, failed.index, progress, run.question, run.lang)
        return SendBack(text, "unfinished")

    def _progress(self, run: RunView, failed: Turn, last: Turn | None = None) -> Progress:
        """What the results since the refused call (and `last`, not recorded yet) found."""
        assert failed.result is not None
        later = [*run.turns[failed.index :], *([last] if last else [])]
        return progress(failed.result, [t.result for t in later if t.result], run.question)

    def _news(self, failed: Turn, progress: Progress) -> bool:
        """Whether this state of the refused call is news to the model (now it is not)."""
        told = f"{failed.index}: {progress.missing}"
        if told in self.told:
            return False
        self.told.add(told)
        return True
