"""uvicorn's httptools protocol -> the same with a deadline on each request's head, so that a
client sending a byte at a time cannot hold a connection for ever (uvicorn's keep-alive timer
stops at a request's first byte). Given to uvicorn by `connections.uvicorn_options`.

On httptools (the C parser of uvicorn[standard]) rather than h11: on a proxy whose upstream
answers at once, h11's parsing and checks took about a tenth of the proxy's CPU a request
(bench/serve_bench.py; docs/serve.md, Scale)."""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class ServeProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline on each request's head:
    `timeout_keep_alive` seconds from the connection's start, or from its last response, to
    the end of the head."""

    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()  # a new request's head came whole
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        waiting = bool(self.pipeline)  # a request whose head came whole is started next
        super().on_response_complete()
        if not waiting and not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

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
