"""`protocol="auto"`: the protocol a model gets, chosen per model from what was
measured (docs/evaluation.md, "The decision, redesigned"), with a one-line reason that the
Result and `--json` carry.

The choice reads one thing about the model: the chat template its server applies (llama.cpp's
`GET /props`). A template trained on a tool format that measured ahead of the ReAct text
protocol gets `protocol="own-first"`: the model decides whether to make its first call in the
words it was trained to decide in, the text protocol carries the run on from the first result,
and the grammar holds each call to its tool's schema. Any other model gets the text protocol:
a template with no tool format (a 135M model's), a format not measured yet, or a server that
shows no template (OpenAI, DeepSeek, Ollama). A user who names a protocol gets that protocol;
nothing here runs then.

The text protocol's worked example follows the second thing the client knows: whether the
server takes the grammar. Under a grammar, the bundled example's tools cannot be called, and
it measured best; a client that knows no grammar will hold the calls gets examples built from
the offered tools (`examples="built"`: the bundled one for the built-in tools), since without
one a model calls the example's tools, which the request does not offer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textreact.protocols import families

if TYPE_CHECKING:
    from textreact.models import Message
    from textreact.protocols.interface import Protocol

__all__ = ["OWN_FAMILIES", "Choice", "choose"]

#: The tool formats with which own-first measured ahead of the text protocol under
#: `tool_choice="auto"` (docs/evaluation.md). Own-first, not own: in its own format a model
#: decides well whether to make a first call but rarely stops calling once it has a result,
#: where the text protocol's answer step does better.
OWN_FAMILIES: frozenset[str] = frozenset({"hermes"})
#: Why a server that takes no grammar gets worked examples built from the offered tools.
_UNHELD = (
    "worked examples built from the offered tools, as the server takes no grammar that would "
    "keep the model from calling the bundled example's tools"
)


@dataclass(frozen=True)
class Choice:
    """The protocol chosen for a model, and why, in one line."""

    protocol: Protocol
    reason: str


def choose(
    model: object,
    *,
    examples: str | Sequence[Message] | None = None,
    decision_bias: float | None = None,
    parallel_calls: bool = False,
) -> Choice:
    """The protocol `model` gets under `protocol="auto"`. `examples`, `decision_bias` and
    `parallel_calls` are the text protocol's; asking for any keeps the text protocol, whose
    options they are."""
    from textreact.protocols.ownfirst import OwnFirstProtocol
    from textreact.protocols.text import TextProtocol

    def text(reason: str) -> Choice:
        chosen = TextProtocol(
            examples=examples, decision_bias=decision_bias, parallel_calls=parallel_calls
        )
        return Choice(chosen, reason)

    def text_for_tools(reason: str) -> Choice:
        told = getattr(model, "takes_grammar", None)
        if not callable(told) or told():
            return text(reason)
        chosen = TextProtocol(examples="built")
        return Choice(chosen, f"{reason}; {_UNHELD}")

    if examples is not None or decision_bias is not None:
        return text("text: worked examples or a decision bias are options of the text protocol")
    if parallel_calls:
        return text("text: parallel calls are an option of the text protocol")
    read = getattr(model, "chat_template", None)
    template = read() if callable(read) else None
    if template is None:
        return text_for_tools("text: the server shows no chat template to read a tool format from")
    family = families.detect(template)
    if family is None:
        return text_for_tools("text: the model's chat template has no tool format")
    if family.name not in OWN_FAMILIES:
        return text_for_tools(f"text: the model's {family.name} tool format is not measured yet")
    own_first = OwnFirstProtocol(family=family.name)
    return Choice(
        own_first, f"own-first: the model's chat template has the {family.name} tool format"
    )
