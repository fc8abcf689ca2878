"""The model matrix: the built-in suite and BFCL entries on real models, each through the text
protocol unconstrained, the text protocol constrained by the tools' grammar, and native tool
calls (and, with `--only ...,own`, the model's own tool format in text), beside the baseline
of a tutorial-style ReAct loop (`naive`, bench/naive_loop.py); one
table of model x protocol with success, valid-call rate, tokens and time.

Models are served one at a time by the embedded llama.cpp server (xllamacpp), one thread.
SmolLM2-135M is the default model (`textreact pull`); the evaluation model comes from
`../shared/tools/eval-model` (Qwen2.5-Coder-0.5B-Instruct, evaluation only, never a dependency).

BFCL's `parallel` and `parallel_multiple` files (`--files parallel,parallel_multiple`) expect
several calls in one reply: `--parallel-calls` lets the text protocols write them (native makes
several either way); each row records whether it was on.

Run: python bench/matrix_bench.py [--models smollm2,qwen] [--limit N] [--bfcl N] [--only ...]
Slow: minutes per model and variant on 2 cores."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from naive_loop import run as naive_run

from textreact.commands.flags import log_odds
from textreact.compare.bfcl import Entry, check_calls, load_bfcl
from textreact.compare.runner import Options, check_parallel_calls, run_compare
from textreact.compare.suite import builtin_suite, load_suite, score, select
from textreact.errors import ConfigError
from textreact.exemplars import CHOICES
from textreact.loading import load_object
from textreact.models.local import MODEL_NAME, default_cache_dir, gguf_path, local_server
from textreact.models.openai_compat import OpenAICompatModel
from textreact.tools import Tool, builtin_tools

ROOT = Path(__file__).resolve().parents[1]
BFCL = ROOT.parent / "shared" / "data" / "bfcl"
#: The protocols of the matrix, as `textreact compare` names them, then the tutorial baseline.
PROTOCOLS = ("text", "text+grammar", "native")
NAIVE = "naive"


def model_files() -> dict[str, Path]:
    files = {"smollm2": gguf_path(default_cache_dir(os.environ))}
    tool = ROOT.parent / "shared" / "tools" / "eval-model"
    if tool.exists():
        done = subprocess.run([str(tool)], capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip():
            files["qwen"] = Path(done.stdout.strip().splitlines()[-1])
    return files


def suites(
    tags: list[str], limit: int | None, bfcl: int, spread: bool, files: list[str], suite: str
) -> dict[str, list[Any]]:
    """The suite's tasks (the built-in one, or a JSONL file) and `bfcl` entries of each BFCL
    file: its first ones, or with `spread` entries evenly spaced across it (the files run in
    topic order, so the first few are alike)."""
    chosen: dict[str, list[Any]] = {}
    if limit != 0:
        tasks = builtin_suite() if suite == "builtin" else load_suite(suite)
        chosen[Path(suite).stem] = select(tasks, tags=tags, limit=limit)
    for name in files:
        path = BFCL / f"BFCL_v4_{name}.json"
        if bfcl:
            entries = load_bfcl(path)
            step = max(1, len(entries) // bfcl) if spread else 1
            chosen[f"bfcl-{name}"] = entries[::step][:bfcl]
    return chosen


def row(report: Any, protocol: str) -> dict[str, Any]:
    outcomes = [o for o in report.outcomes if o.protocol == protocol]
    n = len(outcomes) or 1
    return {
        "tasks": len(outcomes),
        "success": sum(o.success for o in outcomes) / n,
        "valid_call": sum(bool(o.measures.get("first_call_valid")) for o in outcomes) / n,
        "constrained": sum(any(t.constrained for t in o.result.steps) for o in outcomes),
        # turns whose call-or-answer branch the scored decision changed (--decision-bias)
        "overridden": sum(
            t.decision is not None and t.decision.chosen != t.decision.sampled
            for o in outcomes
            for t in o.result.steps
        ),
        "tokens": sum(o.result.usage.completion_tokens for o in outcomes),
        "prompt_tokens": sum(o.result.usage.prompt_tokens for o in outcomes),
        "calls": sum(o.measures.get("tool_calls", 0) for o in outcomes),
        "seconds": sum(o.result.seconds for o in outcomes),
    }


def kept(outcome: Any, transcripts: Path | None) -> None:
    """One run's line on the console, and its transcript where asked: what explains a miss."""
    print(f"  {outcome.protocol} {outcome.task}: {'ok' if outcome.success else 'no'}", flush=True)
    if transcripts is not None:
        line = {"task": outcome.task, "protocol": outcome.protocol, "success": outcome.success,
                **outcome.result.to_dict()}  # fmt: skip
        with transcripts.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")


def naive_row(model: Any, tasks: list[Any], options: Options) -> dict[str, Any]:
    """The tutorial loop over the same tasks, measured as `row` measures textreact's runs: a
    BFCL entry succeeds when its reply's calls pass BFCL's checker (the tutorial reads one call
    a reply, so a `parallel` entry is always short of calls), a suite task on a right
    final answer. Its "valid" is looser than textreact's: the first Action Input parsed as a
    JSON object (the tutorial loop checks no schema, and textreact's check would repair it)."""
    wins = valid = tokens = prompt_tokens = calls = 0
    seconds = 0.0
    for task in tasks:
        if isinstance(task, Entry):
            tools = [
                Tool.from_schema(f["name"], f.get("description", ""), f["parameters"], fn=dict)
                for f in task.functions
            ]
            run = naive_run(model, tools, task.question, max_steps=1)
            check = check_calls(task, [(c["tool"], c["arguments"]) for c in run.calls])
            won = check.valid and (bool(task.ground_truth) or run.answer is not None)
            valid += bool(run.calls) and isinstance(run.calls[0]["arguments"], dict)
        else:
            tools = list(options.tools or builtin_tools())
            run = naive_run(model, tools, task.question, max_steps=options.max_steps)
            won = score(task, run.answer)[0] and task.calls_fit(c["tool"] for c in run.calls)
            valid += bool(run.calls) and isinstance(run.calls[0]["arguments"], dict)
        wins += won
        tokens += run.completion_tokens
        prompt_tokens += run.prompt_tokens
        calls += len(run.calls)
        seconds += run.seconds
        print(f"  {NAIVE} {task.id}: {'ok' if won else 'no'}", flush=True)
    n = len(tasks) or 1
    return {"tasks": len(tasks), "success": wins / n, "valid_call": valid / n, "constrained": 0,
            "tokens": tokens, "prompt_tokens": prompt_tokens, "calls": calls,
            "seconds": seconds}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="smollm2,qwen")
    parser.add_argument("--limit", type=int, default=None, help="tasks of the suite; 0: none")
    parser.add_argument("--tags", default="", help="only suite tasks with one of these tags")
    parser.add_argument("--max-steps", type=int, default=8, help="as the Agent's default")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--bfcl", type=int, default=20, help="entries of each BFCL file; 0: none")
    parser.add_argument("--spread", action="store_true", help="BFCL entries evenly spaced")
    parser.add_argument(
        "--files", default="simple_python,multiple",
        help="BFCL files to run, by the name after BFCL_v4_: simple_python, multiple, "
        "irrelevance, parallel, parallel_multiple",
    )  # fmt: skip
    parser.add_argument(
        "--parallel-calls", action="store_true",
        help="let a reply of the text protocols make several calls (compare --parallel-calls); "
        "the parallel files need it for the text protocols to write several calls at all",
    )  # fmt: skip
    parser.add_argument(
        "--only",
        default=",".join((*PROTOCOLS, NAIVE)),
        help="protocols to run (and naive); own (the model's own tool format) when named",
    )
    parser.add_argument("--policies", default="none", help="none, small, or policy names")
    parser.add_argument("--suite", default="builtin", help="builtin, or a JSONL task file")
    parser.add_argument("--tools", help="MODULE:NAME of the suite's tools (compare --tools)")
    parser.add_argument("--tool-choice", default="auto", help="every run's tool choice")
    parser.add_argument(
        "--max-tools", type=int, default=None, metavar="K",
        help="offer each step only the K tools that fit it best (the tool_budget policy)",
    )  # fmt: skip
    parser.add_argument(
        "--examples", choices=CHOICES, default="bundled", help="the text protocols' worked example"
    )
    parser.add_argument(
        "--decision-bias", type=log_odds, default=None, metavar="X",
        help="the text protocols' scored call-or-answer choice, X log-odds for calling",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, default=None, help="write the rows here too")
    parser.add_argument(
        "--transcripts", type=Path, default=None,
        help="append each run here as a JSON line: task, protocol, success, answer, steps",
    )  # fmt: skip
    parser.add_argument(
        "--prompt-cache", action="store_true",
        help="keep llama.cpp's prompt cache: many times faster on a suite that shares one "
        "system prompt; a reply may differ from an uncached one in rare tokens",
    )  # fmt: skip
    args = parser.parse_args()
    only = [p for p in args.only.split(",") if p != NAIVE]
    try:
        check_parallel_calls(only, args.parallel_calls)  # before a model starts
    except ConfigError as exc:
        parser.error(str(exc))
    missing = [f for f in args.files.split(",") if not (BFCL / f"BFCL_v4_{f}.json").is_file()]
    if args.bfcl and missing:
        parser.error(f"no BFCL_v4_{{name}}.json in {BFCL} for --files {','.join(missing)} "
                     "(--bfcl 0 runs the suite alone)")  # fmt: skip
    tools = None if args.tools is None else tuple(load_object(args.tools, "--tools", "x.py:T"))
    options = Options(
        args.max_steps, args.policies, tools, args.tool_choice, args.max_tools,
        examples=args.examples, decision_bias=args.decision_bias,
        parallel_calls=args.parallel_calls,
    )  # fmt: skip
    files = model_files()
    rows = []
    for name in args.models.split(","):
        if name not in files or not files[name].exists():
            print(f"skipping {name}: no model file (textreact pull / eval-model)", file=sys.stderr)
            continue
        with local_server(files[name], n_ctx=8192) as url:
            model = OpenAICompatModel(
                MODEL_NAME, url, extra_body={"cache_prompt": args.prompt_cache}, constrain="auto",
                timeout=600, max_retries=0, max_tokens=args.max_tokens,
            )  # fmt: skip
            tags = [t for t in args.tags.split(",") if t]
            for suite, tasks in suites(
                tags, args.limit, args.bfcl, args.spread, args.files.split(","), args.suite
            ).items():
                started = time.perf_counter()
                chosen = args.only.split(",")
                protocols = [p for p in chosen if p != NAIVE]
                measured = {}
                if protocols:
                    report = run_compare(
                        model, tasks, protocols=protocols, options=options,
                        on_outcome=lambda o, done, total: kept(o, args.transcripts),
                    )  # fmt: skip
                    measured = {p: row(report, p) for p in protocols}
                if NAIVE in chosen:
                    measured[NAIVE] = naive_row(model, tasks, options)
                for protocol in chosen:
                    rows.append({"model": name, "variant": protocol, "suite": suite,
                                 "tool_choice": args.tool_choice, "policies": args.policies,
                                 "max_tools": args.max_tools,
                                 "examples": args.examples,
                                 "decision_bias": args.decision_bias,
                                 "parallel_calls": args.parallel_calls,
                                 **measured[protocol]})  # fmt: skip
                    print(json.dumps(rows[-1]), flush=True)
                print(f"({time.perf_counter() - started:.0f} s)", flush=True)
                if args.json:  # after each suite, so a long run keeps what it measured
                    args.json.write_text(json.dumps(rows, indent=1))
            model.close()
    print(f"\n{'model':<8} {'variant':<13} {'suite':<24} {'tasks':>5} {'success':>8} "
          f"{'valid':>8} {'constr.':>7} {'calls':>6} {'tokens':>7} {'seconds':>8}")  # fmt: skip
    for r in rows:
        print(
            f"{r['model']:<8} {r['variant']:<13} {r['suite']:<24} {r['tasks']:>5} "
            f"{r['success']:>8.0%} {r['valid_call']:>8.0%} {r['constrained']:>7} "
            f"{r['calls']:>6} {r['tokens']:>7} {r['seconds']:>8.0f}"
        )
    if args.parallel_calls:
        print("(text protocols with --parallel-calls: a reply may make several calls)")


if __name__ == "__main__":
    main()
