"""The engine's own cost: time per step with a scripted model (no model time at all) for each
protocol and driver, the prompt size per step over a 30-step run with and without the memory
budget, and 32 concurrent `arun` calls against a loopback fake server that takes 0.2 s a reply.

Run: python bench/loop_bench.py [--quick]"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from textreact import Agent, AsyncOpenAICompatModel, tool
from textreact.memory import MemoryConfig
from textreact.models.scripted import ScriptedModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fakeserver import FakeServer, Reply, chat_completion


@tool
def read_page(page: int) -> str:
    """Use this to read one page of the big document.

    Args:
        page: the page number
    """
    return f"Page {page} begins. " + "lorem ipsum " * 500  # about 6,000 characters


def script(steps: int, protocol: str = "text") -> list[Any]:
    if protocol == "native":
        calls = [ScriptedModel.calls(("read_page", {"page": i})) for i in range(steps)]
        return [*calls, "done"]
    calls = [
        f'Thought: I read page {i}.\nAction: read_page\nAction Input: {{"page": {i}}}'
        for i in range(steps)
    ]
    return [*calls, "Thought: I now know the answer.\nFinal Answer: done"]


class AsyncScripted:
    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner

    async def complete(self, messages: Any, **options: Any) -> Any:
        return self.inner.complete(messages, **options)


def time_per_step(
    steps: int = 30, repeats: int = 20, protocol: str = "text", driver: str = "sync"
) -> float:
    timings = []
    for _ in range(repeats):
        scripted = ScriptedModel(script(steps, protocol))
        model: Any = scripted if driver == "sync" else AsyncScripted(scripted)
        agent = Agent(model, tools=[read_page], max_steps=steps + 1, protocol=protocol)
        started = time.perf_counter()
        if driver == "sync":
            result = agent.run("Read the document.")
        else:
            result = asyncio.run(agent.arun("Read the document."))
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


def concurrent_runs(count: int = 32, delay: float = 0.2) -> tuple[float, float]:
    """(seconds for one run, seconds for `count` concurrent runs), each run one request."""
    body = chat_completion("Final Answer: 42")

    async def runs(n: int, base_url: str) -> float:
        model = AsyncOpenAICompatModel("fake-model", base_url, max_retries=0)
        agent = Agent(model)
        started = time.perf_counter()
        results = await asyncio.gather(*(agent.arun(f"question {i}") for i in range(n)))
        bad = [r for r in results if r.answer != "42"]
        assert not bad, (len(bad), bad[0].stop_reason, bad[0].error)
        await model.aclose()
        return time.perf_counter() - started

    with FakeServer([Reply(body=body, delay=delay) for _ in range(count + 1)]) as server:
        one = asyncio.run(runs(1, server.base_url))
        many = asyncio.run(runs(count, server.base_url))
    return one, many


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--quick", action="store_true", help="seconds, for CI: one repeat")
    quick = options.parse_args().quick
    repeats, count, delay = (1, 4, 0.01) if quick else (20, 32, 0.2)
    print("engine time per step (model and tool time excluded):")
    for protocol in ("text", "native"):
        for driver in ("sync", "async"):
            per_step = time_per_step(repeats=repeats, protocol=protocol, driver=driver)
            print(f"  {protocol:>6} {driver:>5}: {per_step * 1e3:.3f} ms")
    one, many = concurrent_runs(count, delay)
    print(
        f"{count} concurrent arun calls, fake server {delay:g} s a reply: one run {one:.2f} s, "
        f"{count} runs {many:.2f} s ({many / one:.2f}x the time of one)"
    )
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
