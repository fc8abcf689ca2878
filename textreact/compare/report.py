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
from textreact.compare.suite import Task
from textreact.errors import MissingExtraError

#: What each native verdict means for a reader.
SUPPORT_NOTES = {
    "supported": "native tool calls came back",
    "rejected": "native unsupported: the server rejected tools=",
    "as_text": "native unsupported: the model wrote its calls as JSON text",
    "ignored": "native unsupported or ignored: no tool call came back in any task",
}
#: What each verdict on the constrained protocol means for a reader.
CONSTRAIN_NOTES = {
    "constrained": "every run was decoded under the tools' grammar",
    "partly": "only some runs were decoded under the tools' grammar",
    "unconstrained": "not constrained: no reply was decoded under the tools' grammar",
}
#: The protocol whose rows say whether the grammar was taken.
CONSTRAINED = "text+grammar"
_SUMMED = (
    "tool_calls",
    "tool_errors",
    "format_errors",
    "repairs",
    "hallucinations_cut",
    "truncated",
    "calls_as_text",
    "constrained_turns",
)


def expects_call(item: Task | Entry) -> bool:
    """Whether a run of `item` should call a tool: every BFCL entry, and every task but those
    tagged `no-tool`."""
    return isinstance(item, Entry) or "no-tool" not in item.tags


def summarise(report: Report, protocol: str) -> dict[str, Any]:
    """The figures of one protocol; with repeats, the spread of the success rate across them.
    The valid-call rate is over the runs that should call a tool (`expects_call`)."""
    runs = [o for o in report.outcomes if o.protocol == protocol]
    count = len(runs) or 1
    items = {item.id: item for item in report.tasks}
    expecting = [o for o in runs if expects_call(items[o.task])]
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
        "calls_expected": len(expecting),
        "valid_call_rate": (
            sum(o.measures["first_call_valid"] for o in expecting) / (len(expecting) or 1)
        ),
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
    if protocol == CONSTRAINED:
        summary.update(constrain_verdict(report, runs))
    return summary


def constrain_verdict(report: Report, runs: list[Outcome]) -> dict[str, Any]:
    """Whether the constrained protocol's runs were constrained, and why not where they were
    not (the client's own note, else its mode)."""
    constrained = sum(o.measures["constrained_turns"] > 0 for o in runs)
    verdict = (
        "constrained" if runs and constrained == len(runs)
        else "partly" if constrained else "unconstrained"
    )  # fmt: skip
    note = f"{CONSTRAIN_NOTES[verdict]} ({constrained} of {len(runs)} runs)"
    if verdict != "constrained":
        mode = report.meta.get("constrain")
        why = report.meta.get("constrain_note") or (
            "the client's constrain mode is off" if mode == "off"
            else "the model client sends no grammar" if mode is None
            else "the server constrained no reply"
        )  # fmt: skip
        note += f": {why}"
    return {"constrained_runs": constrained, "constrained": verdict, "constrain_note": note}


def to_json(report: Report) -> dict[str, Any]:
    """The `--json` document: meta, a `summary` per protocol, and each run with its answer (and
    for BFCL the calls of the reply and the checker's verdict, so the scoring can be audited)."""
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
        record["calls"] = list(outcome.calls)
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


def notes(report: Report) -> list[str]:
    """The lines under a report's table: its size, whether it is partial, what the server did
    with grammars and native tools, and each run's note."""
    lines = [f"{len(report.tasks)} tasks x {report.repeat} repeat(s), {report.seconds:.1f} s wall"]
    planned = len(report.tasks) * len(report.protocols) * report.repeat
    if len(report.outcomes) < planned:
        lines.append(f"partial: {len(report.outcomes)} of {planned} runs finished")
    if report.meta.get("parallel_calls"):
        lines.append("parallel calls: a reply of the text protocols may make several calls")
    if CONSTRAINED in report.protocols:
        lines.append(f"{CONSTRAINED}: " + summarise(report, CONSTRAINED)["constrain_note"])
    if "native" in report.protocols:
        lines.append("native: " + summarise(report, "native")["native_note"])
    lines += [f"{o.task} ({o.protocol}): {o.note}" for o in report.outcomes if o.note]
    return lines


def aligned(header: list[str], rows: list[list[str]], *, left: int = 1) -> list[str]:
    """A grid as terminal lines: the first `left` columns flush left, the figures flush right."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return [
        "  ".join(
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in [header, *rows]
    ]


def markdown_grid(header: list[str], rows: list[list[str]]) -> list[str]:
    """A grid as Markdown table lines."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def failed_tasks(report: Report, protocol: str) -> str:
    """The ids of the tasks that failed through `protocol`, for the Markdown report."""
    failed = sorted({o.task for o in report.outcomes if o.protocol == protocol and not o.success})
    return ", ".join(failed) if failed else "none"


def table(report: Report) -> str:
    """The terminal table, one column per protocol."""
    return "\n".join([*aligned(*_grid(report)), *notes(report)])


def markdown(report: Report) -> str:
    """The same table as Markdown, with the failed tasks listed per protocol."""
    lines = [*markdown_grid(*_grid(report)), "", *(f"- {note}" for note in notes(report)), ""]
    lines += [f"**{p}** failed: {failed_tasks(report, p)}" for p in report.protocols]
    return "\n".join(lines) + "\n"


#: One colour per protocol, the same in every chart.
COLOURS = {"text": "#4c72b0", "text+grammar": "#55a868", "native": "#dd8452"}


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
    colours = [COLOURS.get(p, "#937860") for p in names]
    left.bar(names, [s["success_rate"] * 100 for s in summaries], color=colours)
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
    path = folder / f"{safe_name(outcome.task)}.{outcome.protocol}.{outcome.repeat}.json"
    write_text(path, json_text(data))
    return path


def write_json(report: Report, path: str | Path) -> None:
    """The `--json` document, replacing any earlier (partial) one whole."""
    write_text(path, json_text(to_json(report)))


def json_text(data: Any) -> str:
    """A report's JSON as written to files: readable UTF-8, anything unknown as its str()."""
    return json.dumps(data, ensure_ascii=False, indent=1, default=str)


def write_text(path: str | Path, text: str) -> None:
    """`text` into `path` whole or not at all; unencodable characters as backslash escapes."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.partial")
    temporary.write_text(text, encoding="utf-8", errors="backslashreplace")
    os.replace(temporary, path)


def safe_name(name: str) -> str:
    """`name` as one file or folder name: anything but letters, digits and `-_.` as `_`."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
