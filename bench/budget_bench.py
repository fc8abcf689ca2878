"""The tool budget (`Agent(max_tools=k)`) over 150 tools: the time to index them (once per tool
set: the first run over them builds the index, later runs reuse it) and to rank them at each
step, what a scripted run costs with and without the budget (the first run, and later ones),
the size of the prompt and grammar each offers, and how often the tools a task needs are among
those offered at its first step (recall@k) for the user's-tools suites. Figures only; nothing here
asserts a speed, and no model runs (recall is of the ranking alone, not of any model's calls).

The 150 tools: the user's-tools suite's 15 (bench/usertools/tools.py), the reference MCP
servers' 14 (tests/corpus/mcp_tools.json), and 121 made-up CRUD tools as a big server brings.

    python bench/budget_bench.py [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from textreact import Agent, ScriptedModel, Tool
from textreact.loading import load_tools
from textreact.policies.relevance import Relevance, indexed, ranked_texts, words

ROOT = Path(__file__).resolve().parents[1]
VERBS = ("create", "delete", "update", "list", "get", "search", "archive", "export")
NOUNS = (
    "invoice",
    "customer",
    "project",
    "contact",
    "note",
    "report",
    "backup",
    "playlist",
    "recipe",
    "vehicle",
    "patient",
    "course",
    "device",
    "alert",
    "coupon",
    "survey",
)
SUITES = ("dev", "holdout")
STEP = 'Thought: I need the weather.\nAction: get_weather\nAction Input: {"city": "Tokyo"}'


def catalogue(size: int = 150) -> list[Tool]:
    """The user's tools, the reference servers' tools, then made-up ones up to `size`."""
    corpus = json.loads((ROOT / "tests" / "corpus" / "mcp_tools.json").read_text("utf-8"))
    servers = [
        Tool.from_schema(t["name"], t["description"], t["inputSchema"], fn=lambda **_: "ok")
        for server in corpus["servers"].values()
        for t in server
    ]
    made = [
        Tool.from_schema(
            f"{verb}_{noun}",
            f"{verb.capitalize()} a {noun} record in the {noun} service",
            {"type": "object", "properties": {"id": {"type": "string", "description": noun}}},
            fn=lambda **_: "ok",
        )
        for verb, noun in itertools.product(VERBS, NOUNS)
    ]
    users = load_tools(str(ROOT / "bench" / "usertools" / "tools.py:TOOLS"))
    return [*users, *servers, *made][:size]


def timed(fn: Callable[[], object], rounds: int) -> float:
    """Median milliseconds of `fn` over `rounds` calls."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def tasks() -> list[dict]:
    return [
        json.loads(line)
        for suite in SUITES
        for line in (ROOT / "bench" / "usertools" / f"{suite}.jsonl")
        .read_text("utf-8")
        .splitlines()
        if line.strip()
    ]


def recall(tools: list[Tool], k: int, lang: str) -> tuple[int, int, int]:
    """Of the tasks in `lang` that need a tool: those with every needed tool in the first
    step's offer, those with one of them (a later step ranks again, with the result read),
    and their number."""
    index = Relevance(ranked_texts(tools))
    every = some = total = 0
    for task in tasks():
        if not task.get("calls") or task.get("lang", "en") != lang:
            continue
        scores = index.scores(task["question"])
        offered = {t.name for t in sorted(tools, key=lambda t: -scores[t.name])[:k]}
        total += 1
        every += set(task["calls"]) <= offered
        some += bool(set(task["calls"]) & offered)
    return every, some, total


def scripted_run(tools: list[Tool], max_tools: int | None) -> tuple[float, int, int]:
    """Milliseconds of a three-step scripted run, and the first request's prompt and grammar
    sizes in characters."""
    script = ScriptedModel([STEP, STEP, "Thought: done.\nFinal Answer: warm"])
    agent = Agent(script, tools, max_tools=max_tools)
    start = time.perf_counter()
    agent.run("What's the weather in Tokyo right now?")
    ms = (time.perf_counter() - start) * 1000
    prompt = sum(len(m["content"]) for m in script.requests[0])
    return ms, prompt, len(script.options[0].get("grammar") or "")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--quick", action="store_true", help="seconds: one round of each")
    args = options.parse_args()
    rounds = 1 if args.quick else 20
    tools = catalogue()
    question = "What's the temperature in Tokyo right now, in Celsius?"
    observation = json.dumps({"city": "Tokyo", "temperature_c": 18.5, "sky": "clear"}) * 8
    index = Relevance(ranked_texts(tools))
    print(f"{len(tools)} tools")
    all_words = lambda: [words(t.description) for t in tools]  # noqa: E731
    print(f"words of every tool:   {timed(all_words, rounds):7.2f} ms")
    build = lambda: Relevance(ranked_texts(tools))  # noqa: E731
    print(f"index (once a set):    {timed(build, rounds):7.2f} ms")
    query = f"{question}\n{observation}"

    def rank() -> list[Tool]:
        scores = index.scores(query)
        return sorted(tools, key=lambda t: -scores[t.name])

    print(f"rank one step:         {timed(lambda: index.scores(query), rounds):7.2f} ms "
          f"(scores), {timed(rank, rounds):7.2f} ms (scores and order)")  # fmt: skip
    indexed.cache_clear()  # the first run over these tools builds their index
    first = scripted_run(tools, 5)[0]
    print(f"3-step scripted run, max_tools=5, the first: {first:7.1f} ms (the index built)")
    for k in (None, 5):
        runs = [scripted_run(tools, k) for _ in range(rounds)]
        ms = statistics.median(r[0] for r in runs)
        label = "every tool" if k is None else f"max_tools={k}, a later one"
        print(f"3-step scripted run, {label:<10}: {ms:7.1f} ms; first request: prompt "
              f"{runs[0][1]:,} chars, grammar {runs[0][2]:,} chars")  # fmt: skip
    print("the first step's offer of k, on the user's-tools suites (dev and hold-out):")
    for lang in ("en", "zh"):
        for k in (3, 5, 8):
            every, some, total = recall(tools, k, lang)
            print(f"  {lang} k={k}: every needed tool in {every}/{total} tasks, "
                  f"one of them in {some}/{total}")  # fmt: skip


if __name__ == "__main__":
    main()
