"""Chat template -> the tool format its model was trained on, and that format's spelling: where
the tools are listed, how a call and a result are written, what the model writes first when it
calls (the grammar's trigger). Read from markers in the template, never from a model's name.

Three families are known, each with a reference template under tests/templates/:
- "hermes" (Qwen2.5, Hermes 2 Pro...): tools as JSON lines inside `<tools></tools>` in the
  system message; a call is `<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>`; a
  result goes back as a user turn `<tool_response>\\n...\\n</tool_response>`.
- "llama3" (Llama 3.1 to 3.3): tools as indented JSON in the first user message; a call is the
  bare object `{"name": ..., "parameters": ...}`; a result goes back in the role `ipython`.
- "mistral" (Mistral 7B v0.3, Nemo, Small): tools inside `[AVAILABLE_TOOLS] [...]
  [/AVAILABLE_TOOLS]` before the question; a call is `[TOOL_CALLS] [{...}]`; a result is
  `[TOOL_RESULTS] {"content": ...}[/TOOL_RESULTS]`. Its template writes the tools and results
  outside the user's `[INST]` block, which plain messages cannot do: this family's history is
  the nearest that plain user and assistant messages can come to it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from textreact import jsonline
from textreact.errors import ConfigError

if TYPE_CHECKING:
    from textreact.tools import Tool


@dataclass(frozen=True)
class Family:
    """One trained tool format, as its reference template writes it."""

    name: str
    #: The prompt file (under prompts/own/) that lists the tools, and the message it fills.
    prompt: str
    tools_in: Literal["system", "user"]
    #: The prompt file of the system message sent before the tools' user turn (the line the
    #: template writes when given tools); None: none is sent.
    system: str | None
    #: How the tools' specs are joined in that list, and the JSON indent of each (None: one line).
    tools_separator: str
    tools_indent: int | None
    #: The key that holds a call's arguments.
    arguments: str
    #: Whether the template writes the text before a call (the thought) in the call's turn.
    call_thought: bool
    #: The text around a call's JSON object.
    call_open: str
    call_close: str
    #: What the model writes first when it calls in this format.
    trigger: str
    #: The role a tool's result goes back in, and the text around it.
    result_role: str
    result_open: str
    result_close: str
    #: Where a reply without a grammar must stop: the model would write the result itself.
    stop: tuple[str, ...]

    def tools_text(self, tools: Sequence[Tool]) -> str:
        """The tools' OpenAI specs as the template lists them."""
        specs = (
            json.dumps(t.openai_spec(), ensure_ascii=False, indent=self.tools_indent) for t in tools
        )
        return self.tools_separator.join(specs)

    def call_text(self, name: str, arguments: Mapping[str, Any] | str) -> str:
        """One call as the template writes it (arguments that were never an object: `{}`)."""
        values = arguments if isinstance(arguments, Mapping) else {}
        body = jsonline.encode({"name": name, self.arguments: dict(values)}, ensure_ascii=False)
        return f"{self.call_open}{body}{self.call_close}"

    def result_text(self, shown: str) -> str:
        """A tool's result (already defused by `textreact.observation`) as the template wraps it."""
        return f"{self.result_open}{shown}{self.result_close}"


HERMES: Final = Family(
    name="hermes", prompt="own/hermes.md", tools_in="system", tools_separator="\n",
    system=None, tools_indent=None, arguments="arguments", call_thought=True,
    call_open="<tool_call>\n",
    call_close="\n</tool_call>", trigger="<tool_call>", result_role="user",
    result_open="<tool_response>\n", result_close="\n</tool_response>",
    stop=("<tool_response>",),
)  # fmt: skip
LLAMA3: Final = Family(
    name="llama3", prompt="own/llama3.md", tools_in="user", tools_separator="\n\n",
    system="own/llama3_system.md", tools_indent=4, arguments="parameters", call_thought=False,
    call_open="", call_close="", trigger="{",
    result_role="ipython", result_open="", result_close="", stop=(),
)  # fmt: skip
MISTRAL: Final = Family(
    name="mistral", prompt="own/mistral.md", tools_in="user", tools_separator=", ",
    system=None, tools_indent=None, arguments="arguments", call_thought=False,
    call_open="[TOOL_CALLS] [", call_close="]",
    trigger="[TOOL_CALLS]", result_role="user", result_open='[TOOL_RESULTS] {"content": ',
    result_close="}[/TOOL_RESULTS]", stop=("[TOOL_RESULTS]",),
)  # fmt: skip
FAMILIES: Final = {f.name: f for f in (HERMES, LLAMA3, MISTRAL)}


def detect(template: str | None) -> Family | None:
    """The family whose markers `template` (a Jinja chat template) holds; None for a template
    with no tool format (SmolLM2's, most base models'), or none at all."""
    if not template:
        return None
    if "<tool_call>" in template:
        return HERMES
    if "[TOOL_CALLS]" in template:
        return MISTRAL
    if "<|python_tag|>" in template or ('"parameters"' in template and "ipython" in template):
        return LLAMA3
    return None


def family(name: str) -> Family:
    """The family called `name`; an unknown name is a ConfigError that lists the known ones."""
    if name not in FAMILIES:
        raise ConfigError(
            f"family must be one of {', '.join(FAMILIES)} (the tool formats textreact "
            f"writes), got {name!r}"
        )
    return FAMILIES[name]
