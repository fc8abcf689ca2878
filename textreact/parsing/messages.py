"""What the model did wrong -> FormatError: the message quoting the fragment, the hint showing
the exact form (rendered by the grammar, in the completion's language); and the checks that
tell a keyword-less answer from an intention or a fragment."""

from __future__ import annotations

import re
from functools import lru_cache

from textreact import grammar
from textreact.parsing.inputs import tool_name
from textreact.parsing.keywords import spelled_keyword
from textreact.steps import Action, FinalAnswer, FormatError

_PHRASES = {
    "en": {
        "forms": "Reply in exactly one of these two forms.\nTo use a tool:\n{action}\n\n"
        "To answer:\n{final}",
        "no_input": "Write an Action Input line after the Action line; send {{}} for a tool "
        "without arguments:\n{action}",
        "thought": "what you know so far and what to do next",
        "answer": "your answer to the question",
    },
    "zh": {
        "forms": "请严格使用以下两种格式之一。\n调用工具：\n{action}\n\n给出答案：\n{final}",
        "no_input": "在行动之后写一行行动输入；工具没有参数时写 {{}}：\n{action}",
        "thought": "目前已知的信息和下一步要做什么",
        "answer": "对问题的回答",
    },
}
_INTENTION = (
    r"(?i)"
    r"^(?:(?:ok(?:ay)?|so|now|first|alright|well|hmm+|great)[,.!]?\s+)*"
    r"(?:i\s+(?:should|need\s+to|will|must|want\s+to|have\s+to|can|could|am\s+going\s+to)"
    r"|i'(?:ll|m\s+going\s+to)|let\s+me|let's|we\s+(?:should|need\s+to|will|must|can))\b"
    r"|^(?:我(?:需要|应该|将|要|会|得|先|来)|让我|首先|我们(?:需要|应该|来))"
)
_FRAGMENT_END = (
    r"(?i)"
    r"(?:[:：,，;；(\[{—–-]|\.\.\.|…|\b(?:the|a|an|of|to|and|or|is|are|was|for|with|in|on|by"
    r"|that|as|at|from|be)\b)\Z"
)
_SENTENCE_END = r"(?<=[.!?。！？])\s+"


@lru_cache(maxsize=64)
def forms_hint(lang: str, tool: str = "tool_name", example: str = '{"argument": "value"}') -> str:
    """The two forms a reply may take, in `lang`, rendered by the grammar. The parser knows no
    tools, so its hint shows a placeholder tool; the loop, which knows them, shows a real tool
    and its example Action Input instead, since small models copy a placeholder literally."""
    phrases = _PHRASES[lang]
    action = Action(tool, example, phrases["thought"])
    final = FinalAnswer(phrases["answer"], phrases["thought"])
    return phrases["forms"].format(
        action=grammar.render_step(action, lang), final=grammar.render_step(final, lang)
    )


def error(message: str, lang: str, *, rest: str = "") -> FormatError:
    return FormatError(message, forms_hint(lang), rest)


def no_input(written: str, lang: str, rest: str) -> FormatError:
    tool = tool_name(written)
    action = grammar.render_step(Action(tool or "tool_name", {}), lang)
    return FormatError(
        f"the action {quote(tool)} has no Action Input line",
        _PHRASES[lang]["no_input"].format(action=action),
        rest,
    )


def quote(fragment: str, limit: int = 80) -> str:
    """A fragment on one line, shortened in the middle, for a message."""
    flat = " ".join(fragment.split())
    if len(flat) > limit:
        flat = f"{flat[: limit // 2 - 1]}…{flat[-(limit // 2 - 1) :]}"
    return f"“{flat}”"


def implicit_problem(body: str) -> str | None:
    """Why a keyword-less completion is not an answer (an intention, a fragment), or None."""
    sentences = [s for s in re.split(_SENTENCE_END, body[-400:]) if s.strip()]
    if re.match(_INTENTION, body) or re.match(_INTENTION, sentences[-1].strip()):
        return f"the completion states an intention but takes no action: {quote(body)}"
    if re.search(_FRAGMENT_END, body[-40:]) or _is_label(body):
        return f"the completion is a fragment, not an answer: {quote(body)}"
    return None


def _is_label(body: str) -> bool:
    """A bare keyword with its colon missing (`Action`), as a cut-off completion leaves it."""
    return len(body) < 40 and spelled_keyword(body.rstrip("*_ ") + ":") is not None
