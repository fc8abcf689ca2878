"""The CLI's MCP flags (`--mcp CONFIG`, `--mcp-server COMMAND|URL`, `--mcp-allow`,
`--mcp-writes`, `--mcp-timeout`) for `run`, `compare` and `serve`, and `textreact mcp list`,
which prints what the model will see and each tool's class. What a person reads of a server
(its tools' names, the arguments a question shows) is made visible first: a name can hold an
escape sequence that rewrites the line it is on."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any

from textreact.errors import ConfigError
from textreact.mcp.catalog import McpToolInfo
from textreact.mcp.config import ServerSpec, load_config, server_from_command, server_from_url
from textreact.mcp.connection import Connection
from textreact.mcp.safety import WRITES
from textreact.tools import Tool
from textreact.untrusted import visible

__all__ = ["add_mcp_arguments", "cmd_mcp_list", "mcp_servers", "open_mcp"]


def add_mcp_arguments(
    group: Any, *, interactive: bool = True, listing: bool = False, unasked: str = "allow"
) -> None:
    """The MCP flags; `interactive`: the command can ask the user (run can, compare and serve
    cannot); `unasked`: the default for writes where nobody can be asked (compare allows them,
    running the user's own suite; serve refuses them, since its clients' models choose the
    calls); `listing`: `mcp list`, which takes CONFIG as its argument and runs no tool."""
    if listing:
        group.add_argument("mcp", nargs="?", metavar="CONFIG", help="an mcpServers JSON file")
    else:
        group.add_argument(
            "--mcp", metavar="CONFIG", help="MCP servers' tools: an mcpServers JSON file, as "
            "Claude Desktop, Cursor and LM Studio write it (extra: pip install 'textreact[mcp]')",
        )  # fmt: skip
    group.add_argument(
        "--mcp-server", metavar="COMMAND|URL", action="append", default=[],
        help="one MCP server without a config: a command line run over stdio "
        "(\"uvx mcp-server-time\") or a Streamable HTTP URL; repeatable",
    )  # fmt: skip
    group.add_argument(
        "--mcp-allow", metavar="PATTERN", action="append", default=None,
        help="offer only the MCP tools matching this pattern (the server's tool name or "
        "SERVER/NAME, * and ? allowed); repeatable",
    )  # fmt: skip
    group.add_argument(
        "--mcp-timeout", type=float, default=30.0, metavar="SECONDS",
        help="seconds one MCP tool call may take (default 30)",
    )  # fmt: skip
    if listing:
        return
    choices = WRITES if interactive else ("allow", "refuse")
    default = "ask" if interactive else unasked
    group.add_argument(
        "--mcp-writes", "--mcp-destructive", dest="mcp_writes", choices=choices,
        default=default, metavar="|".join(choices),
        help="MCP tools that are not read-only (a tool is read-only only when its server marks "
        "it readOnlyHint: true; every other tool writes, and 'may destroy' unless its server "
        "marks it destructiveHint: false; `textreact mcp list` shows each tool's class): "
        + ("ask on the terminal before each call (default), " if interactive else "")
        + "allow them, or refuse them (left out: the model never sees them)"
        + ("" if interactive else f"; default {unasked}, this command cannot ask")
        + ". Read-only tools run unasked. --mcp-destructive is the old name",
    )  # fmt: skip


def mcp_servers(args: argparse.Namespace, environ: Mapping[str, str]) -> list[ServerSpec]:
    """The servers the flags name, the config's first (its `${VAR}` read from `environ`, the
    process environment); none when no MCP flag is given."""
    servers = load_config(args.mcp, environ) if getattr(args, "mcp", None) else []
    for text in getattr(args, "mcp_server", None) or ():
        is_url = text.startswith(("http://", "https://"))
        server = server_from_url(text) if is_url else server_from_command(text)
        taken = {s.name for s in servers}
        name, number = server.name, 1
        while name in taken:
            number += 1
            name = f"{server.name}_{number}"
        servers.append(ServerSpec(**{**vars(server), "name": name}))
    return servers


@contextlib.contextmanager
def open_mcp(
    args: argparse.Namespace,
    environ: Mapping[str, str],
    reserved: Iterable[str] = (),
    stdin: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> Iterator[list[Tool] | None]:
    """The MCP tools the flags offer, while the servers are open (writes as `--mcp-writes`
    says: asked about on the terminal, allowed, or left out); None when no MCP flag is given.
    `reserved`: the names of the user's own tools (`--tools`)."""
    servers = mcp_servers(args, environ)
    if not servers:
        yield None
        return
    writes = args.mcp_writes
    if writes == "ask":
        writes = _TerminalConfirm(stdin or sys.stdin, stderr or sys.stderr)
    options = {"timeout": args.mcp_timeout, "allow": args.mcp_allow, "reserved": list(reserved)}
    with Connection(servers, writes=writes, **options) as connection:
        yield connection.tools


class _TerminalConfirm:
    """Asks on the terminal, on one line that shows the server's names and the arguments with
    nothing hidden; anything but y/yes refuses, and so does a closed or piped stdin (nobody is
    there to answer)."""

    def __init__(self, stdin: IO[str], stderr: IO[str]) -> None:
        self.stdin, self.stderr = stdin, stderr

    def __call__(self, info: McpToolInfo, arguments: dict[str, Any]) -> bool | str:
        if not self.stdin.isatty():
            return "it is not read-only, and nobody is at the terminal to confirm it"
        tool = visible(f"{info.server}/{info.original}", line=True)
        shown = visible(json.dumps(arguments, ensure_ascii=False), line=True)
        what = "it may change or delete data" if info.may_destroy else "it may change data"
        self.stderr.write(f"textreact: run {tool} ({what}) with {shown}? [y/N] ")
        self.stderr.flush()
        return self.stdin.readline().strip().lower() in ("y", "yes")


def cmd_mcp_list(args: argparse.Namespace, out: IO[str], environ: Mapping[str, str]) -> int:
    """Print each tool as the model will see it (its entry in the prompt's <tools> section),
    under a line with its name there where it was mapped, its server and its class (`EFFECTS`:
    writes are listed too, whether a command offers them or not); one JSON list with --json."""
    servers = mcp_servers(args, environ)
    if not servers:
        raise ConfigError("name the servers: textreact mcp list CONFIG, or --mcp-server COMMAND")
    options = {"timeout": args.mcp_timeout, "allow": args.mcp_allow, "writes": "allow"}
    with Connection(servers, **options) as connection:  # lists the writes; runs no tool
        infos = connection.infos
        rows = [
            {
                "name": i.name, "original": i.original, "server": i.server, "effect": i.effect,
                "may_destroy": i.may_destroy, "title": i.title,
                "description": i.tool.description, "parameters": i.tool.parameters,
            }
            for i in infos
        ]  # fmt: skip
        if args.json:
            out.write(json.dumps(rows, ensure_ascii=False, indent=2) + "\n")
            return 0
        for info in infos:
            renamed = "" if info.name == info.original else f" (server's name: {info.original})"
            out.write(visible(f"{info.name}{renamed}  [{info.server}; {info.effect}]", line=True))
            out.write("\n" + visible(info.tool.text_spec()) + "\n\n")
        out.write(f"{len(infos)} tools from {len(servers)} servers, and read_more (long results)\n")
    return 0
