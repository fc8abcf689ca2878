"""Completion text -> the window the parser reads: where the leading reasoning ends, the later
`<think>` blocks inside it, and where the reply ends (at an end-of-turn token, or before a
stop-word residue). Only `str.find`-class scans (and, for a reply that opens with a long run
of blanks or of empty keywords, one linear match each), so a megabyte costs what its few
`find` calls cost."""

from __future__ import annotations

import re
from functools import cache

from textreact import grammar
from textreact.parsing.blanks import BLANKS

#: Characters examined for keywords after the leading reasoning block. A ReAct step is a few
#: hundred characters; past this a Final Answer simply runs to the end of the text.
SCAN_LIMIT = 16_384
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
#: A stop-word residue lies on the last line, within this many characters of the end.
_RESIDUE_REACH = 40
#: The chat-template tokens that end the model's turn, or open the next one, as a raw
#: completion endpoint or a template the server does not know leaves them in the text. The
#: reply ends at the first one: what follows is no part of any step (nor is the token itself,
#: which would otherwise stay in an answer or a plain-string Action Input). Every one starts
#: with `<`, which the search relies on.
END_OF_TURN = (
    "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|start_header_id|>",  # Llama 3
    "<|im_end|>", "<|im_start|>", "<|endoftext|>",  # ChatML (Qwen, SmolLM), GPT-2
    "<|end|>", "<|return|>",  # Phi-3, gpt-oss
    "<end_of_turn>", "<start_of_turn>",  # Gemma
    "</s>",  # Llama 2, Mistral
    "<｜end▁of▁sentence｜>", "<｜User｜>",  # DeepSeek, with full-width bars
    "<|END_OF_TURN_TOKEN|>",  # Command R
)  # fmt: skip


class Window:
    """`text[start:stop]` is scanned for keywords (`start` None: all of it is reasoning);
    `end` is where the reply ends (at `turn`, the first END_OF_TURN token if any, or before a
    residue); `masks` are (start, end) think blocks."""

    __slots__ = ("end", "masks", "start", "stop", "turn")

    def __init__(self, text: str) -> None:
        thinks = "think>" in text  # both tags end so: one test for the common reply with none
        start = reasoning_end(text) if thinks else 0
        self.turn = _turn_end(text, start or 0)
        self.end = residue_start(text, len(text) if self.turn is None else self.turn)
        if start is not None and len(text) - start > SCAN_LIMIT:
            start = _past_empty_keywords(text, _past_blanks(text, start))
        self.start = start
        self.stop = min(self.end, (start or 0) + SCAN_LIMIT)
        self.masks = _think_blocks(text, start, self.stop) if thinks and start is not None else []

    def masked(self, position: int) -> bool:
        return any(a <= position < b for a, b in self.masks)


@cache
def _residue_pattern() -> re.Pattern[str]:
    return re.compile(grammar.STOP_RESIDUE_PATTERN)


#: Keywords read by one match of `_empty_keywords`: a bounded run, so the match keeps
#: backtracking state for this many at most, and a run of a million costs few Python steps.
_RUN_CHUNK = 256


@cache
def _empty_keywords() -> re.Pattern[str]:
    """Up to _RUN_CHUNK keywords with nothing after them (`Thought: Action: Action Input:
    …`), the last one captured. No two blank runs can meet, and each is bounded, so a run that
    fails costs little wherever it fails."""
    markup = r"(?:\*\*|__|\*|_|`)"
    keyword = (
        rf"\s{{0,16}}{markup}?(?:{grammar.ANY_SPELLING_PATTERN})(?:[ \t]{{0,8}}{markup})?"
        rf"[ \t]{{0,8}}[:：](?:\*\*|__)?"
    )
    return re.compile(rf"(?:{keyword}){{0,{_RUN_CHUNK - 1}}}({keyword})", re.IGNORECASE)


def _past_empty_keywords(text: str, start: int) -> int:
    """Where the scan starts when the reply opens with a run of empty keywords longer than a
    quarter of the scan limit: at the last of them, so the limit counts what follows it. The
    run is read a bounded chunk at a time: one match of the whole run (`(?:kw)*`) kept
    backtracking state for every keyword, about 100 bytes each (680 MB for 7 MB of them)."""
    pattern, at, last = _empty_keywords(), start, None
    while (chunk := pattern.match(text, at)) is not None:
        at, last = chunk.end(), chunk.start(1)
    if last is None or at - start < SCAN_LIMIT // 4:
        return start
    return last


#: A run of what the parser reads as nothing (`blanks.BLANKS`), and nothing else: a character
#: the scan reads as text (`\x01`, a word joiner) must count against the limit as it counts
#: in a short reply, or the step read would depend on the run's length.
_BLANKS = re.compile(f"[{re.escape(BLANKS)}]*")


def _past_blanks(text: str, start: int) -> int:
    """Where the reply's first character that is not blank lies (one linear match): a run of
    NULs or spaces before a step is nothing the scan limit should count."""
    return _BLANKS.match(text, start).end()  # type: ignore[union-attr]


def _turn_end(text: str, start: int) -> int | None:
    """Where the first END_OF_TURN token after `start` begins. One `find` per token, each
    bounded by the best so far: linear, and a text with no `<` after `start` (most replies)
    costs one `find`."""
    if text.find("<", start) < 0:
        return None
    end = len(text)
    for token in END_OF_TURN:
        at = text.find(token, start, end)
        if at >= 0:
            end = at
    return end if end < len(text) else None


def residue_start(text: str, end: int) -> int:
    """Where a stop-word residue at the end of `text[:end]` begins, else `end`."""
    at = max(0, end - _RESIDUE_REACH)
    if text.find("\n", at, end) < 0:
        return end
    tail = grammar.fold(text[at:end])
    if "obs" not in tail and "观" not in tail:  # the shortest residues: `\nObs`, `\n观`
        return end
    residue = _residue_pattern().search(tail)
    return at + residue.start() if residue else end


def reasoning_end(text: str) -> int | None:
    """Where the leading reasoning ends: after `</think>`, even with the opening tag left in the
    prompt (DeepSeek-R1's template); None when a leading `<think>` is never closed."""
    opened, closed = text.find(_THINK_OPEN), text.find(_THINK_CLOSE)
    if closed >= 0 and (opened < 0 or closed < opened):
        return closed + len(_THINK_CLOSE)
    if opened >= 0 and not text[:opened].strip(BLANKS):
        closed = text.find(_THINK_CLOSE, opened)
        return None if closed < 0 else closed + len(_THINK_CLOSE)
    return 0


def _think_blocks(text: str, start: int, stop: int) -> list[tuple[int, int]]:
    """Later `<think>` blocks inside the scanned window: keywords there are not the reply's."""
    blocks, at = [], start
    while (opened := text.find(_THINK_OPEN, at, stop)) >= 0:
        closed = text.find(_THINK_CLOSE, opened, stop)
        at = stop if closed < 0 else closed + len(_THINK_CLOSE)
        blocks.append((opened, at))
    return blocks
