"""Several models' reports -> one matrix of model x protocol: its rows, the terminal table, JSON,
Markdown and a chart. Every figure is read from `report.summarise`, so a row of the matrix
says exactly what the one-model table says for that model and protocol."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textreact.compare import report as single
from textreact.compare.runner import Report

#: The columns of the matrix: header, summary key, format.
COLUMNS = (
    ("success", "success_rate", "{:.0%}"),
    ("valid calls", "valid_call_rate", "{:.0%}"),
    ("prompt tok/task", "mean_prompt_tokens", "{:.0f}"),
    ("completion tok/task", "mean_completion_tokens", "{:.0f}"),
    ("seconds/task", "mean_seconds", "{:.2f}"),
)
#: What the `constrained` column shows for the constrained protocol's verdicts.
_CONSTRAINED_CELL = {"constrained": "yes", "partly": "partly", "unconstrained": "no"}


@dataclass(frozen=True)
class Matrix:
    """A comparison over several models, served one at a time: each model's report in the
    order they ran, and the models that have not run (yet) or could not start."""

    reports: tuple[tuple[str, Report], ...]
    protocols: tuple[str, ...]
    #: Every model of the comparison, in order, run or not.
    models: tuple[str, ...]
    #: Model name -> why it could not be started.
    failed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def pending(self) -> tuple[str, ...]:
        ran = {name for name, _ in self.reports} | set(self.failed)
        return tuple(name for name in self.models if name not in ran)


def rows(matrix: Matrix) -> list[dict[str, Any]]:
    """One record per model and protocol: the matrix's figures, as `--json` writes them."""
    records = []
    for name, report in matrix.reports:
        for protocol in report.protocols:
            summary = single.summarise(report, protocol)
            record: dict[str, Any] = {"model": name, "protocol": protocol, "runs": summary["runs"]}
            record.update({key: summary[key] for _, key, _ in COLUMNS})
            record.update(
                calls_expected=summary["calls_expected"],
                success_rate_min=summary["success_rate_min"],
                success_rate_max=summary["success_rate_max"],
                constrained=summary.get("constrained"),
                native_support=summary.get("native_support"),
            )
            records.append(record)
    return records


def _grid(matrix: Matrix) -> tuple[list[str], list[list[str]]]:
    header = ["model", "protocol", *(label for label, _, _ in COLUMNS), "constrained"]
    repeated = any(report.repeat > 1 for _, report in matrix.reports)
    grid = []
    for record in rows(matrix):
        cells = [form.format(record[key]) for _, key, form in COLUMNS]
        if repeated:
            low, high = record["success_rate_min"], record["success_rate_max"]
            cells[0] += f" ({low:.0%}-{high:.0%})"
        shown = _CONSTRAINED_CELL.get(record["constrained"], "")
        grid.append([record["model"], record["protocol"], *cells, shown])
    return header, grid


def notes(matrix: Matrix) -> list[str]:
    """The lines under the matrix: each model's notes, then the models that did not run."""
    lines = [f"{len(matrix.models)} models, {matrix.seconds:.1f} s wall"]
    for name, report in matrix.reports:
        lines += [f"{name}: {note}" for note in single.notes(report)]
    lines += [f"{name}: not started: {why}" for name, why in matrix.failed.items()]
    if matrix.pending:
        lines.append(f"partial: not run yet: {', '.join(matrix.pending)}")
    return lines


def table(matrix: Matrix) -> str:
    """The terminal table, one line per model and protocol."""
    return "\n".join([*single.aligned(*_grid(matrix), left=2), *notes(matrix)])


def markdown(matrix: Matrix) -> str:
    """The matrix as Markdown, with the failed tasks of each model and protocol."""
    lines = [*single.markdown_grid(*_grid(matrix)), "", *(f"- {n}" for n in notes(matrix)), ""]
    lines += [
        f"**{name} / {p}** failed: {single.failed_tasks(report, p)}"
        for name, report in matrix.reports
        for p in report.protocols
    ]
    return "\n".join(lines) + "\n"


def to_json(matrix: Matrix) -> dict[str, Any]:
    """The `--json` document of several models: `matrix` (the rows), and under `models` each
    model's own one-model document (meta, summary, runs)."""
    first = matrix.reports[0][1] if matrix.reports else None
    return {
        "meta": {
            **matrix.meta,
            "models": list(matrix.models),
            "protocols": list(matrix.protocols),
            "tasks": len(first.tasks) if first else None,
            "repeat": first.repeat if first else None,
            "seconds": round(matrix.seconds, 3),
            "partial": bool(matrix.pending) or _partial(matrix),
        },
        "matrix": rows(matrix),
        "models": {name: single.to_json(report) for name, report in matrix.reports},
        "not_started": dict(matrix.failed),
        "pending": list(matrix.pending),
    }


def _partial(matrix: Matrix) -> bool:
    return any(
        len(r.outcomes) < len(r.tasks) * len(r.protocols) * r.repeat for _, r in matrix.reports
    )


def write_json(matrix: Matrix, path: str | Path) -> None:
    """The `--json` document, replacing any earlier (partial) one whole."""
    single.write_text(path, single.json_text(to_json(matrix)))


def chart(matrix: Matrix, path: str | Path) -> None:
    """A PNG with four panels of grouped bars (a group per model, a bar per protocol): success
    rate, valid-call rate, tokens per task (prompt below, completion above) and seconds."""
    plt = single.chart_backend()
    records = rows(matrix)
    names = [name for name, _ in matrix.reports]
    figure, axes = plt.subplots(2, 2, figsize=(max(8, 1.6 * len(names) + 4), 6.4))
    width = 0.8 / max(1, len(matrix.protocols))
    for slot, protocol in enumerate(matrix.protocols):
        mine = {r["model"]: r for r in records if r["protocol"] == protocol}
        at = [i + (slot - (len(matrix.protocols) - 1) / 2) * width for i in range(len(names))]

        def figure_of(key: str, scale: float = 1.0, mine: dict = mine) -> list[float]:
            return [mine[n][key] * scale if n in mine else 0.0 for n in names]

        colour = single.COLOURS.get(protocol, "#937860")
        style = {"width": width, "color": colour}
        axes[0][0].bar(at, figure_of("success_rate", 100), label=protocol, **style)
        axes[0][1].bar(at, figure_of("valid_call_rate", 100), **style)
        prompt = figure_of("mean_prompt_tokens")
        axes[1][0].bar(at, prompt, alpha=0.55, **style)
        axes[1][0].bar(at, figure_of("mean_completion_tokens"), bottom=prompt, **style)
        axes[1][1].bar(at, figure_of("mean_seconds"), **style)
    labels = (
        "success rate (%)",
        "valid first calls (%)",
        "tokens per task (prompt pale)",
        "seconds per task",
    )
    for axis, label in zip(axes.flat, labels, strict=True):
        axis.set_ylabel(label)
        axis.set_xticks(range(len(names)), names, rotation=20 if len(names) > 3 else 0)
    axes[0][0].set_ylim(0, 100)
    axes[0][1].set_ylim(0, 100)
    axes[0][0].legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
