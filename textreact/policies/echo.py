"""`echo`: an answer that only repeats what the model sent to one of its tools, while no call
has found anything, is sent back once with the question (failure class: after a miss, a small
model answers with its own query). An answer a result backs is never an echo, whatever it
repeats: the model has something to judge from."""

from __future__ import annotations

from textreact.policies import notes
from textreact.policies.examples import echoed, restates
from textreact.policy import AskAlone, Policy, RunView, SendBack, calls, found, results

__all__ = ["Echo"]


class Echo(Policy):
    """Sends an echo back once; an answer just after that which only restates the question's
    words asks the question alone (with `ask_alone`)."""

    name = "echo"

    def __init__(self, *, ask_alone: bool = True) -> None:
        self.ask_alone = ask_alone

    def reset(self, run: RunView) -> None:
        self.told: set[str] = set()
        self.sent_at = -1  # the turn count when an echo was last sent back

    def check_answer(self, run: RunView, answer: str) -> SendBack | AskAlone | None:
        if any(found(t.result) for t in run.turns):
            return None
        made = calls(run.turns)
        tool = echoed(answer, made)
        if tool is not None and answer not in self.told:
            self.told.add(answer)
            self.sent_at = len(run.turns) + 1
            return SendBack(notes.echoed(answer, tool, run.question, run.lang), "echo")
        just_sent = self.sent_at == len(run.turns)
        if (
            self.ask_alone
            and just_sent
            and restates(answer, run.question, results(run.turns), made)
        ):
            return AskAlone("echoed")
        return None
