"""Constrained decoding on the embedded model: tokens/s of one text-protocol step with the tools'
GBNF grammar against the same step without it (target: a constrained step costs at most 1.5x,
i.e. plain tokens/s / constrained tokens/s <= 1.5), the grammar's build time and size, and the
share of constrained replies that are a valid call or an answer.

Speeds are llama.cpp's own decode timings (`timings.predicted_n / predicted_ms`), so prompt
processing, which a grammar does not touch, is left out; prompt caching is off per request.
With the BFCL sample data beside the project, a second case offers 20 real functions at once;
a third holds the built-in tools to a full vocabulary, as the loop does after a copied call.

Run: textreact pull && python bench/constrain_bench.py [--rounds N] [--threads N]
`--quick` (seconds, no model, for CI) runs every case once against a loopback fake server that
answers as llama.cpp does (a step and its decode timings): the grammars are built and the
script's whole path runs, though its figures then say nothing of a model."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx

from textreact import parse, prompt
from textreact.compare.suite import builtin_suite
from textreact.constrain import detect_server, tools_grammar
from textreact.models import local
from textreact.policies.grounding import Hold
from textreact.tools import Tool, builtin_tools

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fakeserver import FakeServer, Reply, chat_completion

QUESTIONS = (
    "What is 15 * 37?",
    "What is the capital of Japan?",
    "What is the population of Taipei divided by the population of New York?",
    "How tall is Mount Everest in feet?",
)
BFCL = Path(__file__).resolve().parents[2] / "shared" / "data" / "bfcl"


def bfcl_case(count: int) -> tuple[list[Tool], list[str]] | None:
    """`count` BFCL functions with distinct names and the questions that go with the first few."""
    path = BFCL / "BFCL_v4_simple_python.json"
    if not path.is_file():
        return None
    tools: dict[str, Tool] = {}
    questions = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            entry = json.loads(line)
            function = entry["function"][0]
            if function["name"] in tools:
                continue
            tools[function["name"]] = Tool.from_schema(
                function["name"], function["description"], function["parameters"]
            )
            if len(questions) < len(QUESTIONS):
                questions.append(entry["question"][0][0]["content"])
            if len(tools) == count:
                break
    return list(tools.values()), questions


def step(client: httpx.Client, url: str, messages: list[dict], fields: dict[str, Any]) -> dict:
    body = {
        "model": local.MODEL_NAME,
        "messages": messages,
        "max_tokens": 160,
        "temperature": 0,
        "cache_prompt": False,
        "stop": ["\nObservation:"],
        **fields,
    }
    reply = client.post(url + "/chat/completions", json=body)
    reply.raise_for_status()
    return reply.json()


def measure(
    client: httpx.Client,
    url: str,
    name: str,
    tools: list[Tool],
    questions: list[str],
    rounds: int,
    constrained_by: list[Tool] | None = None,
) -> float:
    """The cost ratio of one case; `constrained_by`: the tools the grammar is built from, when
    they are not the ones the prompt shows (held copies)."""
    started = time.perf_counter()
    text = tools_grammar(constrained_by or tools, tool_choice="auto")
    built_ms = (time.perf_counter() - started) * 1e3
    print(
        f"\n{name}: {len(tools)} tools, grammar {len(text):,} characters built in {built_ms:.1f} ms"
    )
    totals = {"plain": [0, 0.0], "constrained": [0, 0.0]}
    valid = replies = 0
    for question in questions:
        messages = prompt.opening_messages(question, tools)
        for _ in range(rounds):
            for mode, fields in (("plain", {}), ("constrained", {"grammar": text})):
                body = step(client, url, messages, fields)
                timings = body["timings"]
                totals[mode][0] += timings["predicted_n"]
                totals[mode][1] += timings["predicted_ms"]
                if mode == "constrained":
                    replies += 1
                    parsed = parse(body["choices"][0]["message"]["content"] or "")
                    chosen = next((t for t in tools if t.name == getattr(parsed, "tool", "")), None)
                    if parsed.kind == "final" or (chosen and _fits(chosen, parsed.input)):
                        valid += 1
    speeds = {mode: n / (ms / 1e3) for mode, (n, ms) in totals.items()}
    for mode, (n, ms) in totals.items():
        print(f"  {mode:12} {speeds[mode]:7.1f} tokens/s  ({n} tokens in {ms / 1e3:.2f} s)")
    ratio = speeds["plain"] / speeds["constrained"]
    print(f"  cost ratio   {ratio:7.2f}x  (plain / constrained tokens/s; target <= 1.5x)")
    print(f"  valid steps  {valid}/{replies} constrained replies are a valid call or an answer")
    return ratio


def _fits(tool: Tool, arguments: object) -> bool:
    try:
        tool.parse_arguments(arguments)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


def cases(client: httpx.Client, url: str, questions: list[str], rounds: int) -> list[float]:
    """The cost ratio of each case: the built-in tools, 20 BFCL functions, the held tools."""
    ratios = [measure(client, url, "built-in tools", builtin_tools(), questions, rounds)]
    case = bfcl_case(20)
    if case is None:
        print(f"\n(no BFCL data at {BFCL}: the 20-function case is left out)")
    else:
        tools, asked = case
        ratios.append(
            measure(client, url, "BFCL simple_python", tools, asked[: len(questions)], rounds)
        )
    # After a copy: both tools held to a vocabulary as large as a pattern holds (the
    # suite's questions stand in for what the calls found), the worst case of the hold.
    hold = Hold()
    hold.add("calculator", ["expression"])
    hold.add("lookup_fact", ["query"])
    found = "\n".join(task.question for task in builtin_suite())
    tools = builtin_tools()
    held = hold.offer(tools, QUESTIONS[2], found)
    name = "built-in tools, held to the run's words"
    ratios.append(measure(client, url, name, tools, questions, rounds, held))
    return ratios


def fake_llama() -> FakeServer:
    """A loopback server that answers every request as llama.cpp would: a step, and timings."""
    body = chat_completion(
        'Thought: multiply.\nAction: calculator\nAction Input: {"expression": "15*37"}'
    )
    body["timings"] = {"predicted_n": 24, "predicted_ms": 120.0}
    return FakeServer([Reply(body=body)] * 64)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--rounds", type=int, default=2, help="repeats of each question")
    options.add_argument("--threads", type=int, default=1, help="llama.cpp threads")
    options.add_argument("--quick", action="store_true", help="seconds, no model: a fake server")
    args = options.parse_args()
    if args.quick:
        with fake_llama() as server, httpx.Client(timeout=60) as client:
            ratios = cases(client, server.base_url, list(QUESTIONS[:1]), 1)
    else:
        gguf = local.gguf_path(local.default_cache_dir(os.environ))
        if not gguf.is_file():
            sys.exit(f"no model at {gguf}: run `textreact pull` first")
        with (
            local.local_server(gguf, threads=args.threads) as url,
            httpx.Client(timeout=600) as client,
        ):
            print(f"server: {detect_server(url)}")
            ratios = cases(client, url, list(QUESTIONS), args.rounds)
    print(f"\nworst cost ratio: {max(ratios):.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
