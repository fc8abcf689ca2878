"""One reply judged once: an answer, a call, a format error, cut off, or filtered. The loop and
`textreact serve` both read a turn through `judge`, so they cannot disagree about what a reply
means; each decides on its own what to do with the verdict (the loop runs a call and re-asks a
cut reply; serve hands a call to its client, and a cut answer too, marked "length"). The
`tool_choice` rule lives here too: a reply that breaks it is a format error, worded here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from textreact import grammar, templates
from textreact.parsing import messages
from textreact.steps import Action, FinalAnswer, FormatError, Step, Turn

if TYPE_CHECKING:
    from textreact.tools import Tool, ToolBox

__all__ = ["CUT", "FILTERED", "Earlier", "Kind", "Verdict", "judge"]

Kind = Literal["answer", "call", "format_error", "cut", "filtered"]
#: Finish reasons that say a reply was cut off, so it is no answer as it stands.
CUT = ("length", "content_filter")
#: The run's error when the server's filter stopped a reply.
FILTERED = (
    "the server's content filter stopped the reply (finish_reason 'content_filter'); rephrase "
    "the question, or use another model or server"
)
#: The `tool_choice` values that name no tool.
_CHOICES = ("auto", "required", "none")


@dataclass(frozen=True)
class Verdict:
    """What one reply is. `step` is the reply's first step, or the FormatError that answers
    a reply breaking the turn's tool choice."""

    kind: Kind
    step: Step


@dataclass(frozen=True)
class Earlier:
    """What the conversation held before the reply judged, as far as `judge` reads it."""

    #: The text of each tool result of the conversation (the tools' own words, never an
    #: engine note).
    results: tuple[str, ...] = ()
    #: Whether a placeholder answer was refused already (in this run, or serve's request).
    refused: bool = False

    @classmethod
    def of(cls, turns: Sequence[Turn]) -> Earlier:
        """What a run's `turns` hold."""
        results = tuple(t.result.text for t in turns if t.result and t.result.text is not None)
        refused = any(getattr(t.step, "problem", None) == "placeholder" for t in turns)
        return cls(results, refused)


def judge(
    step: Step,
    finish_reason: str,
    choice: str,
    box: ToolBox,
    lang: str = "en",
    *,
    this_turn: bool = False,
    earlier: Earlier | None = None,
) -> Verdict:
    """The verdict on a reply whose first step is `step`, under this turn's tool `choice`.

    A reply the server's filter stopped is "filtered". One that breaks the tool choice (an
    answer where a call is required or one tool is named, a call where none is allowed) is a
    format error. A named tool means "call it before you answer" in a run, where other calls
    may come first; with `this_turn` (serve: one request, one reply) a call of another tool is
    no call of the named one either. A reply cut by the token limit is "cut", never an
    answer, unless it is an action the model completed before it rambled on (the parser cut
    what followed): that call stands.

    An answer that is a placeholder the prompt shows (`the answer`, `答案`) is a format error:
    the model copied the form, it did not answer (`parse` reads it as the answer it is
    written as). Unless it is an answer after all (`earlier`: the conversation so far): it is
    a name that one of the tool results holds as written (a band called The Answer, found by a
    search: `messages.held_in`), or a placeholder answer was refused already and the model
    gives one again: told once, it is believed."""
    if finish_reason == "content_filter":
        return Verdict("filtered", step)
    if this_turn and isinstance(step, Action) and choice not in _CHOICES:
        tool = box.resolve(step.tool)
        if tool is not None and tool.name != choice:  # another tool: no call of the named one
            step = FinalAnswer("", step.thought)
    broken = _against_choice(step, choice, box.tools, lang)
    if (
        broken is None
        and isinstance(step, FinalAnswer)
        and _copied(step.answer, earlier or Earlier())
    ):
        quoted = messages.quote(step.answer)
        broken = messages.error("placeholder", lang, rest=step.discarded_text, fragment=quoted)
    step = broken or step
    if finish_reason == "length" and not (isinstance(step, Action) and step.discarded_text):
        return Verdict("cut", step)
    if isinstance(step, FinalAnswer):
        return Verdict("answer", step)
    if isinstance(step, FormatError):
        return Verdict("format_error", step)
    return Verdict("call", step)


def _against_choice(
    step: Step, choice: str, tools: Sequence[Tool], lang: str
) -> FormatError | None:
    """The error to answer a reply that breaks this turn's tool choice with: an answer when a
    call is required (or one named tool is), a call when none is allowed; None when it fits."""
    if choice == "none" and isinstance(step, Action):
        message = templates.note("tool_forbidden", lang)
        return FormatError(message, messages.forms_hint(lang), problem="tool_forbidden", lang=lang)
    if choice in ("auto", "none") or not isinstance(step, FinalAnswer):
        return None
    named = next((t for t in tools if t.name == choice), None)
    if named is None:
        message = templates.note("tool_required", lang)
        return FormatError(message, messages.forms_hint(lang), problem="tool_required")
    example = grammar.render_input(named.example)
    return FormatError(
        templates.note("tool_required_named", lang, tool=named.name),
        messages.forms_hint(lang, named.name, example),
        problem="tool_required",
        tool=named.name,
        lang=lang,
    )


def _copied(answer: str, earlier: Earlier) -> bool:
    """Whether `answer` is the format's placeholder copied (see `judge`)."""
    return (
        messages.is_placeholder(answer)
        and not earlier.refused
        and not messages.held_in(answer, earlier.results)
    )
