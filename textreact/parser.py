"""Completion text -> Step. (Placeholder until the parser lands.)"""

from __future__ import annotations

from textreact.steps import FormatError, Step


def parse(text: str) -> Step:
    """Placeholder."""
    return FormatError(message="parser not written yet", hint="")
