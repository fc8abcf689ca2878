"""Tasks × protocols × repeats -> outcomes: runs each task through each protocol against the same
model, in parallel threads when asked, and measures every run the same way for every protocol.

The protocols of a comparison: `text` (the text protocol, no grammar offered), `text+grammar`
(the text protocol offering each turn's grammar, which the client sends where its server takes
one), `native`, `own` (the model's own tool format in text) and `own-first` (that format for
the first decision, then text), the last two measured only when named. With
`Options.parallel_calls`, a reply of the text protocols may make several calls (BFCL's
`parallel` categories need it for the text protocols to be right at all); native tool calling
makes several either way. Both text rows share one client, so they differ only in the grammar.
A run's measures come from its `Result` alone (`measure`), so every protocol is compared on
exactly the same arithmetic."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, Literal

from textreact import grammar
from textreact.agent import Agent, Result
from textreact.compare.bfcl import Check, Entry, check_calls
from textreact.compare.suite import Task, score
from textreact.errors import ConfigError
from textreact.policies import ToolBudget, by_name
from textreact.protocols import Protocol
from textreact.protocols.native import UNSUPPORTED, written_as_text
from textreact.protocols.text import TextProtocol
from textreact.steps import Action, FormatError, Turn, Usage
from textreact.tools import Tool, ToolBox

PROTOCOLS = ("text", "text+grammar", "native", "own", "own-first")
#: The protocols a comparison runs only when they are named (switches not yet measured).
NAMED_ONLY = ("own", "own-first")
#: The protocols whose replies `Options.parallel_calls` lets make several calls.
TEXT_PROTOCOLS = ("text", "text+grammar")
#: What `run_compare` runs unless told: the two protocols it has always compared.
DEFAULT_PROTOCOLS = ("text", "native")
#: A first call that names no offered tool, or whose arguments fail its schema, is not valid.
_INVALID_CALL = ("unknown_tool", "arguments")
#: What one native run shows about the server's tool calling.
Capability = Literal["supported", "rejected", "as_text", "no_call"]


@dataclass(frozen=True)
class Outcome:
    """One run of one task through one protocol, measured."""

    task: str
    protocol: str
    repeat: int
    #: Right answer (or, for BFCL, the reply's calls pass BFCL's checker) after a final answer.
    success: bool
    #: Right answer, but from the best-effort request at the step limit.
    best_effort_correct: bool
    result: Result
    measures: dict[str, Any]
    #: BFCL only: the calls of the first reply that made any ({"tool", "arguments"} each, in
    #: the order written) and the checker's verdict on them.
    calls: tuple[dict[str, Any], ...] = ()
    check: Check | None = None
    #: Why the run could not be scored, or why it failed outside the loop (None: neither).
    note: str | None = None


@dataclass(frozen=True)
class Report:
    """Everything a comparison produced; rendered by `textreact.compare.report`."""

    protocols: tuple[str, ...]
    tasks: tuple[Task | Entry, ...]
    outcomes: tuple[Outcome, ...]
    repeat: int
    concurrency: int
    seconds: float
    meta: dict[str, Any] = field(default_factory=dict)


def measure(result: Result) -> dict[str, Any]:
    """The counts a comparison reports for one run, the same for every protocol."""
    turns = result.steps
    return {
        "stop_reason": result.stop_reason,
        "steps": len(turns),
        "tool_calls": sum(isinstance(t.step, Action) for t in turns),
        "tool_errors": sum(t.result is not None and t.result.is_error for t in turns),
        "format_errors": sum(isinstance(t.step, FormatError) for t in turns),
        "repairs": sum(len(t.repairs) for t in turns),
        "hallucinations_cut": sum(_cut_observation(t.step.discarded_text) for t in turns),
        "truncated": sum(t.note == "truncated" for t in turns),
        "calls_as_text": sum(t.note == "call_as_text" or written_as_text(t.step) for t in turns),
        "constrained_turns": sum(t.constrained for t in turns),
        "first_call_valid": first_call_valid(result),
        "prompt_tokens": result.usage.prompt_tokens,
        "completion_tokens": result.usage.completion_tokens,
        "seconds": result.seconds,
    }


def first_call_valid(result: Result) -> bool:
    """Whether the run's first call named an offered tool with arguments its schema takes
    (after textreact's repairs, as they ran); False when no call was run."""
    first = next((t for t in result.steps if isinstance(t.step, Action)), None)
    if first is None or first.result is None:
        return False
    return first.result.error_kind not in _INVALID_CALL


def agent_protocol(protocol: str, options: Options) -> str | Protocol:
    """The Agent's protocol for one of PROTOCOLS; the options' `examples`, `decision_bias` and
    `parallel_calls` are the text protocols' (`TextProtocol(...)`; native tool calling has no
    call-or-answer branch and makes several calls either way)."""
    if protocol not in TEXT_PROTOCOLS:
        return protocol
    return TextProtocol(
        constrain=protocol == "text+grammar", examples=options.examples,
        decision_bias=options.decision_bias, parallel_calls=options.parallel_calls,
    )  # fmt: skip


def _cut_observation(discarded: str) -> bool:
    return any(m.lastgroup == grammar.OBSERVATION for m in grammar.KEYWORD_LINE.finditer(discarded))


@dataclass(frozen=True)
class Options:
    """How each run of a comparison is made."""

    max_steps: int = 8
    #: The policies by name (`textreact.policies.by_name`): "none", "small", or names.
    policies: str = "none"
    #: The tools of a suite's tasks; None: the built-in tools. (BFCL entries bring their own.)
    tools: tuple[Tool, ...] | None = None
    #: The tool choice of every run, BFCL entries included.
    tool_choice: str = "auto"
    #: The tools offered each step (`Agent(max_tools=...)`); None offers every tool.
    max_tools: int | None = None
    #: The text protocols' worked example: "bundled", "built" (from the offered tools), "none".
    examples: str = "bundled"
    #: The text protocols' scored call-or-answer choice; None: sampled.
    decision_bias: float | None = None
    #: Whether a reply of the text protocols may make several calls (`Agent(parallel_calls=)`);
    #: BFCL's `parallel` entries need it there to be right at all. Native calls are unaffected.
    parallel_calls: bool = False


def run_task(model: Any, task: Task, protocol: str, options: Options = Options()) -> Result:
    """One task through one protocol, as `options` say."""
    agent = Agent(
        model, options.tools,
        protocol=agent_protocol(protocol, options), max_steps=options.max_steps,
        lang=task.lang, policies=by_name(options.policies),
        tool_choice=options.tool_choice, max_tools=options.max_tools,
    )  # fmt: skip
    return agent.run(task.question)


def _recorder(name: str) -> Callable[..., str]:
    def record(**arguments: Any) -> str:
        return f"{name} was called (not executed: only the first reply's calls are scored)"

    return record


def run_entry(
    model: Any, entry: Entry, protocol: str, options: Options = Options()
) -> tuple[Result, tuple[dict[str, Any], ...]]:
    """One BFCL entry through one protocol: its functions offered as tools, one model call, and
    the calls of its reply (`reply_calls`; each tool named as in BFCL's file, its arguments as
    the model wrote them)."""
    tools = [
        Tool.from_schema(
            f["name"], f.get("description", ""), f["parameters"], fn=_recorder(f["name"])
        )
        for f in entry.functions
    ]
    agent = Agent(
        model, tools, max_steps=1,
        protocol=agent_protocol(protocol, options), best_effort=False,
        tool_choice=options.tool_choice, policies=by_name(options.policies),
        max_tools=options.max_tools,
    )  # fmt: skip
    result = agent.run(entry.question)
    box = ToolBox(tools)

    def named(written: str | None) -> str | None:  # the API-safe `math_factorial` is BFCL's name
        tool = box.resolve(written) if written is not None else None
        return entry.functions[tools.index(tool)]["name"] if tool is not None else written

    return result, tuple(
        {"tool": named(step.tool), "arguments": step.input if isinstance(step, Action) else None}
        for step in reply_calls(result.steps)
    )


def reply_calls(turns: Sequence[Turn]) -> list[Action | FormatError]:
    """The calls of the first reply that made any: its first Action and the calls the loop
    joined to it from the same reply (native tool calls, the text protocol's parallel calls),
    a later one written wrong included as its FormatError (a call made, though unreadable)."""
    first = next((i for i, t in enumerate(turns) if isinstance(t.step, Action)), len(turns))
    joined = itertools.takewhile(lambda t: t.joined, turns[first + 1 :])
    return [t.step for t in (*turns[first : first + 1], *joined)
            if isinstance(t.step, (Action, FormatError))]  # fmt: skip


def _one(model: Any, item: Task | Entry, protocol: str, repeat: int, options: Options) -> Outcome:
    """One run as an outcome; a run that raises is a failed row with the reason, so one bad
    reply or one bug never takes the other runs (and the report) down with it."""
    try:
        return _run_one(model, item, protocol, repeat, options)
    except Exception as exc:  # any failure of one run is that run's result
        reason = f"the run raised {type(exc).__name__}: {exc}"
        result = Result(None, "model_error", (), [], Usage(), error=reason, protocol=protocol)
        return Outcome(
            item.id, protocol, repeat, False, False, result, measure(result), note=reason
        )


def _run_one(
    model: Any, item: Task | Entry, protocol: str, repeat: int, options: Options
) -> Outcome:
    if isinstance(item, Entry):
        result, calls = run_entry(model, item, protocol, options)
        check = check_calls(item, [(c["tool"], c["arguments"]) for c in calls])
        if not item.ground_truth and result.stop_reason != "final_answer":  # no reply to judge
            check = Check(False, f"the run ended {result.stop_reason}", "no_answer")
        return Outcome(
            item.id, protocol, repeat, check.valid, False, result, measure(result), calls, check
        )
    result = run_task(model, item, protocol, options)
    correct, unscored = score(item, result.answer)
    ran = (t.result.tool for t in result.steps if t.result is not None and t.result.ran)
    correct = correct and item.calls_fit(ran)
    final = result.stop_reason == "final_answer"
    return Outcome(
        item.id,
        protocol,
        repeat,
        correct and final,
        correct and result.best_effort,
        result,
        measure(result),
        note=unscored,
    )


def run_compare(
    model: Any,
    tasks: Sequence[Task | Entry],
    *,
    protocols: Sequence[str] = DEFAULT_PROTOCOLS,
    repeat: int = 1,
    concurrency: int = 1,
    options: Options = Options(),
    on_outcome: Callable[[Outcome, int, int], None] | None = None,
) -> Report:
    """Run every task through every protocol (of PROTOCOLS) `repeat` times;
    `on_outcome(outcome, done, total)` is told as each run ends (from worker threads, one at a
    time). The report's meta says why `text+grammar` replies were not constrained, where the
    client says (`constrain_note`)."""
    unknown = [p for p in protocols if p not in PROTOCOLS]
    if unknown or not protocols:
        raise ConfigError(f"protocols must be among {PROTOCOLS}, got {list(protocols)}")
    check_parallel_calls(protocols, options.parallel_calls)
    by_name(options.policies)  # an unknown name is a usage error before any run
    if options.max_tools is not None:
        ToolBudget(options.max_tools)  # so is a bad budget, or its extra missing
    if repeat < 1 or concurrency < 1 or options.max_steps < 1:
        raise ConfigError(
            f"repeat, concurrency and max_steps must be >= 1, got {repeat}, {concurrency}, "
            f"{options.max_steps}"
        )
    jobs = [(item, p, r) for r in range(repeat) for item in tasks for p in protocols]
    outcomes: list[Outcome] = []
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(_one, model, item, p, r, options) for item, p, r in jobs]
        try:
            for future in as_completed(futures):
                outcomes.append(future.result())
                if on_outcome is not None:
                    on_outcome(outcomes[-1], len(outcomes), len(jobs))
        except KeyboardInterrupt:
            for future in futures:
                future.cancel()
            raise
    order = {(item.id, p, r): i for i, (item, p, r) in enumerate(jobs)}
    outcomes.sort(key=lambda o: order[(o.task, o.protocol, o.repeat)])
    return Report(
        protocols=tuple(protocols),
        tasks=tuple(tasks),
        outcomes=tuple(outcomes),
        repeat=repeat,
        concurrency=concurrency,
        seconds=time.perf_counter() - started,
        meta={**constrain_meta(model), **options_meta(options)},
    )


def check_parallel_calls(protocols: Sequence[str], parallel_calls: bool) -> None:
    """Parallel calls are the text protocol's: `own` and `own-first` read one call of the
    model's own format, so a row of theirs under parallel calls would measure nothing new."""
    single = [p for p in protocols if p in NAMED_ONLY]
    if parallel_calls and single:
        raise ConfigError(
            f"parallel calls let a reply of the text protocols ({', '.join(TEXT_PROTOCOLS)}) "
            f"make several calls, and native makes several either way; {', '.join(single)} "
            "reads one call of the model's own format: drop it from the protocols, or measure "
            "it in a comparison without parallel calls"
        )


def options_meta(options: Options) -> dict[str, Any]:
    """The settings every figure of a report was measured under, for the report itself."""
    tools = "built-in" if options.tools is None else [t.name for t in options.tools]
    return {
        "tool_choice": options.tool_choice, "policies": options.policies,
        "max_steps": options.max_steps, "tools": tools, "max_tools": options.max_tools,
        "examples": options.examples, "decision_bias": options.decision_bias,
        "parallel_calls": options.parallel_calls,
    }  # fmt: skip


def constrain_meta(model: Any) -> dict[str, Any]:
    """What the client says about constraining: its mode and why replies were not constrained."""
    meta = {"constrain": getattr(model, "constrain", None)}
    note = getattr(model, "constrain_note", None)
    if note:
        meta["constrain_note"] = note
    return meta


def native_support(outcomes: Sequence[Outcome]) -> str:
    """What the native runs show about the server: supported, rejected, as_text or ignored."""
    seen = {capability(o.result) for o in outcomes if o.protocol == "native"}
    for verdict in ("supported", "rejected", "as_text"):
        if verdict in seen:
            return verdict
    return "ignored"


def capability(result: Result) -> Capability:
    """What one native run shows about the server's tool calling."""
    if result.stop_reason == "model_error" and (result.error or "").startswith(UNSUPPORTED):
        return "rejected"
    if any(isinstance(t.step, Action) and not written_as_text(t.step) for t in result.steps):
        return "supported"
    if any(t.note == "call_as_text" or written_as_text(t.step) for t in result.steps):
        return "as_text"
    return "no_call"
