"""`textreact compare` flags -> a comparison run -> the table, files and exit code. The lead's
`cli.py` opens the model and calls `compare_command`; this module knows only the flags."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import IO, Any


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
    group.add_argument("--repeat", type=int, default=1, help="run each task N times (spread)")
    group.add_argument("--concurrency", type=int, default=1, help="tasks in parallel (vLLM...)")
    group.add_argument("--max-steps", type=int, default=8, help="model calls per task")
    group.add_argument("--limit", type=int, help="only the first N tasks")
    group.add_argument("--tags", help="only tasks with any of these comma-separated tags")
    group.add_argument("--json", type=Path, dest="json_file", help="write the JSON report here")
    group.add_argument("--markdown", type=Path, help="write a Markdown table here")
    group.add_argument("--chart", type=Path, help="write a PNG bar chart here (extra: chart)")
    group.add_argument("--transcripts", type=Path, help="write one JSON file per run here")
    group.add_argument(
        "--fail-under", type=float, help="exit 1 when a protocol's success rate is below this"
    )


def load_tasks(args: argparse.Namespace) -> list[Any]:
    """The tasks the flags select: the built-in suite, a JSONL file, or a BFCL file."""
    from textreact.compare import bfcl, suite

    if args.suite.startswith("bfcl:"):
        tasks: list[Any] = bfcl.load_bfcl(args.suite[5:], args.answers)
        return tasks[: args.limit] if args.limit is not None else tasks
    tasks = suite.builtin_suite() if args.suite == "builtin" else suite.load_suite(args.suite)
    tags = [t for t in (args.tags or "").split(",") if t]
    return suite.select(tasks, tags=tags, limit=args.limit)


def compare_command(args: argparse.Namespace, model: Any, *, err: IO[str] | None = None) -> int:
    """Run the comparison the flags describe on `model`; print the table; write the files.
    Returns 0, or 1 when `--fail-under` is given and a protocol falls below it."""
    from textreact.compare import report as render
    from textreact.compare.runner import run_compare

    err = err or sys.stderr
    tasks = load_tasks(args)
    protocols = [p.strip() for p in args.protocols.split(",") if p.strip()]

    def progress(outcome: Any, done: int, total: int) -> None:
        filled = done * 20 // total
        mark = "ok" if outcome.success else "--"
        print(
            f"\r[{'#' * filled}{'.' * (20 - filled)}] {done}/{total} {outcome.protocol:6} "
            f"{mark} {outcome.task[:40]:40}",
            end="" if done < total else "\n",
            file=err,
            flush=True,
        )

    result = run_compare(
        model,
        tasks,
        protocols=protocols,
        repeat=args.repeat,
        concurrency=args.concurrency,
        max_steps=args.max_steps,
        on_outcome=progress,
    )
    result.meta.update(model=getattr(model, "model", type(model).__name__), suite=args.suite)
    print(render.table(result))
    if args.json_file:
        import json

        args.json_file.write_text(
            json.dumps(render.to_json(result), ensure_ascii=False, indent=1, default=str), "utf-8"
        )
    if args.markdown:
        args.markdown.write_text(render.markdown(result), "utf-8")
    if args.chart:
        render.chart(result, args.chart)
    if args.transcripts:
        render.write_transcripts(result, args.transcripts)
    if args.fail_under is not None:
        rates = [render.summarise(result, p)["success_rate"] for p in result.protocols]
        return 1 if min(rates) < args.fail_under else 0
    return 0
