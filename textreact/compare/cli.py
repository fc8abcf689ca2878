"""`textreact compare` flags -> a comparison run -> the table, files and exit code. The lead's
`cli.py` checks the flags with `prepare_compare` before the model starts, opens the model and
calls `compare_command`; this module knows only the flags.

Everything the flags ask to write is checked before the first request, and written as runs end:
each run's transcript when it finishes, the JSON and Markdown reports rewritten after every run
(marked partial until the last), so an interrupted comparison leaves what it had done."""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from textreact.errors import ConfigError


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `textreact compare` (the model flags are added by the caller)."""
    group = parser.add_argument_group("comparison")
    group.add_argument(
        "--suite",
        default="builtin",
        help="JSONL task file, or bfcl:QUESTIONS.json for BFCL single-call scoring "
        "(default: the built-in suite)",
    )
    group.add_argument("--answers", type=Path, help="BFCL possible-answer file (default: beside)")
    group.add_argument(
        "--protocols", default="text,native", help="comma-separated: text,native (default both)"
    )
    group.add_argument(
        "--repeat", type=positive_int, default=1, help="run each task N times (spread)"
    )
    group.add_argument(
        "--concurrency", type=positive_int, default=1, help="tasks in parallel (vLLM...)"
    )
    group.add_argument("--max-steps", type=positive_int, default=8, help="model calls per task")
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
    """What the flags ask for, checked before the model starts: the tasks and the protocols."""

    tasks: tuple[Any, ...]
    protocols: tuple[str, ...]


def prepare_compare(args: argparse.Namespace) -> Plan:
    """The tasks and protocols the flags select, with every output path checked writable; any
    problem is a ConfigError (exit 2) before a model is started or a request is sent."""
    from textreact.compare.runner import PROTOCOLS

    protocols = tuple(p.strip() for p in args.protocols.split(",") if p.strip())
    unknown = [p for p in protocols if p not in PROTOCOLS]
    if unknown or not protocols:
        raise ConfigError(
            f"--protocols takes a comma-separated list of {', '.join(PROTOCOLS)}; "
            f"got {args.protocols!r}"
        )
    tasks = tuple(load_tasks(args))
    for flag, path in (("--json", args.json_file), ("--markdown", args.markdown)):
        if path is not None:
            check_writable(path, flag)
    if args.chart is not None:
        check_writable(args.chart, "--chart")
        from textreact.compare.report import chart_backend

        chart_backend()  # a missing extra is named now, not after every run
    if args.transcripts is not None:
        check_folder(args.transcripts, "--transcripts")
    return Plan(tasks, protocols)


def check_writable(path: Path, flag: str) -> None:
    """Refuse an output file that cannot be written, before any work is done (its folder is
    created, as the writers do; a file that did not exist is not left behind)."""
    if path.is_dir():
        raise ConfigError(f"{flag} {path} is a folder; give a file name")
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
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


def compare_command(
    args: argparse.Namespace,
    model: Any,
    *,
    err: IO[str] | None = None,
    plan: Plan | None = None,
) -> int:
    """Run the comparison the flags describe on `model`; print the table; write the files as
    runs end. Returns 0, or 1 when `--fail-under` is given and a protocol falls below it."""
    from textreact.compare import report as render
    from textreact.compare.runner import Report, run_compare

    err = err or sys.stderr
    plan = plan or prepare_compare(args)
    meta = {"model": getattr(model, "model", type(model).__name__), "suite": args.suite}
    items = {item.id: item for item in plan.tasks}
    done: list[Any] = []
    started = time.perf_counter()

    def report_of(outcomes: list[Any]) -> Report:
        return Report(
            protocols=plan.protocols,
            tasks=plan.tasks,
            outcomes=tuple(outcomes),
            repeat=args.repeat,
            concurrency=args.concurrency,
            seconds=time.perf_counter() - started,
            meta=dict(meta),
        )

    def write(result: Report) -> None:
        if args.json_file:
            render.write_json(result, args.json_file)
        if args.markdown:
            render.write_text(args.markdown, render.markdown(result))

    def progress(outcome: Any, count: int, total: int) -> None:
        done.append(outcome)
        if args.transcripts:
            render.write_transcript(outcome, items[outcome.task], args.transcripts)
        write(report_of(done))
        filled = count * 20 // total
        mark = "ok" if outcome.success else "--"
        print(
            f"\r[{'#' * filled}{'.' * (20 - filled)}] {count}/{total} {outcome.protocol:6} "
            f"{mark} {outcome.task[:40]:40}",
            end="" if count < total else "\n",
            file=err,
            flush=True,
        )

    try:
        result = run_compare(
            model,
            plan.tasks,
            protocols=plan.protocols,
            repeat=args.repeat,
            concurrency=args.concurrency,
            max_steps=args.max_steps,
            on_outcome=progress,
        )
    except KeyboardInterrupt:
        if done and (args.json_file or args.markdown or args.transcripts):
            print(f"\ninterrupted: the {len(done)} finished runs are written", file=err)
        raise
    result.meta.update(meta)
    print(render.table(result))
    write(result)
    if args.chart:
        render.chart(result, args.chart)
    if args.fail_under is not None:
        rates = [render.summarise(result, p)["success_rate"] for p in result.protocols]
        return 1 if min(rates) < args.fail_under else 0
    return 0
