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
from math import inf
from typing import Any, Final

from textreact import templates
from textreact.errors import ConfigError
from textreact.mcp.catalog import McpToolInfo, tool_info
from textreact.mcp.config import ServerSpec
from textreact.mcp.names import map_names
from textreact.mcp.pages import KEPT_CHARS, NOTE_ROOM, PAGE, READ_MORE, Pages
from textreact.mcp.results import contents, links, render
from textreact.mcp.safety import Writes, behind, check_writes, offered
from textreact.mcp.sdk import (
    has_resources,
    list_tools,
    require_sdk,
    said,
    transport,
    unusable,
)
from textreact.tools import Tool
from textreact.untrusted import visible

__all__ = ["Connection", "connect"]

#: Seconds the SDK waits past a tool's own timeout before it ends an abandoned call.
_GRACE: Final = 1.0
#: The tool that reads a resource a result linked to (offered where a server has resources).
READ_RESOURCE: Final = "read_resource"
#: The most tools an error message names.
_NAMED: Final = 20


class Connection:
    """MCP servers' tools, connected; use it as a context manager (`with` or `async with`),
    or call `open()` and `close()`.

    - `timeout`: seconds one call may take (each Tool's timeout); None: no bound.
    - `connect_timeout`: seconds the handshake, and each listing of tools, may take.
    - `allow`: only the tools matching one of these shell-style patterns, each tried on the
      server's own name for the tool and on `server/name` (`git_log`, `time/*`). Patterns
      that leave no tool of the ones the servers list are a ConfigError at `open`.
    - `writes`: what becomes of the tools that are not read-only (`textreact.mcp.safety`):
      "refuse" (the default: left out of `tools`), "allow", or a confirm function asked
      before each call of one. Writes refused that leave no tool are a ConfigError at `open`.
    - `lang`: the language of the notes the connection writes (read on, no description).
    - `page`: characters of a result shown at once; the rest through `read_more`.
    - `kept_chars`: characters of long results kept for `read_more`, all together; past it
      the oldest are dropped first, and a longer result is kept in part (`Pages`).
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
        writes: Writes = "refuse",
        lang: str = "en",
        page: int = PAGE,
        kept_chars: int = KEPT_CHARS,
        reserved: Collection[str] = (),
    ) -> None:
        if not servers:
            raise ConfigError("an MCP connection needs at least one server")
        names = [s.name for s in servers]
        if len(set(names)) != len(names):
            raise ConfigError(f"MCP server names must differ, got {names}")
        where = (timeout, "timeout (--mcp-timeout)"), (connect_timeout, "connect_timeout")
        for value, what in where:  # past a thread's longest wait, inf fails only at a call
            if value is not None and not (isinstance(value, (int, float)) and 0 < value < inf):
                raise ConfigError(
                    f"the MCP {what} must be a finite number of seconds above 0, got {value!r}"
                )
        check_writes(writes)
        self.servers = tuple(servers)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.allow = tuple(allow) if allow is not None else None
        self.writes = writes
        self.lang = lang
        self.reserved = (READ_MORE, READ_RESOURCE, *reserved)
        self.pages = Pages(page=page, kept_chars=kept_chars, lang=lang)
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
        #: Every tool listed that `allow` lets through, offered or not; None until listed.
        self._infos: tuple[McpToolInfo, ...] | None = None

    # -- lifetime ---------------------------------------------------------------------------

    def open(self) -> Connection:
        """Start every server (or connect to it) and list its tools; a server that cannot be
        reached is a ConfigError naming it, and closes the others."""
        require_sdk()
        if self.is_open:
            raise ConfigError("this MCP connection is open already")
        # Opened again after a close: what the servers said last time is listed anew.
        self._listed, self._stale, self._linked, self._readers = {}, set(), {}, []
        self._infos = None
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
        """The one task that enters every client, lists, then waits to be closed. A server
        that fails while starting is one ConfigError naming it, made outside the clients:
        raised inside one, its transport's task group would wrap it in an exception group
        (and a transport that fails by itself raises one)."""
        self._closing = asyncio.Event()
        starting = self.servers[0]
        try:
            async with contextlib.AsyncExitStack() as stack:
                for starting in self.servers:
                    self._clients[starting.name] = await self._enter(stack, starting)
                watchers = [
                    asyncio.ensure_future(self._watch(n, c)) for n, c in self._clients.items()
                ]
                ready.set_result(None)
                await self._closing.wait()
                for watcher in watchers:
                    watcher.cancel()
                await asyncio.gather(*watchers, return_exceptions=True)
        except Exception as error:  # an exception group too, when it holds no cancellation
            if ready.done():
                raise
            raise unusable(starting, error) from None

    async def _enter(self, stack: contextlib.AsyncExitStack, spec: ServerSpec) -> Any:
        """`spec`'s client, entered on `stack`, its tools listed and its resources known; the
        handshake and each listing are bounded by the read timeout."""
        from mcp import Client

        client = Client(
            transport(spec),
            message_handler=self._on_message(spec.name),
            read_timeout_seconds=self.connect_timeout,
        )
        await stack.enter_async_context(client)
        self._listed[spec.name] = await list_tools(client)
        if await has_resources(client):
            self._readers.append(spec.name)
        return client

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
        """The tools to offer the model: every allowed tool of every server that `writes`
        offers (the read-only ones, unless writes are allowed or confirmed), then `read_more`,
        then `read_resource` where a server has resources; listed again first where a server
        said its list changed."""
        tools = [info.tool for info in self.infos if offered(info, self.writes)]
        tools.append(self.pages.tool())
        if self._readers:
            tools.append(self._resource_tool())
        return tools

    @property
    def infos(self) -> tuple[McpToolInfo, ...]:
        """What each allowed tool is, where it came from, its hints and its class, in the
        servers' order: writes too, where `writes` leaves them out of `tools`."""
        if self._stale:
            self.refresh()
        return self._infos or ()

    def info(self, name: str) -> McpToolInfo | None:
        """The tool the model calls `name`, or None (textreact's own `read_more`, or none)."""
        return next((i for i in self.infos if i.name == name), None)

    def refresh(self) -> None:
        """List the tools of every server whose list changed, again. A server that fails to
        keeps the tools it listed before and is listed again at the next read; its failure is
        a ConfigError naming it, raised once the others are listed (whoever reads the tools
        decides: `textreact serve --mcp` answers that request with a 502)."""
        stale, self._stale = self._stale, set()
        failures = []
        for spec in self.servers:
            client = self._clients.get(spec.name)
            if spec.name not in stale or client is None:
                continue
            try:
                self._listed[spec.name] = self._run(list_tools(client))
            except Exception as error:
                self._stale.add(spec.name)
                name, cause = visible(spec.name, line=True), said(spec, error)
                failures.append(
                    ConfigError(
                        f"MCP server '{name}' could not list its tools again: {cause}; the "
                        "tools it listed before stay until it can"
                    )
                )
        self._build()
        if failures:
            raise failures[0]

    def _build(self) -> None:
        """The infos of the tools listed, each write behind the confirm function where
        `writes` is one. The first listing must leave a tool to offer (`_offers_none`)."""
        listed = [(server, t) for server, tools in self._listed.items() for t in tools]
        found = [(s, t) for s, t in listed if self._allowed(s, t.name)]
        mapped = map_names([(s, t.name) for s, t in found], reserved=self.reserved)
        infos = [
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
        ]
        if callable(self.writes):
            confirm, timeout = self.writes, self.timeout
            infos = [behind(i, confirm, timeout=timeout, lang=self.lang) if i.writes else i
                     for i in infos]  # fmt: skip
        first, self._infos = self._infos is None, tuple(infos)
        if first and listed and not any(offered(i, self.writes) for i in infos):
            self.close()
            raise ConfigError(self._offers_none([f"{s}/{t.name}" for s, t in listed]))

    def _offers_none(self, listed: list[str]) -> str:
        """Why no tool of the `listed` ones (`server/name`) is offered, and what to change."""
        if not self._infos:
            patterns = ", ".join(repr(p) for p in self.allow or ())
            return (
                f"the allow patterns {patterns} (--mcp-allow) match none of the "
                f"{len(listed)} tools the MCP servers list: {_named(listed)}; a pattern is "
                "tried on the tool's name and on server/name, * and ? allowed"
            )
        writes = _named([f"{i.server}/{i.original}" for i in self._infos])
        return (
            "every MCP tool allowed writes (its server does not mark it readOnlyHint: true), "
            f"and writes are refused: {writes}; offer them with writes='allow' or a confirm "
            "function (--mcp-writes ask or allow), or allow a read-only tool"
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
        driver's, and show the result a page at a time. The result is made text and paged in
        a worker thread: its size is the server's choice, and on the driver's loop (serve's,
        under `textreact serve --mcp`) one huge result would stall every other request."""
        read_timeout = None if self.timeout is None else self.timeout + _GRACE

        def shown(result: Any) -> str:
            text = render(result)
            self._linked.update((uri, server) for uri in links(result))
            return self.pages.first(text)

        async def call(**arguments: Any) -> str:
            loop = self._loop
            client = self._clients.get(server)
            if loop is None or client is None:
                raise ConfigError(f"the MCP connection to {server!r} is closed")
            sent = client.call_tool(original, arguments, read_timeout_seconds=read_timeout)
            result = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(sent, loop))
            return await asyncio.to_thread(shown, result)

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
                return await asyncio.to_thread(self._page_resource, result)
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

    def _page_resource(self, result: Any) -> str:
        """A resource read, as text, a page at a time (in a worker thread, as a call's result)."""
        return self.pages.first("\n".join(contents(c) for c in result.contents))

    def _run(self, work: Awaitable[Any]) -> Any:
        """`work` on the connection's loop, waited for from this thread."""
        if self._loop is None:
            raise ConfigError("the MCP connection is closed")
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()  # type: ignore[arg-type]


def _named(names: list[str]) -> str:
    """Tools' names for one line of an error: made visible, the first `_NAMED` of them."""
    shown = ", ".join(visible(name, line=True) for name in names[:_NAMED])
    return shown + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")


def connect(servers: Iterable[ServerSpec], **options: Any) -> Connection:
    """An open Connection to `servers` (see `Connection` for the options); close it, or use it
    as a context manager: `with connect(load_config("mcp.json")) as mcp: Agent(model,
    mcp.tools)`."""
    return Connection(list(servers), **options).open()
