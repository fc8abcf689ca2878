"""The `textreact` command: a thin dispatcher that parses the flags, hands the chosen command
its arguments and the process environment, and turns a library error into one line on stderr
and an exit code (`textreact.commands.flags` lists them). Each command is a module of
`textreact.commands` (`serve`'s is `textreact.serve.cli`); this one only puts them together.

Everything printed goes through `SafeText`: a character the terminal's encoding lacks (a lone
surrogate from a server, say) is written as a backslash escape, never a crash that loses the
answer; `--json` falls back to ASCII escapes, so it stays valid JSON."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from textreact.commands import compare, fuzz, mcp, parse, prompt, pull, run
from textreact.commands.environment import environment
from textreact.commands.flags import (
    EXIT_INTERRUPTED,
    EXIT_MODEL,
    EXIT_NO_ANSWER,
    EXIT_OK,
    EXIT_USAGE,
)
from textreact.commands.terminal import SafeText
from textreact.errors import ConfigError, ModelError, TextReactError
from textreact.serve import cli as serve

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_MODEL",
    "EXIT_NO_ANSWER",
    "EXIT_OK",
    "EXIT_USAGE",
    "build_parser",
    "main",
]

#: The commands, in the order `textreact --help` lists them.
COMMANDS = (run, parse, prompt, pull, fuzz, compare, mcp, serve)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code instead of exiting, for in-process tests."""
    with (
        contextlib.redirect_stdout(SafeText(sys.stdout)),
        contextlib.redirect_stderr(SafeText(sys.stderr)),
    ):
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on usage errors and --help; return instead
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return args.handler(args, environment())
    except KeyboardInterrupt:
        print("textreact: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ModelError as exc:
        print(f"textreact: model error: {exc}", file=sys.stderr)
        return EXIT_MODEL
    except (ConfigError, TextReactError, OSError) as exc:
        print(f"textreact: {exc}", file=sys.stderr)
        return EXIT_USAGE


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors, like every other error of the command."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command; each registers its own (`add_parser`)."""
    parser = _Parser(
        prog="textreact",
        description="Tool use for any chat model through a plain-text ReAct protocol.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


if __name__ == "__main__":
    sys.exit(main())
