"""Keyword tokens -> Step: the first action (with its input), the final answer, a tool call
written as JSON, an implicit answer, or a FormatError naming what is missing. The decision
rules are docs/protocol.md's table."""

from __future__ import annotations

import re

from textreact import grammar
from textreact.parsing import inputs, messages
from textreact.parsing.blobs import find_blob
from textreact.parsing.keywords import Scanner, Token, spelled_keyword
from textreact.parsing.window import Window
from textreact.steps import Action, FinalAnswer, FormatError, Step

_TAG = r"</?[A-Za-z_]{1,20}>"
_HAN = re.compile("[\u3400-\u9fff\uf900-\ufaff]")


class Reader:
    """The state of one parse: the text, its window, and the tokens found."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.window = Window(text)

    def step(self) -> Step:
        window = self.window
        if window.start is None:
            return messages.error("the completion is all reasoning: <think> was never closed", "en")
        tokens, decision = self._tokens()
        lang = next((t.lang for t in tokens if t.kind), None) or _lang_of(
            self.text[window.start : window.stop]
        )
        if decision is not None and tokens[decision].kind == grammar.ACTION:
            return self._action(tokens, decision, lang)
        if decision is not None:
            return self._final(tokens, decision, lang)
        for token in tokens:
            if token.kind == grammar.OBSERVATION:
                break
            if token.kind in (None, grammar.THOUGHT) and (blob := self._blob(token)):
                return blob
        if len(tokens) == 1:
            return self._implicit(lang)
        return self._no_decision(tokens, lang)

    def _tokens(self) -> tuple[list[Token], int | None]:
        """Keyword tokens up to the decision (the first action's input, or the first answer),
        and the index of the deciding token."""
        found: list[Token] = []
        decided: int | None = None
        for token in Scanner(self.text, self.window).tokens():
            found.append(token)
            if decided is None and (
                token.kind == grammar.FINAL_ANSWER
                or (token.kind == grammar.ACTION and not inputs.is_no_action(self._value(token)))
            ):
                decided = len(found) - 1
            if decided is not None and len(found) - decided >= 2:
                break
        return found, decided

    def _value(self, token: Token) -> str:
        """A token's value without reasoning blocks, stripped."""
        if not self.window.masks:
            return self.text[token.value : token.end].strip()
        pieces, at = [], token.value
        for a, b in self.window.masks:
            if a < token.end and b > at:
                pieces.append(self.text[at:a] if a > at else "")
                at = max(at, b)
        pieces.append(self.text[at : token.end] if token.end > at else "")
        return "".join(pieces).strip()

    def _rest(self, position: int) -> str:
        """What was cut: the exact suffix from `position`, or nothing when only blanks follow."""
        rest = self.text[position:]
        return rest if rest.strip() else ""

    def _thought(self, tokens: list[Token], before: int) -> str | None:
        thoughts = [t for t in tokens[:before] if t.kind == grammar.THOUGHT]
        chosen = thoughts[-1] if thoughts else tokens[0] if tokens[0].kind is None else None
        return (self._value(chosen) or None) if chosen else None

    def _extend(self, end: int) -> int:
        """A segment that reached the scan limit runs on to the end of the text."""
        return self.window.end if end >= self.window.stop else end

    # -- the outcomes ---------------------------------------------------------------------

    def _action(self, tokens: list[Token], at: int, lang: str) -> Step:
        token = tokens[at]
        written = self._value(token)
        thought = self._thought(tokens, at)
        if written.startswith(("{", "```")) and (blob := self._blob(token, thought)):
            return blob
        following = tokens[at + 1] if at + 1 < len(tokens) else None
        has_input = following is not None and following.kind == grammar.ACTION_INPUT
        raw = self._value(following) if has_input else ""
        call = None if raw else inputs.call(written)
        if has_input and call is None:
            named = inputs.CALL.sub(r"\g<name>", written) if "(" in written else written
            tool = inputs.tool_name(named)
            value, repairs = inputs.read_input(raw)
            end = following.end
        else:
            if call is None:
                return messages.no_input(written, lang, self._rest(token.end))
            tool, raw, value, repairs = call
            end = token.end
        if not tool:
            return messages.error(f"the Action line names no tool: {messages.quote(written)}", lang)
        end = self._extend(end)
        return Action(tool, value, thought, self._rest(end), raw, repairs)

    def _final(self, tokens: list[Token], at: int, lang: str) -> Step:
        token = tokens[at]
        end = self._extend(token.end)
        answer = self._value(token._replace(end=end))
        if not answer:
            return messages.error("the Final Answer is empty", lang, rest=self._rest(end))
        return FinalAnswer(answer, self._thought(tokens, at), False, self._rest(end))

    def _implicit(self, lang: str) -> Step:
        start = self.window.start or 0
        body = self._value(Token(None, start, start, self._extend(self.window.stop), lang))
        rest = self._rest(self.window.end)
        if not body:
            return messages.error("the completion is empty", lang, rest=rest)
        problem = messages.implicit_problem(body)
        if problem is not None:
            return messages.error(problem, lang, rest=rest)
        return FinalAnswer(body, None, True, rest)

    def _no_decision(self, tokens: list[Token], lang: str) -> FormatError:
        kinds = {t.kind for t in tokens}
        if grammar.ACTION_INPUT in kinds:
            problem = "an Action Input with no Action line before it"
        elif grammar.ACTION in kinds:
            problem = "`Action: None` but no Final Answer"
        elif grammar.THOUGHT in kinds:
            thought = self._thought(tokens, len(tokens)) or ""
            problem = f"a Thought with no Action or Final Answer: {messages.quote(thought)}"
        else:
            problem = "an Observation, which only the tool may write"
        return messages.error(f"the completion has {problem}", lang)

    def _blob(self, token: Token, thought: str | None = None) -> Step | None:
        """A tool call written as JSON in the token's value; the pseudo-tool `Final Answer` is
        an answer. Before any keyword, the text before the object is the thought."""
        segment = self.text[token.value : token.end]
        opener = segment.find("{")
        if opener < 0 or self.window.masked(token.value + opener):
            return None
        blob = find_blob(segment, opener)
        if blob is None:
            return None
        tool, raw, value, repairs = blob.call
        if token.kind in (None, grammar.THOUGHT):
            thought = re.sub(_TAG, "", segment[: blob.begin]).strip() or None
        rest = self._rest(self._extend(token.value + blob.end))
        if spelled_keyword(f"{tool}:") == grammar.FINAL_ANSWER:
            answer = value if isinstance(value, str) else raw
            return FinalAnswer(answer, thought, False, rest)
        return Action(tool, value, thought, rest, raw, ("json_blob", *blob.repairs, *repairs))


def _lang_of(text: str) -> str:
    return "en" if text.isascii() else "zh" if _HAN.search(text[:2000]) else "en"
