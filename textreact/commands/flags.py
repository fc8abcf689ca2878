"""The command line's shared vocabulary: the exit codes, the argparse types, the flags that more
than one command takes (the model's, the tools'), and the checks of their values that run before
a model starts or a request is sent. Commands add their own flags in their own modules.

Exit codes: 0 an answer was found (or the command succeeded); 1 the run ended without an answer
(or a fuzz/compare check failed); 2 usage error; 3 the model or its server failed;
130 interrupted."""

from __future__ import annotations

import argparse
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from textreact.errors import ConfigError
from textreact.exemplars import CHOICES

EXIT_OK, EXIT_NO_ANSWER, EXIT_USAGE, EXIT_MODEL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

_Number = TypeVar("_Number", int, float)

#: The --policies help, for `run` and `compare` alike.
POLICIES_HELP = (
    "opt-in steering for small models: none (the default; `run` on the embedded default "
    "model: small), small (all), or names from "
    "copied_example,echo,needs,grounding,tool_hiding,closed_book (docs/policies.md)"
)


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above zero (`nan` and `inf` are not)."""
    value = _number(text, float, "a number of seconds")
    if not math.isfinite(value) or value <= 0:
        raise _expected("a finite number of seconds above 0", text)
    return value


def log_odds(text: str) -> float:
    """An argparse type: a finite number (a log-odds bias)."""
    value = _number(text, float, "a number")
    if not math.isfinite(value):
        raise _expected("a finite number", text)
    return value


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    value = _number(text, int, "a whole number")
    if value < 1:
        raise _expected("a whole number >= 1", text)
    return value


def rate(text: str) -> float:
    """An argparse type: a success rate from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # nan fails this too
        raise _expected("a rate from 0 to 1", text)
    return value


def _number(text: str, kind: Callable[[str], _Number], expected: str) -> _Number:
    try:
        return kind(text)
    except ValueError:
        raise _expected(expected, text) from None


def _expected(what: str, text: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(f"expected {what}, got {text!r}")


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The model flags of `run` and `compare` (read by `textreact.commands.model`)."""
    group = parser.add_argument_group(
        "model", "with no base URL (flag or OPENAI_BASE_URL), the embedded local model runs"
    )
    group.add_argument("--base-url", help="OpenAI-compatible endpoint (env OPENAI_BASE_URL)")
    group.add_argument("--model", help="model name (env TEXTREACT_MODEL)")
    group.add_argument("--api-key", help="API key (env OPENAI_API_KEY)")
    group.add_argument("--gguf", type=Path, help="run this GGUF file in the embedded server")
    group.add_argument("--max-tokens", type=int, default=512, help="per reply (default 512)")
    group.add_argument(
        "--timeout",
        type=seconds,
        default=120.0,
        help="seconds one request may take, first byte to last (default 120)",
    )
    group.add_argument(
        "--constrain",
        choices=("auto", "on", "off"),
        default="auto",
        help="constrain replies by the tools' grammar: auto (where the server takes one; the "
        "default), on (send it even when the server cannot tell), off",
    )


def add_tool_options(group: Any) -> None:
    """`--policies`, `--max-tools`, `--tools` and `--examples`, the same for `run` and
    `compare`."""
    group.add_argument("--policies", help=POLICIES_HELP)
    group.add_argument(
        "--examples",
        choices=CHOICES,
        help="the text protocol's worked example: bundled (the calculator and lookup; the "
        "default where the server takes a grammar), built from the offered tools (no call, "
        "one call, two calls; --protocol auto's where it takes none), or none (docs/protocol.md)",
    )
    group.add_argument(
        "--decision-bias",
        type=log_odds,
        metavar="X",
        help="text protocols: choose each turn's call or answer from the model's "
        "log-probabilities, X log-odds in favour of calling (0: the model's own odds; needs a "
        "server that returns logprobs, e.g. llama.cpp; default: sampled; docs/protocol.md)",
    )
    group.add_argument(
        "--max-tools",
        type=positive_int,
        metavar="K",
        help="offer each step only the K tools most relevant to it, beside those it must keep "
        "(for many tools, e.g. an MCP server's; extra: budget; docs/policies.md)",
    )
    group.add_argument(
        "--tools",
        metavar="MODULE:NAME",
        help="your own tools: a list of textreact Tools in a module or a .py file "
        "(e.g. my_tools.py:TOOLS; default: the built-in calculator and lookup)",
    )


def check_budget(max_tools: int | None) -> None:
    """A `--max-tools` whose extra is missing is a usage error before any model starts."""
    if max_tools is not None:
        from textreact.policies import ToolBudget

        ToolBudget(max_tools)


def check_writable(path: Path, flag: str) -> None:
    """Refuse an output file that cannot be written, before any work is done: a folder, a file
    in a folder that does not exist (a mistyped path is not made into folders), a file that
    cannot be opened for writing (one that did not exist is not left behind)."""
    if path.is_dir():
        raise ConfigError(f"{flag} {path} is a folder; give a file name")
    folder = path.parent
    if not folder.is_dir():
        raise ConfigError(
            f"{flag} {path}: the folder {folder} does not exist; create it first "
            f"(mkdir -p {folder}) or give a file in a folder that does"
        )
    existed = path.exists()
    try:
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise ConfigError(f"{flag}: cannot write {path} ({exc.strerror or exc})") from None
    if not existed:
        path.unlink(missing_ok=True)


def check_folder(folder: Path, flag: str) -> None:
    """Refuse an output folder that cannot be created or written into."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise ConfigError(f"{flag}: cannot write into {folder} ({exc.strerror or exc})") from None
