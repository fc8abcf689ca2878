"""Ground truth for fuzzing: tool names, arguments, answers and prose whose meaning no noise
family can change, so the step a generated completion stands for is never in doubt.

Every text here avoids what a tolerant parser may reasonably strip or reinterpret: keyword
lines, outer whitespace and markup, names like `None`, plain strings that parse as JSON or as a
Python literal, a last line that looks like a cut-off `Observation`, `</think>` and code fences
inside values, and the Unicode line separators that `str.splitlines` breaks on."""

from __future__ import annotations

import ast
import json
import warnings
from typing import Any

import regex
from hypothesis import strategies as st

from textreact.grammar import ALIASES, KEYWORD_LINE, LABELS, OBSERVATION
from textreact.steps import Action, FinalAnswer
from textreact.testing.draw import Drawer, strategy, until

#: Words that make readable minimal examples; random words add the letters below.
VOCABULARY = (
    "search", "weather", "Paris", "lookup", "fact", "the", "result", "is", "I", "will", "use",
    "tool", "to", "find", "out", "now", "know", "answer", "météo", "Zürich", "поиск", "天气",
    "查询", "東京", "我", "需要", "结果", "好的",
)  # fmt: skip
#: Letters and digits (Unicode categories L and Nd) from many scripts, astral planes included.
LETTERS = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    "éèêàäçñöüßøåæœÉÇÑÖÜŁłğış"  # Latin
    "αβγδλπσωΔΩабвгджзийклмнпрстуфцшыэюяЖЩ"  # Greek, Cyrillic
    "天气查询東京北京数据あいうカタナ한국어검색"  # CJK, kana, hangul
    "مرحباשלוםकखगกขค٣४"  # Arabic, Hebrew, Devanagari, Thai, other digits
    "ＡＢｚ１２𝐀𝔘𠀋𡈽"  # full-width, mathematical and CJK extension B letters
)
#: What a JSON string may carry: quotes, backslashes, markup, controls, invisible characters,
#: emoji, combining marks; not U+0085/U+2028/U+2029, which `str.splitlines` treats as breaks.
JSON_TEXT = (
    LETTERS + " \"'\\/{}[]:,.!?#*_`<>-+=@$%&|~^()"
    "\n\t\r\x00\x01\x1f\x7f\u00a0\u200b\u200d\u200f\ufeff\u0301😀🎉👍🏽"
)
#: Names a parser may rightly read as "no tool" or as a literal rather than as a name.
_RESERVED = frozenset({"none", "null", "nil", "n/a", "na", "nothing", "true", "false"})
_ALIAS = regex.compile(
    "|".join(spelling for spellings in ALIASES.values() for spelling in spellings),
    regex.IGNORECASE,
)
#: Compiled once, here: a pattern `regex` caches may be evicted with the global `random`, and
#: a strategy that moves the global random state is one Hypothesis refuses.
_SEPARATOR = regex.compile(r"[ _.\-]")
_STOP_LABELS = tuple(LABELS[lang][OBSERVATION].lower() for lang in LABELS)


def word(d: Drawer) -> str:
    if d.integer(0, 2) < 2:
        return d.pick(VOCABULARY)
    return d.text(LETTERS, 1, 8)


def _words(d: Drawer, low: int, high: int, make: Any = word) -> list[str]:
    return [make(d) for _ in range(d.integer(low, high))]


def _is_name(name: str) -> bool:
    words = [name, *_SEPARATOR.split(name)]
    return not any(w.lower() in _RESERVED or _ALIAS.fullmatch(w) for w in words)


def tool_name(d: Drawer) -> str:
    """One to three words (any script) joined by a space, `_`, `-` or `.`."""
    return until(d, lambda d: d.pick(" _-.").join(_words(d, 1, 3)), _is_name)


def _is_literal(text: str) -> bool:
    """True when `text` means a number, `true`, `None`... to JSON or Python, not itself."""
    try:
        json.loads(text)
    except ValueError:
        pass
    else:
        return True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.literal_eval(text)
        except Exception:  # literal_eval raises many types for non-literals
            return text.lower() in _RESERVED
    return True


def plain_input(d: Drawer) -> str:
    """An Action Input that is one line of words and not JSON-like: it stays a string."""
    return until(d, lambda d: " ".join(_words(d, 1, 5)), lambda s: not _is_literal(s))


def json_string(d: Drawer, min_size: int = 0) -> str:
    if d.integer(0, 1) == 0:
        return d.pick(VOCABULARY)
    return until(
        d,
        lambda d: d.text(JSON_TEXT, min_size, 12),
        lambda s: "```" not in s and "think>" not in s,
    )


def json_value(d: Drawer, depth: int = 0) -> Any:
    """Any JSON value, nested two levels deep at most."""
    kinds = ("string", "integer", "null", "boolean", "float", "list", "object")
    kind = d.pick(kinds if depth < 2 else kinds[:5])
    if kind == "string":
        return json_string(d)
    if kind == "integer":  # within 2**53, so every JSON reader keeps the value exact
        return d.pick((d.integer(-100, 100), d.integer(-(2**53), 2**53)))
    if kind == "null":
        return None
    if kind == "boolean":
        return d.pick((False, True))
    if kind == "float":
        return d.floating()
    if kind == "list":
        return [json_value(d, depth + 1) for _ in range(d.integer(0, 3))]
    return json_object(d, depth + 1)


def json_object(d: Drawer, depth: int = 0) -> dict[str, Any]:
    return {json_string(d, 1): json_value(d, depth) for _ in range(d.integer(0, 3))}


def prose(d: Drawer) -> str:
    """A sentence of chatter: thoughts, preambles, hallucinated observations."""
    return " ".join(_words(d, 1, 8, lambda d: d.pick(VOCABULARY))) + "."


def _is_plain_text(text: str) -> bool:
    """No keyword line, and no last line a parser could take for a cut-off `Observation`."""
    last = text.rsplit("\n", 1)[-1].lower()
    return not KEYWORD_LINE.search(text) and not any(s.startswith(last) for s in _STOP_LABELS)


def answer(d: Drawer) -> str:
    """One to three lines of words, each word starting and ending with a letter or digit."""

    def lines(d: Drawer) -> str:
        return "\n".join(
            " ".join(_words(d, 1, 6)) + d.pick(("", ".", "!", "?", "。"))
            for _ in range(d.integer(1, 3))
        )

    return until(d, lines, _is_plain_text)


def thought(d: Drawer) -> str | None:
    return prose(d) if d.integer(0, 1) else None


def action(d: Drawer, inputs: str = "any") -> Action:
    """An Action; `inputs` is "dict", "str", or "any" (mostly a JSON object)."""
    kind = inputs if inputs != "any" else d.pick(("dict", "dict", "str"))
    value = json_object(d) if kind == "dict" else plain_input(d)
    return Action(tool=tool_name(d), input=value, thought=thought(d))


def final_answer(d: Drawer) -> FinalAnswer:
    return FinalAnswer(answer=answer(d), thought=thought(d))


def step(d: Drawer) -> Action | FinalAnswer:
    return action(d) if d.integer(0, 1) == 0 else final_answer(d)


def tool_names() -> st.SearchStrategy[str]:
    """Tool names with spaces, separators and letters of many scripts."""
    return strategy(tool_name)


def json_values() -> st.SearchStrategy[Any]:
    """Every JSON type, nested; strings carry quotes, controls, emoji and markup."""
    return strategy(json_value)


def arguments() -> st.SearchStrategy[dict[str, Any]]:
    """An Action Input as a JSON object."""
    return strategy(json_object)


def plain_inputs() -> st.SearchStrategy[str]:
    return strategy(plain_input)


def answers() -> st.SearchStrategy[str]:
    return strategy(answer)


def actions() -> st.SearchStrategy[Action]:
    return strategy(action)


def final_answers() -> st.SearchStrategy[FinalAnswer]:
    return strategy(final_answer)


def steps() -> st.SearchStrategy[Action | FinalAnswer]:
    return strategy(step)
