"""Text protocol (with and without the tools' grammar) vs native tool calling, side by side: a
task suite (or BFCL entries) run through each against the same model, or against several models
one at a time, measured the same way, and reported.

`suite` (tasks and scoring) -> `runner` (runs and measures) -> `report` (one model's summaries,
table, JSON, Markdown, chart, transcripts) -> `matrix` (several models: one table of model x
protocol); `bfcl` loads and scores BFCL entries (one call, none, or several at once);
`models` reads `--model-spec`; `cli` checks the flags of `textreact compare` and `command` runs
them. Importing this package stays cheap: the runner, which pulls in the model clients, loads
on first use."""

from __future__ import annotations

from typing import Any

from textreact.compare.cli import add_compare_arguments, prepare_compare
from textreact.compare.command import compare_command, compare_models

__all__ = [
    "Report",
    "add_compare_arguments",
    "compare_command",
    "compare_models",
    "prepare_compare",
    "run_compare",
]


def __getattr__(name: str) -> Any:
    if name in ("Report", "run_compare"):
        from textreact.compare import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
