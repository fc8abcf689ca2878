"""HTTP/1.1 requests to a plain-http upstream -> httpx2 responses, on asyncio's protocol
callbacks and httptools' parser (the C parser uvicorn uses), with kept-alive connections.

Why not httpx2's own transport: on a proxy whose upstream answers at once, httpcore2, anyio
and h11 under it took about a third of the proxy's CPU a request (bench/serve_bench.py, a
profile in docs/serve.md). This transport does only what the proxy's requests need: one
request at a time on a connection, its head and body in one write, the response's body
read as it comes (Content-Length, chunked, or until the connection closes), the client's
connect and read timeouts, and the failures httpx2 names (`ConnectError`, `ConnectTimeout`,
`ReadTimeout`, `ReadError`, `RemoteProtocolError`), so that retries and error answers work as
they did. httpx2's client stays above it: headers, content decoding, the response object.
An https upstream, or one an HTTP proxy of the environment stands before, keeps httpx2's own
transport (`Transport`)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, Final

import httptools
import httpx2 as httpx

#: Bytes of a body held unread before the connection stops reading (a slow client's stream
#: then slows the upstream, as it did through httpx2's own transport).
_HELD: Final = 256 * 1024


class Wire(httpx.AsyncBaseTransport):
    """Plain HTTP/1.1 connections, at most `keepalive` of them kept idle for each origin."""

    def __init__(self, keepalive: int) -> None:
        self.keepalive = keepalive
        self._idle: dict[tuple[str, int], list[_Connection]] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        url = request.url
        origin = (url.host, url.port or 80)
        head = [b"%s %s HTTP/1.1\r\n" % (request.method.encode(), url.raw_path)]
        head += [b"%s: %s\r\n" % pair for pair in request.headers.raw]
        message = b"".join([*head, b"\r\n", await request.aread()])
        connection = self._take(origin) or await _connect(origin, timeouts.get("connect"))
        try:
            connection.send(message)
            await connection.wait_head(timeouts.get("read"))
        except BaseException:
            connection.close()
            raise
        return httpx.Response(
            connection.status,
            headers=connection.headers,
            stream=_Body(self, origin, connection, timeouts.get("read")),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": connection.reason},
        )

    def _take(self, origin: tuple[str, int]) -> _Connection | None:
        """An idle connection to `origin` that the server has not closed meanwhile."""
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            if connection.usable():
                return connection
        return None

    def give_back(self, origin: tuple[str, int], connection: _Connection) -> None:
        connection.busy = False
        idle = self._idle.setdefault(origin, [])
        if connection.usable() and len(idle) < self.keepalive:
            idle.append(connection)
        else:
            connection.close()

    async def aclose(self) -> None:
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()


async def _connect(origin: tuple[str, int], timeout: float | None) -> _Connection:
    loop = asyncio.get_running_loop()
    try:
        _, connection = await asyncio.wait_for(
            loop.create_connection(lambda: _Connection(loop), *origin), timeout
        )
    except asyncio.TimeoutError:
        raise httpx.ConnectTimeout(f"no connection to {origin[0]}:{origin[1]} in time") from None
    except OSError as exc:
        raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
    return connection


class _Body(httpx.AsyncByteStream):
    """A response's body as it comes; closing it gives its connection back once the body has
    ended (a body left half read closes the connection, which stops the upstream)."""

    def __init__(
        self, wire: Wire, origin: tuple[str, int], connection: _Connection, timeout: float | None
    ) -> None:
        self.wire, self.origin, self.connection, self.timeout = wire, origin, connection, timeout
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self.connection
        while True:
            while connection.chunks:
                yield connection.take()
            if connection.ended:
                return
            await connection.wait(self.timeout)

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed, connection = True, self.connection
        if connection.ended and connection.keep_alive:
            self.wire.give_back(self.origin, connection)
        else:
            connection.close()


class _Connection(asyncio.Protocol):
    """One connection: what was parsed of the current response, and one waiter woken by each
    piece of it (the parser calls `on_*` back as bytes come)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.lost = False
        #: A request is in flight: bytes that come while none is are a fault of the server.
        self.busy = False
        self._waiter: asyncio.Future[None] | None = None
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.has_head = False
        self.chunks: deque[bytes] = deque()
        self.held = 0
        self.ended = False
        self.keep_alive = False
        self.failure: Exception | None = None
        self._until_close = False

    def usable(self) -> bool:
        return not self.lost and self.transport is not None and not self.transport.is_closing()

    def send(self, message: bytes) -> None:
        self._reset()
        self.busy = True
        assert self.transport is not None
        self.transport.write(message)

    def take(self) -> bytes:
        """The oldest unread piece of the body; reading resumes once little is held."""
        chunk = self.chunks.popleft()
        self.held -= len(chunk)
        if self.held < _HELD and self.transport is not None and not self.lost:
            self.transport.resume_reading()
        return chunk

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    async def wait_head(self, timeout: float | None) -> None:
        while not self.has_head:
            await self.wait(timeout)

    async def wait(self, timeout: float | None) -> None:
        """Until the next piece of the response comes (raising what broke it), at most
        `timeout` seconds (then httpx2's ReadTimeout)."""
        if self.failure is not None:
            raise self.failure
        waiter = self._waiter = self.loop.create_future()
        expiry = None if timeout is None else self.loop.call_later(timeout, _expire, waiter)
        try:
            await waiter
        finally:
            self._waiter = None
            if expiry is not None:
                expiry.cancel()
        if self.failure is not None:
            raise self.failure

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _fail(self, failure: Exception) -> None:
        if self.failure is None and not self.ended:
            self.failure = failure
        self._wake()

    # asyncio's protocol callbacks
    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if not self.busy:  # nothing asked (a 408 before an idle close): never used again
            self.lost = True
            self.close()
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(httpx.RemoteProtocolError(f"the upstream's HTTP is malformed: {exc}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.has_head and self._until_close and exc is None:
            self.ended = True  # a body without a length ends where the connection does
            self._wake()
            return
        said = "the upstream closed the connection before its response ended"
        self._fail(httpx.ReadError(str(exc)) if exc else httpx.RemoteProtocolError(said))

    # httptools' parser callbacks
    def on_status(self, status: bytes) -> None:
        self.reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.keep_alive = self.parser.should_keep_alive()
        named = {name.lower() for name, _ in self.headers}
        self._until_close = not named & {b"content-length", b"transfer-encoding"}
        self.has_head = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self.held += len(body)
        if self.held >= _HELD and self.transport is not None:
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        self.ended = True
        self._wake()


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(httpx.ReadTimeout("the upstream sent nothing in time"))
