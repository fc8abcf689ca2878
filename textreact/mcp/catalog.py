"""One listed MCP tool -> `McpToolInfo`: the Tool the agent runs (its name mapped, its
description and title defused as tool output is, or a fallback for none; its schema through
`schemas.build_tool`) beside where it came from, the hints its server gave, and the class they
put it in (`EFFECTS`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from textreact import templates, untrusted
from textreact.mcp.schemas import DESCRIPTION_LIMIT, build_tool
from textreact.tools import Tool

__all__ = ["EFFECTS", "McpToolInfo", "tool_info"]

#: A tool's class, from its server's hints: read-only (`readOnlyHint: true`, and only then),
#: a write (`destructiveHint: false`: it changes things, it says it destroys nothing), or a
#: write that may destroy (every other tool: the MCP spec's defaults are a write that destroys).
EFFECTS: Final = ("read-only", "writes", "may destroy")


@dataclass(frozen=True)
class McpToolInfo:
    """One server's tool as the model sees it, and where it came from."""

    #: The name the model writes (mapped: see `textreact.mcp.names`).
    name: str
    #: The server's own name for it, used for the call.
    original: str
    #: The server's name in the config.
    server: str
    #: The description as the model reads it: defused, or the fallback for none.
    description: str
    #: The server's title for it (defused), or None.
    title: str | None
    #: The annotations as the server gave them (hints from an untrusted server).
    read_only: bool | None
    destructive: bool | None
    #: The Tool the agent runs.
    tool: Tool = field(repr=False)

    @property
    def writes(self) -> bool:
        """Whether the tool may change anything: every tool its server does not mark
        `readOnlyHint: true` (an absent hint is false, in the MCP spec and here)."""
        return self.read_only is not True

    @property
    def may_destroy(self) -> bool:
        """A write whose server does not say it destroys nothing (`destructiveHint: false`)."""
        return self.writes and self.destructive is not False

    @property
    def effect(self) -> str:
        """The tool's class as a person reads it: one of `EFFECTS`."""
        return EFFECTS[self.writes + self.may_destroy]


def tool_info(
    listed: Any,
    name: str,
    server: str,
    fn: Callable[..., Any],
    *,
    lang: str = "en",
    **options: Any,
) -> McpToolInfo:
    """The tool `listed` (an SDK `Tool`) of `server`, offered as `name` and run by `fn`;
    `options` go to `Tool` (timeout, result_limit)."""
    annotations = listed.annotations
    title = listed.title or (annotations.title if annotations else None)
    shown_title = untrusted.defuse(title, DESCRIPTION_LIMIT) if title else None
    if listed.description and listed.description.strip():
        description = untrusted.defuse(listed.description, DESCRIPTION_LIMIT)
    else:
        description = templates.note(
            "mcp_no_description", lang, title=shown_title or name, server=server
        )
    tool = build_tool(name, description, listed.input_schema, fn, **options)
    return McpToolInfo(
        name, listed.name, server, description, shown_title,
        annotations.read_only_hint if annotations else None,
        annotations.destructive_hint if annotations else None, tool,
    )  # fmt: skip
