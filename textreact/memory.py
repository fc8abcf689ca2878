"""Stored turns -> the message list for the next model call.

The opening (system prompt, worked example, question) always stays. The most recent turns stay
whole; older ones are rendered as short summaries, except errors, which stay whole because they
say what not to do again. A character budget keeps the prompt bounded however long the run: the
oldest turns are left out first, and the model is told that they were."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import regex

from textreact import grammar, templates
from textreact.errors import ConfigError
from textreact.models import Message
from textreact.steps import Action, Turn

_SENTENCE_END = regex.compile(r"[.!?。！？](?=\s|$)|\n")


@dataclass(frozen=True)
class MemoryConfig:
    """How much of a run's history is sent back to the model."""

    #: The most recent turns, always shown whole.
    keep_recent: int = 3
    #: Characters of turn history (after summarising) to aim for; None keeps everything.
    budget_chars: int | None = 12_000
    #: Longest summary of an older observation, in characters.
    summary_chars: int = 160

    def __post_init__(self) -> None:
        for name in ("keep_recent", "summary_chars", "budget_chars"):
            value = getattr(self, name)
            if name == "budget_chars" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"MemoryConfig.{name} must be an integer >= 1, got {value!r}")


def summarise(text: str, limit: int) -> str:
    """The first sentence of `text`, at most `limit` characters."""
    text = text.strip()
    # Search past the limit: a sentence end is only one when what follows it is seen too
    # (`3.14159` must not end at `3.`).
    end = _SENTENCE_END.search(text, 0, limit + 1)
    if end is not None and end.end() > limit:
        end = None
    if end is not None:
        first = text[: end.end()].rstrip()
    else:  # no sentence ends in time: cut at a word boundary, so no number is cut short
        words = text[: limit + 1].rsplit(None, 1)
        first = words[0] if len(words) == 2 and len(text) > limit else text[:limit]
    return first if first == text else f"{first} …"


#: Renders one stored turn for the model: (turn, whole, the observation to show, lang) ->
#: messages. Each protocol has one; memory decides what is shown whole.
RenderTurn = Callable[[Turn, bool, "str | None", str], list[Message]]


def turn_messages(turn: Turn, whole: bool, observation: str | None, lang: str) -> list[Message]:
    """One turn of the text protocol: the assistant's text and, when the engine answered, a
    user observation. A summarised action is shown without its thought."""
    text = turn.text  # a final answer is never followed by more turns
    if not whole and isinstance(turn.step, Action):
        text = grammar.render_step(dataclasses.replace(turn.step, thought=None), lang)
    messages: list[Message] = [{"role": "assistant", "content": text}]
    if observation is not None:
        messages.append({"role": "user", "content": grammar.render_observation(observation, lang)})
    return messages


def build_messages(
    opening: Sequence[Message],
    turns: Sequence[Turn],
    *,
    config: MemoryConfig = MemoryConfig(),
    lang: str = "en",
    render: RenderTurn = turn_messages,
    preface: str | None = None,
) -> list[Message]:
    """The full message list for the next call: opening, then each turn's messages, then the
    engine's `preface` for the turn about to be asked (the best-effort request)."""
    first_recent = max(0, len(turns) - config.keep_recent)
    rendered = []
    for i, turn in enumerate(turns):
        whole = i >= first_recent or turn.is_error
        shown = turn.observation
        if not whole:
            shown = summarise(turn.observation or "", config.summary_chars)
        pair = render(turn, whole, shown, lang)
        if turn.preface is not None:
            pair = [{"role": "user", "content": turn.preface}, *pair]
        rendered.append(pair)
    left_out = 0
    if config.budget_chars is not None:
        size = sum(_size(m) for pair in rendered for m in pair)
        while left_out < first_recent and size > config.budget_chars:
            size -= sum(_size(m) for m in rendered[left_out])
            left_out += 1
    messages = [dict(m) for m in opening]
    if left_out:
        note = templates.note("left_out", lang, count=str(left_out))
        messages[-1]["content"] += f"\n\n{note}"
    for pair in rendered[left_out:]:
        for message in pair:
            _append(messages, message)
    if preface is not None:
        _append(messages, {"role": "user", "content": preface})
    return messages


def _append(messages: list[Message], message: Message) -> None:
    """Add a message; an engine note (a user text) after a user text joins it, so roles keep
    alternating for every server."""
    last = messages[-1] if messages else None
    if (
        last is not None
        and message["role"] == last["role"] == "user"
        and isinstance(last.get("content"), str)
        and isinstance(message.get("content"), str)
    ):
        messages[-1] = {**last, "content": f"{last['content']}\n\n{message['content']}"}
    else:
        messages.append(dict(message))


def _size(message: Message) -> int:
    content = message.get("content")
    return len(content) if isinstance(content, str) else len(str(content or ""))
