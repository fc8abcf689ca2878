"""Where MCP servers are: `ServerSpec` records, read from the `mcpServers` JSON that Claude
Desktop, Cursor, LM Studio and Qwen-Agent write, or from one command line or URL.

A server with `command` runs as a child process over stdio; one with `url` is reached over
Streamable HTTP, or over the older SSE transport when its entry says `"type": "sse"` (or
`"transport": "sse"`, as some hosts write it). Reading a config does no I/O beyond the file
itself: nothing is started until `textreact.mcp.connect`."""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from textreact.errors import ConfigError

__all__ = ["ServerSpec", "load_config", "parse_config", "server_from_command", "server_from_url"]

Transport = Literal["stdio", "http", "sse"]
#: What hosts write for a transport, and the one it is.
_TRANSPORTS: Final[Mapping[str, Transport]] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamableHttp": "http",
    "sse": "sse",
}
_SERVER_NAME: Final = re.compile(r"[^A-Za-z0-9_-]+")
#: Programs that start the server named after them.
_LAUNCHER: Final = re.compile(r"(python[\d.]*|node|uvx|npx|pipx|bunx|deno)(\.exe)?")


@dataclass(frozen=True, kw_only=True)
class ServerSpec:
    """One MCP server to connect to."""

    #: Its name in the config: the prefix of its tools' names where two servers' names clash.
    name: str
    #: "stdio" (a child process), "http" (Streamable HTTP) or "sse" (the older HTTP transport).
    transport: Transport = "stdio"
    #: The program to start (stdio).
    command: str | None = None
    args: tuple[str, ...] = ()
    #: Environment variables added to the child's (the SDK passes a safe default set besides).
    env: Mapping[str, str] = field(default_factory=dict)
    #: Working directory of the child process; None: the caller's.
    cwd: str | None = None
    #: The endpoint (http and sse).
    url: str | None = None
    #: HTTP headers sent with every request (http and sse), e.g. an Authorization header.
    headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.transport == "stdio" and not self.command:
            raise ConfigError(f"MCP server {self.name!r}: a stdio server needs a command")
        if self.transport != "stdio" and not (self.url or "").startswith(("http://", "https://")):
            raise ConfigError(
                f"MCP server {self.name!r}: {self.transport} needs an http:// or https:// url, "
                f"got {self.url!r}"
            )

    def describe(self) -> str:
        """The server as a user would recognise it in an error message."""
        if self.transport == "stdio":
            return shlex.join([self.command or "", *self.args])
        return f"{self.url} ({self.transport})"


def load_config(path: str | os.PathLike[str]) -> list[ServerSpec]:
    """The servers of an `mcpServers` JSON file; anything malformed is a ConfigError that names
    the file and the entry."""
    where = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"cannot read the MCP config {where}: {error}") from None
    except ValueError as error:
        raise ConfigError(f"the MCP config {where} is not valid JSON: {error}") from None
    return parse_config(data, where)


def parse_config(data: Any, where: str = "the MCP config") -> list[ServerSpec]:
    """`{"mcpServers": {name: {"command", "args", "env", "cwd"} | {"url", "type", "headers"}}}`
    -> servers, in the file's order. Entries with `"disabled": true` are left out, as Cline and
    Roo Code do."""
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(
            f'{where} must be a JSON object with "mcpServers": {{"name": {{"command": ..., '
            '"args": [...]}} or {"url": ...}}, as Claude Desktop and Cursor write it'
        )
    specs = []
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: mcpServers.{name} must be an object, got {entry!r}")
        if entry.get("disabled") is True:
            continue
        specs.append(_entry(str(name), entry, where))
    if not specs:
        raise ConfigError(f"{where} names no MCP server (mcpServers is empty or all disabled)")
    return specs


def _entry(name: str, entry: dict[str, Any], where: str) -> ServerSpec:
    at = f"{where}: mcpServers.{name}"
    kind = entry.get("type", entry.get("transport"))
    if kind is None:
        kind = "http" if "url" in entry or "serverUrl" in entry else "stdio"
    transport = _TRANSPORTS.get(str(kind))
    if transport is None:
        raise ConfigError(f"{at}: unknown transport {kind!r}; use stdio, http or sse")
    if transport == "stdio":
        command, args = entry.get("command"), entry.get("args", [])
        if not isinstance(command, str) or not command:
            raise ConfigError(f'{at}: needs "command" (a program) or "url"')
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ConfigError(f'{at}: "args" must be a list of strings, got {args!r}')
        return ServerSpec(
            name=name, command=command, args=tuple(args), env=_strings(entry, "env", at),
            cwd=entry.get("cwd") if isinstance(entry.get("cwd"), str) else None,
        )  # fmt: skip
    url = entry.get("url", entry.get("serverUrl"))
    return ServerSpec(
        name=name, transport=transport, url=url if isinstance(url, str) else None,
        headers=_strings(entry, "headers", at),
    )  # fmt: skip


def _strings(entry: dict[str, Any], key: str, at: str) -> dict[str, str]:
    value = entry.get(key) or {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f'{at}: "{key}" must be an object of strings, got {value!r}')
    return {str(k): v for k, v in value.items()}


def server_from_command(command: str, name: str | None = None) -> ServerSpec:
    """One stdio server from a command line (`uvx mcp-server-time --local-timezone UTC`); its
    name is the program's, or the launched one's after a launcher (`mcp-server-time` for
    `uvx mcp-server-time`, `server` for `python server.py`), unless given."""
    words = shlex.split(command)
    if not words:
        raise ConfigError("the MCP server command is empty; e.g. 'uvx mcp-server-time'")
    program = words[0]
    if _LAUNCHER.fullmatch(Path(program).name):
        program = next((w for w in words[1:] if not w.startswith("-")), program)
    label = name or _SERVER_NAME.sub("_", Path(program).stem).strip("_") or "server"
    return ServerSpec(name=label, command=words[0], args=tuple(words[1:]))


def server_from_url(url: str, name: str | None = None) -> ServerSpec:
    """One Streamable HTTP server from its endpoint URL (`http://127.0.0.1:8000/mcp`)."""
    host = re.sub(r"^https?://", "", url).split("/", 1)[0]
    return ServerSpec(
        name=name or _SERVER_NAME.sub("_", host).strip("_") or "server", transport="http", url=url
    )
