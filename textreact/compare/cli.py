"""`textreact compare` flags -> a checked plan: the tasks, the protocols, the models and the
output paths, every one checked before the first model starts or request is sent. The command
(`textreact.commands.compare`) calls `prepare_compare`, then opens the model(s) and runs the plan
with `textreact.compare.command`; this module knows only the flags, never the environment."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textreact.commands.flags import (
    add_tool_options,
    check_budget,
    check_folder,
    check_writable,
    positive_int,
    rate,
)
from textreact.compare.models import ModelSpec, check_specs, gguf_type, spec_type
from textreact.errors import ConfigError


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `textreact compare` (the model flags are added by the caller). `--gguf`
    here repeats, and stands in for the model flags' single `--gguf`: the caller's parser
    resolves that conflict (`conflict_handler="resolve"`)."""
    group = parser.add_argument_group("comparison")
    group.add_argument(
        "--suite",
        default="builtin",
        help="JSONL task file, or bfcl:QUESTIONS.json for BFCL scoring (simple, multiple, "
        "irrelevance, parallel, parallel_multiple and their live_ files; default: the built-in "
        "suite)",
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
        "--parallel-calls",
        action="store_true",
        help="let a reply of the text protocols make several calls (Agent(parallel_calls=True)); "
        "BFCL's parallel and parallel_multiple files need it for the text protocols to write "
        "several calls at all (native makes several either way; own and own-first cannot)",
    )
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
    from textreact.compare.runner import check_parallel_calls

    protocols = select_protocols(args.protocols, getattr(args, "constrain", "auto"))
    check_parallel_calls(protocols, args.parallel_calls)
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
