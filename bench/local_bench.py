"""The embedded model end to end: time from start to a ready server and to the first streamed
token, time per step, peak memory of the whole run (the llama.cpp server lives in this
process), and the engine's share of the wall time (aim: under 1 %).

Run: textreact pull && python bench/local_bench.py"""

from __future__ import annotations

import os
import resource
import sys
import time

STARTED = time.perf_counter()

from textreact import Agent  # noqa: E402  (start-up time is part of what is measured)
from textreact.models import local  # noqa: E402

QUESTIONS = (
    "What is 15 * 37?",
    "What is the population of Taipei divided by the population of New York?",
    "What is the capital of Japan?",
)


def first_token_seconds(base_url: str) -> float:
    """Seconds until the first streamed token of a short reply."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="local")
    asked = time.perf_counter()
    stream = client.chat.completions.create(
        model=local.MODEL_NAME,
        messages=[{"role": "user", "content": "Say hello."}],
        max_tokens=8,
        stream=True,
        extra_body={"cache_prompt": False},
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            seconds = time.perf_counter() - asked
            stream.close()
            return seconds
    return float("nan")


def main() -> None:
    gguf = local.gguf_path(local.default_cache_dir(os.environ))
    if not gguf.is_file():
        sys.exit(f"no model at {gguf}: run `textreact pull` first")
    imported = time.perf_counter()
    with local.local_model(gguf, max_tokens=128) as model:
        ready = time.perf_counter()
        first = first_token_seconds(model.base_url)
        print(f"import textreact + local:       {imported - STARTED:6.2f} s")
        print(f"server start to /health 200:    {ready - imported:6.2f} s")
        print(f"first streamed token:           {first:6.2f} s after asking")
        print(f"start of process to 1st token:  {ready - STARTED + first:6.2f} s")
        wall = model_time = tool_time = 0.0
        steps = 0
        for question in QUESTIONS:
            began = time.perf_counter()
            result = Agent(model, max_steps=4).run(question)
            wall += time.perf_counter() - began
            steps += len(result.steps)
            model_time += sum(turn.model_seconds for turn in result.steps)
            tool_time += sum(turn.result.seconds for turn in result.steps if turn.result)
            print(f"  {result.stop_reason:13} {len(result.steps)} steps  {question}")
    engine = wall - model_time - tool_time
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"time per step:                  {wall / steps:6.2f} s ({steps} steps)")
    print(f"engine time per step:           {engine / steps * 1e3:6.2f} ms")
    print(f"engine share of wall time:      {engine / wall:7.2%}")
    print(f"peak memory of the whole run:   {peak_mb:6.0f} MB (server in-process)")


if __name__ == "__main__":
    main()
