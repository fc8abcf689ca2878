"""Fuzz kit throughput: examples per second through `run_fuzz` with a trivial parser, so the
figure is the generator's own cost (what a CI job pays on top of the parser under test).

Also prints what the same completions cost through Hypothesis's engine, which is why the runner
samples with a seeded Random and shrinks by replaying recorded choices.

    python bench/fuzz_bench.py [--examples N] [--quick]
"""

from __future__ import annotations

import argparse
import time

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as seeded

from textreact.testing import FAMILIES, completions, run_fuzz


def trivial(text: str) -> dict[str, str]:
    return {"kind": "error", "message": "trivial parser"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=500, help="examples per family")
    parser.add_argument("--quick", action="store_true", help="seconds, for CI: 5 examples each")
    args = parser.parse_args()
    if args.quick:
        args.examples = 5

    start = time.perf_counter()
    report = run_fuzz(trivial, examples=args.examples, shrink=False)
    counting = time.perf_counter() - start
    total = sum(result.run for result in report.results)
    fast = total / counting
    print(f"counting pass: {total} examples, {len(FAMILIES)} families in {counting:.2f} s")
    print(f"  {fast:,.0f} examples/s with a trivial parser")

    start = time.perf_counter()
    run_fuzz(trivial, examples=args.examples)
    print(f"with shrinking ({len(FAMILIES)} failing families minimised): "
          f"{time.perf_counter() - start:.2f} s")  # fmt: skip

    drawn = 0

    @settings(
        max_examples=20 if args.quick else 200,
        database=None,
        deadline=None,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
    )
    @seeded(0)
    @given(completions())
    def through_hypothesis(case: object) -> None:
        nonlocal drawn
        drawn += 1

    start = time.perf_counter()
    through_hypothesis()
    slow = drawn / (time.perf_counter() - start)
    print(f"the same completions through Hypothesis's engine: {slow:,.0f} examples/s")
    print(f"  ratio: the counting pass is {fast / slow:.0f}x faster")


if __name__ == "__main__":
    main()
