"""MCP servers held open for the life of `textreact serve --mcp`: opened once at startup (a
server that cannot start is a ConfigError naming it and where it was configured, before any
request is taken), closed at shutdown, and read for each request that the server-side loop
answers (`textreact.serve.agentic`).

Every request shares the sessions, without a lock: the SDK's dispatcher gives each request its
own JSON-RPC id and waits for the response with that id (`mcp.shared.jsonrpc_dispatcher`),
and every call runs on the connection's one event loop (`textreact.mcp.connection`), so calls
from several requests interleave safely; a server that handles one call at a time queues them
itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from textreact.errors import ConfigError

if TYPE_CHECKING:
    from textreact.effects import BeforeCall
    from textreact.mcp import Connection, ServerSpec
    from textreact.tools import Tool

__all__ = ["ServerTools"]


class ServerTools:
    """The tools of `servers`, offered to every request that brings none.

    - `source`: where the servers were named ("--mcp mcp.json"), for the startup error.
    - `allow`: only the tools matching one of these patterns (`Connection(allow=...)`).
    - `timeout`: seconds one tool call may take.
    - `destructive`: "refuse" (the default: a tool that may destroy is left out, as
      `textreact run --mcp-destructive refuse` does; a server has nobody to ask) or "allow".
    - `lang`: the language of the notes the connection writes (the server's `--lang`).
    """

    def __init__(
        self,
        servers: Sequence[ServerSpec],
        *,
        source: str = "the MCP servers given",
        allow: Sequence[str] | None = None,
        timeout: float | None = 30.0,
        destructive: str = "refuse",
        lang: str = "en",
    ) -> None:
        if destructive not in ("allow", "refuse"):
            raise ConfigError(
                f"destructive must be 'allow' or 'refuse' (a server cannot ask), got "
                f"{destructive!r}"
            )
        self.servers = tuple(servers)
        self.source = source
        self.allow = None if allow is None else tuple(allow)
        self.timeout = timeout
        self.destructive = destructive
        self.lang = lang
        self._connection: Connection | None = None
        #: How many tools the last read offered (`/health` says it).
        self.count = 0

    @property
    def is_open(self) -> bool:
        return self._connection is not None

    def open(self) -> None:
        """Start or reach every server and list its tools; a ConfigError that names the
        server that failed and `source` (the other servers are closed again)."""
        from textreact.mcp import Connection

        if self._connection is not None:
            return
        connection = Connection(
            self.servers, timeout=self.timeout, allow=self.allow, lang=self.lang
        )
        try:
            connection.open()
            self._connection = connection
            self.offered()  # a config whose flags leave no tool fails here, not per request
        except ConfigError as error:
            self.close()
            raise ConfigError(f"{error} (MCP servers from {self.source})") from None

    def close(self) -> None:
        """Close every session (a stdio server's process ends with it); safe to repeat."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def offered(self) -> tuple[list[Tool], BeforeCall | None]:
        """The tools to offer now (a server that said its list changed is listed again first;
        this may wait on the servers, so the app calls it in a worker thread), and the
        `before_call` they need: the same rule as `textreact run` (`offered_tools`)."""
        from textreact.mcp.safety import offered_tools

        if self._connection is None:
            raise ConfigError("the MCP servers are not open: run the app with lifespan events")
        tools, before_call = offered_tools(self._connection, self.destructive)
        self.count = len(tools)
        return tools, before_call
