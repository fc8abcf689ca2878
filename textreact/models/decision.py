"""The call-or-answer branch chosen from log-probabilities: where a reply reaches the branch
point, how likely each branch was there, the biased choice, and the prefill that continues the
chosen branch when the model sampled the other.

Sampling lets a small model's copy of a worked example decide whether it calls; its
log-probabilities say how close that decision was, and a calibrated bias moves it (When2Call
scores the branches this way; Probe&Prefill then prefills the chosen one). Pure: the clients
make the requests (`openai_compat`, `scripted`), the same way through `decide` and `Choice`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from textreact import grammar
from textreact.models.chat import Message
from textreact.steps import Branch, Completion, Decided, Decision, TokenLogprob

__all__ = ["TOP_K", "Choice", "branch_point", "decide", "request_fields", "scripted", "tokens_of"]

#: Alternatives asked for at each token: the most OpenAI's API allows.
TOP_K: Final = 20

BranchName = Literal["call", "answer"]


def request_fields() -> dict[str, Any]:
    """The chat-completion fields that ask for the sampled tokens' log-probabilities."""
    return {"logprobs": True, "top_logprobs": TOP_K}


def tokens_of(response: Any) -> tuple[TokenLogprob, ...]:
    """The sampled tokens of an SDK chat completion, with their top alternatives; () where the
    server sent none (or sent them malformed: a courtesy of the server, never an error)."""
    logprobs = getattr(response.choices[0], "logprobs", None)
    content = getattr(logprobs, "content", None)
    if not isinstance(content, list):
        return ()
    tokens = []
    for item in content:
        token, logprob = _token(item)
        if token is None or logprob is None:
            return ()
        alternatives = getattr(item, "top_logprobs", None) or ()
        top = tuple(
            (alt, score)
            for alt, score in map(_token, alternatives if isinstance(alternatives, list) else ())
            if alt is not None and score is not None
        )
        tokens.append(TokenLogprob(token, logprob, top))
    return tuple(tokens)


def _token(item: Any) -> tuple[bytes | None, float | None]:
    """A token's bytes (its `bytes` field, else its text as UTF-8) and log-probability."""
    raw = getattr(item, "bytes", None)
    if isinstance(raw, list) and all(isinstance(b, int) and 0 <= b < 256 for b in raw):
        token: bytes | None = bytes(raw)
    else:
        text = getattr(item, "token", None)
        token = text.encode() if isinstance(text, str) else None
    logprob = getattr(item, "logprob", None)
    finite = isinstance(logprob, (int, float)) and not isinstance(logprob, bool)
    return token, float(logprob) if finite and math.isfinite(logprob) else None


def branch_point(text: str, decision: Decision) -> tuple[int, BranchName] | None:
    """Where `text` opens a branch (the start of the first line that begins with either
    branch's opening) and which branch it opens; None where it opens neither."""
    found: list[tuple[int, BranchName]] = []
    for name, branch in (("call", decision.call), ("answer", decision.answer)):
        at = 0 if text.startswith(branch.opening) else text.find("\n" + branch.opening) + 1
        if at > 0 or text.startswith(branch.opening):
            found.append((at, name))  # type: ignore[arg-type]
    return min(found) if found else None


@dataclass(frozen=True)
class Choice:
    """A reply with its decision made: `completion` stands when `prefill` is None; otherwise
    the model is asked to continue `prefill` (the reply up to the branch point and the chosen
    branch's opening) under `grammar`, and `join` makes the reply from the two."""

    completion: Completion
    prefill: str | None = None
    grammar: str | None = None

    def messages(self, messages: Sequence[Message]) -> list[Message]:
        """The request's messages with the prefill as a last assistant message, which the
        server continues (llama.cpp does by default)."""
        assert self.prefill is not None
        return [*(dict(m) for m in messages), {"role": "assistant", "content": self.prefill}]

    def join(self, continuation: Completion) -> Completion:
        """The reply: the prefill and its continuation. llama.cpp sends the continuation with
        the prefill in front (its chat parser reads the whole message), other servers without;
        one that answered afresh instead of continuing (its reply opens with a Thought, not
        the prefill) leaves the sampled reply standing."""
        assert self.prefill is not None and self.completion.decision is not None
        usage = self.completion.usage + continuation.usage
        rest = continuation.text.removeprefix(self.prefill)
        if rest == continuation.text and _afresh(rest):
            decided = replace(
                self.completion.decision, chosen=self.completion.decision.sampled,
                unscored="not_continued",
            )  # fmt: skip
            return replace(self.completion, usage=usage, decision=decided)
        return Completion(
            self.prefill + rest, continuation.finish_reason, usage,
            constrained=continuation.constrained, decision=self.completion.decision,
        )  # fmt: skip


def decide(completion: Completion, decision: Decision) -> Choice:
    """Score `completion`'s branch point from its log-probabilities and choose: call when
    log P(call) + bias > log P(answer), answer when less, the sampled branch at a tie. A
    reply without log-probabilities, or without a branch point, stands as sampled (its record
    says why none was scored)."""

    def standing(reason: str, sampled: BranchName | None = None) -> Choice:
        record = Decided(decision.bias, sampled=sampled, chosen=sampled, unscored=reason)
        return Choice(replace(completion, decision=record))

    if not completion.logprobs:
        return standing("no_logprobs")
    point = branch_point(completion.text, decision)
    if point is None:
        return standing("no_branch_point")
    at, sampled = point
    scores = _scores(completion.text, at, completion.logprobs, decision)
    if scores is None:
        return standing("no_branch_token", sampled)
    call, answer = scores
    odds = call + decision.bias - answer
    chosen: BranchName = sampled if odds == 0 else "call" if odds > 0 else "answer"
    record = Decided(decision.bias, call, answer, sampled, chosen)
    reply = replace(completion, decision=record)
    if chosen == sampled:
        return Choice(reply)
    branch = decision.call if chosen == "call" else decision.answer
    return Choice(reply, completion.text[:at] + branch.opening, branch.grammar)


def _scores(
    text: str, at: int, tokens: Sequence[TokenLogprob], decision: Decision
) -> tuple[float, float] | None:
    """log P(call) and log P(answer) at the token where `text` reaches byte `at`'s branch point:
    the total probability of the alternatives there that begin each branch (after what the
    token holds before the point: `\\nAction` is one token in some vocabularies). A branch no
    alternative begins gets the most it can have, the least top-K probability (or what the top
    K leave, if less); None when neither was among them, or the tokens are not the text's."""
    written = text.encode()
    target = len(text[:at].encode())
    start = 0
    for token in tokens:
        if start + len(token.token) > target:
            break
        start += len(token.token)
    else:
        return None
    if b"".join(t.token for t in tokens)[:target] != written[:target]:
        return None
    before = written[start:target]
    openings = {"call": decision.call.opening.encode(), "answer": decision.answer.opening.encode()}
    alternatives = dict(token.top)
    alternatives.setdefault(token.token, token.logprob)
    found: dict[str, list[float]] = {"call": [], "answer": []}
    for alt, logprob in alternatives.items():
        rest = alt[len(before) :] if alt.startswith(before) else b""
        fits = [
            n for n, o in openings.items() if rest and (o.startswith(rest) or rest.startswith(o))
        ]
        if len(fits) == 1:
            found[fits[0]].append(logprob)
    if not found["call"] and not found["answer"]:
        return None
    left = 1.0 - sum(math.exp(lp) for lp in alternatives.values())
    ceiling = min(min(alternatives.values()), math.log(left) if left > 0 else math.inf)
    call, answer = (_logsumexp(found[n]) if found[n] else ceiling for n in ("call", "answer"))
    return call, answer


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def _afresh(text: str) -> bool:
    """Whether a continuation opens with a Thought label: a new reply, not a continuation."""
    head = text.lstrip()
    return any(head.startswith(grammar.label(grammar.THOUGHT, lang)) for lang in grammar.LABELS)


def scripted(text: str, *, call: float, answer: float, lang: str = "en") -> Completion:
    """A reply as a server that scores it would send it: `text` (which must open a branch),
    with log-probabilities `call` and `answer` for the two branches' labels at its branch
    point. For `ScriptedModel` scripts."""
    labels = {
        "call": grammar.label(grammar.ACTION, lang),
        "answer": grammar.label(grammar.FINAL_ANSWER, lang),
    }
    point = branch_point(text, Decision(0.0, Branch(labels["call"]), Branch(labels["answer"])))
    if point is None:
        raise ValueError(
            f"a scored reply must open a branch with {labels['call']!r} or "
            f"{labels['answer']!r} at the start of a line; got {text!r}"
        )
    at, sampled = point
    opening = labels[sampled]
    head, tail = text[:at].encode(), text[at + len(opening) :].encode()
    scores = {"call": call, "answer": answer}
    top = tuple((labels[n].encode(), scores[n]) for n in ("call", "answer"))
    tokens = (
        *([TokenLogprob(head, 0.0)] if head else []),
        TokenLogprob(opening.encode(), scores[sampled], top),
        *([TokenLogprob(tail, 0.0)] if tail else []),
    )
    return Completion(text, logprobs=tokens)
