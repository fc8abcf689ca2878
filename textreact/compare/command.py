"""A checked plan and its model(s) -> the runs, the table on stdout, the files and the exit code.

Several models are served one at a time, each opened only for its own runs and each through
every protocol, into one matrix of model x protocol; one model keeps the one-model table.
Files are written as runs end: each run's transcript when it finishes, the JSON and Markdown
reports rewritten whole after every run (marked partial until the last), so an interrupted
comparison leaves what it had done."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import IO, Any

from textreact.compare.cli import Plan, prepare_compare
from textreact.errors import ConfigError, ModelError

#: Opens one compared model for as long as its runs take (an embedded server starts and stops).
Opener = Callable[[], AbstractContextManager[Any]]
#: The exit code when a model of several could not be started (the CLI's "model failed").
EXIT_NOT_STARTED = 3


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
        from textreact.compare.runner import (
            Options,
            Report,
            constrain_meta,
            options_meta,
            run_compare,
        )  # fmt: skip

        served = getattr(model, "model", type(model).__name__)
        label = name or served
        meta = {"model": served, "name": label, "suite": self.args.suite}
        args = self.args
        options = Options(
            args.max_steps, args.policies or "none", self.plan.tools, args.tool_choice,
            args.max_tools,
            examples=args.examples or "bundled", decision_bias=args.decision_bias,
            parallel_calls=args.parallel_calls,
        )  # fmt: skip
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
                meta={**meta, **constrain_meta(model), **options_meta(options)},
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
                options=options,
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
            meta={
                "suite": self.args.suite,
                "concurrency": self.args.concurrency,
                "parallel_calls": self.args.parallel_calls,
            },
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
