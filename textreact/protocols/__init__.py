"""Protocols: the strategies of the one loop. A protocol owns exactly two jobs: render the
conversation (opening messages plus stored turns) into a `Request`, and read one `Completion`
into steps. It knows no stop rules and does no I/O; the loop (`textreact.loop`) does both, the
same way for every protocol, so a comparison of two protocols measures the protocols.

This package turns a protocol's name into the object for a model (`resolve`); what every
protocol implements and returns is in `textreact.protocols.interface`, re-exported here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from textreact.errors import ConfigError
from textreact.protocols.interface import Protocol, Reading, read_plain

if TYPE_CHECKING:
    from textreact.models import Message

__all__ = [
    "NativeProtocol",
    "OwnFirstProtocol",
    "OwnFormatProtocol",
    "Protocol",
    "Reading",
    "TextProtocol",
    "read_plain",
    "resolve",
]


def resolve(
    protocol: Any,
    model: object,
    *,
    examples: str | Sequence[Message] | None = None,
    decision_bias: float | None = None,
    parallel_calls: bool = False,
) -> Protocol:
    """ "text", "native" or a protocol object -> the protocol object for `model` (the text
    protocol with the given worked `examples`, `decision_bias` and `parallel_calls`; the
    native one in the model's tool dialect, which reads every call of a reply; with "own",
    the model's own tool format, told by the chat template its server gives; with
    "own-first", that format for the first decision and the text protocol, with `examples`,
    after the first call)."""
    from textreact.protocols.native import NativeProtocol
    from textreact.protocols.text import TextProtocol

    if protocol == "text":
        return TextProtocol(
            examples=examples, decision_bias=decision_bias, parallel_calls=parallel_calls
        )
    if not isinstance(parallel_calls, bool):
        raise ConfigError(f"parallel_calls must be True or False, got {parallel_calls!r}")
    several = isinstance(protocol, TextProtocol) and protocol.max_calls > 1
    if parallel_calls and protocol != "native" and not several:
        raise ConfigError(
            "parallel_calls lets a reply of the text protocol make several calls; it needs "
            'protocol="text" (or TextProtocol(parallel_calls=True) as the protocol), or '
            f'"native", which runs every call of a reply already; got {protocol!r}'
        )
    if decision_bias is not None:
        raise ConfigError(
            f'decision_bias scores the text protocol\'s "Action:" / "Final Answer:" branch; '
            f'it needs protocol="text" (or TextProtocol(decision_bias=...)), got {protocol!r}'
        )
    if protocol == "native":
        return NativeProtocol(dialect=getattr(model, "tool_dialect", "openai"))
    if protocol in ("own", "own-first"):
        from textreact.protocols.own import OwnFormatProtocol
        from textreact.protocols.ownfirst import OwnFirstProtocol

        read = getattr(model, "chat_template", None)
        template = read() if callable(read) else None
        if protocol == "own":
            return OwnFormatProtocol(template=template)
        return OwnFirstProtocol(template=template, examples=examples)
    if isinstance(protocol, str) or not isinstance(protocol, Protocol):
        raise ConfigError(
            f'protocol must be "auto", "text", "native", "own", "own-first" or a protocol object '
            f"(TextProtocol(), NativeProtocol(), OwnFormatProtocol(), or one with name, "
            f"holds_arguments, opening, request, read, note and explain), got {protocol!r}"
        )
    return protocol


def __getattr__(name: str) -> object:
    modules = {
        "TextProtocol": "text", "NativeProtocol": "native", "OwnFormatProtocol": "own",
        "OwnFirstProtocol": "ownfirst",
    }  # fmt: skip
    if name in modules:
        from importlib import import_module

        return getattr(import_module(f"textreact.protocols.{modules[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
