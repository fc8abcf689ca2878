"""Parse speed and accuracy on tests/corpus, side by side with LangChain's and LlamaIndex's
ReAct output parsers when the `bench` extra is installed; growth on pathological inputs, and
time and peak memory at n and 8n on the shapes of the hostile-input audit; and the start-up
cost of `import textreact`.

    python bench/parse_bench.py [--repeat N] [--quick]

Accuracy compares kind, tool, input and answer only (not thoughts or hints), the same way for
every parser; a parser that raises is counted as reporting an error. A string input a peer
passes on counts as right when it decodes to the expected arguments, since its agent would
hand that string to the tool."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from corpus import load, mismatch  # noqa: E402

from textreact.parser import _fast, parse  # noqa: E402
from textreact.parsing.canonical import canonical  # noqa: E402

CANONICAL = 'Thought: I need the population.\nAction: search\nAction Input: {"query": "Paris"}'
Outcome = tuple[str, Any, Any, Any]  # kind, tool, input, answer
Reader = Callable[[str], Outcome]


def textreact_reader(text: str) -> Outcome:
    step = parse(text)
    return (
        step.kind,
        getattr(step, "tool", None),
        getattr(step, "input", None),
        getattr(step, "answer", None),
    )


def langchain_reader() -> Reader | None:
    try:
        from langchain_classic.agents.output_parsers import ReActSingleInputOutputParser
        from langchain_core.agents import AgentAction
    except ImportError:
        return None
    peer = ReActSingleInputOutputParser()

    def read(text: str) -> Outcome:
        try:
            result = peer.parse(text)
        except Exception:  # OutputParserException and whatever else the peer raises
            return "error", None, None, None
        if isinstance(result, AgentAction):
            return "action", result.tool, result.tool_input, None
        return "final", None, None, result.return_values.get("output")

    return read


def llamaindex_reader() -> Reader | None:
    try:
        from llama_index.core.agent.react.output_parser import ReActOutputParser
        from llama_index.core.agent.react.types import ActionReasoningStep
    except ImportError:
        return None
    peer = ReActOutputParser()

    def read(text: str) -> Outcome:
        try:
            result = peer.parse(text)
        except Exception:  # ValueError and whatever else the peer raises
            return "error", None, None, None
        if isinstance(result, ActionReasoningStep):
            return "action", result.action, result.action_input, None
        return "final", None, None, getattr(result, "response", None)

    return read


def same_input(expected: Any, got: Any) -> bool:
    if got == expected:
        return True
    if isinstance(expected, dict) and isinstance(got, str):
        try:
            return json.loads(got) == expected
        except ValueError:
            return False
    if isinstance(expected, str) and isinstance(got, dict) and len(got) == 1:
        return next(iter(got.values())) == expected
    return isinstance(expected, str) and isinstance(got, str) and got.strip() == expected


def correct(expected: dict[str, Any], got: Outcome) -> bool:
    kind, tool, value, answer = got
    if kind != expected["kind"]:
        return False
    if kind == "action":
        return (
            isinstance(tool, str)
            and tool.strip() == expected["tool"]
            and same_input(expected["input"], value)
        )
    if kind == "final":
        return isinstance(answer, str) and answer.strip() == expected["answer"]
    return True


def per_completion_us(
    readers: dict[str, Reader], texts: list[str], repeat: int
) -> dict[str, float]:
    """Best of `repeat` passes over the corpus for each reader, in microseconds per completion
    of this process's CPU time. The readers take turns pass by pass, and time spent running
    other processes is not counted: on a busy machine a long pass is almost always interrupted
    and a short one often not, which made wall-clock ratios favour the faster reader."""
    best = dict.fromkeys(readers, float("inf"))
    for _ in range(repeat):
        for name, read in readers.items():
            start = time.process_time()
            for text in texts:
                read(text)
            best[name] = min(best[name], time.process_time() - start)
    return {name: seconds / len(texts) * 1e6 for name, seconds in best.items()}


def paths(texts: list[str]) -> dict[str, list[str]]:
    """The completions by the parser's path that reads them: the literal check of the
    canonical form, the layout fast path, or the general reader (`textreact.parser.parse`)."""
    found: dict[str, list[str]] = {
        "literal check": [],
        "layout fast path": [],
        "general reader": [],
    }
    for text in texts:
        if canonical(text) is not None:
            found["literal check"].append(text)
        elif _fast(text) is not None:
            found["layout fast path"].append(text)
        else:
            found["general reader"].append(text)
    return found


def pathological(size: int) -> dict[str, str]:
    step = 'Thought: t\nAction: a\nAction Input: {"q": 1}\n'
    return {
        "newlines": "\n" * size,
        "indented blank lines": "  \n" * (size // 3),
        "open braces": "Action: s\nAction Input: " + "{" * size,
        "keywords": step * (size // len(step)),
        "prose answer": "Final Answer: " + "All work and no play. " * (size // 22),
        "think, then act": "<think>" + "hmm " * (size // 4) + "</think>\n" + step,
    }


#: Shapes from the hostile-input audit, as functions of n, for the growth table: each was
#: quadratic in time (the call shapes: a regex retried at every position of the Action's
#: value) or linear in memory at ~100 bytes per keyword (the runs). The call shapes stay
#: under SCAN_LIMIT at 8n, which would otherwise cap them.
GROWTH: dict[str, tuple[Callable[[int], str], int]] = {
    "unclosed call": (lambda n: "Action: f(" + "a" * n, 2_000),
    "unclosed keyword arguments": (lambda n: "Action: x(" + "a=1, " * (n // 5), 2_000),
    "code cut by the token limit": (
        lambda n: 'Action: python(code="' + "print(i); " * (n // 10),
        2_000,
    ),
    "empty keywords": (lambda n: "Action:" * (n // 7) + "Final Answer: 42", 875_000),
    "mixed empty keywords": (
        lambda n: "Thought: Action: Action Input: " * (n // 31) + "Final Answer: 42",
        3_875_000,
    ),
}


def growth_rows() -> list[tuple[str, int, float, float, float, float]]:
    """Per GROWTH shape: n, and the seconds (best of 3) and peak traced megabytes of one
    parse at n and at 8n. Memory is traced in a run of its own (tracing slows allocation)."""
    import tracemalloc

    rows = []
    for shape, (make, size) in GROWTH.items():
        figures = []
        for n in (size, 8 * size):
            text = make(n)
            seconds = min(_timed(parse, text) for _ in range(3))
            tracemalloc.start()
            try:
                parse(text)
                peak = tracemalloc.get_traced_memory()[1] / 1e6
            finally:
                tracemalloc.stop()
            figures += [seconds, peak]
        rows.append((shape, size, *figures))
    return rows


def import_ms() -> float:
    def best(code: str) -> float:
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
            runs.append(time.perf_counter() - start)
        return min(runs)

    return (best("import textreact") - best("pass")) * 1000


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--repeat", type=int, default=20)
    options.add_argument(
        "--growth", action="store_true", help="print only the growth table of the audit's shapes"
    )
    options.add_argument(
        "--quick", action="store_true", help="seconds, for CI: one pass, 10 KB shapes, no growth"
    )
    arguments = options.parse_args()
    if arguments.growth:
        return print_growth()
    quick = arguments.quick
    repeat = 1 if quick else arguments.repeat
    cases = load()
    texts = [case["text"] for case in cases]

    strict = sum(mismatch(case["expected"], parse(case["text"])) is None for case in cases)
    print(f"corpus: {len(cases)} completions (tests/corpus/completions.jsonl)")
    print(f"textreact strict accuracy (thoughts, discarded text, hints too): {strict}/{len(cases)}")
    by_path = paths(texts)
    literal, fast = len(by_path["literal check"]), len(by_path["layout fast path"])
    print(f"read by the literal check of the canonical form: {literal}/{len(cases)}")
    print(f"read by the layout fast path (one match, no general reader): {fast}/{len(cases)}")
    print()
    readers = {
        "textreact": textreact_reader,
        "langchain": langchain_reader(),
        "llamaindex": llamaindex_reader(),
    }
    missing = [name for name, read in readers.items() if read is None]
    if missing:
        print(f"not installed (pip install 'textreact[bench]'): {', '.join(missing)}")
    present = {name: read for name, read in readers.items() if read is not None}
    timings = per_completion_us(present, texts, repeat)
    print(f"{'parser':<12} {'accuracy':>14} {'us/completion':>14} {'vs textreact':>13}")
    for name, read in present.items():
        right = sum(correct(case["expected"], read(case["text"])) for case in cases)
        ratio = timings[name] / timings["textreact"]
        score = f"{right:>4}/{len(cases)} ({right / len(cases):4.0%})"
        print(f"{name:<12} {score} {timings[name]:>14.1f} {ratio:>12.2f}x")
    if "langchain" in timings:
        ratio = timings["textreact"] / timings["langchain"]
        print(f"textreact takes {ratio:.2f}x LangChain's time per messy completion")
        pair = {"textreact": textreact_reader, "langchain": present["langchain"]}
        one_form = per_completion_us(pair, [CANONICAL] * len(texts), repeat)
        ours, theirs = one_form["textreact"], one_form["langchain"]
        print(
            f"canonical action: textreact {ours:.1f} us, LangChain {theirs:.1f} us "
            f"({ours / theirs:.2f}x)"
        )
        print("by the path that reads a completion (where the time goes):")
        timed = {
            path: per_completion_us(pair, chosen, repeat)
            for path, chosen in by_path.items()
            if chosen
        }
        total = sum(timed[path]["textreact"] * len(by_path[path]) for path in timed)
        for path, figures in timed.items():
            ours, theirs, count = figures["textreact"], figures["langchain"], len(by_path[path])
            print(
                f"  {path:<28} {count:>3} completions: textreact {ours:5.1f} us, "
                f"LangChain {theirs:4.1f} us ({ours / theirs:.2f}x); "
                f"{ours * count / total:.0%} of textreact's time"
            )
    print()
    print("pathological inputs, ms per parse (best of 3):")
    sizes = (10_000,) if quick else (10_000, 100_000, 1_000_000)
    print(f"{'shape':<22}" + "".join(f"{size // 1000:>9} KB" for size in sizes))
    for shape in pathological(10):
        row = []
        for size in sizes:
            text = pathological(size)[shape]
            row.append(min(_timed(parse, text) for _ in range(3)) * 1000)
        print(f"{shape:<22}" + "".join(f"{ms:>12.2f}" for ms in row))
    if quick:
        return None
    print()
    print_growth()
    print()
    print(f"import textreact: {import_ms():.0f} ms over a bare interpreter (best of 5)")


def print_growth() -> None:
    print("growth on the audit's shapes: one parse at n and at 8n (linear: a time ratio near 8)")
    print(
        f"{'shape':<28} {'n':>9} {'s at n':>9} {'s at 8n':>9} {'ratio':>6}"
        f" {'MB at n':>8} {'MB at 8n':>9} {'ratio':>6}"
    )
    for shape, n, seconds, peak, seconds_8n, peak_8n in growth_rows():
        print(
            f"{shape:<28} {n:>9} {seconds:>9.4f} {seconds_8n:>9.4f} {seconds_8n / seconds:>6.1f}"
            f" {peak:>8.2f} {peak_8n:>9.2f} {peak_8n / peak:>6.1f}"
        )


def _timed(read: Callable[[str], object], text: str) -> float:
    start = time.perf_counter()
    read(text)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
