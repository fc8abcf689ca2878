"""`textreact mcp list`: each tool of the MCP servers named as the model will see it, and its
class. The MCP flags, the servers' opening and the listing itself are `textreact.mcp.command`'s,
shared with `run`, `compare` and `serve`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from textreact.mcp.command import add_mcp_arguments, cmd_mcp_list

__all__ = ["add_parser", "handle"]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Register `mcp` (and its one subcommand, `list`) on the command line's subcommands."""
    mcp = commands.add_parser("mcp", help="MCP servers: list the tools the model will see")
    mcp_commands = mcp.add_subparsers(dest="mcp_command", required=True, metavar="COMMAND")
    listing = mcp_commands.add_parser(
        "list", help="each tool as the model will see it, and its class: read-only, writes, or "
        "may destroy",
    )  # fmt: skip
    add_mcp_arguments(listing, listing=True)
    listing.add_argument("--json", action="store_true", help="one JSON list")
    listing.set_defaults(handler=handle)
    return mcp


def handle(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """List the tools on stdout."""
    return cmd_mcp_list(args, sys.stdout, env)
