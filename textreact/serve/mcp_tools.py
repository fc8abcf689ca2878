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
    from textreact.mcp import Connection, ServerSpec
    from textreact.mcp.safety import Writes
    from textreact.tools import Tool

__all__ = ["ServerTools"]


class ServerTools:
    """The tools of `servers`, offered to every request that brings none.

    - `source`: where the servers were named ("--mcp mcp.json"), for the startup error.
    - `allow`: only the tools matching one of these patterns (`Connection(allow=...)`).
    - `timeout`: seconds one tool call may take.
    - `writes`: "refuse" (the default: a tool that is not read-only is left out, as
      `textreact run --mcp-writes refuse` does; a server has nobody to ask), "allow", or a
      confirm function (`Connection(writes=...)`, `textreact.mcp.safety`).
    - `lang`: the language of the notes the connection writes (the server's `--lang`).
    """

    def __init__(
        self,
        servers: Sequence[ServerSpec],
        *,
        source: str = "the MCP servers given",
        allow: Sequence[str] | None = None,
        timeout: float | None = 30.0,
        writes: Writes = "refuse",
        lang: str = "en",
    ) -> None:
        from textreact.mcp.safety import check_writes

        check_writes(writes)
        self.servers = tuple(servers)
        self.source = source
        self.allow = None if allow is None else tuple(allow)
        self.timeout = timeout
        self.writes = writes
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
        try:  # flags that leave no tool fail here (Connection.open), not per request
            self._connection = Connection(
                self.servers, timeout=self.timeout, allow=self.allow, writes=self.writes,
                lang=self.lang,
            ).open()  # fmt: skip
            self.offered()  # counted for /health
        except ConfigError as error:
            self.close()
            raise ConfigError(f"{error} (MCP servers from {self.source})") from None

    def close(self) -> None:
        """Close every session (a stdio server's process ends with it); safe to repeat."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def offered(self) -> list[Tool]:
        """The tools to offer now, by the same rule as `textreact run` (`Connection(writes=
        ...)`); a server that said its list changed is listed again first, which may wait on
        the servers, so the app calls this in a worker thread."""
        if self._connection is None:
            raise ConfigError("the MCP servers are not open: run the app with lifespan events")
        tools = self._connection.tools
        self.count = len(tools)
        return tools
