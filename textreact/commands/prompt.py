"""`textreact prompt`: the opening messages the text protocol sends for a question, with the
built-in tools, as the model reads them."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from textreact.commands.flags import EXIT_OK
from textreact.commands.question import QUESTION_HELP, read_question

__all__ = ["add_parser", "handle"]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Register `prompt` on the command line's subcommands."""
    show = commands.add_parser("prompt", help="print the rendered prompt")
    show.add_argument("question", nargs="?", default="What is 12 * 7?", help=QUESTION_HELP)
    show.add_argument("--lang", choices=("en", "zh"), default="en")
    show.set_defaults(handler=handle)
    return show


def handle(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Print each opening message under its role."""
    from textreact import prompt
    from textreact.tools import builtin_tools

    question = read_question(args.question)
    for message in prompt.opening_messages(question, builtin_tools(), lang=args.lang):
        print(f"### {message['role']}\n{message['content']}\n")
    return EXIT_OK
