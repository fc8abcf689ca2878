"""`confirm_calls`: a `before_call` that asks before an MCP tool that may destroy runs.

`destructiveHint` and `readOnlyHint` are hints from an untrusted server: a server can mark any
tool harmless. So the policy follows the MCP spec's defaults (a tool may destroy unless marked
read-only or not destructive) and is the caller's to widen: `only_destructive=False` asks
before every call. The allowlist (`Connection(allow=...)`) is the other control: a tool left
out is never offered, whatever its hints say. `offered_tools` applies one of the three
policies the command line names (`--mcp-destructive ask | allow | refuse`), for `run`,
`compare` and `serve` alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from textreact import templates
from textreact.effects import BeforeCall
from textreact.errors import ConfigError
from textreact.mcp.catalog import McpToolInfo
from textreact.mcp.connection import Connection
from textreact.tools import Tool

__all__ = ["DESTRUCTIVE", "Confirm", "confirm_calls", "offered_tools"]

#: What to do with a tool that may destroy: ask before each call, allow it, or refuse it (leave
#: it out of the tools, so the model never sees it).
DESTRUCTIVE: Final = ("ask", "allow", "refuse")

#: The question to the user: (the tool, the validated arguments) -> True to run the call;
#: False, or the reason as text, to refuse it (the model reads the reason).
Confirm = Callable[[McpToolInfo, dict[str, Any]], "bool | str"]


def confirm_calls(
    connection: Connection,
    confirm: Confirm,
    *,
    only_destructive: bool = True,
    then: BeforeCall | None = None,
) -> BeforeCall:
    """A `before_call` for `Agent`: each call to a tool of `connection` that may destroy (any
    of its tools, with `only_destructive=False`) runs only if `confirm` says True; a refused
    call is an observation that says so, and the run goes on. `then` is the caller's own
    `before_call`, asked after (textreact's `read_more` and other tools go straight to it)."""

    def before_call(name: str, arguments: dict[str, Any]) -> Any:
        info = connection.info(name)
        if info is not None and (info.may_destroy or not only_destructive):
            answer = confirm(info, arguments)
            if answer is not True:
                why = answer if isinstance(answer, str) and answer.strip() else None
                why = why or templates.note("mcp_not_confirmed", connection.lang)
                return templates.note("mcp_refused", connection.lang, tool=name, why=why)
        return then(name, arguments) if then is not None else None

    return before_call


def offered_tools(
    connection: Connection, destructive: str, confirm: Confirm | None = None
) -> tuple[list[Tool], BeforeCall | None]:
    """(the tools to offer, the `before_call` they need) under one `DESTRUCTIVE` policy:
    "refuse" leaves out every tool that may destroy, "ask" offers it behind `confirm`, "allow"
    offers it as it is. One function, so that every command applies the same rule."""
    if destructive not in DESTRUCTIVE or (destructive == "ask") != (confirm is not None):
        raise ConfigError(
            f"destructive must be one of {DESTRUCTIVE} (and 'ask' needs confirm), got "
            f"{destructive!r}"
        )
    tools = connection.tools
    if destructive == "refuse":
        may_destroy = {i.name for i in connection.infos if i.may_destroy}
        tools = [t for t in tools if t.name not in may_destroy]
    before_call = confirm_calls(connection, confirm) if confirm is not None else None
    if not tools:
        raise ConfigError("the MCP servers offer no tool that the --mcp-* flags allow")
    return tools, before_call
