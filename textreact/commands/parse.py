"""`textreact parse`: one completion (standard input or FILE) parsed into a step, printed as
JSON; with `--calls`, into the list of steps a reply that may make several calls holds."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from textreact.commands.flags import EXIT_OK
from textreact.commands.terminal import json_text

__all__ = ["add_parser", "handle"]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Register `parse` on the command line's subcommands."""
    parse = commands.add_parser("parse", help="parse a completion (stdin or FILE) to JSON")
    parse.add_argument("file", nargs="?", type=Path)
    parse.add_argument(
        "--calls",
        action="store_true",
        help="read several calls in a row, as with parallel calls allowed: print a list of steps",
    )
    parse.set_defaults(handler=handle)
    return parse


def handle(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Print the step the completion parses to (with `--calls`, the list of steps)."""
    from textreact.parser import parse
    from textreact.parsing.calls import parse_calls
    from textreact.steps import step_to_dict

    # Bytes in, decoded leniently: a completion with broken UTF-8 is still parsed, never a
    # traceback, and what is printed can always be encoded.
    raw = sys.stdin.buffer.read() if args.file is None else args.file.read_bytes()
    text = raw.decode("utf-8", errors="replace")
    if args.calls:
        print(json_text([step_to_dict(step) for step in parse_calls(text)], sys.stdout))
    else:
        print(json_text(step_to_dict(parse(text)), sys.stdout))
    return EXIT_OK
