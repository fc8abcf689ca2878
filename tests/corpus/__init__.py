"""Messy completions with their expected steps (`completions.jsonl`), shared by the parser
tests and bench/parse_bench.py so that both score the same thing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).with_name("completions.jsonl")


def load() -> list[dict[str, Any]]:
    """Each case: `id`, `source` (the model family it imitates), `text`, `expected`."""
    with CORPUS.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def mismatch(expected: dict[str, Any], step: Any) -> str | None:
    """Why `step` (a textreact Step) does not meet `expected`; None when it does.

    `expected` holds `kind`, then the fields to check: `tool`, `input`, `answer`, `thought`,
    `implicit`, `discarded_prefix` (the start of discarded_text) and `hint_has`."""
    if step.kind != expected["kind"]:
        return f"kind {step.kind!r}, expected {expected['kind']!r}: {step}"
    for field in ("tool", "input", "answer", "thought", "implicit"):
        if field in expected and getattr(step, field) != expected[field]:
            return f"{field} {getattr(step, field)!r}, expected {expected[field]!r}"
    prefix = expected.get("discarded_prefix")
    if prefix is not None and not step.discarded_text.startswith(prefix):
        return f"discarded_text {step.discarded_text!r} does not start with {prefix!r}"
    if "hint_has" in expected and expected["hint_has"] not in step.hint:
        return f"hint {step.hint!r} lacks {expected['hint_has']!r}"
    return None
