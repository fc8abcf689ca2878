"""Where MCP servers are: `ServerSpec` records, read from the `mcpServers` JSON that Claude
Desktop, Cursor, LM Studio and Qwen-Agent write, or from one command line or URL.

A server with `command` runs as a child process over stdio; one with `url` is reached over
Streamable HTTP, or over the older SSE transport when its entry says `"type": "sse"` (or
`"transport": "sse"`, as some hosts write it). Reading a config does no I/O beyond the file
itself: nothing is started until `textreact.mcp.connect`. `${VAR}` in an entry's strings is
expanded from the environment the caller passes (`textreact.mcp.variables`)."""

from __future__ import annotations

import json
import os
import re
import reprlib
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from textreact.errors import ConfigError
from textreact.mcp.variables import expand
from textreact.redact import blank_text, public_url

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
#: How a wrong value is shown in an error: its head, a few levels deep (a config's value may
#: be megabytes long, or nested past what `repr` can walk).
_SHOWN: Final = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxother = 3, 60, 60


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
    #: Environment variables added to the child's (the SDK passes a safe default set besides);
    #: left out of the repr, as they often hold keys.
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: Working directory of the child process; None: the caller's.
    cwd: str | None = None
    #: The endpoint (http and sse); left out of the repr, as it may hold a password or a key.
    url: str | None = field(default=None, repr=False)
    #: HTTP headers sent with every request (http and sse), e.g. an Authorization header;
    #: left out of the repr.
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.transport == "stdio" and not self.command:
            raise ConfigError(f"MCP server {self.name!r}: a stdio server needs a command")
        if self.transport != "stdio" and not (self.url or "").startswith(("http://", "https://")):
            raise ConfigError(
                f"MCP server {self.name!r}: {self.transport} needs an http:// or https:// url, "
                f"got {_shown(self.url and public_url(self.url))}"
            )

    def describe(self) -> str:
        """The server as a user would recognise it in an error message, with what the config
        holds of credentials blanked (`textreact.redact`): a URL's password and query, in its
        `url` or in a command's arguments (`mcp-remote https://user:key@host/mcp`)."""
        if self.transport == "stdio":
            return blank_text(shlex.join([self.command or "", *self.args]))
        return f"{public_url(self.url or '')} ({self.transport})"


def load_config(
    path: str | os.PathLike[str], environ: Mapping[str, str] | None = None
) -> list[ServerSpec]:
    """The servers of an `mcpServers` JSON file, `${VAR}` expanded from `environ`
    (`parse_config`); anything malformed is a ConfigError that names the file and the entry."""
    where = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"cannot read the MCP config {where}: {error}") from None
    except ValueError as error:
        raise ConfigError(f"the MCP config {where} is not valid JSON: {error}") from None
    except RecursionError:
        raise ConfigError(
            f"the MCP config {where} is nested too deeply to read; an mcpServers file is an "
            "object of objects, a few levels deep"
        ) from None
    return parse_config(data, where, environ)


def parse_config(
    data: Any, where: str = "the MCP config", environ: Mapping[str, str] | None = None
) -> list[ServerSpec]:
    """`{"mcpServers": {name: {"command", "args", "env", "cwd"} | {"url", "type", "headers"}}}`
    -> servers, in the file's order. Entries with `"disabled": true` are left out, as Cline and
    Roo Code do. `${VAR}`, `${VAR:-default}` and `${env:VAR}` in `command`, `args`, `cwd`,
    `url`, and the values of `env` and `headers` are expanded from `environ` (the CLI passes
    the process environment; the library reads none): a variable not set is an error naming
    it."""
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(
            f'{where} must be a JSON object with "mcpServers": {{"name": {{"command": ..., '
            '"args": [...]}} or {"url": ...}}, as Claude Desktop and Cursor write it'
        )
    specs = []
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: mcpServers.{name} must be an object, got {_shown(entry)}")
        if entry.get("disabled") is True:
            continue
        specs.append(_entry(str(name), entry, where, environ))
    if not specs:
        raise ConfigError(f"{where} names no MCP server (mcpServers is empty or all disabled)")
    return specs


def _entry(
    name: str, entry: dict[str, Any], where: str, environ: Mapping[str, str] | None
) -> ServerSpec:
    at = f"{where}: mcpServers.{name}"

    def expanded(text: str, key: str) -> str:
        return expand(text, environ, f'{at}: "{key}"')

    kind = entry.get("type", entry.get("transport"))
    if kind is None:
        kind = "http" if "url" in entry or "serverUrl" in entry else "stdio"
    transport = _TRANSPORTS.get(str(kind))
    if transport is None:
        raise ConfigError(f"{at}: unknown transport {_shown(kind)}; use stdio, http or sse")
    if transport == "stdio":
        command, args, cwd = entry.get("command"), entry.get("args", []), entry.get("cwd")
        if not isinstance(command, str) or not command:
            raise ConfigError(f'{at}: needs "command" (a program) or "url"')
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ConfigError(f'{at}: "args" must be a list of strings, got {_shown(args)}')
        if cwd is not None and not isinstance(cwd, str):
            raise ConfigError(f'{at}: "cwd" must be a string (a directory), got {_shown(cwd)}')
        return ServerSpec(
            name=name, command=expanded(command, "command"),
            args=tuple(expanded(a, f"args[{i}]") for i, a in enumerate(args)),
            env=_strings(entry, "env", at, expanded),
            cwd=expanded(cwd, "cwd") if cwd is not None else None,
        )  # fmt: skip
    url = entry.get("url", entry.get("serverUrl"))
    return ServerSpec(
        name=name, transport=transport, url=expanded(url, "url") if isinstance(url, str) else None,
        headers=_strings(entry, "headers", at, expanded),
    )  # fmt: skip


def _strings(
    entry: dict[str, Any], key: str, at: str, expanded: Callable[[str, str], str]
) -> dict[str, str]:
    """`entry[key]`, an object of strings, each value expanded."""
    value = entry.get(key) or {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f'{at}: "{key}" must be an object of strings, got {_shown(value)}')
    return {str(k): expanded(v, f"{key}.{k}") for k, v in value.items()}


def _shown(value: Any) -> str:
    return _SHOWN.repr(value)


def server_from_command(command: str, name: str | None = None) -> ServerSpec:
    """One stdio server from a command line (`uvx mcp-server-time --local-timezone UTC`); its
    name is the program's, or the launched one's after a launcher (`mcp-server-time` for
    `uvx mcp-server-time`, `server` for `python server.py`), unless given."""
    try:
        words = shlex.split(command)
    except ValueError as error:  # "No closing quotation", "No escaped character"
        raise ConfigError(
            f"the MCP server command {_shown(command)} is not a command line a shell would "
            f"read ({str(error).lower()}); close its quotes, or escape a quote as \\'"
        ) from None
    if not words:
        raise ConfigError("the MCP server command is empty; e.g. 'uvx mcp-server-time'")
    program = words[0]
    if _LAUNCHER.fullmatch(Path(program).name):
        program = next((w for w in words[1:] if not w.startswith("-")), program)
    label = name or _SERVER_NAME.sub("_", Path(program).stem).strip("_") or "server"
    return ServerSpec(name=label, command=words[0], args=tuple(words[1:]))


def server_from_url(url: str, name: str | None = None) -> ServerSpec:
    """One Streamable HTTP server from its endpoint URL (`http://127.0.0.1:8000/mcp`)."""
    # The host alone: userinfo (`user:password@`) would put a secret into the name, which every
    # message and every prefixed tool name shows.
    host = re.sub(r"^https?://", "", url).split("/", 1)[0].rpartition("@")[2]
    return ServerSpec(
        name=name or _SERVER_NAME.sub("_", host).strip("_") or "server", transport="http", url=url
    )
