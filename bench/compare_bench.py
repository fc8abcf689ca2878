"""How `textreact compare --concurrency N` scales against a server that batches requests.

The loopback fake server answers every request after a fixed delay and serves requests in
parallel, as vLLM or llama.cpp with several slots would; with N threads the suite's wall time
should fall close to N times. Prints the wall time per concurrency and the speed-up ratio.

    python bench/compare_bench.py [--tasks 24] [--delay 0.2] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fakeserver import FakeServer, Reply, chat_completion

from textreact.compare.runner import run_compare
from textreact.compare.suite import Task
from textreact.models.openai_compat import OpenAICompatModel


def wall_time(tasks: list[Task], delay: float, concurrency: int) -> tuple[float, float]:
    """Seconds for the suite through both protocols, and its success rate (a sanity check)."""
    replies = [
        Reply(body=chat_completion("Final Answer: 391"), delay=delay) for _ in range(2 * len(tasks))
    ]
    with FakeServer(replies) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        started = time.perf_counter()
        report = run_compare(model, tasks, concurrency=concurrency)
        seconds = time.perf_counter() - started
        model.close()
    return seconds, sum(o.success for o in report.outcomes) / len(report.outcomes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=24)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per request")
    parser.add_argument("--quick", action="store_true", help="seconds, for CI: 2 tasks, no delay")
    args = parser.parse_args()
    if args.quick:
        args.tasks, args.delay = 2, 0.0
    tasks = [Task(f"t{i}", f"What is 17 * 23? ({i})", answer=391) for i in range(args.tasks)]
    print(f"{args.tasks} tasks x 2 protocols, {args.delay:g} s per request")
    base = None
    for concurrency in (1, 2, 4, 8):
        seconds, rate = wall_time(tasks, args.delay, concurrency)
        base = base or seconds
        print(
            f"concurrency {concurrency}: {seconds:6.2f} s wall, speed-up {base / seconds:4.2f}x "
            f"(ideal {concurrency}x), success {rate:.0%}"
        )


if __name__ == "__main__":
    main()
