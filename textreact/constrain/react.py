"""Tools -> the grammar of one ReAct step: a bounded Thought line, then either one Action whose
Action Input fits that tool's own schema, or a Final Answer.

The keywords come from `textreact.grammar`, so the grammar, the prompt and the parser share one
spelling per language. The Thought may hold no colon and no line break: with neither, it can
never contain something the parser reads as a keyword (`… Final Answer: 5` inside a thought
would otherwise end the run before the action the grammar forced). The Final Answer is free
text; the Action Input is one line of compact JSON, after which the grammar is complete and
llama.cpp ends the reply by itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from textreact import grammar
from textreact.constrain.gbnf import MAX_ITEMS, MAX_STRING, Rules, literal
from textreact.errors import ConfigError
from textreact.tools.tool import Tool

#: Characters of the Thought line.
MAX_THOUGHT: Final = 300
#: ... in a language written without spaces, where a character costs a small model's
#: tokenizer a token or two: SmolLM2 ran a Chinese thought of 133 characters to the
#: 200-token limit, twice, and never reached its action.
MAX_THOUGHT_BY_LANG: Final = {"zh": 80}
#: OpenAI's meanings: either branch, an action only, a final answer only; or a tool's name.
TOOL_CHOICES: Final = ("auto", "required", "none")


def tools_grammar(
    tools: Sequence[Tool],
    *,
    tool_choice: str = "auto",
    lang: str = "en",
    max_thought: int | None = None,
    max_string: int = MAX_STRING,
    max_items: int = MAX_ITEMS,
    max_calls: int = 1,
) -> str:
    """The GBNF grammar of one step with `tools`: `Thought: …` on one line, then
    `Action: <name>` + `Action Input: <JSON fitting that tool's parameters>`, or
    `Final Answer: …`, as `tool_choice` allows (`auto`, `required`, `none`, or one tool's name).
    The Thought holds at most `max_thought` characters (by default MAX_THOUGHT, or the
    language's own bound in MAX_THOUGHT_BY_LANG). With `max_calls` above 1 (parallel calls),
    the action may be followed by more, each on the next line, up to that many in all, each
    of a tool `tool_choice` allows."""
    if lang not in grammar.LANGUAGES:
        raise ConfigError(f"lang must be one of {', '.join(grammar.LANGUAGES)}, not {lang!r}")
    if max_thought is None:
        max_thought = MAX_THOUGHT_BY_LANG.get(lang, MAX_THOUGHT)
    if max_thought < 1:
        raise ConfigError(f"max_thought must be >= 1 character, got {max_thought}")
    chosen = _chosen(tools, tool_choice)
    _check_calls(max_calls)
    rules = Rules(max_string=max_string, max_items=max_items)
    branches = []
    if chosen:
        branches.append(_actions(rules, chosen, lang, max_calls))
    if tool_choice in ("auto", "none"):
        label = literal(grammar.label(grammar.FINAL_ANSWER, lang) + " ")
        branches.append(rules.add("final", f"{label} {_ANSWER}"))
    # No colon of either language and no line break: see the module's docstring.
    colons = "".join(dict.fromkeys(grammar.COLONS.values()))
    label = literal(grammar.label(grammar.THOUGHT, lang) + " ")
    thought = rules.add("thought", rf"{label} [^{colons}\r\n]{{1,{max_thought}}}")
    return rules.text(f'{thought} "\\n" ({" | ".join(branches)})')


def branch_grammar(
    tools: Sequence[Tool],
    branch: str,
    *,
    lang: str = "en",
    max_string: int = MAX_STRING,
    max_items: int = MAX_ITEMS,
    max_calls: int = 1,
) -> str:
    """The GBNF grammar of what follows one branch's label (`Action:` or `Final Answer:`,
    colon included) in `tools_grammar`'s step: for "action", a space, one tool's name and its
    Action Input under that tool's schema (and, with `max_calls` above 1, up to that many
    calls in all, as in `tools_grammar`); for "final", a space and the free answer. A client
    that chose the branch itself writes the label and lets the model go on under this."""
    if lang not in grammar.LANGUAGES:
        raise ConfigError(f"lang must be one of {', '.join(grammar.LANGUAGES)}, not {lang!r}")
    _check_calls(max_calls)
    rules = Rules(max_string=max_string, max_items=max_items)
    if branch == "action":
        first = _calls(rules, _chosen(tools, "required"), lang)
        if max_calls == 1:
            return rules.text(f'" " {first}')
        more = _more(rules, _chosen(tools, "required"), lang, max_calls)
        return rules.text(f'" " {first} {more}')
    if branch == "final":
        return rules.text(f'" " {_ANSWER}')
    raise ConfigError(f'branch must be "action" or "final", not {branch!r}')


#: The free text of a Final Answer: anything, its first character not blank.
_ANSWER: Final = r"[^ \t\r\n] [^\x00]*"


def _actions(rules: Rules, chosen: Sequence[Tool], lang: str, max_calls: int) -> str:
    """The action branch: `Action: ` and one call of `chosen`, then up to `max_calls - 1`
    more on the lines below (none when `max_calls` is 1: the grammar of one call)."""
    label = literal(grammar.label(grammar.ACTION, lang) + " ")
    body = f"{label} {_calls(rules, chosen, lang)}"
    if max_calls > 1:
        body += f" {_more(rules, chosen, lang, max_calls)}"
    return rules.add("action", body)


def _more(rules: Rules, chosen: Sequence[Tool], lang: str, max_calls: int) -> str:
    """The calls that may follow the first: each `\nAction: ` and a call, up to
    `max_calls - 1` of them."""
    label = literal("\n" + grammar.label(grammar.ACTION, lang) + " ")
    call = rules.add("next-call", f"{label} {_calls(rules, chosen, lang)}")
    return f"{call}{{0,{max_calls - 1}}}"


def _check_calls(max_calls: int) -> None:
    if isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 1:
        raise ConfigError(
            f"max_calls must be an integer >= 1 (the calls one reply may make), got {max_calls!r}"
        )


def _calls(rules: Rules, chosen: Sequence[Tool], lang: str) -> str:
    """One of `chosen` by name, then its Action Input under its own schema."""
    heading = literal(f"\n{grammar.label(grammar.ACTION_INPUT, lang)} ")
    calls = [
        rules.add(
            f"call-{tool.name}",
            f"{literal(tool.name)} {heading} "
            + rules.value(tool.parameters, tool.parameters, f"{tool.name}-input"),
        )
        for tool in chosen
    ]
    return f"({' | '.join(calls)})"


def _chosen(tools: Sequence[Tool], tool_choice: str) -> list[Tool]:
    """The tools the action branch offers under `tool_choice`; misuse is a ConfigError."""
    names = [t.name for t in tools]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"tool names must be unique for a grammar; given twice: {twice}")
    if not isinstance(tool_choice, str) or (
        tool_choice not in TOOL_CHOICES and tool_choice not in names
    ):
        raise ConfigError(
            f"tool_choice must be one of {', '.join(TOOL_CHOICES)} or a tool's name "
            f"({', '.join(names) or 'no tools given'}), not {tool_choice!r}"
        )
    if tool_choice == "required" and not tools:
        raise ConfigError('tool_choice="required" needs at least one tool; none were given')
    if tool_choice == "none":
        return []
    if tool_choice in TOOL_CHOICES:
        return list(tools)
    return [t for t in tools if t.name == tool_choice]
