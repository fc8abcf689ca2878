"""Client connections -> bounded in time and number, and no upstream work left for a client
that has gone.

- A connection must send a whole request head within `client_timeout` seconds of opening, or
  of its previous response (uvicorn's keep-alive timer stops at the first byte, so a client
  that sends one byte at a time held the connection for ever); the body has as long again
  (`textreact.serve.app`, a 408).
- At most `max_connections` connections and requests at once; past that, a 503 (uvicorn's
  `limit_concurrency`).
- While a request is prepared and the upstream asked (its retries included), the client's
  leaving cancels the work, which closes the upstream connection, so the upstream stops
  generating; a stream that has begun is cancelled by Starlette the same way."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from starlette.requests import Request

    from textreact.serve.config import ServeConfig

T = TypeVar("T")


class ClientGone(Exception):
    """The client left before its answer was ready; no one will read one."""


def uvicorn_options(config: ServeConfig) -> dict[str, Any]:
    """What uvicorn is run with, for `config`'s bounds on connections."""
    from textreact.serve.protocol import ServeProtocol  # uvicorn's own: loaded with it

    return {
        "http": ServeProtocol,
        "timeout_keep_alive": config.client_timeout,
        "limit_concurrency": config.max_connections,
    }


async def while_connected(request: Request, work: Coroutine[Any, Any, T]) -> T:
    """`work`'s result, unless the client disconnects first: then `work` is cancelled (an
    upstream request in it is closed, its retries never made) and ClientGone raised."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait((task, gone), return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not task.done():
            task.cancel()
        gone.cancel()
    if not task.done() or task.cancelled():
        with contextlib.suppress(asyncio.CancelledError):
            await task
        raise ClientGone
    return task.result()


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone (its body is read by then: only the disconnect is
    left to receive)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
