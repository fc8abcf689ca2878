"""What the loop asks its driver to do (`Ask` the model, `RunTool`), what it is sent back, and
the settings of one run: the records between `loop.py` and the drivers in `agent.py`. The loop
never calls user code that may need awaiting (the model, a tool, `before_call`): it asks its
driver to, so that the sync and the async driver behave alike."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from textreact.errors import ModelError
from textreact.memory import MemoryConfig
from textreact.policy import Policy
from textreact.steps import Completion, Request, Turn
from textreact.tools.box import Prepared

if TYPE_CHECKING:
    from textreact.protocols import Protocol
    from textreact.tools import ToolBox

__all__ = [
    "Ask", "BeforeCall", "Consult", "Effect", "Reply", "RunTool", "Settings", "check_reply",
]  # fmt: skip

#: A veto hook: (tool name, validated arguments) -> None to let the call run, or the text the
#: model reads instead of the result; an `async def` hook is awaited (by either driver).
BeforeCall = Callable[[str, dict[str, Any]], "str | Awaitable[str | None] | None"]


@dataclass(frozen=True)
class Ask:
    """Call the model with this request; send back `(Completion, seconds)` or the ModelError."""

    request: Request


@dataclass(frozen=True)
class RunTool:
    """Run this prepared call, formatting its value with `present` inside the tool's time
    bound; send back the ToolResult."""

    call: Prepared
    present: Callable[[Any], str]


@dataclass(frozen=True)
class Consult:
    """Offer this call to `before_call`; send back its answer, awaited where it is awaitable
    (None: the call runs)."""

    tool: str
    arguments: dict[str, Any]


Effect = Union[Ask, RunTool, Consult, Turn]  # noqa: UP007 (a runtime alias works on 3.10)
Reply = Union[tuple[Completion, float], ModelError]  # noqa: UP007


@dataclass(frozen=True)
class Settings:
    """What one run needs to know of its agent (the agent validated every field)."""

    protocol: Protocol
    toolbox: ToolBox
    max_steps: int
    max_format_errors: int
    best_effort: bool
    observation_limit: int
    memory: MemoryConfig
    lang: str
    before_call: BeforeCall | None = None
    #: "auto", "required" (a call before the first answer), "none", or a tool's name (that
    #: tool is called before the first answer).
    tool_choice: str = "auto"
    policies: tuple[Policy, ...] = ()
    #: Why the protocol was chosen, where `protocol="auto"` chose it (`Result.protocol_reason`).
    protocol_reason: str | None = None


def check_reply(reply: object, model: object) -> Completion:
    """A custom model's reply must be a Completion; anything else is the model's fault and
    ends the run as a model error rather than a crash deep in the loop."""
    if not isinstance(reply, Completion):
        raise ModelError(
            f"{type(model).__name__}.complete returned {type(reply).__name__}, not a "
            "textreact Completion; return Completion(text, finish_reason, usage)"
        )
    return reply
