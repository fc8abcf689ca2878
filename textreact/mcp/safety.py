"""Which MCP tools run unasked: the one rule for writes, for the Python API and every command.

A tool is read-only only when its server says so (`readOnlyHint: true`); every other tool is a
write, and `destructiveHint` says only how bad (`McpToolInfo.effect`). The hints come from an
untrusted server, so they decide nothing a user did not allow: a server that calls a write
read-only is believed, and the allowlist (`Connection(allow=...)`) is the control against that.
`Connection(writes=...)` applies the rule, so every caller gets it:

- "refuse" (the default): a write is left out of `connection.tools`, so the model never sees
  it, and `Agent(model, mcp.tools)` runs no write;
- "allow": every tool is offered, and runs when called;
- a `Confirm` function: every tool is offered, and each call of a write asks it first, inside
  the tool itself, so that no caller can forget to ask. The question is outside the tool's
  timeout (a person may take longer to answer than a call may take, and a call abandoned
  while its question waits could run after the model was told it timed out); the call after
  a yes is bounded by it.

The command line's `--mcp-writes ask | allow | refuse` are the same three (`ask`: a question
on the terminal, `textreact.mcp.command`)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any, Final, Literal, Union

from textreact import templates
from textreact.errors import CallRefusedError, ConfigError, ToolError
from textreact.mcp.catalog import McpToolInfo
from textreact.tools.box import asettled

__all__ = ["WRITES", "Confirm", "Writes", "behind", "check_writes", "offered"]

#: The command line's choices for writes: ask before each call, allow them, refuse them.
WRITES: Final = ("ask", "allow", "refuse")

#: The question before a write: (the tool, the arguments the call sends: validated, except for
#: a schema that only the call itself can check, `mcp.schemas`) -> True to run the call;
#: False, or the reason as text, to refuse it (the model reads the reason). An `async def`
#: function is awaited; a plain one is called where the tool runs, so under `Agent.arun` the
#: event loop waits for its answer.
Confirm = Callable[[McpToolInfo, dict[str, Any]], Any]

#: What `Connection(writes=...)` takes: "refuse", "allow", or a `Confirm`.
Writes = Union[Literal["refuse", "allow"], Confirm]  # noqa: UP007 (a runtime alias on 3.10)


def check_writes(writes: object) -> None:
    """A ConfigError unless `writes` is one of the three settings."""
    if writes not in ("refuse", "allow") and not callable(writes):
        raise ConfigError(
            "writes must be 'refuse' (the default: tools that are not read-only are left out), "
            "'allow', or a function (info, arguments) -> True to run the call, else False or "
            f"the reason; got {writes!r}"
        )


def offered(info: McpToolInfo, writes: Writes) -> bool:
    """Whether `info`'s tool is offered to the model under `writes`."""
    return not info.writes or writes != "refuse"


def behind(
    info: McpToolInfo, confirm: Confirm, *, timeout: float | None, lang: str = "en"
) -> McpToolInfo:
    """`info` with its tool's call behind `confirm`: a refused call is a `CallRefusedError`,
    which the run records as vetoed and the model reads as not run, and why; the tool has no
    timeout of its own, and the call after a yes is bounded by `timeout`."""
    call, name = info.tool.fn, info.name
    assert call is not None  # every MCP tool has its caller

    async def confirmed(**arguments: Any) -> Any:
        answer = await asettled(lambda: confirm(info, arguments))
        if answer is not True:
            why = answer if isinstance(answer, str) and answer.strip() else None
            why = why or templates.note("mcp_not_confirmed", lang)
            raise CallRefusedError(templates.note("mcp_refused", lang, tool=name, why=why))
        try:
            return await asyncio.wait_for(call(**arguments), timeout)
        except asyncio.TimeoutError:  # what the tool's own timeout would have said
            seconds = f"{timeout:g}"
            raise ToolError(
                templates.note("tool_timeout", lang, tool=name, seconds=seconds)
            ) from None

    confirmed.__name__ = info.original
    return dataclasses.replace(
        info, tool=dataclasses.replace(info.tool, fn=confirmed, timeout=None)
    )
