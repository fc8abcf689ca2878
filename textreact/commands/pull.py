"""`textreact pull`: fetch the embedded default model into the cache, ahead of the first run."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from textreact.commands.flags import EXIT_OK
from textreact.commands.terminal import progress

__all__ = ["add_parser", "handle"]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Register `pull` on the command line's subcommands."""
    pull = commands.add_parser("pull", help="fetch the embedded default model (about 100 MB)")
    pull.set_defaults(handler=handle)
    return pull


def handle(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Fetch the model (the cache directory from `env`); print where it is."""
    from textreact.models import local

    path = local.pull(local.default_cache_dir(env), progress=progress)
    print(path)
    return EXIT_OK
