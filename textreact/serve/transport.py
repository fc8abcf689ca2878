"""One request to the upstream -> its response, with the retries, backoff and timeouts the
openai SDK gives and the errors `textreact.serve.errors` maps, on httpx2 (the SDK's own HTTP
library) directly: the SDK's per-request work (options models, header building, copies) cost
the proxy about 0.5 ms of CPU a request, more than its own reading and rendering.

Retried as the SDK retries: a connection that fails or times out, and a status of 408, 409,
429 or 5xx, unless the upstream says `x-should-retry: false` (or `true` for any status);
waiting `retry-after-ms` / `retry-after` when it gives 60 s or less, else 0.5 s doubled each
time up to 8 s, less up to a quarter at random."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from textreact.models.faults import retry_after
from textreact.models.sdk import PLACEHOLDER_API_KEY
from textreact.redact import split_userinfo
from textreact.serve.errors import connection_fault, secret_keys, status_fault

if TYPE_CHECKING:
    import httpx2 as httpx

#: The backoff's jitter, drawn from a generator of its own: a library leaves the global
#: `random` state to the program that uses it.
_JITTER = random.Random()
_RETRIED: Final = frozenset({408, 409, 429})
_LONGEST_WAIT: Final = 60.0
#: As the SDK: at most this many connections, this many of them kept alive.
_LIMITS: Final = (1000, 100)


class Transport:
    """The upstream at `url`; each request may carry its own key."""

    def __init__(
        self,
        url: str,
        *,
        key: str | None,
        timeout: float,
        max_retries: int,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        import httpx2 as httpx

        bare, credentials = split_userinfo(url)
        self.url = url  # as configured: errors show it blanked
        self.key = key
        self.max_retries = max_retries
        self.client = client or httpx.AsyncClient(
            timeout=timeout,
            limits=httpx.Limits(max_connections=_LIMITS[0], max_keepalive_connections=_LIMITS[1]),
        )
        #: A URL's user:password travels as basic auth, as the SDK's httpx sent it.
        self.auth = httpx.BasicAuth(*credentials) if credentials else None
        self.base = bare.rstrip("/")
        #: The server's root, where llama.cpp's own endpoints are (`/tokenize`): the base URL
        #: without its `/v1`.
        self.root = self.base.removesuffix("/v1")

    async def aclose(self) -> None:
        await self.client.aclose()

    async def request(
        self,
        method: str,
        path: str,
        key: str | None,
        secrets: list[str],
        body: Mapping[str, Any] | None = None,
        *,
        whole: bool = True,
        root: bool = False,
    ) -> httpx.Response:
        """The upstream's response, its body read (`whole`) or not yet; a failure, after the
        retries, is the ServeError to answer, `secrets` blanked in it. `path` is under the
        base URL, or under the server's root with `root`."""
        import httpx2 as httpx

        headers = {"Authorization": f"Bearer {self.key or key or PLACEHOLDER_API_KEY}"}
        content = None
        if body is not None:
            content = json.dumps(body, ensure_ascii=False).encode()
            headers["Content-Type"] = "application/json"
        request = self.client.build_request(
            method, (self.root if root else self.base) + path, content=content, headers=headers
        )
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                response = await self.client.send(request, stream=True, auth=self.auth)
                if response.status_code < 400 and whole:  # its body is the reply: retried too
                    try:
                        await response.aread()
                    finally:
                        await response.aclose()
            except httpx.TransportError as exc:
                if last:
                    raise connection_fault(exc, self.url, secret_keys(secrets)) from exc
                await asyncio.sleep(_backoff(attempt, None))
                continue
            if response.status_code < 400:
                return response
            try:
                await response.aread()
            except httpx.HTTPError:
                pass  # the status says enough
            finally:
                await response.aclose()
            if last or not _retried(response):
                raise status_fault(response, self.url, secret_keys(secrets))
            await asyncio.sleep(_backoff(attempt, response.headers))
        raise AssertionError("unreachable: the last attempt returns or raises")


def _retried(response: httpx.Response) -> bool:
    wait = retry_after(response.headers)
    if wait is not None and wait > _LONGEST_WAIT:
        return False
    said = response.headers.get("x-should-retry")
    if said in ("true", "false"):
        return said == "true"
    return response.status_code in _RETRIED or response.status_code >= 500


def _backoff(attempt: int, headers: Mapping[str, str] | None) -> float:
    wait = retry_after(headers)
    if wait is not None and 0 < wait <= _LONGEST_WAIT:
        return wait
    return min(0.5 * 2.0**attempt, 8.0) * (1 - 0.25 * _JITTER.random())
