"""`tool_budget`: with many tools (an MCP server brings 20 to 150), each request offers only the
`k` that fit this step best, beside the ones a step must keep (failure class: a small model
choosing among more tools than it can read). `Agent(max_tools=k)` and `--max-tools k` add it.

Fit is BM25 (`relevance`) of each tool's name, description and parameters against the question,
the model's last thought and the last call's observation, so the offer follows the run: a
result that names a file brings the tools that read files. Ties keep the tools' own order, and
with no word in common the first `k` are offered. Kept whatever they score: the `pinned` tools,
every tool the run has called (a follow-up call stays possible, and a native request must offer
every tool its history calls), the tool a named tool choice names, and a tool the last result
names (the `read_more` of a paged MCP result, the tools an error's hint suggests). The tools
offered keep their own order. The index is built once per tool set and shared by every run
over it, of one agent or several (`relevance.relevance_of`).

The offer narrows the prompt's tool list and the grammar together (`Offer.relist`), under
either protocol: the text protocol lists the offered tools in the system prompt of that request,
the native one sends them as `tools=`. The note on the turn names the tools offered and how
many were left out. A call of a tool left out still runs, as any tool the agent holds: the
ranking is a guess from words, and a model that names a real tool exactly (one offered at an
earlier step, or named in a result) is more likely right than the guess; refusing it would
cost a step and teach nothing. Under constrained decoding such a call cannot be written."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import regex

from textreact.errors import ConfigError
from textreact.policies.relevance import relevance_of, require_bm25s
from textreact.policy import Offer, Policy, RunView

__all__ = ["ToolBudget"]

#: A tool name as it may stand in a result (`[A-Za-z_][\w.-]*`, see `Tool`).
_NAME = regex.compile(r"[A-Za-z_][\w.-]*")


class ToolBudget(Policy):
    """Offers each request the `k` tools most relevant to the step, plus the `pinned` ones and
    those the run must keep (called earlier, named by the tool choice or the last result)."""

    name = "tool_budget"

    def __init__(self, k: int, *, pinned: Iterable[str] = ()) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"max_tools (a tool budget) must be an integer >= 1, got {k!r}")
        self.k = k
        self.pinned = tuple(pinned)
        if not all(isinstance(n, str) for n in self.pinned):
            raise ConfigError(f"pinned must be tool names, got {self.pinned!r}")
        require_bm25s()  # a missing extra is a usage error at construction, not mid-run

    def __repr__(self) -> str:
        return f"ToolBudget({self.k}, pinned={list(self.pinned)})"

    def reset(self, run: RunView) -> None:
        names = {t.name for t in run.tools}
        unknown = [n for n in self.pinned if n not in names]
        if unknown:
            raise ConfigError(
                f"pinned names {', '.join(unknown)}, which are not among the agent's tools "
                f"({', '.join(sorted(names)) or 'none'})"
            )
        # The index costs more than a step's ranking: built once per tool set, shared by
        # every run over it (`relevance_of`), and only when a run can have more tools than
        # it offers.
        self.relevance = relevance_of(run.tools) if len(run.tools) > self.k else None

    def steer(self, run: RunView, offer: Offer) -> Offer:
        if self.relevance is None:
            return offer
        kept = self.kept(run, offer)
        rest = [t for t in offer.tools if t.name not in kept]
        if len(rest) <= self.k:
            return offer
        scores = self.relevance.scores(query(run))
        ranked = sorted(rest, key=lambda t: -scores.get(t.name, 0.0))  # stable: ties keep order
        chosen = kept | {t.name for t in ranked[: self.k]}
        return replace(offer, tools=tuple(t for t in offer.tools if t.name in chosen), relist=True)

    def kept(self, run: RunView, offer: Offer) -> set[str]:
        """The names offered whatever they score."""
        names = {t.name for t in offer.tools}
        kept = set(self.pinned) | {t.result.tool for t in run.turns if t.result is not None}
        kept.add(offer.tool_choice)
        last = last_result(run)
        if last:
            kept |= {m.rstrip(".") for m in _NAME.findall(last)}
        return kept & names


def last_result(run: RunView) -> str:
    """The observation of the run's last call ("" before one): an engine note (a format
    error's rules) says nothing about which tool fits."""
    return next((t.observation or "" for t in reversed(run.turns) if t.result is not None), "")


def query(run: RunView) -> str:
    """What this step is about: the question, the model's last thought and the last result."""
    thought = getattr(run.turns[-1].step, "thought", None) if run.turns else None
    return "\n".join((run.question, thought or "", last_result(run)))
