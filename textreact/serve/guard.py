"""Requests from a browser page -> refused before they reach the proxy, which may hold an
upstream key that any page the user opens could otherwise spend.

Two ways in, each closed by default:
- DNS rebinding: a page on `evil.example` whose name is made to resolve to 127.0.0.1 sends
  requests the browser treats as same-origin, with `Host: evil.example`. Only a Host that names
  this machine's loopback (`localhost`, `127.0.0.1`, `[::1]`) or a host the operator allowed
  (`--allow-host`) is served; a request without a Host (HTTP/1.0) is served.
- A cross-origin POST that needs no preflight: a page may send `Content-Type: text/plain` (or a
  form) to any address without asking first. A body of any type but JSON is refused (415), and
  so is a request whose `Origin` is not an allowed host (403): browsers send it on every
  cross-origin request, and this server answers no CORS preflight, so no page is meant to call
  it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final
from urllib.parse import urlsplit

from textreact.serve.errors import ServeError

#: Host names that always mean this machine.
LOOPBACK: Final = frozenset({"localhost", "127.0.0.1", "::1"})
#: In `allowed_hosts`: any Host header is served (Origin is still checked).
ANY_HOST: Final = "*"

_ASGI = Callable[..., Awaitable[None]]


class Guard:
    """ASGI middleware: refuses what `refusal` refuses with `answer(error)`, a response."""

    def __init__(
        self, app: _ASGI, *, hosts: Iterable[str], answer: Callable[[ServeError], Any]
    ) -> None:
        self.app = app
        named = {host.lower() for host in hosts}
        self.any_host = ANY_HOST in named
        self.hosts = frozenset(named - {ANY_HOST}) | LOOPBACK
        self.answer = answer

    async def __call__(self, scope: dict[str, Any], receive: _ASGI, send: _ASGI) -> None:
        error = (
            refusal(scope, self.hosts, any_host=self.any_host) if scope["type"] == "http" else None
        )
        if error is None:
            await self.app(scope, receive, send)
        else:
            await self.answer(error)(scope, receive, send)


def refusal(
    scope: dict[str, Any], hosts: frozenset[str], *, any_host: bool = False
) -> ServeError | None:
    """Why a request must not be served (a 403 or a 415), or None."""
    headers = dict(scope.get("headers") or ())
    host = headers.get(b"host")
    if host is not None and not any_host and _host_name(host.decode("latin-1")) not in hosts:
        return ServeError(
            403,
            f"this server does not answer for the host {host.decode('latin-1')!r} (a page on "
            "another site may have made its name point here): call it as localhost, or start it "
            "with --allow-host NAME for each name it is reached by",
            code="host_not_allowed",
        )
    origin = headers.get(b"origin")
    if origin is not None and _origin_host(origin.decode("latin-1")) not in hosts:
        return ServeError(
            403,
            f"requests from web pages ({origin.decode('latin-1')}) are refused: this server may "
            "hold an upstream key; call it from a program, or allow the page's host with "
            "--allow-host NAME",
            code="origin_not_allowed",
        )
    kind = headers.get(b"content-type")
    if scope.get("method") == "POST" and kind is not None and not _json_type(kind):
        return ServeError(
            415,
            f"the request body must be JSON, sent with Content-Type: application/json (got "
            f"{kind.decode('latin-1')!r})",
            param="Content-Type",
        )
    return None


def _host_name(host: str) -> str:
    """`localhost:8765` -> `localhost`; `[::1]:8765` -> `::1`."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def _origin_host(origin: str) -> str | None:
    """The host an `Origin` names; None for `null` (a sandboxed page or a file)."""
    try:
        return urlsplit(origin.strip()).hostname
    except ValueError:
        return None


def _json_type(kind: bytes) -> bool:
    media = kind.partition(b";")[0].strip().lower()
    return media == b"application/json" or media.endswith(b"+json")
