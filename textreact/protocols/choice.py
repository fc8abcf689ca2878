"""`protocol="auto"`: the protocol a model gets, chosen per model from what was
measured (docs/evaluation.md, "The decision, redesigned"), with a one-line reason that the
Result and `--json` carry.

The choice reads one thing about the model: the chat template its server applies (llama.cpp's
`GET /props`). A template trained on a tool format that measured ahead of the ReAct text
protocol gets that format (`protocol="own"`): the model decides to call or to answer in the
words it was trained to decide in, and the grammar still holds each call to its tool's schema.
Any other model gets the text protocol: a template with no tool format (a 135M model's), a
format not measured yet, or a server that shows no template (OpenAI, DeepSeek, Ollama). A user
who names a protocol gets that protocol; nothing here runs then."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textreact.protocols import families

if TYPE_CHECKING:
    from textreact.models import Message
    from textreact.protocols.interface import Protocol

__all__ = ["OWN_FAMILIES", "Choice", "choose"]

#: The tool formats that measured ahead of the text protocol under `auto` on every data set
#: (docs/evaluation.md): a model whose template holds one of these gets `protocol="own"`.
#: None yet: Qwen's `hermes` format led on BFCL's one-turn files (irrelevance above all) and
#: fell far behind on the user's-tools suite, whose tasks go on after a first result, so a
#: model with it keeps the text protocol until a measurement says otherwise.
OWN_FAMILIES: frozenset[str] = frozenset()


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
) -> Choice:
    """The protocol `model` gets under `protocol="auto"`. `examples` and `decision_bias` are
    the text protocol's; asking for either keeps the text protocol, whose options they are."""
    from textreact.protocols.own import OwnFormatProtocol
    from textreact.protocols.text import TextProtocol

    def text(reason: str) -> Choice:
        return Choice(TextProtocol(examples=examples, decision_bias=decision_bias), reason)

    if examples is not None or decision_bias is not None:
        return text("text: worked examples or a decision bias are options of the text protocol")
    read = getattr(model, "chat_template", None)
    template = read() if callable(read) else None
    if template is None:
        return text("text: the server shows no chat template to read a tool format from")
    family = families.detect(template)
    if family is None:
        return text("text: the model's chat template has no tool format")
    if family.name not in OWN_FAMILIES:
        return text(f"text: the model's {family.name} tool format is not measured yet")
    own = OwnFormatProtocol(family=family.name)
    return Choice(own, f"own: the model's chat template has the {family.name} tool format")
