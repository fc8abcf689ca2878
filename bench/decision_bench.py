"""Calibrating `decision_bias`: the call/no-call curve from one pass. Each task's first turn is
sent once through the text protocol with log-probabilities (never forced), and the log-odds
margin log P(call) - log P(answer) at the branch point is recorded; a bias `b` makes a task
call where margin + b > 0, so every bias's call rate follows from the one pass. Printed per
model and data set as the bias moves over a grid: the share of tasks that would call among
those that expect a call (relevance) and among those that expect none (irrelevance).

Data: the user's-tools suite (bench/usertools/dev.jsonl, its tools bench/usertools/tools.py)
and BFCL files (../shared/data/bfcl/). Models as bench/matrix_bench.py serves them (embedded
llama.cpp, one thread, one at a time); `--quick` runs against a loopback fake server instead,
for CI (seconds, no model).

Run: python bench/decision_bench.py [--models smollm2,qwen] [--suite-limit N] [--bfcl N]
     [--files irrelevance,simple_python,multiple] [--grid=-16:16:1] [--json FILE] [--quick]"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
from matrix_bench import BFCL, model_files

from textreact.compare.bfcl import load_bfcl
from textreact.compare.suite import load_suite
from textreact.exemplars import CHOICES
from textreact.memory import MemoryConfig
from textreact.models.decision import decide, request_fields, scripted, tokens_of
from textreact.models.local import MODEL_NAME, local_server
from textreact.protocols.text import TextProtocol
from textreact.steps import Completion, Decided
from textreact.tools import Tool

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the fake server, for --quick
sys.path.insert(0, str(ROOT / "bench"))  # usertools

from usertools.tools import TOOLS as USER_TOOLS  # noqa: E402

USER_SUITE = ROOT / "bench" / "usertools" / "dev.jsonl"


@dataclass(frozen=True)
class Item:
    """One first turn to score: its question, tools, language, and whether a call is owed."""

    id: str
    question: str
    tools: tuple[Tool, ...]
    lang: str
    expects_call: bool


def items(suite_limit: int | None, bfcl: int, files: list[str]) -> dict[str, list[Item]]:
    """The data sets: the user's-tools suite, then `bfcl` entries of each BFCL file."""
    chosen: dict[str, list[Item]] = {}
    if suite_limit != 0:
        tasks = load_suite(USER_SUITE)[:suite_limit]
        tools = tuple(USER_TOOLS)
        chosen["usertools"] = [
            Item(t.id, t.question, tools, t.lang, not t.no_call) for t in tasks
        ]  # fmt: skip
    for name in files:
        path = BFCL / f"BFCL_v4_{name}.json"
        if bfcl and path.exists():
            chosen[f"bfcl-{name}"] = [
                Item(e.id, e.question, _bfcl_tools(e.functions), "en", bool(e.ground_truth))
                for e in load_bfcl(path)[:bfcl]
            ]
    return chosen


def _bfcl_tools(functions: Any) -> tuple[Tool, ...]:
    return tuple(
        Tool.from_schema(f["name"], f.get("description", ""), f["parameters"], fn=dict)
        for f in functions
    )


def score(client: Any, item: Item, protocol: TextProtocol, max_tokens: int) -> Decided:
    """The first turn of `item`, sampled once with log-probabilities, and its decision as
    `decide` reads it (the bias of `protocol` is only recorded: nothing is forced here)."""
    opening = protocol.opening(item.question, item.tools, item.lang)
    request = protocol.request(opening, [], item.tools, memory=MemoryConfig(), lang=item.lang)
    assert request.decision is not None
    extra = {"cache_prompt": False}
    if request.grammar is not None:
        extra["grammar"] = request.grammar  # llama.cpp's field: these servers are llama.cpp
    response = client.chat.completions.create(
        model=MODEL_NAME, messages=request.messages, stop=list(request.stop)[:4],
        temperature=0.0, max_tokens=max_tokens, extra_body=extra, **request_fields(),
    )  # fmt: skip
    text = response.choices[0].message.content or ""
    reply = Completion(text, logprobs=tokens_of(response))
    record = decide(reply, request.decision).completion.decision
    assert record is not None
    return record


def grid(spec: str) -> list[float]:
    """`low:high:step` -> the biases from low to high."""
    low, high, step = (float(x) for x in spec.split(":"))
    count = round((high - low) / step) + 1
    return [round(low + i * step, 6) for i in range(count)]


def curve(rows: list[dict[str, Any]], biases: list[float]) -> list[tuple[float, float, float]]:
    """For each bias: the share of scored relevance tasks that would call, and of irrelevance
    tasks (a tie keeps the sampled branch, as `decide` does)."""
    out = []
    for bias in biases:
        shares = []
        for expects in (True, False):
            group = [r for r in rows if r["expects_call"] == expects and r["margin"] is not None]
            calls = sum(_calls(r, bias) for r in group)
            shares.append(calls / len(group) if group else float("nan"))
        out.append((bias, shares[0], shares[1]))
    return out


def _calls(row: dict[str, Any], bias: float) -> bool:
    odds = row["margin"] + bias
    return row["sampled"] == "call" if odds == 0 else odds > 0


def report(model: str, data: str, rows: list[dict[str, Any]], biases: list[float]) -> None:
    relevant = sum(r["expects_call"] for r in rows)
    unscored = [r for r in rows if r["margin"] is None]
    print(f"\n{model} / {data}: {relevant} expect a call, {len(rows) - relevant} expect none, "
          f"{len(unscored)} unscored {sorted({r['unscored'] for r in unscored})}")  # fmt: skip
    print(f"{'bias':>7} {'relevance: call':>16} {'irrelevance: no call':>21}")
    for bias, relevance, irrelevance in curve(rows, biases):
        print(f"{bias:>7g} {_share(relevance):>16} {_share(1 - irrelevance):>21}")


def _share(share: float) -> str:
    """A share as a percentage; "-" where the data set holds no task of that kind."""
    return "-" if math.isnan(share) else f"{share:.0%}"


@contextmanager
def quick_server() -> Iterator[str]:
    """A loopback fake server that answers every first turn with a scored reply."""
    from fakeserver import FakeServer, Reply, chat_completion

    replies = []
    for i in range(64):
        text = (
            "Thought: t.\nFinal Answer: 4" if i % 2 else "Thought: t.\nAction: x\nAction Input: {}"
        )
        reply = scripted(text, call=-0.2 * i, answer=-1.0)
        body = chat_completion(text)
        body["choices"][0]["logprobs"] = {"content": [
            {"token": t.token.decode(), "bytes": list(t.token), "logprob": t.logprob,
             "top_logprobs": [{"token": b.decode(), "bytes": list(b), "logprob": lp}
                              for b, lp in t.top]}
            for t in reply.logprobs
        ]}  # fmt: skip
        replies.append(Reply(body=body))
    with FakeServer(replies) as server:
        yield server.base_url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="smollm2,qwen")
    parser.add_argument("--suite-limit", type=int, default=None, help="user's-tools tasks; 0: none")
    parser.add_argument("--bfcl", type=int, default=50, help="entries of each BFCL file; 0: none")
    parser.add_argument("--files", default="irrelevance,simple_python,multiple")
    parser.add_argument("--grid", default="-16:16:1", help="biases, low:high:step")
    parser.add_argument("--examples", choices=CHOICES, default="bundled")
    parser.add_argument("--no-grammar", action="store_true", help="sample the first turn freely")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--json", type=Path, help="write every task's margin here")
    parser.add_argument("--quick", action="store_true", help="seconds, for CI: a fake server")
    args = parser.parse_args()
    if args.quick:
        args.models, args.suite_limit, args.bfcl, args.files = "fake", 4, 2, "irrelevance"
    protocol = TextProtocol(
        examples=args.examples, constrain=not args.no_grammar, decision_bias=0.0
    )
    data = items(args.suite_limit, args.bfcl, args.files.split(","))
    biases = grid(args.grid)
    files = model_files() if not args.quick else {}
    rows: list[dict[str, Any]] = []
    for name in args.models.split(","):
        if not args.quick and (name not in files or not files[name].exists()):
            print(f"skipping {name}: no model file (textreact pull / eval-model)", file=sys.stderr)
            continue
        serving = quick_server() if args.quick else local_server(files[name], n_ctx=8192)
        with serving as url, openai.OpenAI(base_url=url, api_key="x", max_retries=0) as client:
            for data_set, chosen in data.items():
                done = []
                for item in chosen:
                    record = score(client, item, protocol, args.max_tokens)
                    done.append({
                        "model": name, "data": data_set, "id": item.id,
                        "expects_call": item.expects_call, "margin": record.margin,
                        "sampled": record.sampled, "unscored": record.unscored,
                    })  # fmt: skip
                    print(json.dumps(done[-1]), flush=True)
                report(name, data_set, done, biases)
                rows += done
                if args.json:  # after each data set, so a long run keeps what it measured
                    args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
