"""Fuzzing ReAct parsers: Hypothesis strategies of completions paired with the step a tolerant
parser should recover, in named noise families, and the runner behind `textreact fuzz`.

Needs the `fuzz` extra (`pip install 'textreact[fuzz]'`): this package imports Hypothesis."""

from __future__ import annotations

from textreact.testing.families import FAMILIES, Case, completions
from textreact.testing.render import Noise, render
from textreact.testing.runner import (
    Failure,
    FamilyResult,
    FuzzReport,
    Outcome,
    check_parser,
    load_parser,
    matches,
    outcome,
    run_fuzz,
)
from textreact.testing.values import (
    actions,
    answers,
    arguments,
    final_answers,
    json_values,
    plain_inputs,
    steps,
    tool_names,
)

__all__ = [
    "FAMILIES",
    "Case",
    "Failure",
    "FamilyResult",
    "FuzzReport",
    "Noise",
    "Outcome",
    "actions",
    "answers",
    "arguments",
    "check_parser",
    "completions",
    "final_answers",
    "json_values",
    "load_parser",
    "matches",
    "outcome",
    "plain_inputs",
    "render",
    "run_fuzz",
    "steps",
    "tool_names",
]
