"""Opt-in policies: what steers a small model that has lost the thread, each named, each off
unless given (`Agent(model, tools, policies=small_model())`). docs/policies.md gives each one's
failure class, when it fires, and its measured effect.

The interface is `textreact.policy.Policy`; a policy changes a run only at the loop's fixed
points, and every change is a `PolicyNote` on the turn."""

from __future__ import annotations

from textreact.policies.budget import ToolBudget
from textreact.policies.closed_book import ClosedBook
from textreact.policies.copies import CopiedExample
from textreact.policies.echo import Echo
from textreact.policies.grounding import Grounding
from textreact.policies.hiding import ToolHiding
from textreact.policies.needs import Needs
from textreact.policy import AskAlone, Offer, Policy, SendBack

__all__ = [
    "AskAlone",
    "ClosedBook",
    "CopiedExample",
    "Echo",
    "Grounding",
    "Needs",
    "Offer",
    "Policy",
    "SendBack",
    "ToolBudget",
    "ToolHiding",
    "by_name",
    "small_model",
]

#: Every policy by its name, in the order `small_model` gives them. `ToolBudget` is not one:
#: it takes its budget (`Agent(max_tools=k)`, `--max-tools k`) and answers many tools, not a
#: lost model.
_ALL: dict[str, type[Policy]] = {
    p.name: p for p in (CopiedExample, Echo, Needs, Grounding, ToolHiding, ClosedBook)
}


def small_model() -> list[Policy]:
    """Every built-in policy, with its defaults: what the bundled worked example and the
    embedded models were measured with (docs/evaluation.md)."""
    return [policy() for policy in _ALL.values()]


def by_name(names: str) -> list[Policy]:
    """Policies from a comma-separated list of names, "small" (all) or "none"."""
    from textreact.errors import ConfigError

    if names == "none":
        return []
    if names == "small":
        return small_model()
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in _ALL]
    if unknown:
        raise ConfigError(
            f"unknown policy {', '.join(unknown)}: use none, small, or names from {', '.join(_ALL)}"
        )
    return [_ALL[n]() for n in wanted]
