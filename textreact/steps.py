"""The records that pass between stages: what the parser returns, what a tool call produced,
what the model sent back. Frozen, so a stored step can be re-rendered but never changed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, Union


@dataclass(frozen=True)
class Action:
    """The model asks for one tool call."""

    kind: ClassVar[Literal["action"]] = "action"
    tool: str
    input: dict[str, Any] | str
    thought: str | None = None
    #: Text the parser cut after the action (hallucinated observations, later steps, an answer
    #: written before the observation was seen). Always a suffix of the parsed text.
    discarded_text: str = field(default="", compare=False)
    #: The Action Input exactly as written, so a tool that knows its schema can repair it again.
    raw_input: str = field(default="", compare=False)
    #: Names of the lenient repairs the parser applied to the Action Input (e.g. "trailing_comma").
    repairs: tuple[str, ...] = field(default=(), compare=False)
    #: The id of a native tool call, which its result must quote; None in the text protocol.
    call_id: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class FinalAnswer:
    """The model ends the run with an answer."""

    kind: ClassVar[Literal["final"]] = "final"
    answer: str
    thought: str | None = None
    #: True when the text had no protocol keyword at all and was taken whole as the answer.
    implicit: bool = field(default=False, compare=False)
    discarded_text: str = field(default="", compare=False)


@dataclass(frozen=True)
class FormatError:
    """The completion follows neither form; `hint` shows the model the exact form expected,
    and `problem` says what was missing as a code, so the loop need not decode `message`."""

    kind: ClassVar[Literal["error"]] = "error"
    message: str
    hint: str
    discarded_text: str = field(default="", compare=False)
    #: What was wrong, as a short code ("no_input", "ambiguous_input", "fragment", ...; the
    #: parser's codes are listed in docs/protocol.md); "other" when the producer gave none.
    problem: str = field(default="other", compare=False)
    #: The tool the completion named, when it named one (the hint can then show that tool).
    tool: str | None = field(default=None, compare=False)
    #: The language the message and hint are written in (the completion's, where it had one).
    lang: str = field(default="en", compare=False)


Step = Union[Action, FinalAnswer, FormatError]  # noqa: UP007 (a runtime alias works on 3.10)


@dataclass(frozen=True)
class Usage:
    """Token counts as reported by the server (0 where it reports none)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


@dataclass(frozen=True)
class ToolCall:
    """One native tool call a model asked for; `arguments` is the JSON text exactly as sent."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class TokenLogprob:
    """One sampled token as the server scored it: its bytes, its log-probability, and the
    most likely tokens at its place (`top`: bytes and log-probability each)."""

    token: bytes
    logprob: float
    top: tuple[tuple[bytes, float], ...] = ()


@dataclass(frozen=True)
class Branch:
    """One side of the call-or-answer choice: the text that opens it (`Action:`) and the
    grammar (GBNF) of what may follow that text; None where no grammar is offered."""

    opening: str
    grammar: str | None = None


@dataclass(frozen=True)
class Decision:
    """The call-or-answer choice scored from log-probabilities (`TextProtocol(decision_bias=)`):
    a client that can score it picks `call` when log P(call) + `bias` > log P(answer)."""

    #: The log-odds added in favour of calling (0: the model's own odds).
    bias: float
    call: Branch
    answer: Branch


@dataclass(frozen=True)
class Decided:
    """What became of a request's `Decision`: both branches' log-probabilities at the branch
    point, the branch the model sampled and the one chosen; `unscored` says why none was
    scored ("no_logprobs", "no_branch_point", "no_branch_token", "not_continued")."""

    bias: float
    call_logprob: float | None = None
    answer_logprob: float | None = None
    sampled: Literal["call", "answer"] | None = None
    chosen: Literal["call", "answer"] | None = None
    unscored: str | None = None

    @property
    def margin(self) -> float | None:
        """log P(call) - log P(answer), where both were scored."""
        if self.call_logprob is None or self.answer_logprob is None:
            return None
        return self.call_logprob - self.answer_logprob

    def to_dict(self) -> dict[str, Any]:
        return {
            "bias": self.bias,
            "call_logprob": self.call_logprob,
            "answer_logprob": self.answer_logprob,
            "sampled": self.sampled,
            "chosen": self.chosen,
            "unscored": self.unscored,
        }


@dataclass(frozen=True)
class Completion:
    """One reply of a chat model, the same record for every protocol and client, so no SDK
    object leaves `models/`. `finish_reason == "length"` means the text was cut off."""

    text: str
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)
    #: Native tool calls, in the order the model made them (empty for the text protocol).
    tool_calls: tuple[ToolCall, ...] = ()
    #: True when the server decoded under the tools' grammar (constrained decoding).
    constrained: bool = False
    #: What became of the request's `Decision`; None when it carried none.
    decision: Decided | None = None
    #: The sampled tokens with their log-probabilities, where the server sent them.
    logprobs: tuple[TokenLogprob, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class Request:
    """What a protocol asks of a model for one turn; the model client turns it into its API's
    request. Only `messages` and `stop` reach a `ChatModel` that takes nothing else."""

    messages: list[dict[str, Any]]
    stop: tuple[str, ...] = ()
    #: Tool specs in the client's dialect (OpenAI `tools=` or Anthropic's); () sends none.
    tools: tuple[dict[str, Any], ...] = ()
    #: The grammar (GBNF) the reply must follow, for servers that constrain decoding.
    grammar: str | None = None
    #: OpenAI's meanings: "auto", "required", "none", or one tool's name.
    tool_choice: str = "auto"
    #: The call-or-answer choice to score from log-probabilities; None: sampled as it comes.
    decision: Decision | None = None
    #: How the reply is read (`(Completion, tools) -> Reading`), where a protocol asks this
    #: turn in another protocol's format; None: by the protocol's own `read`. Never sent.
    read: Any = field(default=None, compare=False, repr=False)

    def options(self) -> dict[str, Any]:
        """The keyword arguments of `ChatModel.complete` beyond `stop` that this request sets."""
        extra: dict[str, Any] = {}
        if self.tools:
            extra["tools"] = list(self.tools)
            if self.tool_choice != "auto":
                extra["tool_choice"] = self.tool_choice
        if self.grammar is not None:
            extra["grammar"] = self.grammar
        if self.decision is not None:
            extra["decision"] = self.decision
        return extra


@dataclass(frozen=True)
class ToolResult:
    """What one tool call produced: a value, or an error message written for the model."""

    tool: str
    #: The arguments after repair and validation; the raw input when they could not be parsed.
    arguments: dict[str, Any] | str
    value: Any = None
    error: str | None = None
    #: "unknown_tool" | "arguments" | "timeout" | "exception" | "wrong_tool" (the input is
    #: for another tool) | "vetoed" (`before_call` refused it, or the tool asked and was told
    #: no) | "not_run" (a policy refused it) when `error` is set.
    error_kind: str | None = None
    repairs: tuple[str, ...] = ()
    seconds: float = 0.0
    #: The value as text, formatted inside the tool's time bound (a hostile `__str__` is the
    #: tool's fault and counts against its timeout); None when there is no value.
    text: str | None = None
    #: What a "wrong_tool" call needs found before the tool can run (WrongToolError.needs).
    needs: tuple[str, ...] = ()

    @property
    def ran(self) -> bool:
        """Whether the tool itself was run (it may still have failed)."""
        return self.error_kind not in ("unknown_tool", "arguments", "vetoed", "not_run")

    @property
    def is_error(self) -> bool:
        return self.error is not None


#: "truncated" (cut by the token limit, re-asked), "repeated_call" (answered from the earlier
#: result), "vetoed" (`before_call` refused it), "call_as_text" (a native call written as text),
#: "best_effort" (the tool-less request at the step limit), "closed_book" (the question asked
#: alone, as a policy asked).
TurnNote = Literal[
    "truncated", "repeated_call", "vetoed", "call_as_text", "best_effort", "closed_book"
]


@dataclass(frozen=True)
class PolicyNote:
    """One thing a policy did at a turn: `action` is "sent_back" (an answer not accepted),
    "not_run" (a call not run), "added_line" (a line after a result), "steered" (the request's
    tools or tool choice changed) or "asked_alone"; `reason` names the case."""

    policy: str
    action: Literal["sent_back", "not_run", "added_line", "steered", "asked_alone"]
    reason: str
    #: The arguments of the call it concerns, where it concerns some.
    arguments: tuple[str, ...] = ()
    #: The tools a steering offered, where it left some out (and how many it left out).
    offered: tuple[str, ...] = ()
    left_out: int = 0

    def to_dict(self) -> dict[str, Any]:
        record = {"policy": self.policy, "action": self.action, "reason": self.reason}
        if self.left_out:
            record.update(offered=list(self.offered), left_out=self.left_out)
        return record


@dataclass(frozen=True)
class Turn:
    """One model call of a run and what the engine did with it; memory renders messages from
    these, so summarising old turns changes how they are shown, never what is stored."""

    index: int
    #: The completion as kept in the conversation: the model's text minus `discarded_text`.
    text: str
    step: Step
    #: What went back to the model (without the `Observation:` label); None when the run ended.
    observation: str | None = None
    result: ToolResult | None = None
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)
    model_seconds: float = 0.0
    #: Why the loop itself handled this turn specially (`TurnNote`); what a policy did is in
    #: `policy_notes`.
    note: TurnNote | None = None
    #: The engine's note the model was shown just before this turn (the best-effort request,
    #: the closed-book one).
    preface: str | None = None
    #: True for the second and later native calls of one reply: they share its message.
    joined: bool = False
    #: True when the server decoded this reply under the tools' grammar.
    constrained: bool = False
    #: What the run's policies changed at this turn, in the order they did it.
    policy_notes: tuple[PolicyNote, ...] = ()
    #: The call-or-answer choice scored at this turn (`TextProtocol(decision_bias=)`).
    decision: Decided | None = None

    def joined_by(self, index: int, step: Step) -> Turn:
        """A later call of this native reply: it shares the reply's message, so it has no text,
        usage or time of its own."""
        return replace(
            self, index=index, step=step, text="", usage=Usage(), model_seconds=0.0, note=None,
            joined=True, policy_notes=(),
        )  # fmt: skip

    @property
    def thought(self) -> str | None:
        return None if isinstance(self.step, FormatError) else self.step.thought

    @property
    def tool(self) -> str | None:
        """The tool called (its registered name once resolved); None when no call was made,
        also for an action that was never run (cut off, or written in a best-effort reply)."""
        return self.result.tool if self.result is not None else None

    @property
    def input(self) -> dict[str, Any] | str | None:
        """The arguments after repair and validation (as written when they were not valid);
        None when no call was made."""
        return self.result.arguments if self.result is not None else None

    @property
    def ran(self) -> bool:
        """Whether the tool itself was run (it may still have failed)."""
        return self.error_kind not in ("unknown_tool", "arguments", "vetoed", "not_run")

    @property
    def is_error(self) -> bool:
        return (
            isinstance(self.step, FormatError)
            or self.note == "truncated"
            or (self.result is not None and self.result.is_error)
        )

    @property
    def repairs(self) -> tuple[str, ...]:
        parsed = self.step.repairs if isinstance(self.step, Action) else ()
        return parsed + (self.result.repairs if self.result is not None else ())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record, the shape of `textreact run --json` steps and transcripts
        (which write a refused input that is JSON text of an object as that object, its numbers
        as written: `transcript.step_record`)."""
        return {
            "index": self.index,
            "kind": self.step.kind,
            "thought": self.thought,
            "tool": self.tool,
            "input": self.input,
            "observation": self.observation,
            "is_error": self.is_error,
            "answer": self.step.answer if isinstance(self.step, FinalAnswer) else None,
            "note": self.note,
            "policy_notes": [note.to_dict() for note in self.policy_notes],
            "repairs": list(self.repairs),
            "text": self.text,
            "discarded_text": self.step.discarded_text,
            "finish_reason": self.finish_reason,
            "constrained": self.constrained,
            "decision": None if self.decision is None else self.decision.to_dict(),
            "call_id": self.step.call_id if isinstance(self.step, Action) else None,
            "model_seconds": round(self.model_seconds, 4),
            "tool_seconds": round(self.result.seconds, 4) if self.result is not None else 0.0,
            "usage": self.usage.to_dict(),
        }


StopReason = Literal[
    "final_answer", "max_steps", "truncated", "format_errors", "model_error", "interrupted"
]
AnswerSource = Literal["model", "best_effort", "closed_book"]


@dataclass(frozen=True)
class Result:
    """What a run produced, and why it stopped."""

    answer: str | None
    stop_reason: StopReason
    steps: tuple[Turn, ...]
    #: The conversation as it stands at the end, rendered the way the model saw it. (A
    #: closed-book ask, sent alone, shows in it as its note and the reply after the history.)
    messages: list[dict[str, Any]]
    usage: Usage
    #: True when the answer came from the one tool-less request made at the step limit.
    best_effort: bool = False
    #: The model's error message when `stop_reason == "model_error"`.
    error: str | None = None
    seconds: float = 0.0
    #: The protocol the run used ("text", "native", "own", or a custom protocol's name).
    protocol: str = "text"
    #: Why, in one line, where `protocol="auto"` chose it; None where the caller named it.
    protocol_reason: str | None = None
    #: Where the answer came from: "model" (its own Final Answer), "best_effort" (the
    #: tool-less request at the step limit), "closed_book" (a policy asked the question
    #: alone); None without an answer.
    answer_source: AnswerSource | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data: the shape `textreact run --json` prints."""
        return {
            "answer": self.answer,
            "stop_reason": self.stop_reason,
            "best_effort": self.best_effort,
            "answer_source": self.answer_source,
            "error": self.error,
            "protocol": self.protocol,
            "protocol_reason": self.protocol_reason,
            "steps": [turn.to_dict() for turn in self.steps],
            "usage": self.usage.to_dict(),
            "seconds": round(self.seconds, 4),
        }


@dataclass(frozen=True)
class Event:
    """Told to `on_event` as the run goes: before each model call, after each turn, at the end."""

    kind: Literal["request", "turn", "finish"]
    messages: Sequence[dict[str, Any]] = ()
    turn: Turn | None = None
    result: Result | None = None


def step_to_dict(step: Step) -> dict[str, Any]:
    """A parsed step as JSON-ready data (what `textreact parse` prints)."""
    data: dict[str, Any] = {"kind": step.kind}
    if isinstance(step, Action):
        data.update(tool=step.tool, input=step.input, thought=step.thought)
        data.update(raw_input=step.raw_input, repairs=list(step.repairs))
    elif isinstance(step, FinalAnswer):
        data.update(answer=step.answer, thought=step.thought, implicit=step.implicit)
    else:
        data.update(message=step.message, hint=step.hint, problem=step.problem, tool=step.tool)
    data["discarded_text"] = step.discarded_text
    return data
