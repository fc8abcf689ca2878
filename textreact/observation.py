"""A tool's result -> the observation the model reads: formatted (`textreact.values`), cut to
a limit and defused (`textreact.untrusted`), with a recovery hint when the result cannot help
the model as it is; and the note shown instead of running a call that repeats an earlier one."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textreact import templates
from textreact.steps import ToolResult
from textreact.untrusted import defuse, truncate
from textreact.values import format_value

__all__ = ["DEFAULT_LIMIT", "ERROR_LIMIT", "found_list", "observe", "repeated_call"]

#: Default number of characters of a tool's result shown to the model.
DEFAULT_LIMIT = 500
#: Errors carry specific instructions; they get this much room whatever the limit.
ERROR_LIMIT = 1000
#: Error kinds whose observation ends with a fixed recovery hint from prompts/notes.md (a
#: timeout's message already says what to do; a failed tool's hint names the other tools).
_HINTED_ERRORS = frozenset({"arguments", "unknown_tool"})
#: Other tools a failed tool's hint names, at most (a long list would bury the error).
_NAMED_TOOLS = 5


def observe(
    result: ToolResult,
    *,
    limit: int = DEFAULT_LIMIT,
    lang: str = "en",
    others: Sequence[str] = (),
) -> str:
    """The observation text for one tool call (without the `Observation:` label), with a
    recovery hint in `lang` when the result cannot help the model as it is. A failed tool's
    hint names the `others` offered: a small model told only "try another tool" calls the
    same one again (the calculator, asked for the speed of light by name)."""
    if result.is_error:
        kind = result.error_kind
        hint = ""
        if kind in ("exception", "wrong_tool"):
            name = f"hint_{kind}" if others else f"hint_{kind}_alone"
            hint = templates.note(name, lang, tools=_named(others))
        elif kind in _HINTED_ERRORS:
            hint = templates.note(f"hint_{kind}", lang)
        error = format_value(result.error)  # "" for None; a str subclass read safely
        text = templates.note("tool_error", lang, error=error, hint=hint)
        return defuse(text.strip(), ERROR_LIMIT)
    shown = result.text if result.text is not None else format_value(result.value, 4 * limit)
    text = shown.strip()
    if not text:
        return templates.note("empty_result", lang)
    return defuse(text, limit)


def repeated_call(
    tool: str,
    step: int,
    earlier: str,
    lang: str = "en",
    *,
    again: bool = False,
    failed: bool = False,
    found: Sequence[str] = (),
    question: str = "",
    others: Sequence[str] = (),
    note: Callable[..., str] = templates.note,
) -> str:
    """Shown instead of calling a tool again with the same arguments: the earlier result, or,
    given the `question` (the loop's case), more. A model that repeats a call that worked has
    lost track of what it has: it is shown every result so far (`found`), the question, and
    the other tools it may use them with (`others`), which is what it needs to go on (two
    lookups done, the next step is the calculation). `failed`: the first call failed, and says
    so; `again`: the model repeated itself on the turn before too, and is asked to answer, in
    the words of its protocol (`note`: `Protocol.note`; the text protocol's names its
    `Final Answer:` label, which a native or own-format reply does not write)."""
    if again:
        return note("repeated_call_again", lang, tool=tool, step=str(step))
    if failed:
        return templates.note("repeated_failure", lang, tool=tool, step=str(step), earlier=earlier)
    if not question:
        return templates.note("repeated_call", lang, tool=tool, step=str(step), earlier=earlier)
    return templates.note(
        "repeated_call_found" if others else "repeated_call_found_alone", lang, tool=tool,
        step=str(step), found=found_list(found or [earlier]),
        question=truncate(question, DEFAULT_LIMIT), tools=_named(others),
    )  # fmt: skip


def _named(tools: Sequence[str]) -> str:
    """The other tools a hint names: the first few, and "..." for the rest."""
    return ", ".join(tools[:_NAMED_TOOLS]) + (", ..." if tools[_NAMED_TOOLS:] else "")


def found_list(results: Sequence[str]) -> str:
    """Results so far as a list, a line each, defused (a tool's raw text, or its observation:
    defusing twice changes nothing)."""
    return "\n".join(f"- {defuse(' '.join(text.split()), 200)}" for text in results)
