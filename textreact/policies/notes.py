"""What the policies tell the model, rendered from `prompts/notes.md`: a copy or an echo sent
back, what a refused call still waits for. Tool-given text in them (needs, results) is defused
as any tool output is (`untrusted.defuse`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from textreact import templates
from textreact.observation import DEFAULT_LIMIT, found_list
from textreact.untrusted import defuse, truncate

if TYPE_CHECKING:
    from textreact.policies.progress import Progress
    from textreact.steps import ToolResult

__all__ = ["copied", "echoed", "unfinished", "waiting"]


def copied(
    value: str, question: str, lang: str = "en", *, answer: bool, again: bool = False
) -> str:
    """Shown instead of running a call, or accepting an answer, copied from an example: the
    question is restated, because a model that copies has lost it (`answer`: the copy is a
    final answer; `again`: the model copied an example's call after it was sent back, and
    no tool is offered from then on)."""
    kinds = ("copied_answer_alone", "copied_answer") if answer else ("copied_again", "copied_input")
    name = kinds[0] if again else kinds[1]
    shown = truncate(" ".join(value.split()), 100)
    return templates.note(name, lang, value=shown, question=truncate(question, DEFAULT_LIMIT))


def echoed(answer: str, tool: str, question: str, lang: str = "en") -> str:
    """Shown instead of accepting an answer that only repeats what the model sent to `tool`:
    the question is restated, and the model is told to answer it, not its own call."""
    shown = truncate(" ".join(answer.split()), 100)
    return templates.note(
        "echoed_answer", lang, value=shown, tool=tool, question=truncate(question, DEFAULT_LIMIT)
    )


def unfinished(
    failed: ToolResult, step: int, progress: Progress, question: str, lang: str = "en"
) -> str:
    """Shown instead of accepting an answer given before a call that needed other things found
    first (`failed`, in `step`) has run: what is still missing, what was found since (each
    result with the need it answers, so the model can put one in place of the other), the
    question, and the call with the numbers in place where the engine could put them. A small
    model answers with the first of two lookups, and, told to calculate, writes the names
    again. The needs come from the tool, so they are shown like its output: defused."""
    found = [f"{_quoted([need])}: {text}" if need else text for need, text in progress.found]
    return templates.note(
        "unfinished", lang, tool=failed.tool, step=str(step), needs=_quoted(failed.needs),
        found=found_list(found) or "-", question=truncate(question, DEFAULT_LIMIT),
        todo=_todo("unfinished", failed.tool, step, progress, lang),
    )  # fmt: skip


def waiting(failed: ToolResult, step: int, progress: Progress, lang: str = "en") -> str:
    """The line after a result that answers one of the needs of a refused call (`failed`, in
    `step`): what is still missing, or the call to make now. Told only at the end, a small
    model answers with the first number it found."""
    return _todo("waiting", failed.tool, step, progress, lang)


def _todo(kind: str, tool: str, step: int, progress: Progress, lang: str) -> str:
    """What is left to do for a refused call: find what is `missing`, or call it again, with
    the numbers in place (`{kind}_filled`) where the engine could put them there, and written
    as the question asks where that is not as the model wrote it (`{kind}_asked`)."""
    if progress.missing:
        return templates.note(
            f"{kind}_missing", lang, tool=tool, step=str(step), missing=_quoted(progress.missing)
        )
    if progress.filled is None:
        return templates.note(f"{kind}_found", lang, tool=tool, step=str(step))
    call = defuse(json.dumps(progress.filled, ensure_ascii=False))
    if progress.asked is None:
        return templates.note(f"{kind}_filled", lang, tool=tool, step=str(step), call=call)
    a = progress.asked
    asked = defuse(" ".join(f"{a.first} {a.operator} {a.second}".split()))
    return templates.note(f"{kind}_asked", lang, tool=tool, step=str(step), call=call, asked=asked)


def _quoted(names: Sequence[str]) -> str:
    """Names a tool gave, each quoted on one line and defused."""
    return ", ".join(f'"{defuse(" ".join(name.split()))}"' for name in names)
