"""`textreact fuzz`: a ReAct parser (textreact's own, or `--parser MODULE:FUNCTION`) fuzzed with
generated completions, family by family (extra `fuzz`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import Any

from textreact.commands.flags import EXIT_NO_ANSWER, EXIT_OK
from textreact.errors import ConfigError

__all__ = ["add_parser", "handle"]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Register `fuzz` on the command line's subcommands."""
    fuzz = commands.add_parser("fuzz", help="fuzz a ReAct parser with generated completions")
    fuzz.add_argument(
        "--parser",
        default="textreact.parser:parse",
        metavar="MODULE:FUNCTION",
        help="the parser under test (default: textreact's own)",
    )
    fuzz.add_argument("--examples", type=int, default=200, metavar="N", help="per family")
    fuzz.add_argument("--seed", type=int, default=0, metavar="S", help="reproduces a run")
    fuzz.add_argument(
        "--family",
        action="extend",
        nargs="+",
        metavar="NAME",
        help="only these families (docs/fuzzing.md lists them; an unknown name lists them too)",
    )
    fuzz.set_defaults(handler=handle)
    return fuzz


def handle(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Print the report; exit 1 when a family found a failure."""
    try:
        from textreact.testing import run_fuzz
    except ImportError as exc:
        raise ConfigError(
            f"textreact fuzz needs Hypothesis ({exc}); "
            "install it with: pip install 'textreact[fuzz]'"
        ) from exc
    # A console script does not put the working directory on sys.path; `--parser mymod:parse`
    # should find mymod.py where the user stands.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    report = run_fuzz(args.parser, examples=args.examples, seed=args.seed, families=args.family)
    print(report.render())
    return EXIT_OK if report.ok else EXIT_NO_ANSWER
