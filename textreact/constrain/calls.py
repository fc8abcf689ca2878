"""Tools -> the grammar of one reply in a model's own tool format: a call written as that
format writes it (or as the bare JSON object), its arguments fitting the tool's schema, or,
where the tool choice allows an answer, free prose that does not begin as a call does.

It stands in for a lazy grammar (llama.cpp's `grammar_lazy` with `grammar_triggers`: free text
until the trigger, the grammar after it), which llama.cpp's chat endpoint does not take from a
client (see `textreact.constrain.servers`): here the model decides at its first character, in
the format it was trained on, and only the call is held to the grammar. Prose may not begin
with `{`, a backtick or the format's opening character, so an answer written as JSON or in a
code block is not possible."""

from __future__ import annotations

import json
from collections.abc import Sequence

from textreact.constrain.gbnf import Rules, literal
from textreact.tools.tool import Tool

#: A call in a Markdown code block, as code-trained models write JSON: a form of the call, so
#: the fence cannot carry a call past the grammar as prose.
_FENCE_OPEN = "```json\n"
_FENCE_CLOSE = "\n```"


def calls_grammar(
    tools: Sequence[Tool],
    *,
    arguments: str,
    call_open: str,
    call_close: str,
    tool_choice: str = "auto",
) -> str | None:
    """The GBNF grammar of one reply: `call_open {"name": NAME, "<arguments>": ARGS}
    call_close`, the same object bare or in a ```json code block, or (under "auto") prose;
    under "none", prose alone (a reply that begins no call: the tools are still listed in
    the prompt, and a model asked to answer can still begin one). None without tools."""
    if not tools:
        return None
    rules = Rules()
    first = "".join(dict.fromkeys("{`" + call_open[:1]))
    excluded = "".join(f"\\{c}" if c in "[]\\^-" else c for c in first)
    prose = rf"[^{excluded} \t\r\n] [^\x00]*"
    if tool_choice == "none":
        return rules.text(prose)
    chosen = [t for t in tools if tool_choice in ("auto", "required") or t.name == tool_choice]
    if not chosen:
        return None
    calls = []
    for tool in chosen:
        head = "{" + f"{json.dumps('name')}: {json.dumps(tool.api_name)}, {json.dumps(arguments)}: "
        schema = tool.parameters
        value = rules.value(schema, schema, f"{tool.name}-arguments")
        calls.append(rules.add(f"call-{tool.name}", f'{literal(head)} {value} "}}"'))
    body = rules.add("call", " | ".join(calls))
    branches = [body, f"{literal(_FENCE_OPEN)} {body} {literal(_FENCE_CLOSE)}"]
    if call_open:
        branches.insert(0, f"{literal(call_open)} {body} {literal(call_close)}")
    if tool_choice == "auto":
        branches.append(rules.add("prose", prose))
    return rules.text(" | ".join(branches))
