"""The offered tools -> the worked example exchanges a run opens with, when they are built from
those tools (`examples="built"`) rather than the bundled calculator-and-lookup example.

A small model decides between a call and an answer by copying the example it was shown. The
bundled example shows two tools a user's request may not offer (a model without a grammar then
calls `lookup_fact`) and one shape only: one call, then the answer. Built examples show only
offered tools, in three shapes, each a file of `prompts/exemplars/` with named slots: an
everyday question no tool fits, answered directly (`none.md`); one call, its result, the answer
(`one.md`); and two calls for the two things a request asks (`two.md`): two tools where two are
offered, else the same tool for two values, which teaches calling again after a first result.

Nothing is run to make them: a user's tool may have side effects, so each observation is a
placeholder that names the tool and the values it was given (`<get weather result for
Tokyo>`), never a made-up fact. Requests are the tool's name and its arguments in words
(`Get weather: city Tokyo.`), argument values from the schema as `Tool.example` chose them.
The everyday question is the one of `everyday.md` whose words overlap least with the tools'
names, descriptions and parameters. Where exactly the built-in tools are offered the bundled
example is theirs, and it is shown instead."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any, Final

import regex

from textreact import grammar, jsonline, prompt, templates
from textreact.errors import ConfigError, ToolArgumentError
from textreact.models import Message
from textreact.tools import Tool, builtin_tools
from textreact.tools.schema import example_candidates

__all__ = ["CHOICES", "build", "checked_examples", "worked_examples"]

#: What `examples=` names: the bundled example, examples built from the offered tools, none.
CHOICES: Final = ("bundled", "built", "none")
#: The most tools the built exchanges show (one call, then two): more only lengthens the prompt.
_SHOWN: Final = 3
#: The longest Action Input or request part a built exchange shows: a tool whose example is
#: longer is left out of the exchanges (the system prompt still shows it).
_ROOM: Final = 160
#: Candidate values tried for each argument of the two-call exchange's second call.
_CANDIDATES: Final = 16
#: Words that tell a subject: letters and digits, or one Han character (Chinese has no spaces).
_WORD: Final = regex.compile(r"\p{Han}|[\p{L}\p{N}]+")
#: Where a name breaks into words: separators and a lower-to-upper case change.
_NAME_BREAK: Final = regex.compile(r"[\s_.\-]+|(?<=\p{Ll})(?=\p{Lu})")


def checked_examples(examples: object) -> str | list[Message]:
    """`examples=` as a protocol keeps it: one of CHOICES (None is "bundled"), or a copy of a
    list of user/assistant messages; anything else is a ConfigError."""
    if examples is None:
        return "bundled"
    if isinstance(examples, str):
        if examples not in CHOICES:
            raise ConfigError(
                f"examples must be one of {', '.join(CHOICES)} or a list of messages, got "
                f"{examples!r}"
            )
        return examples
    if not isinstance(examples, Sequence) or not all(
        isinstance(m, dict) and m.get("role") in ("user", "assistant") for m in examples
    ):
        raise ConfigError(
            "examples must be a list of {'role': 'user' | 'assistant', 'content': str} "
            f"messages, alternating, starting with a user turn, or one of {', '.join(CHOICES)}"
        )
    return [dict(m) for m in examples]


def worked_examples(
    examples: str | Sequence[Message], tools: Sequence[Tool], lang: str = "en"
) -> list[Message]:
    """The example turns a run opens with, as `checked_examples` left the choice."""
    if examples == "bundled":
        return prompt.example_messages(lang)
    if examples == "none":
        return []
    if examples == "built":
        return build(tools, lang)
    return [dict(m) for m in examples]


def build(tools: Sequence[Tool], lang: str = "en") -> list[Message]:
    """The exchanges built from `tools`: no call, one call, two calls (the call shapes only
    where a tool's example is short enough to show); the bundled example for the built-in
    tools alone."""
    if _signature(tools) == _signature(builtin_tools()):
        return prompt.example_messages(lang)
    messages = _exchange("none", lang, _everyday(tools, lang))
    shown = [t for t in tools if _fits(t)][:_SHOWN]
    if not shown:
        return messages
    first = _call(shown[0], shown[0].example, lang)
    messages += _exchange("one", lang, first)
    second = _second_calls(shown)
    if second is not None:
        one, two = (_call(tool, arguments, lang) for tool, arguments in second)
        messages += _exchange("two", lang, {**one, **{f"second_{k}": v for k, v in two.items()}})
    return messages


def _signature(tools: Sequence[Tool]) -> set[tuple[str, str]]:
    return {(t.name, t.description) for t in tools}


def _fits(tool: Tool) -> bool:
    return len(grammar.render_input(dict(tool.example))) <= _ROOM


def _exchange(shape: str, lang: str, slots: dict[str, str]) -> list[Message]:
    """The turns of `prompts/[lang/]exemplars/<shape>.md` with `slots` filled. Every value is
    one line (`_value_text`, `grammar.render_input`), so none can read as a turn's header."""
    filled = {**templates.labels(lang), **slots}
    return prompt.parse_exchange(templates.render(f"exemplars/{shape}.md", lang, filled))


def _everyday(tools: Sequence[Tool], lang: str) -> dict[str, str]:
    """The question (and its answer) of `everyday.md` that shares the fewest words with the
    tools; the first of those that tie."""
    bank = prompt.parse_exchange(templates.load_template("exemplars/everyday.md", lang))
    pairs = list(zip(bank[::2], bank[1::2], strict=True))
    told = {w for t in tools for w in _words(_told(t))}
    question, answer = min(pairs, key=lambda p: len(set(_words(p[0]["content"])) & told))
    return {"question": question["content"], "answer": answer["content"]}


def _told(tool: Tool) -> str:
    """All a tool says of itself: its name, description, parameter names and descriptions."""
    texts = [_spoken(tool.name), tool.description]
    for name, spec in tool.parameters.get("properties", {}).items():
        texts += [_spoken(name), str(spec.get("description", "")) if isinstance(spec, dict) else ""]
    return " ".join(texts)


def _words(text: str) -> list[str]:
    """Telling words: four letters or more, a number, or a Han character."""
    return [
        w
        for w in _WORD.findall(text.casefold())
        if len(w) >= 4 or w.isdigit() or regex.fullmatch(r"\p{Han}", w)
    ]


def _second_calls(shown: list[Tool]) -> tuple[tuple[Tool, dict[str, Any]], ...] | None:
    """The two calls of the two-call exchange: the next two shown tools (the first again where
    only two are shown), or the one tool twice with one argument changed to another value its
    schema offers; None where it offers none."""
    if len(shown) > 1:
        second, third = shown[1], shown[2] if len(shown) > 2 else shown[0]
        return (second, dict(second.example)), (third, dict(third.example))
    tool = shown[0]
    other = next(_other_examples(tool), None)
    return None if other is None else ((tool, dict(tool.example)), (tool, other))


def _other_examples(tool: Tool) -> Iterator[dict[str, Any]]:
    """Correct arguments of `tool` that differ from its example in one value: another value
    its schema offers, else a number one more."""
    example = dict(tool.example)
    properties = tool.parameters.get("properties", {})
    for name, value in example.items():
        candidates = example_candidates(properties[name], tool.parameters, name=name)
        bumped = [value + 1] if _is_number(value) else []
        for candidate in [*itertools.islice(candidates, _CANDIDATES), *bumped]:
            arguments = {**example, name: candidate}
            if candidate == value or len(grammar.render_input(arguments)) > _ROOM:
                continue
            try:
                arguments = tool.parse_arguments(arguments)
            except ToolArgumentError:
                continue
            if arguments != example:
                yield arguments


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _call(tool: Tool, arguments: dict[str, Any], lang: str) -> dict[str, str]:
    """The slots of one call: the tool, its input, the request for it and its placeholder
    result."""
    task = _spoken(tool.name)
    values = ", ".join(f"{_spoken(k)} {_value_text(v)}" for k, v in arguments.items())
    given = ", ".join(_value_text(v) for v in arguments.values())
    slots = {"task": task, "values": values, "given": given}
    bare = "_bare" if not arguments else ""
    request = templates.render(f"exemplars/request{bare}.md", lang, slots)
    return {
        "tool": tool.name,
        "input": grammar.render_input(arguments),
        "request": request[:1].upper() + request[1:],
        "result": templates.render(f"exemplars/result{bare}.md", lang, slots),
    }


def _spoken(name: str) -> str:
    """A name as words: `get_weather` and `getWeather` -> `get weather`."""
    return " ".join(w.lower() for w in _NAME_BREAK.split(name) if w)


def _value_text(value: Any) -> str:
    """A value as a request writes it: text as it is on one line, anything else as JSON."""
    return " ".join(value.split()) if isinstance(value, str) else jsonline.dumps(value)
