"""Completion text -> Step: the one action, the final answer, or a FormatError that tells the
model what to fix. Tolerant of what models really write (see docs/protocol.md for the decision
table), pure, and bounded: it never raises for a `str`, and it looks at most SCAN_LIMIT
characters past any leading reasoning, so a megabyte of garbage costs what 16 KB costs.

Keywords are found with grammar's `regex` patterns; the small helper patterns here (call syntax,
intentions, fences) use the stdlib `re`, which compiles and runs them faster on short text;
the rarely needed ones are kept as strings, compiled on first use by `re`'s cache, so that
importing the parser stays cheap."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import regex

from textreact import grammar, jsonish
from textreact.steps import Action, FinalAnswer, FormatError, Step

#: Characters examined for keywords after the leading reasoning block. A ReAct step is a few
#: hundred characters; past this a Final Answer simply runs to the end of the text.
SCAN_LIMIT = 16_384
#: Seconds the scan of a long window may take before the completion is refused (it never
#: should: every pattern here is linear).
REGEX_TIMEOUT = 0.5
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_NO_ACTION = frozenset(
    {"none", "n/a", "na", "no action", "no tool", "nothing", "null", "无", "没有", "不需要"}
)
_WRAPPERS = (("**", "**"), ("__", "__"), ("*", "*"), ("`", "`"), ("[", "]"), ('"', '"'),
             ("'", "'"), ("<", ">"))  # fmt: skip
_CALL = re.compile(
    r"(?P<name>[^\s(\[{][^(\[{\n]*?)[ \t]*"
    r"(?:\((?P<paren>.*)\)|\[(?P<bracket>.*)\]|(?P<brace>\{.*\}))[ \t]*[.;]?\Z",
    re.DOTALL,
)
_TAG = r"</?[A-Za-z_]{1,20}>"
_BLOB_TOOL_KEYS = ("action", "name", "tool", "tool_name", "function")
_BLOB_ARG_KEYS = ("action_input", "arguments", "parameters", "args", "input", "tool_input")
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
_HAN = re.compile("[\u3400-\u9fff\uf900-\ufaff]")
_FENCED = r"(?s)```[\w-]*[ \t]*\n?(.*?)\n?```"
_PLAIN_NAME = re.compile(r"\w(?:[\w .\-/]*\w)?")
#: Any spelling of any keyword, matched on ASCII-lowercased text: a cheap scan that finds the
#: few lines worth trying KEYWORD_LINE on (it costs microseconds a line, even blank ones).
_KEYWORD_ANYWHERE = re.compile("|".join(s for group in grammar.ALIASES.values() for s in group))
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
#: Windows up to this long are scanned line by line directly; longer ones through the prefilter.
_SHORT = 2_000
#: The most a keyword may be indented or decorated (`> - ### **`) and still start its line.
_MAX_LEAD = 40


class _Token(NamedTuple):
    """One keyword and its value: `text[value:end]`. `kind` None is the text before any keyword."""

    kind: str | None
    start: int
    value: int
    end: int
    lang: str


def parse(text: str) -> Step:
    """Read one completion; never raises for a `str` (the model's mistakes are FormatErrors)."""
    try:
        return _canonical_action(text) or _Reader(text).step()
    except TimeoutError:
        return _error("the completion took too long to read; write a short reply", "en", tool=None)


class _Reader:
    """The state of one parse: the text, where reasoning ends, and the tokens found."""

    def __init__(self, text: str) -> None:
        self.text = text
        residue = grammar.STOP_RESIDUE.search(text, max(0, len(text) - 40))
        self.end = residue.start() if residue else len(text)
        self.start = _reasoning_end(text)
        self.stop = min(self.end, (self.start or 0) + SCAN_LIMIT)
        self.masks = _think_blocks(text, self.start or 0, self.stop)
        # A timeout costs ~7 us a call, so only the scan of a long window carries one.
        timeout = REGEX_TIMEOUT if self.stop - (self.start or 0) > _SHORT else None
        #: Whether any keyword is written mid-line; most completions have none.
        self.inline = (
            self.start is not None
            and grammar.KEYWORD_INLINE.search(text, self.start, self.stop, timeout=timeout)
            is not None
        )

    def step(self) -> Step:
        if self.start is None:
            return _error("the completion is all reasoning: <think> was never closed", "en")
        tokens, decision = self._tokens()
        lang = next((t.lang for t in tokens if t.kind), None) or _lang_of(
            self.text[self.start : self.stop]
        )
        if decision is not None and tokens[decision].kind == grammar.ACTION:
            return self._action(tokens, decision, lang)
        if decision is not None:
            return self._final(tokens, decision, lang)
        for i, token in enumerate(tokens):
            if token.kind == grammar.OBSERVATION:
                break
            if token.kind in (None, grammar.THOUGHT) and (blob := self._blob(token, tokens, i)):
                return blob
        if len(tokens) == 1:
            return self._implicit(lang)
        return self._no_decision(tokens, lang)

    # -- tokens ---------------------------------------------------------------------------

    def _tokens(self) -> tuple[list[_Token], int | None]:
        """Keyword tokens up to the decision (the first action's input, or the first answer),
        and the index of the deciding token."""
        found: list[_Token] = []
        decided: int | None = None
        for token in self._scan():
            found.append(token)
            if decided is None and (token.kind == grammar.FINAL_ANSWER or self._acts(token)):
                decided = len(found) - 1
            if decided is not None and len(found) - decided >= 2:
                break
        return found, decided

    def _scan(self) -> Iterator[_Token]:
        offset = self.start or 0
        kind, start, value, lang = None, offset, offset, "en"
        for match in self._keyword_lines():
            if self._masked(offset + match.start()):
                continue
            yield from self._split(kind, start, value, offset + match.start(), lang)
            label = match.group(match.lastgroup)
            kind, lang = match.lastgroup, _lang_of(label)
            start, value = offset + match.start(), offset + match.end()
        yield from self._split(kind, start, value, self.stop, lang)

    def _keyword_lines(self) -> Iterator[regex.Match[str]]:
        """KEYWORD_LINE matches in the window, tried only on lines where a keyword appears. The
        window is sliced so that `^` also matches right after a closing </think>."""
        window = self.text[self.start or 0 : self.stop]
        if len(window) <= _SHORT:
            yield from grammar.KEYWORD_LINE.finditer(window)
            return
        lowered = window.translate(_ASCII_LOWER)
        line_end = -1
        for candidate in _KEYWORD_ANYWHERE.finditer(lowered):
            at = candidate.start()
            if at <= line_end:
                continue
            line_start = window.rfind("\n", 0, at) + 1
            line_end = window.find("\n", at)
            line_end = len(window) if line_end < 0 else line_end
            if at - line_start <= _MAX_LEAD:
                match = grammar.KEYWORD_LINE.match(window, line_start)
                if match:
                    yield match

    def _split(
        self, kind: str | None, start: int, value: int, end: int, lang: str
    ) -> Iterator[_Token]:
        """Split one line-led segment at keywords written inline (`… Action: x Action Input: …`).
        An Action Input's JSON is skipped first, so a keyword inside one of its strings stays."""
        while kind != grammar.FINAL_ANSWER:
            search_from = value
            if not self.inline or grammar.KEYWORD_INLINE.search(self.text, value, end) is None:
                break
            if kind == grammar.ACTION_INPUT:
                search_from += _json_end(self.text[value:end])
            inline = next(
                (
                    m
                    for m in grammar.KEYWORD_INLINE.finditer(self.text, search_from, end)
                    if not self._masked(m.start())
                ),
                None,
            )
            if inline is None:
                break
            yield _Token(kind, start, value, inline.start(), lang)
            kind, start, value = inline.lastgroup, inline.start(), inline.end()
            lang = _lang_of(inline.group(inline.lastgroup))
        yield _Token(kind, start, value, end, lang)

    def _masked(self, position: int) -> bool:
        return any(a <= position < b for a, b in self.masks)

    def _acts(self, token: _Token) -> bool:
        return (
            token.kind == grammar.ACTION
            and _tool_name(self._value(token)).lower() not in _NO_ACTION
        )

    def _value(self, token: _Token) -> str:
        """A token's value without reasoning blocks, stripped."""
        pieces, at = [], token.value
        for a, b in self.masks:
            if a < token.end and b > at:
                pieces.append(self.text[at:a] if a > at else "")
                at = max(at, b)
        pieces.append(self.text[at : token.end] if token.end > at else "")
        return "".join(pieces).strip()

    def _rest(self, position: int) -> str:
        """What was cut: the exact suffix from `position`, or nothing when only blanks follow."""
        rest = self.text[position:]
        return rest if rest.strip() else ""

    def _thought(self, tokens: list[_Token], before: int) -> str | None:
        thoughts = [t for t in tokens[:before] if t.kind == grammar.THOUGHT]
        chosen = thoughts[-1] if thoughts else tokens[0] if tokens[0].kind is None else None
        return (self._value(chosen) or None) if chosen else None

    # -- the three outcomes ---------------------------------------------------------------

    def _action(self, tokens: list[_Token], at: int, lang: str) -> Step:
        token = tokens[at]
        written = self._value(token)
        thought = self._thought(tokens, at)
        if written.startswith(("{", "```")) and (blob := self._blob(token, tokens, at, thought)):
            return blob
        following = tokens[at + 1] if at + 1 < len(tokens) else None
        raw = self._value(following) if following and following.kind == grammar.ACTION_INPUT else ""
        call = None if raw else _call(written)
        if following is not None and following.kind == grammar.ACTION_INPUT and call is None:
            tool = _tool_name(_CALL.sub(r"\g<name>", written) if "(" in written else written)
            value, repairs = _input(raw)
            end = following.end
        else:
            if call is None:
                return _no_input(written, lang, self._rest(token.end))
            tool, raw, value, repairs = call
            end = token.end
        if not tool:
            return _error(f"the Action line names no tool: {_quote(written)}", lang, tool=None)
        end = self._extend(end)
        return Action(tool, value, thought, self._rest(end), raw, repairs)

    def _final(self, tokens: list[_Token], at: int, lang: str) -> Step:
        token = tokens[at]
        end = self._extend(token.end)
        answer = self._value(token._replace(end=end))
        if not answer:
            return _error("the Final Answer is empty", lang, tool=None, rest=self._rest(end))
        return FinalAnswer(answer, self._thought(tokens, at), False, self._rest(end))

    def _implicit(self, lang: str) -> Step:
        body = self._value(
            _Token(None, self.start or 0, self.start or 0, self._extend(self.stop), lang)
        )
        rest = self._rest(self.end)
        if not body:
            return _error("the completion is empty", lang, tool=None, rest=rest)
        sentences = [s for s in re.split(_SENTENCE_END, body[-400:]) if s.strip()]
        if re.match(_INTENTION, body) or re.match(_INTENTION, sentences[-1].strip()):
            return _error(
                f"the completion states an intention but takes no action: {_quote(body)}",
                lang,
                rest=rest,
            )
        if re.search(_FRAGMENT_END, body[-40:]) or _is_label(body):
            return _error(
                f"the completion is a fragment, not an answer: {_quote(body)}", lang, rest=rest
            )
        return FinalAnswer(body, None, True, rest)

    def _no_decision(self, tokens: list[_Token], lang: str) -> Step:
        kinds = {t.kind for t in tokens}
        if grammar.ACTION_INPUT in kinds:
            problem = "an Action Input with no Action line before it"
        elif grammar.ACTION in kinds:
            problem = "`Action: None` but no Final Answer"
        elif grammar.THOUGHT in kinds:
            thought = self._thought(tokens, len(tokens)) or ""
            problem = f"a Thought with no Action or Final Answer: {_quote(thought)}"
        else:
            problem = "an Observation, which only the tool may write"
        return _error(f"the completion has {problem}", lang)

    def _blob(
        self, token: _Token, tokens: list[_Token], at: int, thought: str | None = None
    ) -> Step | None:
        """A tool call written as JSON (`{"action": …, "action_input": …}`, `{"name": …,
        "arguments": …}`), bare or fenced; the pseudo-tool `Final Answer` is an answer."""
        segment = self.text[token.value : token.end]
        opener = segment.find("{")
        if opener < 0 or self._masked(token.value + opener):
            return None
        fence = segment.rfind("```", 0, opener)
        tag = segment[fence + 3 : opener].strip() if fence >= 0 else "-"
        begin = fence if not tag or tag.isalpha() else opener
        try:
            decoded = jsonish.decode(segment[begin:])
        except jsonish.JsonishError:
            return None
        call = _blob_call(decoded.value)
        if call is None:
            return None
        tool, raw, value, repairs = call
        if token.kind in (None, grammar.THOUGHT):
            thought = re.sub(_TAG, "", segment[:begin]).strip() or None
        rest = self._rest(self._extend(token.value + begin + decoded.end))
        if _is_final(tool):
            answer = value if isinstance(value, str) else raw
            return FinalAnswer(answer, thought, False, rest)
        return Action(tool, value, thought, rest, raw, ("json_blob", *decoded.repairs, *repairs))

    def _extend(self, end: int) -> int:
        """A segment that reached the scan limit runs on to the end of the text."""
        return self.end if end >= self.stop else end


#: The canonical action exactly as render_step writes it, with nothing the general reader would
#: treat specially (no colon or `<` in the thought, a plain tool name, a one-line JSON object):
#: what a well-behaved model sends on most turns, read with one match instead of a full scan.
_CANONICAL_ACTION = re.compile(
    rf"(?:{re.escape(grammar.label(grammar.THOUGHT))}[ \t]*([^\n:：<]*)\n)?"
    rf"{re.escape(grammar.label(grammar.ACTION))}[ \t]*(\w(?:[\w.\-]*\w)?)[ \t]*\n"
    rf"{re.escape(grammar.label(grammar.ACTION_INPUT))}[ \t]*(\{{[^\n<]*\}})[ \t]*\n?\Z"
)


def _canonical_action(text: str) -> Action | None:
    """The fast path; None sends the text to the general reader (tests check both agree)."""
    match = _CANONICAL_ACTION.match(text)
    if match is None or match[2].lower() in _NO_ACTION:
        return None
    try:
        value, repairs = jsonish.loads(match[3])
    except jsonish.JsonishError:
        return None
    if repairs or not isinstance(value, dict):
        return None
    thought = (match[1] or "").strip() or None
    return Action(match[2], value, thought, "", match[3], ())


# -- pieces of text -------------------------------------------------------------------------


def _reasoning_end(text: str) -> int | None:
    """Where the leading reasoning ends: after `</think>`, even with the opening tag left in the
    prompt (DeepSeek-R1's template); None when a leading `<think>` is never closed."""
    opened, closed = text.find(_THINK_OPEN), text.find(_THINK_CLOSE)
    if closed >= 0 and (opened < 0 or closed < opened):
        return closed + len(_THINK_CLOSE)
    if opened >= 0 and not text[:opened].strip():
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


def _lang_of(label: str) -> str:
    return "en" if label.isascii() else "zh" if _HAN.search(label[:2000]) else "en"


def _json_end(segment: str) -> int:
    try:
        return jsonish.decode(segment).end
    except jsonish.JsonishError:
        return 0


def _tool_name(written: str) -> str:
    """`[search]`, `` `search` ``, `**search**.` -> `search`; spaces inside a name are kept."""
    name = written.strip().split("\n", 1)[0].strip()
    if _PLAIN_NAME.fullmatch(name):
        return name
    for _ in range(3):
        name = name.rstrip(".,:;").strip()
        for left, right in _WRAPPERS:
            if (
                len(name) > len(left) + len(right)
                and name.startswith(left)
                and name.endswith(right)
            ):
                name = name[len(left) : -len(right)].strip()
        if name.endswith("()"):
            name = name[:-2]
        for mark in ("**", "__"):  # KEYWORD_LINE took the opening `**` of `Action: **search**`
            if name.endswith(mark) and not name.startswith(mark):
                name = name[: -len(mark)].strip()
    return name


def _unquote(raw: str) -> tuple[str, tuple[str, ...]]:
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'`\"" and raw[0] not in raw[1:-1]:
        return raw[1:-1], ("quotes",)
    return raw, ()


def _input(raw: str) -> tuple[dict[str, Any] | str, tuple[str, ...]]:
    """An Action Input: a dict when it is a JSON-like object, a JSON string unquoted, else the
    text as written (a tool that knows its schema decides what a plain string means)."""
    if not raw:
        return {}, ("empty_input",)
    try:
        value, repairs = jsonish.loads(raw)
    except jsonish.JsonishError:
        fence = re.fullmatch(_FENCED, raw)
        if fence:
            return _unquote(fence.group(1).strip())[0], ("code_fence",)
        return _unquote(raw)
    if isinstance(value, (dict, str)):
        return value, repairs
    return raw, ()


def _call(written: str) -> tuple[str, str, dict[str, Any] | str, tuple[str, ...]] | None:
    """Call syntax on the Action line: `search("x")`, `search(query="x")`, `Search[x]`,
    `search {"q": "x"}`; or the arguments on the lines below the tool name."""
    match = _CALL.match(written) if len(written) <= jsonish.MAX_DEPTH * 300 else None
    if match is None:
        name, _, below = written.partition("\n")
        if not below.strip() or not name.strip():
            return None
        value, repairs = _input(below.strip())
        if not isinstance(value, dict):
            return None
        return _tool_name(name), below.strip(), value, ("missing_label", *repairs)
    name, raw = (
        _tool_name(match["name"]),
        (match["paren"] or match["bracket"] or match["brace"] or "").strip(),
    )
    if match["bracket"] is not None:
        return name, raw, _unquote(raw)[0], ("call_syntax",)
    if match["brace"] is not None or raw.startswith("{"):
        value, repairs = _input(raw)
        return name, raw, value, ("call_syntax", *repairs)
    return name, raw, _call_arguments(raw), ("call_syntax",)


def _call_arguments(raw: str) -> dict[str, Any] | str:
    """`query="x", n=3` -> a dict; one literal string -> that string; anything else (an
    expression like `15*37`) -> the text as written. Parsed, never evaluated."""
    if not raw:
        return {}
    try:
        call = ast.parse(f"f({raw})", mode="eval").body
        if not isinstance(call, ast.Call):
            return raw
        if call.keywords and not call.args and all(k.arg for k in call.keywords):
            return {k.arg: ast.literal_eval(k.value) for k in call.keywords}
        if len(call.args) == 1 and not call.keywords:
            value = ast.literal_eval(call.args[0])
            return value if isinstance(value, (str, dict)) else raw
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        pass
    return raw


def _blob_call(value: object) -> tuple[str, str, dict[str, Any] | str, tuple[str, ...]] | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # OpenAI's {"type": "function", "function": {…}}
        value = value["function"]
    tool = next((value[k] for k in _BLOB_TOOL_KEYS if isinstance(value.get(k), str)), None)
    if not tool or not tool.strip():
        return None
    arguments = next((value[k] for k in _BLOB_ARG_KEYS if k in value), {})
    if isinstance(arguments, str):
        raw = arguments
        parsed, repairs = _input(arguments.strip()) if arguments.strip() else ({}, ())
        return tool.strip(), raw, parsed, repairs
    if not isinstance(arguments, dict):
        return None
    return tool.strip(), json.dumps(arguments, ensure_ascii=False), arguments, ()


def _is_final(tool: str) -> bool:
    match = grammar.KEYWORD_LINE.fullmatch(f"{tool}:")
    return match is not None and match.lastgroup == grammar.FINAL_ANSWER


def _is_label(body: str) -> bool:
    """A bare keyword with its colon missing (`Action`), as a cut-off completion leaves it."""
    return len(body) < 40 and grammar.KEYWORD_LINE.fullmatch(body.rstrip("*_ ") + ":") is not None


# -- errors ---------------------------------------------------------------------------------

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


def _hint(lang: str, tool: str | None = None, *, no_input: bool = False) -> str:
    phrases = _PHRASES[lang]
    if no_input:
        return phrases["no_input"].format(
            action=grammar.render_step(Action(tool or "tool_name", {}), lang)
        )
    action = Action(tool or "tool_name", {"argument": "value"}, phrases["thought"])
    final = FinalAnswer(phrases["answer"], phrases["thought"])
    return phrases["forms"].format(
        action=grammar.render_step(action, lang), final=grammar.render_step(final, lang)
    )


def _error(message: str, lang: str, *, tool: str | None = None, rest: str = "") -> FormatError:
    return FormatError(message, _hint(lang, tool), rest)


def _no_input(written: str, lang: str, rest: str) -> FormatError:
    tool = _tool_name(written)
    return FormatError(
        f"the action {_quote(tool)} has no Action Input line",
        _hint(lang, tool, no_input=True),
        rest,
    )


def _quote(fragment: str, limit: int = 80) -> str:
    """A fragment on one line, shortened in the middle, for a message."""
    flat = " ".join(fragment.split())
    if len(flat) > limit:
        flat = f"{flat[: limit // 2 - 1]}…{flat[-(limit // 2 - 1) :]}"
    return f"“{flat}”"
