"""Keyword tokens -> Step: the first action (with its input), the final answer, a tool call
written as JSON, an implicit answer, or a FormatError naming what is missing. The decision
rules are docs/protocol.md's table."""

from __future__ import annotations

import json
import re

from textreact import grammar, jsonish
from textreact.parsing import inputs, messages
from textreact.parsing.blobs import find_blob
from textreact.parsing.keywords import BLANKS, Scanner, Token, strip
from textreact.parsing.window import Window
from textreact.steps import Action, FinalAnswer, FormatError, Step

_TAG = r"</?[A-Za-z_]{1,20}>"
#: The line that opens each round of the classic ReAct prompt (LangChain's), in either language.
_QUESTION = r"(?i)\n[ \t]*(?:\*\*|__)?(?:question|问题)[ \t]*(?:\*\*|__)?[:：]"
_HAN = re.compile("[\u3400-\u9fff\uf900-\ufaff]")
#: What decides besides an action: an answer, and an Action Input until an Action line.
_DECIDING = (grammar.FINAL_ANSWER, grammar.ACTION_INPUT)
#: The keys under which a `final_answer` pseudo-tool's object carries the answer.
_ANSWER_KEYS = ("answer", "final_answer", "response", "output", "text", "result", "content")


class Reader:
    """The state of one parse: the text, its window, and the tokens found."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.window = Window(text)
        self.written = ""

    def step(self) -> Step:
        window = self.window
        if window.start is None:
            return messages.error("all_reasoning", _lang_of(self.text))
        scanner = Scanner(self.text, window)
        tokens, decision = self._tokens(scanner)
        if scanner.bare_lines and (
            decision is None or tokens[decision].kind == grammar.ACTION_INPUT
        ):
            tokens, decision = self._bare(tokens, decision)
        # tokens[0] is the text before the first keyword; the first keyword's language rules
        lang = tokens[1].lang if len(tokens) > 1 else _lang_of(self.text[window.start :])
        blob = self._blob_before(tokens, decision, lang)
        if blob is not None:
            return blob
        if decision is not None:
            kind = tokens[decision].kind
            if kind == grammar.ACTION:
                return self._action(tokens, decision, lang)
            if kind == grammar.ACTION_INPUT:
                rest = self._rest(tokens[decision].end)
                return messages.error("input_without_action", lang, rest=rest)
            return self._final(tokens, decision, lang)
        if len(tokens) == 1:
            return self._implicit(lang)
        return self._no_decision(tokens, lang)

    def _tokens(self, scanner: Scanner) -> tuple[list[Token], int | None]:
        """Keyword tokens up to the decision, and the index of the deciding token: the first
        action (with its input), the first answer, or an Action Input before any Action line,
        a call request broken at its first line, so that no answer the model then wrote on an
        observation of its own invention counts. A keyword with nothing after it decides
        nothing, so a run of empty keywords is passed over."""
        found = scanner.tokens()
        deciding = _DECIDING
        for index, token in enumerate(found):
            kind = token.kind
            if kind == grammar.ACTION:
                deciding = _DECIDING[:1]
                written = self._value(token)
                if written and not inputs.is_no_action(written):
                    self.written = written
                    return found, index
            elif kind in deciding and self._value(token):
                return found, index
        return found, None

    def _bare(self, tokens: list[Token], decided: int | None) -> tuple[list[Token], int | None]:
        """Keywords written without colons, each alone on its line, values below: read so only
        when no action decided (a bare `Action` line above an `Action Input:` one is that
        action's), and only when two or more such lines are found or the reply opens with
        one, so a word like `Action` in a list stays text."""
        scanner = Scanner(self.text, self.window, bare=True)
        bare, decision = self._tokens(scanner)
        opens = bare[0].kind is None and not self._value(bare[0])
        if decision is not None and (scanner.bare_lines >= 2 or opens):
            return bare, decision
        return tokens, decided

    def _value(self, token: Token) -> str:
        """A token's value without reasoning blocks, stripped."""
        return self._slice(token.value, token.end)

    def _slice(self, at: int, end: int) -> str:
        """`text[at:end]` without reasoning blocks, stripped."""
        if not self.window.masks:
            return strip(self.text[at:end])
        pieces = []
        for a, b in self.window.masks:
            if a < end and b > at:
                pieces.append(self.text[at:a] if a > at else "")
                at = max(at, b)
        pieces.append(self.text[at:end] if end > at else "")
        return strip("".join(pieces))

    def _rest(self, position: int) -> str:
        """What was cut: the exact suffix from `position`, or nothing when only blanks follow."""
        rest = self.text[position:]
        return rest if strip(rest) else ""

    def _thought(self, tokens: list[Token], before: int) -> str | None:
        chosen = None
        for token in tokens[:before]:
            if token.kind == grammar.THOUGHT:
                chosen = token
        if chosen is None and tokens[0].kind is None:
            chosen = tokens[0]
        return (self._value(chosen) or None) if chosen else None

    def _extend(self, end: int) -> int:
        """A segment that reached the scan limit runs on to the end of the text."""
        return self.window.end if end == self.window.stop else end

    def _past_turn(self, at: int) -> int | None:
        """Where the JSON of an Action Input that starts at `at` and that a turn token ends
        closes, when it closes past the token: then the token lies inside one of its strings
        (arguments about a chat template), and is their text, not the end of the turn. None
        when it closes before the token, or nowhere: then the token did end the turn."""
        try:
            decoded = jsonish.decode(self.text[at:])
        except jsonish.AmbiguousJsonError:
            raise
        except jsonish.JsonishError:
            return None
        closed = at + decoded.end
        return closed if closed > self.window.turn and "truncated" not in decoded.repairs else None

    # -- the outcomes ---------------------------------------------------------------------

    def _action(self, tokens: list[Token], at: int, lang: str) -> Step:
        token = tokens[at]
        written = self.written  # the deciding Action's value, as `_tokens` read it
        thought = self._thought(tokens, at)
        if written.startswith(("{", "```")) and (blob := self._blob(token, lang, thought)):
            return blob
        following = tokens[at + 1] if at + 1 < len(tokens) else None
        has_input = following is not None and following.kind == grammar.ACTION_INPUT
        raw = self._value(following) if has_input else ""
        named = inputs.called_name(written)
        try:
            call = None if raw else inputs.call(written)
            if has_input and call is None:
                tool = inputs.tool_name(named)
                if not raw and not strip(self.text[following.value :]):
                    return messages.error("no_input", lang, tool=tool, note="empty_input")
                value, repairs = inputs.read_input(raw)
                end = following.end
                if end == self.window.turn and raw.startswith(("{", "[", "```")):
                    closed = self._past_turn(following.value)
                    if closed is not None:
                        raw = strip(self.text[following.value : closed])
                        value, repairs = inputs.read_input(raw)
                        end = closed
            else:
                if call is None:
                    return messages.error(
                        "no_input", lang, tool=inputs.tool_name(written), rest=self._rest(token.end)
                    )
                tool, raw, value, repairs = call
                end = token.end
        except jsonish.AmbiguousJsonError as ambiguous:
            problem, note, slots = messages.ambiguity(ambiguous)
            return messages.error(problem, lang, tool=inputs.tool_name(named), note=note, **slots)
        if not tool:
            return messages.error("no_tool", lang, fragment=messages.quote(written))
        rest = self._rest(self._extend(end))
        if inputs.names_final_answer(tool):
            return self._pseudo_answer(value, raw, thought, rest, lang)
        return Action(tool, value, thought, rest, raw, repairs)

    def _final(self, tokens: list[Token], at: int, lang: str) -> Step:
        token = tokens[at]
        end = self._answer_end(token, at + 1 < len(tokens))
        answer = self._slice(token.value, end)
        return FinalAnswer(answer, self._thought(tokens, at), False, self._rest(end))

    def _answer_end(self, token: Token, followed: bool) -> int:
        """Where an answer ends: at the next keyword line, or before what closes the reply and
        not the answer. A `Question:` line with more keyword lines after it (`followed`) is a
        completion model going on with the prompt's pattern, a new question and its steps;
        without them it is the answer's own (a list of questions and answers). A closing
        fence on the last line that the answer never opened closes a fenced reply."""
        end = self._extend(token.end)
        body = self.text[token.value : end]
        question = re.search(_QUESTION, body) if followed else None
        if question is not None and strip(body[: question.start()]):
            return token.value + question.start() + 1
        last = body.rstrip()
        if last.endswith("\n```") and last.count("```") % 2 and strip(last[:-3]):
            return token.value + len(last) - 3
        return end

    def _implicit(self, lang: str) -> Step:
        body = self._slice(self.window.start or 0, self._extend(self.window.stop))
        rest = self._rest(self.window.end)
        if not body:
            return messages.error("empty", lang, rest=rest)
        problem = messages.implicit_problem(body)
        if problem is not None:
            return messages.error(problem, lang, rest=rest, fragment=messages.quote(body))
        return FinalAnswer(body, None, True, rest)

    def _no_decision(self, tokens: list[Token], lang: str) -> FormatError:
        kinds = {t.kind for t in tokens}
        if grammar.ACTION in kinds:
            written = [self._value(t) for t in tokens if t.kind == grammar.ACTION]
            if any(written):
                line = grammar.label(grammar.ACTION, lang) + " " + next(w for w in written if w)
                return messages.error("no_action", lang, fragment=messages.quote(line))
            return messages.error("no_tool", lang, fragment=messages.quote(""))
        if grammar.ACTION_INPUT in kinds:
            return messages.error("input_without_action", lang)
        if grammar.FINAL_ANSWER in kinds:
            return messages.error("empty_answer", lang)
        if grammar.THOUGHT in kinds:
            thought = self._thought(tokens, len(tokens)) or ""
            return messages.error("thought_only", lang, fragment=messages.quote(thought))
        return messages.error("observation_only", lang)

    def _blob_before(self, tokens: list[Token], decision: int | None, lang: str) -> Step | None:
        """A tool call written as JSON before the deciding keyword (before any observation,
        in the text before the first keyword or in a Thought): the first call wins, as among
        keyword actions, so an observation, an answer or another action written after it is
        the model's invention and is cut. A blob that says "no action" decides nothing when a
        keyword decides after it."""
        for token in tokens if decision is None else tokens[:decision]:
            if token.kind == grammar.OBSERVATION:
                break
            if token.kind in (None, grammar.THOUGHT) and (blob := self._blob(token, lang)):
                if decision is not None and getattr(blob, "problem", None) == "no_action":
                    continue
                return blob
        return None

    def _blob(self, token: Token, lang: str, thought: str | None = None) -> Step | None:
        """A tool call written as JSON in the token's value; the pseudo-tool `Final Answer` is
        an answer. Before any keyword, the text before the object is the thought."""
        segment = self.text[token.value : token.end]
        opener = segment.find("{")
        if opener < 0 or self.window.masked(token.value + opener):
            return None
        blob = find_blob(segment, opener)
        if blob is None:
            return None
        if token.kind in (None, grammar.THOUGHT):
            thought = re.sub(_TAG, "", segment[: blob.begin]).strip(BLANKS) or None
        rest = self._rest(self._extend(token.value + blob.end))
        if blob.problem is not None:
            problem, note, slots = blob.problem
            return messages.error(problem, lang, tool=blob.tool, note=note, rest=rest, **slots)
        tool, raw, value, repairs = blob.call
        if inputs.names_final_answer(tool):
            return self._pseudo_answer(value, raw, thought, rest, lang)
        if inputs.is_no_action(tool):
            return messages.error("no_action", lang, fragment=messages.quote(tool), rest=rest)
        return Action(tool, value, thought, rest, raw, ("json_blob", *blob.repairs, *repairs))

    def _pseudo_answer(
        self, value: dict | str, raw: str, thought: str | None, rest: str, lang: str
    ) -> Step:
        """A call to the pseudo-tool `Final Answer` (`final_answer`): its input is the answer,
        the text itself when the input is an object that holds one (`{"answer": …}`)."""
        answer: object = value
        if isinstance(value, dict):
            key = next((k for k in _ANSWER_KEYS if k in value), None)
            if key is not None:
                answer = value[key]
            elif len(value) == 1:
                answer = next(iter(value.values()))
            else:
                answer = raw
        if not isinstance(answer, str):
            answer = json.dumps(answer, ensure_ascii=False)
        answer = answer.strip(BLANKS)
        if not answer:
            return messages.error("empty_answer", lang, rest=rest)
        return FinalAnswer(answer, thought, False, rest)


def _lang_of(text: str) -> str:
    return "en" if text.isascii() else "zh" if _HAN.search(text[:2000]) else "en"
