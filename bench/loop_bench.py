"""The engine's own cost: time per step with a scripted model (no model time at all), and the
prompt size per step over a 30-step run with and without the memory budget.

Run: python bench/loop_bench.py"""

from __future__ import annotations

import statistics
import time

from textreact import Agent, tool
from textreact.memory import MemoryConfig
from textreact.models.scripted import ScriptedModel


@tool
def read_page(page: int) -> str:
    """Use this to read one page of the big document.

    Args:
        page: the page number
    """
    return f"Page {page} begins. " + "lorem ipsum " * 500  # about 6,000 characters


def script(steps: int) -> list[str]:
    calls = [
        f'Thought: I read page {i}.\nAction: read_page\nAction Input: {{"page": {i}}}'
        for i in range(steps)
    ]
    return [*calls, "Thought: I now know the answer.\nFinal Answer: done"]


def time_per_step(steps: int = 30, repeats: int = 20) -> float:
    timings = []
    for _ in range(repeats):
        agent = Agent(ScriptedModel(script(steps)), tools=[read_page], max_steps=steps + 1)
        started = time.perf_counter()
        result = agent.run("Read the document.")
        elapsed = time.perf_counter() - started
        outside = sum(s.model_seconds for s in result.steps) + sum(
            s.result.seconds for s in result.steps if s.result is not None
        )
        timings.append((elapsed - outside) / len(result.steps))
    return statistics.median(timings)


def prompt_sizes(memory: MemoryConfig, steps: int = 30) -> list[int]:
    model = ScriptedModel(script(steps))
    Agent(model, tools=[read_page], max_steps=steps + 1, memory=memory).run("Read the document.")
    return [sum(len(m["content"]) for m in request) for request in model.requests]


def main() -> None:
    per_step = time_per_step()
    print(f"engine time per step (model and tool time excluded): {per_step * 1e3:.3f} ms")
    budgeted = prompt_sizes(MemoryConfig())
    unbounded = prompt_sizes(MemoryConfig(budget_chars=None, keep_recent=10_000))
    full_history = 30 * len(read_page.fn(0))
    print("prompt characters sent at step N (30-step run, tool returns ~6,000 characters):")
    print(f"{'step':>6} {'with budget':>12} {'no budget':>12} {'raw history':>12}")
    for step in (1, 4, 10, 20, 30):
        raw = step * len(read_page.fn(0))
        print(f"{step:>6} {budgeted[step]:>12,} {unbounded[step]:>12,} {raw:>12,}")
    print(
        f"step 20 / step 4 with budget: {budgeted[20] / budgeted[4]:.2f}x; "
        f"step 30 prompt / raw history: {budgeted[30] / full_history:.1%}"
    )


if __name__ == "__main__":
    main()
