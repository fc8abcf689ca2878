"""`textreact compare` flags -> a checked plan: the tasks, the protocols, the models and the
output paths, every one checked before the first model starts or request is sent. The lead's
`cli.py` calls `prepare_compare`, then opens the model(s) and runs the plan with
`textreact.compare.command`; this module knows only the flags, never the environment."""

from __future__ import annotations

import argparse
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textreact.compare.models import ModelSpec, check_specs, gguf_type, spec_type
from textreact.errors import ConfigError
from textreact.exemplars import CHOICES

#: The --policies help, for `run` and `compare` alike.
POLICIES_HELP = (
    "opt-in steering for small models: none (the default; `run` on the embedded default "
    "model: small), small (all), or names from "
    "copied_example,echo,needs,grounding,tool_hiding,closed_book (docs/policies.md)"
)


def add_tool_options(group: Any) -> None:
    """`--policies`, `--max-tools`, `--tools` and `--examples`, the same for `run` and
    `compare`."""
    group.add_argument("--policies", help=POLICIES_HELP)
    group.add_argument(
        "--examples",
        choices=CHOICES,
        help="the text protocol's worked example: bundled (the calculator and lookup; the "
        "default), built from the offered tools (no call, one call, two calls), or none "
        "(docs/protocol.md)",
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


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `textreact compare` (the model flags are added by the caller). `--gguf`
    here repeats, and stands in for the model flags' single `--gguf`: the caller's parser
    resolves that conflict (`conflict_handler="resolve"`)."""
    group = parser.add_argument_group("comparison")
    group.add_argument(
        "--suite",
        default="builtin",
        help="JSONL task file, or bfcl:QUESTIONS.json for BFCL single-call scoring "
        "(default: the built-in suite)",
    )
    group.add_argument("--answers", type=Path, help="BFCL possible-answer file (default: beside)")
    group.add_argument(
        "--protocols",
        help="comma-separated, of text (no grammar), text+grammar (the tools' grammar where the "
        "server takes one), native and own (the model's own tool format in text) (default: "
        "text, text+grammar and native; text,native with --constrain off)",
    )
    group.add_argument(
        "--repeat", type=positive_int, default=1, help="run each task N times (spread)"
    )
    group.add_argument(
        "--concurrency", type=positive_int, default=1, help="tasks in parallel (vLLM...)"
    )
    group.add_argument("--max-steps", type=positive_int, default=8, help="model calls per task")
    add_tool_options(group)
    group.add_argument(
        "--tool-choice",
        default="auto",
        metavar="CHOICE",
        help="every run's tool choice: auto (default), required, none, or a tool name",
    )
    group.add_argument("--limit", type=positive_int, help="only the first N tasks (N >= 1)")
    group.add_argument("--tags", help="only tasks with any of these comma-separated tags")
    group.add_argument("--json", type=Path, dest="json_file", help="write the JSON report here")
    group.add_argument("--markdown", type=Path, help="write a Markdown table here")
    group.add_argument("--chart", type=Path, help="write a PNG bar chart here (extra: chart)")
    group.add_argument("--transcripts", type=Path, help="write one JSON file per run here")
    group.add_argument(
        "--fail-under",
        type=rate,
        help="exit 1 when a protocol's success rate is below this (0 to 1)",
    )
    models = parser.add_argument_group(
        "models compared",
        "several models, served one at a time, into one table of model x protocol; without "
        "these flags the model flags name the one model",
    )
    models.add_argument(
        "--model-spec",
        action="append",
        dest="model_specs",
        type=spec_type,
        metavar="NAME=URL[,model=M][,key_env=VAR]",
        help="an endpoint (model= defaults to NAME), NAME=FILE.gguf, or NAME alone for the "
        "embedded model; repeatable",
    )
    models.add_argument(
        "--gguf",
        action="append",
        dest="model_specs",
        type=gguf_type,
        metavar="PATH",
        help="serve this GGUF file in the embedded server, named after its stem; repeatable",
    )


def log_odds(text: str) -> float:
    """An argparse type: a finite number (a log-odds bias)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def rate(text: str) -> float:
    """An argparse type: a success rate from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # nan fails this too
        raise argparse.ArgumentTypeError(f"expected a rate from 0 to 1, got {text!r}")
    return value


@dataclass(frozen=True)
class Plan:
    """What the flags ask for, checked before the model starts: the tasks, the protocols and
    the models (none: the one model of the model flags)."""

    tasks: tuple[Any, ...]
    protocols: tuple[str, ...]
    specs: tuple[ModelSpec, ...] = ()
    #: The user's tools (--tools); None: the built-in ones.
    tools: tuple[Any, ...] | None = None


def prepare_compare(args: argparse.Namespace) -> Plan:
    """The tasks, protocols and models the flags select, with every output path checked
    writable; any problem is a ConfigError (exit 2) before a model is started or a request is
    sent."""
    protocols = select_protocols(args.protocols, getattr(args, "constrain", "auto"))
    specs = check_specs(getattr(args, "model_specs", None) or ())
    for flag, value in (("--base-url", "base_url"), ("--model", "model")):
        if specs and getattr(args, value, None):
            raise ConfigError(
                f"{flag} names the one model of a plain comparison; with --model-spec or "
                "--gguf, give every model as a spec (--model-spec NAME=BASE_URL[,model=M])"
            )
    tasks = tuple(load_tasks(args))
    tools = None if args.tools is None else load_tools(args.tools, tasks)
    check_tool_choice(args.tool_choice, tools)
    check_budget(args.max_tools)
    for flag, path in (("--json", args.json_file), ("--markdown", args.markdown)):
        if path is not None:
            check_writable(path, flag)
    if args.chart is not None:
        check_writable(args.chart, "--chart")
        from textreact.compare.report import chart_backend

        chart_backend()  # a missing extra is named now, not after every run
    if args.transcripts is not None:
        check_folder(args.transcripts, "--transcripts")
    return Plan(tasks, protocols, specs, tools)


def check_budget(max_tools: int | None) -> None:
    """A `--max-tools` whose extra is missing is a usage error before any model starts."""
    if max_tools is not None:
        from textreact.policies import ToolBudget

        ToolBudget(max_tools)


def check_tool_choice(choice: str, tools: tuple[Any, ...] | None) -> None:
    from textreact.agent import checked_tool_choice
    from textreact.tools import ToolBox, builtin_tools

    checked_tool_choice(
        choice, ToolBox(builtin_tools() if tools is None else tools), "--tool-choice"
    )


def load_tools(spec: str, tasks: tuple[Any, ...]) -> tuple[Any, ...]:
    """The tools `--tools` names, with every tool a task's `calls` names among them."""
    from textreact.loading import load_tools as load

    tools = load(spec)
    names = {t.name for t in tools}
    missing = sorted({c for task in tasks for c in getattr(task, "calls", ()) if c not in names})
    if missing:
        raise ConfigError(f"the suite's tasks call {', '.join(missing)}, which --tools lacks")
    return tools


def select_protocols(flag: str | None, constrain: str) -> tuple[str, ...]:
    """The protocols `--protocols` names (default: all three, or text,native when `--constrain
    off` leaves no grammar to send); text+grammar asked for with `--constrain off` is refused,
    as its row would only repeat the text row."""
    from textreact.compare.runner import NAMED_ONLY, PROTOCOLS

    if flag is None:
        chosen = (p for p in PROTOCOLS if p not in NAMED_ONLY)
        return tuple(p for p in chosen if constrain != "off" or p != "text+grammar")
    protocols = tuple(p.strip() for p in flag.split(",") if p.strip())
    unknown = [p for p in protocols if p not in PROTOCOLS]
    if unknown or not protocols:
        raise ConfigError(
            f"--protocols takes a comma-separated list of {', '.join(PROTOCOLS)}; got {flag!r}"
        )
    if len(set(protocols)) < len(protocols):
        raise ConfigError(f"--protocols names a protocol twice: {flag!r}")
    if "text+grammar" in protocols and constrain == "off":
        raise ConfigError(
            "--constrain off sends no grammar, so text+grammar would repeat text: drop "
            "text+grammar from --protocols, or use --constrain auto (or on)"
        )
    return protocols


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


def load_tasks(args: argparse.Namespace) -> list[Any]:
    """The tasks the flags select: the built-in suite, a JSONL file, or a BFCL file; a selection
    of no task is a ConfigError."""
    from textreact.compare import bfcl, suite

    tags = [t for t in (args.tags or "").split(",") if t.strip()]
    if args.suite.startswith("bfcl:"):
        if tags:
            raise ConfigError("--tags selects tasks of a JSONL suite; BFCL entries have none")
        tasks: list[Any] = bfcl.load_bfcl(args.suite[5:], args.answers)
        return tasks[: args.limit] if args.limit is not None else tasks
    tasks = suite.builtin_suite() if args.suite == "builtin" else suite.load_suite(args.suite)
    return suite.select(tasks, tags=[t.strip() for t in tags], limit=args.limit)
