"""Step + Noise -> completion text: writes a known step the way a sloppy model would.

Pure and free of Hypothesis: the families in `families.py` draw a `Noise`, this module renders
it. With the default `Noise()` the text is exactly `grammar.render_step(step)`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union

from textreact.grammar import (
    ACTION,
    ACTION_INPUT,
    COLONS,
    FINAL_ANSWER,
    LABELS,
    OBSERVATION,
    THOUGHT,
)
from textreact.steps import Action, FinalAnswer

#: How a keyword's spelling is cased.
CASES: Mapping[str, Any] = {
    "as_is": str,
    "upper": str.upper,
    "lower": str.lower,
    "title": str.title,
    "capitalize": str.capitalize,
    "swapcase": str.swapcase,
}

#: Something written after the step: an observation's text, or a further step.
TailItem = Union[str, Action, FinalAnswer]  # noqa: UP007 (a runtime alias works on 3.10)


@dataclass(frozen=True)
class Noise:
    """Every way a completion may differ from the canonical form; defaults are canonical."""

    spellings: Mapping[str, str] = field(default_factory=lambda: LABELS["en"])
    case: str = "as_is"
    #: Text before the spelling, between it (and its number) and the colon, and after the colon.
    markup: tuple[str, str, str] = ("", "", "")
    number: str = ""
    before_colon: str = ""
    colon: str = COLONS["en"]
    after_colon: str = " "
    indent: str = ""
    line_end: str = ""
    newline: str = "\n"
    end: str = ""
    tool_wrap: tuple[str, str] = ("", "")
    #: How a dict input is written: Python literal, trailing commas, indentation, fence.
    python: bool = False
    trailing_comma: bool = False
    json_indent: int | None = None
    ensure_ascii: bool = False
    fence: str | None = None
    #: A string input written as a JSON string literal.
    quoted: bool = False
    input_next_line: bool = False
    answer_next_line: bool = False
    think: str | None = None
    prose_before: str = ""
    prose_after: str = ""
    tail: tuple[TailItem, ...] = ()
    #: Characters of the Observation spelling left out at the very end (a cut-off stop word).
    partial_stop: int | None = None


def dump(value: Any, noise: Noise, depth: int = 0) -> str:
    """JSON or a Python literal, with optional indentation and trailing commas."""
    if isinstance(value, dict):
        items = [f"{dump(k, noise)}: {dump(v, noise, depth + 1)}" for k, v in value.items()]
        opening, closing = "{", "}"
    elif isinstance(value, list):
        items = [dump(v, noise, depth + 1) for v in value]
        opening, closing = "[", "]"
    else:
        return repr(value) if noise.python else json.dumps(value, ensure_ascii=noise.ensure_ascii)
    if not items:
        return opening + closing
    comma = "," if noise.trailing_comma else ""
    if noise.json_indent is None:
        return f"{opening}{', '.join(items)}{comma}{closing}"
    pad = "\n" + " " * noise.json_indent * (depth + 1)
    close = "\n" + " " * noise.json_indent * depth
    return f"{opening}{pad}{(',' + pad).join(items)}{comma}{close}{closing}"


def render_value(value: dict[str, Any] | str, noise: Noise) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False) if noise.quoted else value
    body = dump(value, noise)
    return body if noise.fence is None else f"{noise.fence}\n{body}\n```"


def _label(keyword: str, noise: Noise) -> str:
    before, middle, after = noise.markup
    spelling = CASES[noise.case](noise.spellings[keyword])
    return (
        f"{noise.indent}{before}{spelling}{noise.number}{middle}"
        f"{noise.before_colon}{noise.colon}{after}"
    )


def _line(keyword: str, value: str, noise: Noise, *, next_line: bool = False) -> str:
    label = _label(keyword, noise)
    if next_line:
        return f"{label}{noise.line_end}\n{value}{noise.line_end}"
    return f"{label}{noise.after_colon}{value}{noise.line_end}"


def _step_lines(step: Action | FinalAnswer, noise: Noise) -> list[str]:
    lines = [] if step.thought is None else [_line(THOUGHT, step.thought, noise)]
    if isinstance(step, Action):
        opening, closing = noise.tool_wrap
        lines.append(_line(ACTION, f"{opening}{step.tool}{closing}", noise))
        value = render_value(step.input, noise)
        lines.append(_line(ACTION_INPUT, value, noise, next_line=noise.input_next_line))
    else:
        lines.append(_line(FINAL_ANSWER, step.answer, noise, next_line=noise.answer_next_line))
    return lines


def _partial_stop(noise: Noise) -> str:
    spelling = CASES[noise.case](noise.spellings[OBSERVATION])
    keep = max(len(spelling) - (noise.partial_stop or 0), min(3, len(spelling) - 1))
    return f"{noise.indent}{noise.markup[0]}{spelling[:keep]}"


def render(step: Action | FinalAnswer, noise: Noise | None = None) -> str:
    """The completion text for `step` written with `noise`."""
    noise = Noise() if noise is None else noise
    lines = _step_lines(step, noise)
    lines[-1] += noise.prose_after
    for item in noise.tail:
        is_step = isinstance(item, (Action, FinalAnswer))
        lines.extend(_step_lines(item, noise) if is_step else [_line(OBSERVATION, item, noise)])
    if noise.partial_stop is not None:
        lines.append(_partial_stop(noise))
    think = "" if noise.think is None else f"<think>\n{noise.think}\n</think>\n\n"
    return think + noise.prose_before + noise.newline.join(lines) + noise.end
