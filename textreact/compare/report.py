"""A comparison's outcomes -> summaries and their renderings: the terminal table, JSON, Markdown,
a bar chart, and one transcript file per run.

`summarise` is the one place the per-protocol figures are computed; every rendering reads it.
Files are written whole or not at all (a temporary file, then a rename), so a report rewritten
after every run and interrupted mid-write is still the last complete one; a lone surrogate in
an answer is written as its escape, never a failed write."""

from __future__ import annotations

import json
import os
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from textreact.compare.bfcl import Entry
from textreact.compare.runner import Outcome, Report, native_support
from textreact.errors import MissingExtraError

#: What each native verdict means for a reader.
SUPPORT_NOTES = {
    "supported": "native tool calls came back",
    "rejected": "native unsupported: the server rejected tools=",
    "as_text": "native unsupported: the model wrote its calls as JSON text",
    "ignored": "native unsupported or ignored: no tool call came back in any task",
}
_SUMMED = (
    "tool_calls",
    "tool_errors",
    "format_errors",
    "repairs",
    "hallucinations_cut",
    "truncated",
    "calls_as_text",
)


def summarise(report: Report, protocol: str) -> dict[str, Any]:
    """The figures of one protocol; with repeats, the spread of the success rate across them."""
    runs = [o for o in report.outcomes if o.protocol == protocol]
    count = len(runs) or 1
    rates = []
    for r in range(report.repeat):
        of_repeat = [o.success for o in runs if o.repeat == r]
        rates.append(sum(of_repeat) / (len(of_repeat) or 1))
    summary: dict[str, Any] = {
        "runs": len(runs),
        "success_rate": sum(o.success for o in runs) / count,
        "success_rate_min": min(rates),
        "success_rate_max": max(rates),
        "success_rate_stdev": statistics.pstdev(rates),
        "best_effort_correct": sum(o.best_effort_correct for o in runs),
        "mean_steps": sum(o.measures["steps"] for o in runs) / count,
    }
    summary.update({k: sum(o.measures[k] for o in runs) for k in _SUMMED})
    summary.update(
        mean_prompt_tokens=sum(o.measures["prompt_tokens"] for o in runs) / count,
        mean_completion_tokens=sum(o.measures["completion_tokens"] for o in runs) / count,
        mean_seconds=sum(o.measures["seconds"] for o in runs) / count,
        stop_reasons=dict(Counter(o.measures["stop_reason"] for o in runs)),
    )
    if protocol == "native":
        support = native_support(runs)
        summary.update(native_support=support, native_note=SUPPORT_NOTES[support])
    return summary


def to_json(report: Report) -> dict[str, Any]:
    """The `--json` document: meta, a `summary` per protocol, and each run with its answer (and
    for BFCL the call that was made and the checker's verdict, so the scoring can be audited)."""
    tasks = {item.id: item for item in report.tasks}
    return {
        "meta": {
            **report.meta,
            "protocols": list(report.protocols),
            "tasks": len(report.tasks),
            "repeat": report.repeat,
            "concurrency": report.concurrency,
            "seconds": round(report.seconds, 3),
        },
        "summary": {p: summarise(report, p) for p in report.protocols},
        "runs": [_run_record(o, tasks[o.task]) for o in report.outcomes],
    }


def _run_record(outcome: Outcome, item: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "task": outcome.task,
        "protocol": outcome.protocol,
        "repeat": outcome.repeat,
        "question": item.question,
        "success": outcome.success,
        "best_effort_correct": outcome.best_effort_correct,
        "answer": outcome.result.answer,
        "error": outcome.result.error,
        "note": outcome.note,
        **{k: round(v, 4) if isinstance(v, float) else v for k, v in outcome.measures.items()},
    }
    if isinstance(item, Entry):
        record["call"] = outcome.call
        record["check"] = outcome.check and {
            "valid": outcome.check.valid,
            "error": outcome.check.error,
            "error_type": outcome.check.error_type,
        }
    else:
        record.update(expected=item.answer, pattern=item.pattern, tags=list(item.tags))
    return record


_ROWS = (
    ("success rate", "success_rate", "{:.0%}"),
    ("  spread (min-max)", None, ""),
    ("best-effort right", "best_effort_correct", "{}"),
    ("mean steps", "mean_steps", "{:.2f}"),
    ("tool calls", "tool_calls", "{}"),
    ("tool errors", "tool_errors", "{}"),
    ("format errors", "format_errors", "{}"),
    ("repairs", "repairs", "{}"),
    ("observations cut", "hallucinations_cut", "{}"),
    ("truncated", "truncated", "{}"),
    ("calls as text", "calls_as_text", "{}"),
    ("prompt tokens/task", "mean_prompt_tokens", "{:.0f}"),
    ("completion tok/task", "mean_completion_tokens", "{:.0f}"),
    ("seconds/task", "mean_seconds", "{:.2f}"),
)


def _cells(summary: dict[str, Any]) -> list[str]:
    cells = []
    for _, key, form in _ROWS:
        if key is None:
            low, high = summary["success_rate_min"], summary["success_rate_max"]
            cells.append(f"{low:.0%}-{high:.0%}")
        else:
            cells.append(form.format(summary[key]))
    return cells


def _grid(report: Report) -> tuple[list[str], list[list[str]]]:
    summaries = {p: summarise(report, p) for p in report.protocols}
    columns = {p: _cells(s) for p, s in summaries.items()}
    rows = [
        [label] + [columns[p][i] for p in report.protocols]
        for i, (label, _, _) in enumerate(_ROWS)
        if report.repeat > 1 or _ROWS[i][1] is not None
    ]
    return ["", *report.protocols], rows


def _notes(report: Report) -> list[str]:
    notes = [f"{len(report.tasks)} tasks x {report.repeat} repeat(s), {report.seconds:.1f} s wall"]
    planned = len(report.tasks) * len(report.protocols) * report.repeat
    if len(report.outcomes) < planned:
        notes.append(f"partial: {len(report.outcomes)} of {planned} runs finished")
    if "native" in report.protocols:
        notes.append("native: " + summarise(report, "native")["native_note"])
    notes += [f"{o.task} ({o.protocol}): {o.note}" for o in report.outcomes if o.note]
    return notes


def table(report: Report) -> str:
    """The terminal table, one column per protocol."""
    header, rows = _grid(report)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in [header, *rows]
    ]
    return "\n".join([*lines, *_notes(report)])


def markdown(report: Report) -> str:
    """The same table as Markdown, with the failed tasks listed per protocol."""
    header, rows = _grid(report)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines += ["", *(f"- {note}" for note in _notes(report)), ""]
    for protocol in report.protocols:
        failed = sorted(
            {o.task for o in report.outcomes if o.protocol == protocol and not o.success}
        )
        lines.append(f"**{protocol}** failed: {', '.join(failed) if failed else 'none'}")
    return "\n".join(lines) + "\n"


def chart_backend() -> Any:
    """matplotlib's pyplot on its file-only backend, or the install hint for the extra."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingExtraError("--chart needs matplotlib: pip install 'textreact[chart]'") from exc
    return plt


def chart(report: Report, path: str | Path) -> None:
    """A PNG with two bar panels per protocol: success rate, and mean tokens per task."""
    plt = chart_backend()
    summaries = [summarise(report, p) for p in report.protocols]
    figure, (left, right) = plt.subplots(1, 2, figsize=(8, 3.2))
    names = list(report.protocols)
    left.bar(names, [s["success_rate"] * 100 for s in summaries], color=["#4c72b0", "#dd8452"])
    left.set_ylim(0, 100)
    left.set_ylabel("success rate (%)")
    prompt = [s["mean_prompt_tokens"] for s in summaries]
    completion = [s["mean_completion_tokens"] for s in summaries]
    right.bar(names, prompt, label="prompt", color="#8c8c8c")
    right.bar(names, completion, bottom=prompt, label="completion", color="#55a868")
    right.set_ylabel("tokens per task")
    right.legend()
    title = report.meta.get("model")
    if title:
        figure.suptitle(str(title))
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def write_transcripts(report: Report, folder: str | Path) -> list[Path]:
    """One JSON file per run, `<task>.<protocol>.<repeat>.json`: the run, then the messages."""
    tasks = {item.id: item for item in report.tasks}
    return [write_transcript(o, tasks[o.task], folder) for o in report.outcomes]


def write_transcript(outcome: Outcome, item: Any, folder: str | Path) -> Path:
    """The transcript file of one run, written as soon as the run ends."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        **_run_record(outcome, item),
        "result": outcome.result.to_dict(),
        "messages": outcome.result.messages,
    }
    path = folder / f"{_safe(outcome.task)}.{outcome.protocol}.{outcome.repeat}.json"
    write_text(path, json.dumps(data, ensure_ascii=False, indent=1, default=str))
    return path


def write_json(report: Report, path: str | Path) -> None:
    """The `--json` document, replacing any earlier (partial) one whole."""
    write_text(path, json.dumps(to_json(report), ensure_ascii=False, indent=1, default=str))


def write_text(path: str | Path, text: str) -> None:
    """`text` into `path` whole or not at all; unencodable characters as backslash escapes."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.partial")
    temporary.write_text(text, encoding="utf-8", errors="backslashreplace")
    os.replace(temporary, path)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
