"""uvicorn's httptools protocol -> the same with a deadline on each request's head, so that a
client sending a byte at a time cannot hold a connection for ever (uvicorn's keep-alive timer
stops at a request's first byte), and with a clean end to a connection answered before its
request's body had all come. Given to uvicorn by `connections.uvicorn_options`.

A response that ends the connection (`Connection: close`) while the client is still sending
its body (a 413 for a body over the limit, a 408) is not followed by a plain close: a socket
closed with unread bytes in it sends a reset, and a reset can destroy the answer before the
client reads it (most clients send their whole body before they read). So the connection is
half-closed after the answer (the client reads it, then the end) and what the client still
sends is read and dropped, at most DRAIN_BYTES within `timeout_keep_alive` seconds, until the
client closes its side; past either bound it is closed as it stands.

On httptools (the C parser of uvicorn[standard]) rather than h11: on a proxy whose upstream
answers at once, h11's parsing and checks took about a tenth of the proxy's CPU a request
(bench/serve_bench.py; docs/serve.md, Scale)."""

from __future__ import annotations

import asyncio
from typing import Any, Final

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

#: The most bytes of a refused request read and dropped after its answer: enough for a client
#: that sends a body of twice the limit (`body.MAX_BODY_BYTES`) before it reads, bounded so
#: that no client has the server read for it without end.
DRAIN_BYTES: Final = 64 * 1024 * 1024


class ServeProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline on each request's head:
    `timeout_keep_alive` seconds from the connection's start, or from its last response, to
    the end of the head; and a response that ends the connection before its request's body
    has all come, followed by a half-close and a bounded drain (`end`)."""

    _deadline: asyncio.TimerHandle | None = None
    #: Bytes still to drop once the connection is ending (`end`); None until then.
    _draining: int | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._draining is None:
            super().data_received(data)
            return
        self._draining -= len(data)  # the request was answered: what follows is dropped
        if self._draining < 0:
            self.transport.close()

    def on_headers_complete(self) -> None:
        self._disarm()  # a new request's head came whole
        before = self.cycle
        super().on_headers_complete()
        if self.cycle is not before:  # the cycle closes through `end`
            self.cycle.transport = _Ending(self, self.cycle)  # type: ignore[assignment]

    def on_response_complete(self) -> None:
        waiting = bool(self.pipeline)  # a request whose head came whole is started next
        super().on_response_complete()
        if not waiting and not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def end(self, cycle: RequestResponseCycle) -> None:
        """Close the connection after `cycle`'s response; when that response is whole and the
        request's body is still coming, half-close and drain instead (the module says why)."""
        transport = self.transport
        early = cycle is self.cycle and cycle.response_complete and cycle.more_body
        if not early or transport.is_closing() or not transport.can_write_eof():
            transport.close()
            return
        self._draining = DRAIN_BYTES
        transport.write_eof()  # sent once the answer is: the client reads the answer whole
        self.flow.resume_reading()
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.timeout_keep_alive, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        self.timeout_keep_alive_handler()  # closes the connection as an idle one is closed


class _Ending:
    """The connection as one request's cycle holds it: everything goes to the transport but
    the close the cycle makes after a response that ends the connection, which is the
    protocol's `end`."""

    def __init__(self, protocol: ServeProtocol, cycle: RequestResponseCycle) -> None:
        self._protocol = protocol
        self._cycle = cycle

    def __getattr__(self, name: str) -> Any:
        return getattr(self._protocol.transport, name)

    def close(self) -> None:
        self._protocol.end(self._cycle)
