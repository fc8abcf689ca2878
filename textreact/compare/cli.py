"""`textreact compare` flags -> a comparison run -> the table, files and exit code. The lead's
`cli.py` checks the flags with `prepare_compare` before any model starts, then opens the one
model and calls `compare_command`, or hands `compare_models` an opener per `--model-spec` /
`--gguf`; this module knows only the flags, never the environment.

Several models are served one at a time, each through every protocol, into one matrix of
model x protocol; one model keeps the one-model table. Everything the flags ask to write is
checked before the first request, and written as runs end: each run's transcript when it
finishes, the JSON and Markdown reports rewritten after every run (marked partial until the
last), so an interrupted comparison leaves what it had done."""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from textreact.compare.models import ModelSpec, check_specs, gguf_type, spec_type
from textreact.errors import ConfigError, ModelError

#: Opens one compared model for as long as its runs take (an embedded server starts and stops).
Opener = Callable[[], AbstractContextManager[Any]]
#: The exit code when a model of several could not be started (the CLI's "model failed").
EXIT_NOT_STARTED = 3


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
        "server takes one) and native (default: all three; text,native with --constrain off)",
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
    for flag, path in (("--json", args.json_file), ("--markdown", args.markdown)):
        if path is not None:
            check_writable(path, flag)
    if args.chart is not None:
        check_writable(args.chart, "--chart")
        from textreact.compare.report import chart_backend

        chart_backend()  # a missing extra is named now, not after every run
    if args.transcripts is not None:
        check_folder(args.transcripts, "--transcripts")
    return Plan(tasks, protocols, specs)


def select_protocols(flag: str | None, constrain: str) -> tuple[str, ...]:
    """The protocols `--protocols` names (default: all three, or text,native when `--constrain
    off` leaves no grammar to send); text+grammar asked for with `--constrain off` is refused,
    as its row would only repeat the text row."""
    from textreact.compare.runner import PROTOCOLS

    if flag is None:
        return tuple(p for p in PROTOCOLS if constrain != "off" or p != "text+grammar")
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
    return compare_models(args, [(None, lambda: contextlib.nullcontext(model))], err=err, plan=plan)


def compare_models(
    args: argparse.Namespace,
    models: Sequence[tuple[str | None, Opener]],
    *,
    err: IO[str] | None = None,
    plan: Plan | None = None,
) -> int:
    """Run the comparison on each model in turn, each opened only for its own runs (a name of
    None: the model's own name); print the table (a matrix for several models); write the files
    as runs end. Returns 0; 1 when `--fail-under` is given and a model's protocol falls below
    it; EXIT_NOT_STARTED when a model of several could not be started (the others still run).
    One model that cannot start raises its ModelError, as before."""
    if not models:
        raise ConfigError("compare_models needs at least one (name, opener) pair")
    comparison = _Comparison(args, plan or prepare_compare(args), models, err or sys.stderr)
    for name, opener in models:
        try:
            with opener() as model:
                comparison.run(name, model)
        except ModelError as exc:
            if len(models) == 1:
                raise
            comparison.not_started(name or "?", exc)
    return comparison.finish()


class _Comparison:
    """One command's comparison as it goes: the reports of the models done, the runs of the one
    running, and the files, rewritten whole after every run."""

    def __init__(
        self,
        args: argparse.Namespace,
        plan: Plan,
        models: Sequence[tuple[str | None, Opener]],
        err: IO[str],
    ) -> None:
        self.args, self.plan, self.err = args, plan, err
        self.names = tuple(name or "" for name, _ in models)
        self.several = len(models) > 1
        self.items = {item.id: item for item in plan.tasks}
        self.reports: list[tuple[str, Any]] = []
        self.failed: dict[str, str] = {}
        self.started = time.perf_counter()
        self.count = 0
        self.total = len(plan.tasks) * len(plan.protocols) * args.repeat * len(models)

    def run(self, name: str | None, model: Any) -> None:
        """Every task through every protocol on `model`, written as each run ends."""
        from textreact.compare import report as render
        from textreact.compare.runner import Report, constrain_meta, run_compare

        served = getattr(model, "model", type(model).__name__)
        label = name or served
        meta = {"model": served, "name": label, "suite": self.args.suite}
        outcomes: list[Any] = []
        started = time.perf_counter()
        folder = self.args.transcripts
        if folder is not None and self.several:
            folder = folder / render.safe_name(label)

        def report_of() -> Report:
            return Report(
                protocols=self.plan.protocols,
                tasks=self.plan.tasks,
                outcomes=tuple(outcomes),
                repeat=self.args.repeat,
                concurrency=self.args.concurrency,
                seconds=time.perf_counter() - started,
                meta={**meta, **constrain_meta(model)},
            )

        def progress(outcome: Any, count: int, total: int) -> None:
            outcomes.append(outcome)
            if folder is not None:
                render.write_transcript(outcome, self.items[outcome.task], folder)
            self.write((label, report_of()))
            self.count += 1
            self.show(label, outcome)

        try:
            result = run_compare(
                model,
                self.plan.tasks,
                protocols=self.plan.protocols,
                repeat=self.args.repeat,
                concurrency=self.args.concurrency,
                max_steps=self.args.max_steps,
                on_outcome=progress,
            )
        except KeyboardInterrupt:
            if self.count and (self.args.json_file or self.args.markdown or folder):
                print(f"\ninterrupted: the {self.count} finished runs are written", file=self.err)
            raise
        result.meta.update(meta)
        self.reports.append((label, result))
        self.write()

    def not_started(self, name: str, exc: Exception) -> None:
        self.failed[name] = str(exc)
        lead = "\n" if 0 < self.count < self.total else ""
        print(f"{lead}{name}: could not be started: {exc}", file=self.err, flush=True)
        self.write()

    def show(self, label: str, outcome: Any) -> None:
        filled = self.count * 20 // self.total
        mark = "ok" if outcome.success else "--"
        model = f"{label[:16]:16} " if self.several else ""
        print(
            f"\r[{'#' * filled}{'.' * (20 - filled)}] {self.count}/{self.total} {model}"
            f"{outcome.protocol:12} {mark} {outcome.task[:40]:40}",
            end="" if self.count < self.total else "\n",
            file=self.err,
            flush=True,
        )

    def view(self, running: tuple[str, Any] | None = None) -> Any:
        """The one model's report, or the matrix of every model so far (`running`: the model
        whose runs are under way, with the runs it has finished)."""
        from textreact.compare.matrix import Matrix

        reports = [*self.reports, *([running] if running else [])]
        if not self.several:
            return reports[0][1] if reports else None
        return Matrix(
            reports=tuple(reports),
            protocols=self.plan.protocols,
            models=self.names,
            failed=dict(self.failed),
            seconds=time.perf_counter() - self.started,
            meta={"suite": self.args.suite, "concurrency": self.args.concurrency},
        )

    def write(self, running: tuple[str, Any] | None = None) -> None:
        from textreact.compare import matrix, report

        view = self.view(running)
        if view is None:
            return
        render: Any = matrix if self.several else report
        if self.args.json_file:
            render.write_json(view, self.args.json_file)
        if self.args.markdown:
            report.write_text(self.args.markdown, render.markdown(view))

    def finish(self) -> int:
        """The table printed, the files written a last time, and the exit code."""
        from textreact.compare import matrix, report

        if 0 < self.count < self.total:
            print(file=self.err)
        view = self.view()
        render: Any = matrix if self.several else report
        print(render.table(view))
        self.write()
        if self.args.chart:
            render.chart(view, self.args.chart)
        if self.failed:
            return EXIT_NOT_STARTED
        if self.args.fail_under is not None:
            rates = [
                report.summarise(result, p)["success_rate"]
                for _, result in self.reports
                for p in result.protocols
            ]
            return 1 if rates and min(rates) < self.args.fail_under else 0
        return 0
