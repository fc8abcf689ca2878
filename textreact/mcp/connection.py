"""`Connection`: MCP servers held open on one background event loop, their tools listed
(every page) and turned into ordinary `Tool`s that the sync and the async drivers run alike.

The SDK's sessions are async and bound to the loop they were opened on, while `Agent.run` is
sync and `Agent.arun` runs on the caller's loop. So the connection owns a loop in a daemon
thread: one task there opens every server and closes them again (the SDK's context managers
must be left by the task that entered them), and each call is sent to that loop and awaited
from wherever the driver runs (`asyncio.wrap_future`). A tool's `fn` is an `async def`: the
async driver awaits it and, at the tool's timeout, cancels it, which cancels the call on the
connection's loop; the sync driver runs it in its worker thread. The SDK's own read timeout
is set a little past the tool's, so a call the sync driver abandons still ends.

A server that says its tool list changed (through a `subscriptions/listen` stream on the
2026-07-28 protocol, or a `notifications/tools/list_changed` on older ones) is marked stale;
`tools` lists it again the next time it is read (an Agent built before keeps the tools it was
given)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import fnmatch
import threading
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from typing import Any, Final

from textreact import templates
from textreact.errors import ConfigError
from textreact.mcp.catalog import McpToolInfo, tool_info
from textreact.mcp.config import ServerSpec
from textreact.mcp.names import map_names
from textreact.mcp.pages import NOTE_ROOM, PAGE, READ_MORE, Pages
from textreact.mcp.results import contents, links, render
from textreact.mcp.sdk import (
    has_resources,
    list_tools,
    reason,
    require_sdk,
    transport,
)
from textreact.tools import Tool

__all__ = ["Connection", "connect"]

#: Seconds the SDK waits past a tool's own timeout before it ends an abandoned call.
_GRACE: Final = 1.0
#: The tool that reads a resource a result linked to (offered where a server has resources).
READ_RESOURCE: Final = "read_resource"


class Connection:
    """MCP servers' tools, connected; use it as a context manager (`with` or `async with`),
    or call `open()` and `close()`.

    - `timeout`: seconds one call may take (each Tool's timeout).
    - `connect_timeout`: seconds the handshake, and each listing of tools, may take.
    - `allow`: only the tools matching one of these shell-style patterns, each tried on the
      server's own name for the tool and on `server/name` (`git_log`, `time/*`).
    - `lang`: the language of the notes the connection writes (read on, no description).
    - `page`: characters of a result shown at once; the rest through `read_more`.
    - `reserved`: names taken already (the caller's own tools beside these): a server's tool
      of one of these names is prefixed with its server's.
    """

    def __init__(
        self,
        servers: Sequence[ServerSpec],
        *,
        timeout: float | None = 30.0,
        connect_timeout: float = 60.0,
        allow: Collection[str] | None = None,
        lang: str = "en",
        page: int = PAGE,
        reserved: Collection[str] = (),
    ) -> None:
        if not servers:
            raise ConfigError("an MCP connection needs at least one server")
        names = [s.name for s in servers]
        if len(set(names)) != len(names):
            raise ConfigError(f"MCP server names must differ, got {names}")
        self.servers = tuple(servers)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.allow = tuple(allow) if allow is not None else None
        self.lang = lang
        self.reserved = (READ_MORE, READ_RESOURCE, *reserved)
        self.pages = Pages(page=page, lang=lang)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._main: concurrent.futures.Future[None] | None = None
        self._closing: asyncio.Event | None = None
        self._clients: dict[str, Any] = {}
        self._listed: dict[str, list[Any]] = {}
        self._stale: set[str] = set()
        #: Each resource uri a result linked to, and the server whose result it was.
        self._linked: dict[str, str] = {}
        #: The servers that have resources to read.
        self._readers: list[str] = []
        self._infos: tuple[McpToolInfo, ...] = ()

    # -- lifetime ---------------------------------------------------------------------------

    def open(self) -> Connection:
        """Start every server (or connect to it) and list its tools; a server that cannot be
        reached is a ConfigError naming it, and closes the others."""
        require_sdk()
        if self.is_open:
            raise ConfigError("this MCP connection is open already")
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="textreact-mcp", daemon=True)
        self._thread.start()
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._main = asyncio.run_coroutine_threadsafe(self._hold(ready), loop)
        concurrent.futures.wait([ready, self._main], return_when="FIRST_COMPLETED")
        if not ready.done():
            error = self._main.exception()
            self._stop_loop()
            raise error if error is not None else ConfigError("MCP connection ended at start")
        self._build()
        return self

    def close(self) -> None:
        """Close every session (a stdio server's process ends with it) and the loop."""
        loop, main = self._loop, self._main
        if loop is None or main is None:
            return
        if self._closing is not None:
            loop.call_soon_threadsafe(self._closing.set)
        with contextlib.suppress(Exception):
            main.result()
        self._stop_loop()

    def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join()
        loop.close()
        self._loop = self._thread = self._main = None
        self._clients.clear()

    @property
    def is_open(self) -> bool:
        return self._loop is not None

    def __enter__(self) -> Connection:
        """Open (unless `connect` opened it already); closed when the block ends."""
        return self if self.is_open else self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Connection:
        return self if self.is_open else await asyncio.to_thread(self.open)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)

    async def _hold(self, ready: concurrent.futures.Future[None]) -> None:
        """The one task that enters every client, lists, then waits to be closed."""
        from mcp import Client

        self._closing = asyncio.Event()
        async with contextlib.AsyncExitStack() as stack:
            for spec in self.servers:
                client = Client(
                    transport(spec),
                    message_handler=self._on_message(spec.name),
                    read_timeout_seconds=self.connect_timeout,
                )
                try:  # the handshake and each listing are bounded by the read timeout
                    await stack.enter_async_context(client)
                    self._listed[spec.name] = await list_tools(client)
                    if await has_resources(client):
                        self._readers.append(spec.name)
                except Exception as error:
                    raise ConfigError(
                        f"MCP server {spec.name!r} ({spec.describe()}) could not be used: "
                        f"{reason(error)}"
                    ) from None
                self._clients[spec.name] = client
            watchers = [asyncio.ensure_future(self._watch(n, c)) for n, c in self._clients.items()]
            ready.set_result(None)
            await self._closing.wait()
            for watcher in watchers:
                watcher.cancel()
            await asyncio.gather(*watchers, return_exceptions=True)

    async def _watch(self, server: str, client: Any) -> None:
        """Mark `server` stale on each tools-list change it announces over a 2026-07-28
        subscription; a server on an older protocol announces it as a notification instead
        (`_on_message`), and one that offers neither is listed once."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _ in subscription:
                    self._stale.add(server)
        except Exception:  # no subscriptions (an older protocol, or not offered): no watching
            return

    def _on_message(self, server: str) -> Callable[[Any], Awaitable[None]]:
        from mcp import types

        async def handle(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                self._stale.add(server)

        return handle

    # -- tools --------------------------------------------------------------------------------

    @property
    def tools(self) -> list[Tool]:
        """Every allowed tool of every server, then `read_more`, then `read_resource` where a
        server has resources; listed again first where a server said its list changed."""
        if self._stale:
            self.refresh()
        own = [self.pages.tool()]
        if self._readers:
            own.append(self._resource_tool())
        return [info.tool for info in self._infos] + own

    @property
    def infos(self) -> tuple[McpToolInfo, ...]:
        """What each tool is, where it came from, and its hints, in the servers' order."""
        if self._stale:
            self.refresh()
        return self._infos

    def info(self, name: str) -> McpToolInfo | None:
        """The tool the model calls `name`, or None (textreact's own `read_more`, or none)."""
        return next((i for i in self.infos if i.name == name), None)

    def refresh(self) -> None:
        """List the tools of every server whose list changed, again."""
        stale, self._stale = self._stale, set()
        for server in stale:
            client = self._clients.get(server)
            if client is not None:
                self._listed[server] = self._run(list_tools(client))
        self._build()

    def _build(self) -> None:
        found = [(server, t) for server, tools in self._listed.items() for t in tools]
        found = [(s, t) for s, t in found if self._allowed(s, t.name)]
        mapped = map_names([(s, t.name) for s, t in found], reserved=self.reserved)
        self._infos = tuple(
            tool_info(
                listed,
                name,
                server,
                self._caller(server, listed.name),
                lang=self.lang,
                timeout=self.timeout,
                result_limit=self.pages.page + NOTE_ROOM,
            )
            for name, (server, listed) in zip(mapped, found, strict=True)
        )

    def _allowed(self, server: str, original: str) -> bool:
        return self.allow is None or any(
            fnmatch.fnmatchcase(name, pattern)
            for pattern in self.allow
            for name in (original, f"{server}/{original}")
        )

    # -- calls --------------------------------------------------------------------------------

    def _caller(self, server: str, original: str) -> Callable[..., Awaitable[str]]:
        """The tool's function: send the call to the connection's loop, await it from the
        driver's, and show the result a page at a time."""
        read_timeout = None if self.timeout is None else self.timeout + _GRACE

        async def call(**arguments: Any) -> str:
            loop = self._loop
            client = self._clients.get(server)
            if loop is None or client is None:
                raise ConfigError(f"the MCP connection to {server!r} is closed")
            sent = client.call_tool(original, arguments, read_timeout_seconds=read_timeout)
            result = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(sent, loop))
            text = render(result)
            self._linked.update((uri, server) for uri in links(result))
            return self.pages.first(text)

        call.__name__ = original
        return call

    def _resource_tool(self) -> Tool:
        """`read_resource`: a resource by its uri, from the server whose result linked to it
        (else from each server that offers resources, in turn), a page at a time."""

        async def read_resource(uri: str) -> str:
            loop = self._loop
            linked = self._linked.get(uri)
            servers = [linked] if linked else self._readers
            if loop is None or not servers:
                raise ConfigError("the MCP connection is closed")
            failure: Exception | None = None
            for server in servers:
                sent = self._clients[server].read_resource(uri)
                try:
                    result = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(sent, loop))
                except Exception as error:  # this server has no such resource: try the next
                    failure = error
                    continue
                return self.pages.first("\n".join(contents(c) for c in result.contents))
            raise failure or ConfigError(f"no MCP server could read {uri}")

        return Tool(
            READ_RESOURCE,
            templates.note("mcp_read_resource", self.lang),
            {
                "type": "object",
                "properties": {"uri": {"type": "string", "description": "the resource's uri"}},
                "required": ["uri"],
                "additionalProperties": False,
            },
            read_resource,
            timeout=self.timeout,
            example={"uri": "file:///path/to/file.txt"},
            cache=False,
            result_limit=self.pages.page + NOTE_ROOM,
        )

    def _run(self, work: Awaitable[Any]) -> Any:
        """`work` on the connection's loop, waited for from this thread."""
        if self._loop is None:
            raise ConfigError("the MCP connection is closed")
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()  # type: ignore[arg-type]


def connect(servers: Iterable[ServerSpec], **options: Any) -> Connection:
    """An open Connection to `servers` (see `Connection` for the options); close it, or use it
    as a context manager: `with connect(load_config("mcp.json")) as mcp: Agent(model,
    mcp.tools)`."""
    return Connection(list(servers), **options).open()
