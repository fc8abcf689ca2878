"""Named noise families: completions paired with the step they stand for. Each family changes
one thing about the canonical form (`mixed` combines several), and every choice's first option
is the canonical one, so a failure shrinks to exactly the noise that broke the parser."""

from __future__ import annotations

import difflib
import functools
import json
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import regex
from hypothesis import strategies as st

from textreact.errors import ConfigError
from textreact.grammar import ALIASES, COLONS, KEYWORDS, LABELS, render_step
from textreact.steps import Action, FinalAnswer
from textreact.testing import values
from textreact.testing.draw import Drawer, RandomDrawer, strategy
from textreact.testing.render import CASES, Noise, render


@dataclass(frozen=True)
class Case:
    """A generated completion and the step a tolerant parser should recover from it."""

    family: str
    text: str
    expected: Action | FinalAnswer


Knobs = Callable[[Drawer, Any], dict[str, Any]]


@dataclass(frozen=True)
class _Family:
    description: str
    #: Which steps the family applies to: "any", "action", "dict" (JSON input) or "str".
    steps: str
    knobs: Knobs


_REGISTRY: dict[str, _Family] = {}


def _family(name: str, description: str, steps: str = "any") -> Callable[[Knobs], Knobs]:
    def register(knobs: Knobs) -> Knobs:
        _REGISTRY[name] = _Family(description, steps, knobs)
        return knobs

    return register


def _accepts(family: _Family, step: Action | FinalAnswer) -> bool:
    if family.steps == "any":
        return True
    if not isinstance(step, Action):
        return False
    return family.steps == "action" or (family.steps == "dict") == isinstance(step.input, dict)


def _has_dict_input(step: Any) -> bool:
    return isinstance(step, Action) and isinstance(step.input, dict)


@_family("canonical", "the form the prompt teaches, exactly as grammar.render_step writes it")
def _canonical(d: Drawer, step: Any) -> dict[str, Any]:
    return {}


_MARKUPS = (
    ("**", "**", ""), ("**", "", "**"), ("### ", "", ""), ("## **", "**", ""), ("*", "*", ""),
    ("__", "__", ""), ("- ", "", ""), ("- **", "**", ""), ("`", "`", ""),
)  # fmt: skip


@_family("markdown", "bold, italics, headings, bullets around keywords (**Action:**, ### Thought:)")
def _markdown(d: Drawer, step: Any) -> dict[str, Any]:
    return {"markup": d.pick(_MARKUPS)}


@_family("case", "keywords in upper, lower, title or swapped case (ACTION INPUT:, final answer:)")
def _case(d: Drawer, step: Any) -> dict[str, Any]:
    return {"case": d.pick([c for c in CASES if c != "as_is"])}


@_family(
    "spacing",
    "space before the colon, none or several after it, blank lines, indentation, trailing "
    "spaces, a final newline, values on the line below their keyword",
)
def _spacing(d: Drawer, step: Any) -> dict[str, Any]:
    return {
        "before_colon": d.pick(("", " ", "  ")),
        "after_colon": d.pick((" ", "", "  ", "\t")),
        "newline": d.pick(("\n", "\n\n", "\n \n")),
        "indent": d.pick(("", " ", "  ", "\t")),
        "line_end": d.pick(("", " ", "  ")),
        "end": d.pick(("", "\n", "\n\n")),
        "input_next_line": _has_dict_input(step) and d.pick((False, True)),
        "answer_next_line": isinstance(step, FinalAnswer) and d.pick((False, True)),
    }


@_family("fullwidth_colon", "the full-width colon ： after English keywords")
def _fullwidth_colon(d: Drawer, step: Any) -> dict[str, Any]:
    return {"colon": COLONS["zh"], "after_colon": d.pick((" ", ""))}


@_family("chinese", "Chinese keywords (思考 / 行动 / 行动输入 / 最终答案), either colon")
def _chinese(d: Drawer, step: Any) -> dict[str, Any]:
    colon = d.pick((COLONS["zh"], COLONS["en"]))
    return {"spellings": LABELS["zh"], "colon": colon, "after_colon": d.pick(("", " "))}


@functools.cache
def _spellings(pattern: str) -> tuple[str, ...]:
    """Every string an alias fragment matches (literals, [classes] and `?` are all it uses).
    Checked with a pattern kept out of `regex`'s own cache: when that cache is full, `regex`
    evicts with the global `random`, and a strategy that moves the global random state is one
    Hypothesis refuses."""
    found = [""]
    i = 0
    while i < len(pattern):
        if pattern[i] == "[":
            end = pattern.index("]", i)
            options, i = list(pattern[i + 1 : end]), end + 1
        else:
            options, i = [pattern[i]], i + 1
        if pattern[i : i + 1] == "?":
            options, i = [*options, ""], i + 1
        found = [f + o for f in found for o in options]
    compiled = regex.compile(pattern, regex.IGNORECASE, cache_pattern=False)
    if not all(compiled.fullmatch(f) for f in found):
        raise ValueError(f"grammar alias {pattern!r} uses syntax the fuzz kit cannot expand")
    return tuple(found)


@_family("aliases", "every accepted spelling in grammar.ALIASES (Action_Input, FinalAnswer, 动作)")
def _aliases(d: Drawer, step: Any) -> dict[str, Any]:
    spellings = {k: d.pick(_spellings(d.pick(ALIASES[k]))) for k in KEYWORDS}
    return {"spellings": spellings, "case": d.pick(("title", "as_is", "upper"))}


@_family("numbered", "numbered keywords (Thought 1:, Action 1:, Action Input #2:)")
def _numbered(d: Drawer, step: Any) -> dict[str, Any]:
    return {"number": f"{d.pick((' ', ''))}{d.pick(('', '#'))}{d.integer(1, 99)}"}


@_family("tool_markup", "the tool name wrapped as [name], `name` or **name**", steps="action")
def _tool_markup(d: Drawer, step: Any) -> dict[str, Any]:
    return {"tool_wrap": d.pick((("[", "]"), ("`", "`"), ("**", "**")))}


@_family("code_fence", "the Action Input in a ```json (or bare ```) fence", steps="dict")
def _code_fence(d: Drawer, step: Any) -> dict[str, Any]:
    return {"fence": d.pick(("```json", "```", "```JSON")), "input_next_line": d.pick((0, 1))}


@_family("python_dict", "the Action Input as a Python literal: 'quotes', True, None", steps="dict")
def _python_dict(d: Drawer, step: Any) -> dict[str, Any]:
    return {"python": True}


@_family("trailing_comma", "a trailing comma closing every JSON object and array", steps="dict")
def _trailing_comma(d: Drawer, step: Any) -> dict[str, Any]:
    return {"trailing_comma": True}


@_family("multiline_json", "the Action Input as indented, multi-line JSON", steps="dict")
def _multiline_json(d: Drawer, step: Any) -> dict[str, Any]:
    return {
        "json_indent": d.pick((2, 4)),
        "ensure_ascii": d.pick((False, True)),
        "input_next_line": d.pick((False, True)),
    }


@_family("quoted_input", 'a plain-string Action Input written as a JSON string ("Paris")', "str")
def _quoted_input(d: Drawer, step: Any) -> dict[str, Any]:
    return {"quoted": True}


@_family("prose_before", "chatter before the first keyword")
def _prose_before(d: Drawer, step: Any) -> dict[str, Any]:
    return {"prose_before": values.prose(d) + d.pick(("\n", "\n\n"))}


@_family("prose_after", "prose after the Action Input's JSON, on its line or below", "dict")
def _prose_after(d: Drawer, step: Any) -> dict[str, Any]:
    return {"prose_after": d.pick((" ", "\n", "\n\n")) + values.prose(d)}


@_family("think_block", "a <think>…</think> block first, sometimes holding a draft action")
def _think_block(d: Drawer, step: Any) -> dict[str, Any]:
    kind = d.integer(0, 2)
    if kind == 0:
        return {"think": ""}
    draft = "" if kind == 1 else "\n" + render_step(values.action(d))
    return {"think": values.prose(d) + draft}


@_family(
    "hallucinated_observation",
    "a self-written Observation: after the action, maybe with further steps",
    steps="action",
)
def _hallucinated_observation(d: Drawer, step: Any) -> dict[str, Any]:
    if d.integer(0, 1) == 0:
        observation = values.prose(d)
    else:
        observation = json.dumps(values.json_object(d), ensure_ascii=False)
    further = [values.step(d) for _ in range(d.integer(0, 2))]
    return {"tail": (observation, *further)}


@_family("partial_stop", "the completion ends in a cut-off stop word (\\nObserv)", "action")
def _partial_stop(d: Drawer, step: Any) -> dict[str, Any]:
    return {"partial_stop": d.integer(0, 8)}


@_family(
    "action_then_final",
    "a Final Answer written after the action, before its observation",
    steps="action",
)
def _action_then_final(d: Drawer, step: Any) -> dict[str, Any]:
    return {"tail": (values.final_answer(d),)}


@_family("mixed", "two to four of the families above at once")
def _mixed(d: Drawer, step: Any) -> dict[str, Any]:
    fitting = [name for name, f in _REGISTRY.items() if name != "canonical" and _accepts(f, step)]
    knobs: dict[str, Any] = {}
    for _ in range(d.integer(2, 4)):
        name = fitting.pop(d.integer(0, len(fitting) - 1))
        knobs.update(_REGISTRY[name].knobs(d, step))
    return knobs


#: Family name -> what its noise is, in one line (for `--family` help and the docs).
FAMILIES: Mapping[str, str] = {name: family.description for name, family in _REGISTRY.items()}


def check_family(name: str) -> str:
    """`name` if it is a family; otherwise a ConfigError that lists the families."""
    if name in _REGISTRY:
        return name
    close = difflib.get_close_matches(name, _REGISTRY, n=1)
    hint = f"Did you mean {close[0]!r}? " if close else ""
    raise ConfigError(f"unknown fuzz family {name!r}. {hint}Families: {', '.join(_REGISTRY)}.")


def case(d: Drawer, family: str) -> Case:
    """One completion of `family` with its ground truth."""
    spec = _REGISTRY[family]
    if spec.steps == "any":
        step = values.step(d)
    else:
        step = values.action(d, "any" if spec.steps == "action" else spec.steps)
    return Case(family, render(step, Noise(**spec.knobs(d, step))), step)


def completions(family: str | None = None) -> st.SearchStrategy[Case]:
    """Completions of one named family (see FAMILIES), or of any family when None."""
    if family is None:
        return st.one_of([completions(name) for name in _REGISTRY])
    name = check_family(family)
    return strategy(lambda d: case(d, name))


def sample(family: str, seed: int) -> Iterator[tuple[Case, list[Any]]]:
    """Endless cases of `family` from a seeded Random, each with the choices that made it
    (which `draw.shrink` can replay): the fast path for counting passes."""
    rng = random.Random(f"textreact.testing:{seed}:{family}")
    while True:
        drawer = RandomDrawer(rng)
        yield case(drawer, family), drawer.choices
