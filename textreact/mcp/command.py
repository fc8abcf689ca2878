"""The CLI's MCP flags (`--mcp CONFIG`, `--mcp-server COMMAND|URL`, `--mcp-allow`,
`--mcp-destructive`, `--mcp-timeout`) for `run`, `compare` and `serve`, and `textreact mcp
list`, which prints what the model will see."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any

from textreact.errors import ConfigError
from textreact.mcp.catalog import McpToolInfo
from textreact.mcp.config import ServerSpec, load_config, server_from_command, server_from_url
from textreact.mcp.connection import Connection
from textreact.mcp.safety import DESTRUCTIVE, offered_tools

__all__ = ["add_mcp_arguments", "cmd_mcp_list", "mcp_servers", "open_mcp"]


def add_mcp_arguments(
    group: Any, *, interactive: bool = True, listing: bool = False, unasked: str = "allow"
) -> None:
    """The MCP flags; `interactive`: the command can ask the user (run can, compare and serve
    cannot); `unasked`: the default policy for tools that may destroy where nobody can be asked
    (compare allows them, running the user's own suite; serve refuses them, since its clients'
    models choose the calls); `listing`: `mcp list`, which takes CONFIG as its argument and runs
    no tool."""
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
    choices = DESTRUCTIVE if interactive else ("allow", "refuse")
    default = DESTRUCTIVE[0] if interactive else unasked
    group.add_argument(
        "--mcp-destructive", choices=choices, default=default,
        help="MCP tools that may change or delete things (their server does not mark them "
        "read-only): " + ("ask on the terminal before each call (default), " if interactive
        else "") + "allow them, or refuse (leave them out)"
        + ("" if interactive else f" (default {unasked}: this command cannot ask)"),
    )  # fmt: skip


def mcp_servers(args: argparse.Namespace) -> list[ServerSpec]:
    """The servers the flags name, the config's first; none when no MCP flag is given."""
    servers = load_config(args.mcp) if getattr(args, "mcp", None) else []
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
    reserved: Iterable[str] = (),
    stdin: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> Iterator[tuple[list[Any], Any] | None]:
    """(the MCP tools, the `before_call` the flags ask for) while the servers are open; None
    when no MCP flag is given. `reserved`: the names of the user's own tools (`--tools`)."""
    servers = mcp_servers(args)
    if not servers:
        yield None
        return
    options = {"timeout": args.mcp_timeout, "allow": args.mcp_allow, "reserved": list(reserved)}
    with Connection(servers, **options) as connection:
        policy = args.mcp_destructive
        ask = None
        if policy == "ask":
            ask = _TerminalConfirm(stdin or sys.stdin, stderr or sys.stderr)
        yield offered_tools(connection, policy, ask)


class _TerminalConfirm:
    """Asks on the terminal; anything but y/yes refuses, and so does a closed or piped stdin
    (nobody is there to answer)."""

    def __init__(self, stdin: IO[str], stderr: IO[str]) -> None:
        self.stdin, self.stderr = stdin, stderr

    def __call__(self, info: McpToolInfo, arguments: dict[str, Any]) -> bool | str:
        if not self.stdin.isatty():
            return "it may change or delete data, and nobody is at the terminal to confirm it"
        shown = json.dumps(arguments, ensure_ascii=False)
        self.stderr.write(
            f"textreact: {info.server}/{info.original} may change or delete data. "
            f"Run it with {shown}? [y/N] "
        )
        self.stderr.flush()
        return self.stdin.readline().strip().lower() in ("y", "yes")


def cmd_mcp_list(args: argparse.Namespace, out: IO[str]) -> int:
    """Print each tool as the model will see it (its entry in the prompt's <tools> section),
    under a line with its server, its name there where it was mapped, and its hints; one JSON
    list with --json."""
    from textreact.observation import visible

    servers = mcp_servers(args)
    if not servers:
        raise ConfigError("name the servers: textreact mcp list CONFIG, or --mcp-server COMMAND")
    with Connection(servers, timeout=args.mcp_timeout, allow=args.mcp_allow) as connection:
        infos = connection.infos
        rows = [
            {
                "name": i.name, "original": i.original, "server": i.server,
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
            hint = "may change or delete data" if info.may_destroy else "read-only"
            out.write(f"{info.name}{renamed}  [{info.server}; {hint}]\n")
            out.write(visible(info.tool.text_spec()) + "\n\n")
        out.write(f"{len(infos)} tools from {len(servers)} servers, and read_more (long results)\n")
    return 0
