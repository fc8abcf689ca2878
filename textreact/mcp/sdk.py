"""The SDK's side of a connection: what a server is reached through (stdio, Streamable HTTP,
SSE), every page of its tools, whether it has resources, a failure in words, and the install
hint when the SDK is missing. Every SDK import is made here on first use, so importing
textreact.mcp works without the extra."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any, Final, TextIO

from textreact.errors import ConfigError, MissingExtraError
from textreact.mcp.config import ServerSpec
from textreact.redact import blank_text, cut, userinfo_secrets
from textreact.untrusted import visible

__all__ = [
    "INSTALL_HINT",
    "has_resources",
    "list_tools",
    "reason",
    "require_sdk",
    "said",
    "transport",
    "unusable",
]

INSTALL_HINT: Final = "pip install 'textreact[mcp]'"
#: Pages of a tools/list walk followed at most: a server whose cursor never ends cannot hang
#: the connection.
_MAX_PAGES: Final = 100
#: The SDK's own HTTP timeouts: 30 s to connect and send, 300 s for a response stream to go
#: quiet (a server may hold one open).
_HTTP_SECONDS: Final = 30.0
_HTTP_READ_SECONDS: Final = 300.0
#: Of a refusal by the SDK's validation, the fields named in an error message.
_SHOWN_ERRORS: Final = 3
#: The longest cause shown in an error message, in characters (a server's words are its own).
_REASON_CHARS: Final = 300
#: The shortest header value blanked in messages: a shorter one ("1", "json") is no secret
#: worth the damage of blanking it wherever it occurs.
_MIN_SECRET_CHARS: Final = 8


async def list_tools(client: Any) -> list[Any]:
    """Every tool a server lists, page after page (at most _MAX_PAGES)."""
    tools: list[Any] = []
    cursor = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


async def has_resources(client: Any) -> bool:
    """Whether a server has resources to read: it says it offers them, and lists one or a
    template of them (servers built on the SDK's MCPServer say so even with none, and a tool
    more is a choice more for a small model)."""
    if getattr(client.server_capabilities, "resources", None) is None:
        return False
    try:
        if (await client.list_resources()).resources:
            return True
        return bool((await client.list_resource_templates()).resource_templates)
    except Exception:  # a server that offers resources but fails to list them: none to read
        return False


def transport(spec: ServerSpec) -> Any:
    """What the SDK's `Client` connects through for `spec`."""
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    if spec.transport == "stdio":
        parameters = StdioServerParameters(
            command=spec.command or "", args=list(spec.args), env=dict(spec.env) or None,
            cwd=spec.cwd,
        )  # fmt: skip
        return stdio_client(parameters, errlog=_server_log())
    if spec.transport == "http":
        return _streamable_http(spec.url or "", dict(spec.headers))
    from mcp.client.sse import sse_client

    return sse_client(spec.url or "", headers=dict(spec.headers) or None)


def _server_log() -> TextIO:
    """Where a stdio server's stderr goes: this process's (a server's log is the user's to
    see). Given each time: the SDK's own default is whatever `sys.stderr` was when it was first
    imported, and a child process needs a stream with a file behind it, which a replaced
    `sys.stderr` (a test's capture, the CLI's wrapper over one) may not have."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            stream.fileno()
        except (AttributeError, OSError, ValueError):
            continue
        return stream
    return sys.__stderr__


@contextlib.asynccontextmanager
async def _streamable_http(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """The SDK's Streamable HTTP transport over an HTTP client of ours, which carries the
    headers and is closed with the transport (the SDK closes only the clients it makes)."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx2.Timeout(_HTTP_SECONDS, read=_HTTP_READ_SECONDS)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as client,
        streamable_http_client(url, http_client=client) as streams,
    ):
        yield streams


def reason(error: BaseException) -> str:
    """The first real cause inside exception groups, as `Type: message` on one line; a
    pydantic ValidationError (the SDK refusing what a server sent) as where and what, without
    the value it refused or its link to pydantic's docs."""
    while isinstance(getattr(error, "exceptions", None), tuple) and error.exceptions:  # type: ignore[attr-defined]
        error = error.exceptions[0]  # type: ignore[attr-defined]
    errors = getattr(error, "errors", None)
    if type(error).__name__ == "ValidationError" and callable(errors):
        found = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors()]
        more = f"; and {len(found) - _SHOWN_ERRORS} more" if len(found) > _SHOWN_ERRORS else ""
        text = "; ".join(found[:_SHOWN_ERRORS]) + more
    else:
        text = str(error)
    text = " ".join(text.split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def unusable(spec: ServerSpec, error: BaseException) -> ConfigError:
    """The error for a server that could not be started, reached or listed: its name, where it
    is, and what went wrong (`said`)."""
    name, where = visible(spec.name, line=True), visible(spec.describe(), line=True)
    return ConfigError(f"MCP server '{name}' ({where}) could not be used: {said(spec, error)}")


def said(spec: ServerSpec, error: BaseException) -> str:
    """The first real cause of `error` on one line a person can read, with every credential
    `spec` holds (a URL's password, its headers' values) blanked wherever the cause echoes
    them, and every URL's password and query; then cut (a server's words are its own)."""
    return cut(visible(blank_text(reason(error), _secrets(spec)), line=True), _REASON_CHARS)


def _secrets(spec: ServerSpec) -> list[str]:
    """What of `spec` is secret: its URL's `user:password` as sent, and each header's value,
    whole and its last word (the token after `Bearer`), when long enough to be one."""
    words = [word for value in spec.headers.values() for word in (value, *value.split()[-1:])]
    found = [*userinfo_secrets(spec.url or ""), *words]
    return [secret for secret in dict.fromkeys(found) if len(secret) >= _MIN_SECRET_CHARS]


def require_sdk() -> None:
    """The SDK, or a MissingExtraError that says how to install it."""
    try:
        import mcp  # noqa: F401
    except ImportError as error:
        raise MissingExtraError(
            f"textreact.mcp needs the MCP Python SDK ({error}): {INSTALL_HINT}"
        ) from None
