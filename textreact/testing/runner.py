"""Parser under test -> FuzzReport: runs each family's completions through a parse function,
compares what comes back with the ground truth, and shrinks each family's first failure to a
minimal completion by replaying its recorded choices. Everything follows from the seed."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from textreact.errors import ConfigError
from textreact.loading import load_object
from textreact.steps import Action, FinalAnswer
from textreact.testing import draw, families
from textreact.testing.draw import Drawer, ReplayDrawer
from textreact.testing.families import FAMILIES, Case, check_family, sample

ParseFn = Callable[[str], Any]


@dataclass(frozen=True)
class Outcome:
    """What the parser under test returned, reduced to the fields the kit compares."""

    kind: str
    tool: Any = None
    input: Any = None
    answer: Any = None
    #: Why the kind is "error" when the parser raised or returned something unreadable.
    note: str = ""

    def describe(self) -> str:
        if self.kind == "action":
            return f"action {self.tool!r} with input {_show(self.input)}"
        if self.kind == "final":
            return f"final answer {self.answer!r}"
        if not self.note:
            return self.kind
        note = self.note.replace("\n", "\\n")  # one line, however long the parser's message
        return f"{self.kind}: {note[:200]}{'…' if len(note) > 200 else ''}"


@dataclass(frozen=True)
class Failure:
    """One completion the parser got wrong: the minimal one, after shrinking, where possible."""

    text: str
    expected: Action | FinalAnswer
    got: Outcome
    #: False when the run was asked not to shrink (`shrink=False`).
    minimised: bool = False


@dataclass(frozen=True)
class FamilyResult:
    family: str
    passed: int
    run: int
    failure: Failure | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


@dataclass(frozen=True)
class FuzzReport:
    """Per family: examples passed out of examples run, and the minimal failure if any."""

    parser: str
    seed: int
    examples: int
    results: tuple[FamilyResult, ...]

    @property
    def ok(self) -> bool:
        return all(result.ok for result in self.results)

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(result.family for result in self.results if not result.ok)

    def render(self) -> str:
        return _render_report(self)


def outcome(value: Any) -> Outcome:
    """A Step, any object with kind/tool/input/answer attributes, or a dict with those keys."""
    get = value.get if isinstance(value, Mapping) else lambda key: getattr(value, key, None)
    kind = get("kind")
    if kind not in ("action", "final", "error"):
        note = f"unreadable return value {value!r}: expected a Step, or kind action/final/error"
        return Outcome("error", note=note)
    note = "" if kind != "error" else str(get("message") or "")
    return Outcome(kind, get("tool"), get("input"), get("answer"), note)


def call(parse: ParseFn, text: str) -> Outcome:
    """The parser's outcome on `text`; an exception is an outcome of kind error."""
    try:
        return outcome(parse(text))
    except Exception as exc:  # the parser under test may raise anything
        return Outcome("error", note=f"raised {type(exc).__name__}: {exc}")


def matches(expected: Action | FinalAnswer, got: Outcome) -> bool:
    """Same kind; for actions the same tool and input, for answers the same stripped text."""
    if got.kind != expected.kind:
        return False
    if isinstance(expected, FinalAnswer):
        return isinstance(got.answer, str) and got.answer.strip() == expected.answer
    if not isinstance(got.tool, str) or got.tool.strip() != expected.tool:
        return False
    if isinstance(expected.input, str):
        return isinstance(got.input, str) and got.input.strip() == expected.input
    return _same_json(expected.input, got.input)


def _same_json(expected: Any, got: Any) -> bool:
    """JSON equality: numbers by value (1 == 1.0), but a bool is never a number."""
    if isinstance(expected, dict):
        return (
            isinstance(got, Mapping)
            and all(isinstance(key, str) for key in got)
            and set(got) == set(expected)
            and all(_same_json(v, got[k]) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return (
            isinstance(got, (list, tuple))
            and len(got) == len(expected)
            and all(_same_json(e, g) for e, g in zip(expected, got, strict=True))
        )
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        return type(got) is type(expected) and got == expected
    return isinstance(got, (int, float)) and not isinstance(got, bool) and got == expected


def load_parser(spec: str) -> ParseFn:
    """`package.module:function` (or `module:Class.method`) -> the callable it names."""
    target = load_object(spec, "a parser", "textreact.parser:parse", "module:function")
    if not callable(target):
        raise ConfigError(f"{spec!r} names a {type(target).__name__}, not a function")
    return target


def run_fuzz(
    parser: str | ParseFn,
    *,
    examples: int = 200,
    seed: int = 0,
    families: Sequence[str] | None = None,
    shrink: bool = True,
) -> FuzzReport:
    """Fuzz `parser` (a callable or "module:function") with `examples` completions per family.

    `shrink=False` skips minimisation: each failing family then shows the first failure found."""
    parse = load_parser(parser) if isinstance(parser, str) else parser
    if not callable(parse):
        raise ConfigError(f"parser must be callable or 'module:function', not {parser!r}")
    if examples < 1:
        raise ConfigError(f"examples must be at least 1, got {examples}")
    names = list(FAMILIES) if families is None else [check_family(n) for n in families]
    results = tuple(_run_family(parse, name, examples, seed, shrink) for name in names)
    return FuzzReport(_name(parser), seed, examples, results)


def check_parser(
    parse: str | ParseFn,
    *,
    examples: int = 100,
    seed: int = 0,
    families: Sequence[str] | None = None,
    exclude: Iterable[str] = (),
) -> FuzzReport:
    """For a pytest test: fuzz `parse` and raise AssertionError with the report on any failure.

    `exclude` names families the parser is known not to handle (checked for typos)."""
    skipped = {check_family(name) for name in exclude}
    chosen = [n for n in (FAMILIES if families is None else families) if n not in skipped]
    report = run_fuzz(parse, examples=examples, seed=seed, families=chosen)
    if not report.ok:
        raise AssertionError("\n" + report.render())
    return report


def _run_family(parse: ParseFn, name: str, examples: int, seed: int, shrink: bool) -> FamilyResult:
    passed = 0
    first: tuple[Case, list[Any]] | None = None
    for case, choices in itertools.islice(sample(name, seed), examples):
        if matches(case.expected, call(parse, case.text)):
            passed += 1
        elif first is None:
            first = (case, choices)
    if first is None:
        return FamilyResult(name, passed, examples)
    case, choices = first
    if shrink:

        def fails(drawer: Drawer) -> bool:
            candidate = families.case(drawer, name)
            return not matches(candidate.expected, call(parse, candidate.text))

        case = families.case(ReplayDrawer(draw.shrink(choices, fails)), name)
    failure = Failure(case.text, case.expected, call(parse, case.text), minimised=shrink)
    return FamilyResult(name, passed, examples, failure)


def _name(parser: str | ParseFn) -> str:
    if isinstance(parser, str):
        return parser
    module = getattr(parser, "__module__", None) or "?"
    return f"{module}:{getattr(parser, '__qualname__', repr(parser))}"


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _expected(step: Action | FinalAnswer) -> str:
    if isinstance(step, Action):
        return f"action {step.tool!r} with input {_show(step.input)}"
    return f"final answer {step.answer!r}"


def _render_report(report: FuzzReport) -> str:
    width = max(len(r.family) for r in report.results)
    lines = [
        f"textreact fuzz: parser {report.parser}, seed {report.seed}, "
        f"{report.examples} examples per family",
        "",
    ]
    for r in report.results:
        status = "ok" if r.ok else "FAILED"
        lines.append(f"  {r.family:<{width}}  {r.passed:>5}/{r.run:<5} {status}")
    for r in report.results:
        if r.failure is None:
            continue
        f = r.failure
        which = "minimal" if f.minimised else "first (not minimised)"
        lines += ["", f"FAILED {r.family}: {FAMILIES[r.family]}", f"  {which} failing completion:"]
        lines += [f"    | {line}" for line in f.text.split("\n")]
        lines += [
            f"  as a Python string: {f.text!r}",
            f"  expected: {_expected(f.expected)}",
            f"  got:      {f.got.describe()}",
        ]
    failed = report.failed
    if failed:
        every = set(failed) == set(FAMILIES)
        rerun = "" if every else " --family " + " ".join(failed)
        lines += [
            "",
            f"{len(failed)} of {len(report.results)} families failed. "
            f"Reproduce: textreact fuzz --parser {report.parser} --seed {report.seed} "
            f"--examples {report.examples}{rerun}",
        ]
    else:
        lines += ["", f"all {len(report.results)} families passed."]
    return "\n".join(lines)
