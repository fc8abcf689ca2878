"""What the model did wrong -> FormatError: a problem code, the message quoting the fragment
and the hint showing the exact form, both from the `parse_*` sections of prompts/notes.md in
the completion's language (the keywords come from the grammar); and the checks that tell a
keyword-less answer from an intention or a fragment."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from textreact import grammar, jsonish, templates
from textreact.parsing.keywords import spelled_keyword
from textreact.steps import Action, FinalAnswer, FormatError

#: The arguments a hint shows when it does not know the tool's own.
PLACEHOLDER_INPUT = '{"argument": "value"}'

_INTENTION_PATTERN = (
    r"(?i)"
    r"^(?:(?:ok(?:ay)?|so|now|first|next|then|alright|well|hmm+|great)[,.!]?\s+)*"
    r"(?:(?:i|we)\s+(?:should|need\s+to|will|must|want\s+to|have\s+to|can|could|shall"
    r"|am\s+going\s+to|are\s+going\s+to)"
    r"|i'(?:ll|m\s+going\s+to)|we'(?:ll|re\s+going\s+to)|let\s+me|let's"
    # the same intentions with the subject left out: "Need to search…", "Will look it up."
    r"|(?:(?:need|have|want|going|trying)\s+to|gonna|should|will|must|shall)"
    r"\s+(?:now\s+|first\s+|then\s+)?(?:use|search|look|check|call|find|compute|calculate"
    r"|query|try|ask|get|run|fetch|verify|consult|invoke|see|figure)\b"
    r"|(?:searching|looking\s+(?:up|for|into)|checking|calculating|computing|querying"
    r"|fetching)\b)"
    r"|^(?:我(?:需要|应该|将|要|会|得|先|来)|让我|首先|我们(?:需要|应该|来))"
)
_FRAGMENT_END_PATTERN = (
    r"(?i)"
    r"(?:[:：,，;；(\[{—–-]|\.\.\.|…|\b(?:the|a|an|of|to|and|or|is|are|was|for|with|in|on|by"
    r"|that|as|at|from|be)\b)\Z"
)
#: LangChain's conversational format asks "Do I need to use a tool?" before each step; the
#: question and its yes or no alone are not an answer.
_TOOL_QUESTION_PATTERN = r"(?i)(?:thought:\s*)?do\s+i\s+need\s+to\s+use\s+a\s+tool\s*\?\s*\w*\W*"
#: One word, no digits, no closing punctuation: a tool name or a cut-off first word, not an
#: answer (`42`, `Paris.` and `北京` are answers).
_SINGLE_TOKEN_PATTERN = r"[^\W\d]+(?:[_'’-][^\W\d]+)*"
_CJK_PATTERN = "[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]"
_SENTENCE_END_PATTERN = r"(?<=[.!?。！？])\s+"


@lru_cache(maxsize=1)
def _checks() -> tuple[re.Pattern[str], ...]:
    """The implicit-answer checks, compiled on the first use, not on import."""
    return tuple(
        re.compile(pattern)
        for pattern in (
            _INTENTION_PATTERN,
            _FRAGMENT_END_PATTERN,
            _TOOL_QUESTION_PATTERN,
            _SINGLE_TOKEN_PATTERN,
            _CJK_PATTERN,
            _SENTENCE_END_PATTERN,
        )
    )


def _render(step: Action | FinalAnswer, lang: str) -> str:
    return grammar.render_step(step, lang)


@lru_cache(maxsize=64)
def forms_hint(lang: str, tool: str = "tool_name", example: str = PLACEHOLDER_INPUT) -> str:
    """The two forms a reply may take, in `lang`, rendered by the grammar. The parser knows no
    tools, so its hint shows a placeholder tool; the loop, which knows them, shows a real tool
    and its example Action Input instead, since small models copy a placeholder literally."""
    thought = templates.note("parse_thought", lang)
    action = _render(Action(tool, example, thought), lang)
    final = _render(FinalAnswer(templates.note("parse_answer", lang), thought), lang)
    return templates.note("parse_forms", lang, action_form=action, final_form=final)


@lru_cache(maxsize=64)
def _tool_hint(name: str, lang: str, tool: str, example: str) -> str:
    action = _render(Action(tool or "tool_name", example), lang)
    return templates.note(name, lang, action_form=action)


#: The slots a parser message may use.
_SLOTS = ("fragment", "tool", "key", "keys")


@lru_cache(maxsize=128)
def _message(name: str, lang: str) -> str:
    """A message from the notes, rendered once per language with a marker in each slot."""
    return templates.note(name, lang, **{slot: f"\x00{slot}\x00" for slot in _SLOTS})


def error(
    problem: str,
    lang: str,
    *,
    rest: str = "",
    tool: str | None = None,
    note: str | None = None,
    **slots: str,
) -> FormatError:
    """A FormatError for `problem` (a code, docs/protocol.md), its message from the notes
    section `parse_<note or problem>`; the hint shows the tool named, when one was."""
    if tool is not None:
        slots["tool"] = quote(tool)
    message = _message(f"parse_{note or problem}", lang)
    for slot, value in slots.items():
        message = message.replace(f"\x00{slot}\x00", value)
    return FormatError(message, hint(problem, lang, tool), rest, problem, tool, lang)


#: Problems whose hint is the one tool's action (notes section, its Action Input); every other
#: problem's hint is the two forms.
_TOOL_HINTS = {
    "no_input": ("parse_no_input_hint", "{}"),
    "ambiguous_input": ("parse_one_input_hint", PLACEHOLDER_INPUT),
    "lost_arguments": ("parse_arguments_hint", PLACEHOLDER_INPUT),
}


def hint(problem: str, lang: str, tool: str | None = None, example: str | None = None) -> str:
    """The hint for `problem` in `lang`. The parser knows no tools and shows the tool named (or
    a placeholder); the loop, which knows them, passes a real tool and its example input,
    since small models copy a placeholder literally."""
    if problem == "placeholder":  # the forms would show a placeholder answer once more
        return templates.note("parse_placeholder_hint", lang)
    if problem in _TOOL_HINTS:
        section, placeholder = _TOOL_HINTS[problem]
        shown = placeholder if problem == "no_input" or example is None else example
        return _tool_hint(section, lang, tool or "", shown)
    if tool is None:
        return forms_hint(lang)
    return forms_hint(lang, tool, example or PLACEHOLDER_INPUT)


def ambiguity(error: jsonish.AmbiguousJsonError) -> tuple[str, str, dict[str, str]]:
    """An ambiguous Action Input as `error`'s arguments: problem, notes section, slots."""
    if error.reason == "duplicate_key":
        return "ambiguous_input", "duplicate_key", {"key": quote(error.key or "")}
    return "ambiguous_input", "two_objects", {}


def quote(fragment: str, limit: int = 80) -> str:
    """A fragment on one line, shortened in the middle, for a message."""
    flat = " ".join(fragment.split())
    if len(flat) > limit:
        flat = f"{flat[: limit // 2 - 1]}…{flat[-(limit // 2 - 1) :]}"
    return f"“{flat}”"


def implicit_problem(body: str) -> str | None:
    """Why a keyword-less completion is not an answer ("intention", "fragment"), or None."""
    _, fragment_end, tool_question, single_token, cjk, sentence_end = _checks()
    if states_intention(body):
        return "intention"
    sentences = [s for s in sentence_end.split(body[-400:]) if s.strip()]
    if states_intention(sentences[-1].strip()):
        return "intention"
    if fragment_end.search(body[-40:]) or _is_label(body):
        return "fragment"
    if tool_question.fullmatch(body) or (
        len(body) <= 40 and single_token.fullmatch(body) and not cjk.search(body)
    ):
        return "fragment"
    return None


def is_placeholder(answer: str) -> bool:
    """Whether `answer` is what the prompt's format or a hint shows in place of an answer
    (`the answer`, `答案`, `your answer to the question`), in any language: a model that copies
    the placeholder has answered nothing."""
    return _folded(answer) in _placeholders()


def held_in(answer: str, texts: Iterable[str]) -> bool:
    """Whether `answer` is a name that one of `texts` holds as written: it has capitals (the
    prompt's placeholders have none, so a copy of one has none either) and a text holds it
    with the same capitals, as words of their own. A tool result that names a band called "The
    Answer" makes that answer the band's name; "the answer is 42" in a document makes the
    copied "the answer" nothing of the kind."""
    written = answer.strip()
    if written == written.lower():
        return False
    phrase = re.compile(rf"(?<!\w){re.escape(written)}(?!\w)")
    return any(phrase.search(text) for text in texts)


def may_be_placeholder(answer: str) -> bool:
    """Whether `answer`, still growing, may yet read as a placeholder: one streamed is held
    back until it cannot."""
    folded = _folded(answer)
    return any(placeholder.startswith(folded) for placeholder in _placeholders())


@lru_cache(maxsize=1)
def _placeholders() -> frozenset[str]:
    label = "$final_answer "
    found = set()
    for lang in grammar.LANGUAGES:
        found.add(_folded(templates.note("parse_answer", lang)))
        lines = templates.load_template("format.md", lang).splitlines()
        found.update(_folded(line[len(label) :]) for line in lines if line.startswith(label))
    return frozenset(found)


def _folded(text: str) -> str:
    return text.strip(" \t\r\n.。!！\"'“”`*_").casefold()


def states_intention(text: str) -> bool:
    """Whether `text` opens by saying what the model will do ("I should search…", "Let me…",
    "Need to check…", "我需要…")."""
    return _checks()[0].match(text) is not None


def _is_label(body: str) -> bool:
    """A bare keyword with its colon missing (`Action`), as a cut-off completion leaves it."""
    return len(body) < 40 and spelled_keyword(body.rstrip("*_ ") + ":") is not None
