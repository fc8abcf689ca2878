"""The text protocol, defined once: keywords and their accepted spellings, stop sequences, and
`render_step`, the canonical form. The prompt templates and the parser both read this module,
so what the model is told and what the parser accepts cannot drift apart."""

from __future__ import annotations

import re
import string
from functools import cache
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import regex

from textreact import jsonline
from textreact.steps import Action, FinalAnswer, Step

THOUGHT: Final = "thought"
ACTION: Final = "action"
ACTION_INPUT: Final = "action_input"
OBSERVATION: Final = "observation"
FINAL_ANSWER: Final = "final_answer"

KEYWORDS: Final = (THOUGHT, ACTION, ACTION_INPUT, OBSERVATION, FINAL_ANSWER)

#: The canonical label of each keyword per prompt language, as the model is taught to write it.
LABELS: Final[dict[str, dict[str, str]]] = {
    "en": {
        THOUGHT: "Thought",
        ACTION: "Action",
        ACTION_INPUT: "Action Input",
        OBSERVATION: "Observation",
        FINAL_ANSWER: "Final Answer",
    },
    "zh": {
        THOUGHT: "思考",
        ACTION: "行动",
        ACTION_INPUT: "行动输入",
        OBSERVATION: "观察",
        FINAL_ANSWER: "最终答案",
    },
}

#: The colon each language writes after a label.
COLONS: Final[dict[str, str]] = {"en": ":", "zh": "："}

LANGUAGES: Final = tuple(LABELS)

#: Every accepted spelling of each keyword, as regex fragments (matched case-insensitively).
#: Longer spellings come first where one is a prefix of another.
ALIASES: Final[dict[str, tuple[str, ...]]] = {
    ACTION_INPUT: (r"action[ _-]?input", r"行动输入", r"动作输入"),
    ACTION: (r"action", r"行动", r"动作"),
    THOUGHT: (r"thought", r"思考", r"想法"),
    OBSERVATION: (r"observation", r"观察"),
    FINAL_ANSWER: (r"final[ _-]?answer", r"最终答案", r"最终回答"),
}

_MARKUP = r"(?:\*\*|__|\*|_|`)"
#: What may stand before a keyword on its line: indentation, a quote or list marker, a heading,
#: bold or italics. Written so that each `[ \t]*` is followed by a different required character,
#: so a long run of blanks is tried once, not once per way of splitting it (linear time).
LEAD_PATTERN: Final = rf"[ \t]*(?:>[ \t]*)?(?:[-+][ \t]+)?(?:\#{{1,6}}[ \t]*)?(?:{_MARKUP}[ \t]*)?"
#: Any spelling of any keyword; without groups, the stdlib `re` scans for it ~10x faster.
ANY_SPELLING_PATTERN: Final = "|".join(s for spellings in ALIASES.values() for s in spellings)
SPELLINGS_PATTERN: Final = "|".join(
    f"(?P<{name}>{'|'.join(spellings)})" for name, spellings in ALIASES.items()
)

#: What may follow a keyword on its line before the value: a number (`Action 1:`), a space
#: before the colon, bold or italics closing, an ASCII or full-width colon, and bold closing
#: right after the colon (`**Action:** x`; in `Thought: **bold** x` the bold is the value's).
#: As in LEAD_PATTERN, no two `[ \t]*` can share a run of blanks.
TAIL_PATTERN: Final = rf"[ \t]*(?:\#?\d{{1,3}}[ \t]*)?(?:{_MARKUP}[ \t]*)?[:：](?:\*\*|__)?[ \t]*"

#: A keyword at the start of a line, with the decorations models put around it: indentation,
#: a quote or list marker, a markdown heading, bold or italics, a number (`Action 1:`), a space
#: before the colon, an ASCII or full-width colon, and bold closing after the colon.
#: The named group that matched tells which keyword it is; the match ends where the value begins.
#: Lower case: it is matched on `fold(text)` (the parser) or case-insensitively (KEYWORD_LINE).
#: The parser matches its parts separately: ANY_SPELLING_PATTERN finds a keyword, SPELLINGS_PATTERN
#: names it, and
#: LEAD_PATTERN must cover the line up to it and TAIL_PATTERN must follow it.
KEYWORD_LINE_PATTERN: Final = rf"^{LEAD_PATTERN}(?:{SPELLINGS_PATTERN}){TAIL_PATTERN}"

_INLINE_GROUPS = "|".join(
    f"(?P<{name}>{'|'.join(re.escape(LABELS[lang][name]) for lang in LANGUAGES)})"
    for name in ALIASES
)

#: A keyword in the middle of a line, as in the one-line form `Thought: … Action: x Action
#: Input: {…}`. Stricter than a keyword line: only the canonical labels, in their canonical
#: case, after a space or sentence punctuation (not a newline: that is KEYWORD_LINE's), so
#: ordinary prose rarely trips it. Matched on the text as written.
KEYWORD_INLINE_PATTERN: Final = (
    rf"(?:(?<=[ \t.,;!?。，；！？)）])|(?<=\*\*))(?:{_INLINE_GROUPS})[ \t]*[:：][ \t]*"
)


def _prefixes(word: str, shortest: int) -> str:
    return "|".join(re.escape(word[:n]) for n in range(len(word), shortest - 1, -1))


#: What a stop sequence leaves behind when the server cuts the model off mid-word: the start of
#: an Observation label on the last line (`\nObserv`, `\n**Obs`, `\n观`). Never an input.
#: Lower case, like KEYWORD_LINE_PATTERN; `[^\S\x1c-\x1f]` is whitespace as `regex` reads `\s`.
STOP_RESIDUE_PATTERN: Final = (
    rf"\n{LEAD_PATTERN}(?:\*\*|__)?"
    rf"(?:{_prefixes(LABELS['en'][OBSERVATION].lower(), 3)}"
    rf"|{_prefixes(LABELS['zh'][OBSERVATION], 1)})"
    rf"[ \t]*(?:\*\*|__)?[^\S\x1c-\x1f]*\Z"
)

#: The letters that case-insensitive matching equates with an ASCII letter, besides A-Z.
_FOLD_SPECIAL = {"\u0130": "i", "\u017f": "s", "\u212a": "k"}
_FOLD = str.maketrans({**{c: c.lower() for c in string.ascii_uppercase}, **_FOLD_SPECIAL})


def fold(text: str) -> str:
    """`text` with each letter that case-insensitive matching would equate with an ASCII letter
    written as that letter, index for index: the keyword patterns then match it as they stand,
    with the stdlib `re` and no IGNORECASE (several times faster than either engine's)."""
    if "\u0130" in text or "\u017f" in text:  # lower() would lengthen one, keep the other
        return text.translate(_FOLD)
    return text.lower()  # other letters lowercase to letters the patterns never contain


@cache
def _compiled(name: str) -> regex.Pattern[str]:
    import regex  # only callers of the public patterns pay for the `regex` import

    flags = {"KEYWORD_LINE": regex.IGNORECASE | regex.MULTILINE, "KEYWORD_INLINE": 0}
    return regex.compile(globals()[f"{name}_PATTERN"], flags.get(name, regex.IGNORECASE))


def __getattr__(name: str) -> regex.Pattern[str]:
    """KEYWORD_LINE, KEYWORD_INLINE and STOP_RESIDUE, compiled with `regex` on first use, so
    that importing the grammar compiles nothing."""
    if name in ("KEYWORD_LINE", "KEYWORD_INLINE", "STOP_RESIDUE"):
        return _compiled(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Sent to the server so the model stops before writing its own observation. Four at most:
#: OpenAI rejects more. The parser cuts any observation that slips through anyway.
STOP_SEQUENCES: Final[tuple[str, ...]] = (
    "\nObservation:",
    "\n**Observation",
    "\nObservation :",
    "\n观察",
)


def label(keyword: str, lang: str = "en") -> str:
    """`Thought:` / `思考：`: the label and colon the model is taught for `keyword` in `lang`."""
    return LABELS[lang][keyword] + COLONS[lang]


def render_input(value: dict | str) -> str:
    """An Action Input in canonical form: compact JSON for arguments, a plain string as is.
    The JSON is one line for the parser too, which breaks lines where `str.splitlines` does:
    NEL and the line and paragraph separators in a name or a value are written as escapes
    (`textreact.jsonline`), or a keyword after one would be read as the next line's."""
    if isinstance(value, str):
        return value
    return jsonline.dumps(value)


def render_step(step: Step, lang: str = "en") -> str:
    """The canonical text of an Action or FinalAnswer; `parse(render_step(s)) == s`."""
    lines = [] if step.thought is None else [f"{label(THOUGHT, lang)} {step.thought}"]
    if isinstance(step, Action):
        lines.append(f"{label(ACTION, lang)} {step.tool}")
        lines.append(f"{label(ACTION_INPUT, lang)} {render_input(step.input)}")
    elif isinstance(step, FinalAnswer):
        lines.append(f"{label(FINAL_ANSWER, lang)} {step.answer}")
    else:
        raise TypeError(f"render_step takes an Action or FinalAnswer, not {type(step).__name__}")
    return "\n".join(lines)


def render_observation(text: str, lang: str = "en") -> str:
    """The user message that carries a tool's result back to the model."""
    return f"{label(OBSERVATION, lang)} {text}"
