"""What the worked example shows, and whether a step copies it instead of working on the
question: the example exchange's calls and answers (never a tool's own example input, which
can be the right call).

A small model that does not know what to do next copies the example it was shown: it looks up
the example's "capital of France" while asked about Mount Everest, or answers the example's
result. A copy is recognised by its source and by its
words: it equals a value the opening showed as an example, and half its words or more appear
neither in the question nor in any result the run has seen. So "12 * 34" is no copy when the
question is "What is 12 times 34?", nor "408" once the calculator has returned it, nor "Paris"
when the question is the example's own. The policies that use this (`copies`, `echo`) decide
what to do with a copy."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import regex

from textreact.steps import Action, Completion, FinalAnswer

if TYPE_CHECKING:
    from textreact.models import Message
    from textreact.protocols import Reading
    from textreact.tools import Tool

_WORD = regex.compile(r"[\p{L}\p{N}]+")
_QUESTION_WORDS = frozenset({"what", "which", "when", "where", "does", "have", "many", "much"})


@dataclass(frozen=True)
class Examples:
    """The values an opening's example exchange shows, case-folded: the argument values of
    its calls (`inputs`) and its final answers."""

    inputs: frozenset[str] = frozenset()
    answers: frozenset[str] = frozenset()

    def copied_input(self, arguments: dict[str, Any], seen: str) -> tuple[str, str] | None:
        """The first argument (name, value) copied from an example, or None. Only values of
        two words or more count: one word ("celsius", a default) is a choice the question may
        leave open."""
        for name, given in arguments.items():
            for value in _strings(given):
                if len(_words(value)) >= 2 and _copied(value, self.inputs, seen):
                    return name, value
        return None

    def copied_answer(self, answer: str, seen: str) -> str | None:
        """The answer, when it is one of the example's answers and not the question's own."""
        return answer if _copied(answer, self.answers, seen) else None


def examples(
    opening: Sequence[Message], tools: Sequence[Tool], read: Callable[[Completion, Any], Reading]
) -> Examples:
    """The examples of an opening (system prompt, example exchanges, question). The example
    turns are read with the protocol's own reader, so what counts as a call is what the loop
    runs. An exchange about the question itself ("What is the capital of France?" asked when
    the example asks it) lends nothing: its answer is the right one."""
    question = opening[-1].get("content") if opening else None
    asked = set(_words(question)) if isinstance(question, str) else set()
    inputs: set[str] = set()
    answers: set[str] = set()
    lends, new_exchange = True, True
    for message in opening[:-1]:
        content = message.get("content")
        if not isinstance(content, str) or message.get("role") == "system":
            continue
        if message.get("role") == "user" and new_exchange:
            lends, new_exchange = not _same_subject(content, asked), False
        if message.get("role") != "assistant":
            continue
        for step in read(Completion(content), tools).steps:
            if isinstance(step, Action) and isinstance(step.input, dict) and lends:
                inputs.update(fold(v) for v in _strings(step.input))
            elif isinstance(step, FinalAnswer):
                if lends:
                    answers.add(fold(step.answer))
                new_exchange = True
    return Examples(frozenset(inputs), frozenset(answers))


def echoed(answer: str, calls: Sequence[tuple[str, Any]]) -> str | None:
    """The tool whose input the answer only repeats, or None: a lost model answers with what it
    sent ("clear daytime sky", the query that found nothing; "17 * 23", not its result).
    `calls` are (tool, arguments) of the run so far."""
    words = _words(answer)
    if not words:
        return None
    for tool, arguments in calls:
        if any(_words(value) == words for value in _strings(arguments)):
            return tool
    return None


def restates(
    answer: str, question: str, found: str = "", calls: Sequence[tuple[str, Any]] = ()
) -> bool:
    """The answer is two words or more, every one of them the question's, and what the tools
    `found` does not say them except by quoting what the model sent (`calls`): "opposite of
    hot" for "What is the opposite of 'hot'?", or "clear daytime sky" again after the lookup
    of it found nothing. One word may be a right answer the question names ("Paris" for "Is
    Paris the capital of France?"), so it never counts; nor does a choice a result backs
    ("Mount Everest" for "Which is taller, Mount Everest or K2?" once a lookup of "height of
    Everest" said "height of Mount Everest")."""
    words = set(_words(answer))
    if len(_words(answer)) < 2 or not words <= set(_words(question)):
        return False
    told = found.casefold()
    for _, arguments in calls:
        for value in _strings(arguments):
            told = told.replace(value.casefold(), " ")
    return not words <= set(_words(told))


def _same_subject(example_question: str, asked: set[str]) -> bool:
    """More than half of the example question's telling words (four letters or more, or a
    number; not a question word) are in the question asked."""
    telling = {
        w
        for w in _words(example_question)
        if (len(w) >= 4 or any(c.isdigit() for c in w)) and w not in _QUESTION_WORDS
    }
    return 2 * len(telling & asked) > len(telling)


def _copied(value: str, shown: frozenset[str], seen: str) -> bool:
    """Shown as an example, and half its words or more are not the run's own: "San Francisco,
    CA" is no copy when the question asks about San Francisco."""
    if fold(value) not in shown:
        return False
    known = set(_words(seen))
    words = _words(value)
    return 2 * sum(word not in known for word in words) >= len(words) > 0


def fold(text: str) -> str:
    """A value as copies are compared: case, runs of blanks and a closing full stop aside."""
    return " ".join(text.casefold().split()).rstrip(".")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _strings(value: Any) -> Iterator[str]:
    """Every string and number in a JSON value, as text."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield str(value)
