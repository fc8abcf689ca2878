"""`textreact serve`'s own cost and its concurrency.

1. The proxy's own time per request, with no model time at all: checking the request, making
   its tools, rendering the conversation in the text protocol, parsing the reply, repairing and
   validating the arguments, building the response (target: under 2 ms); and the same through
   HTTP against a loopback upstream that answers at once, beside asking that upstream directly.
2. 64 concurrent clients through the proxy against a loopback upstream that takes 0.2 s a
   reply (target: each served in about 0.2 s, so the wall time is about 0.2 s too).
3. The CPU time to read a streamed Final Answer as it grows, a word a delta, a line every 12
   words (target: linear, so the time per delta at 32,000 deltas is that at 2,000).
4. Growth: the time to check and render a request with 4x the messages, and to make the grammar
   of a tool with 4x the properties (target: 4x, linear).

Each prints its figures and the ratio a target is set on: the proxy's own time per request
(target: at most 1 ms over asking the upstream directly; its CPU time per request is printed
too, which load on a shared machine disturbs less than wall time), and the wall time of 64
concurrent clients through the proxy over the same directly (target: at most 1.2x).

Run: python bench/serve_bench.py [--quick]   (--quick: a few seconds, smaller counts)"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx

#: The checkout this file is in: measured as it is, whatever textreact is installed.
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fakeserver import chat_completion  # noqa: E402
from serve_support import CLOCK, WEATHER  # noqa: E402

from textreact.serve import ServeConfig  # noqa: E402
from textreact.serve.cli import handed_over  # noqa: E402
from textreact.serve.connections import uvicorn_options  # noqa: E402
from textreact.serve.convert import parse_request, text_messages  # noqa: E402
from textreact.serve.reply import completion_body  # noqa: E402
from textreact.serve.request import request_tools  # noqa: E402
from textreact.serve.stream import Committer  # noqa: E402
from textreact.serve.turn import Judge  # noqa: E402
from textreact.steps import Completion, Usage  # noqa: E402

SEARCH = {
    "type": "function",
    "function": {
        "name": "search_docs",
        "description": "Search the documentation; use it before answering a how-to question.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                "sections": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["query"],
        },
    },
}
TOOLS = [WEATHER, CLOCK, SEARCH]
HISTORY = [
    {"role": "system", "content": "You are a helpful assistant for a travel site."},
    {"role": "user", "content": "What is the weather in Paris, and what time is it there?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "18 C, sunny, light wind. " * 20},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c2", "type": "function",
             "function": {"name": "get_time", "arguments": '{"zone": "Europe/Paris"}'}},
        ],
    },
    {"role": "tool", "tool_call_id": "c2", "content": "14:05"},
]  # fmt: skip
REPLY = (
    "Thought: I should check the docs for the booking limits.\nAction: search_docs\n"
    "Action Input: {query: 'booking limits', limit: '5', sections: ['faq'],}"
)
BODY = {"model": "m", "messages": HISTORY, "tools": TOOLS}


def own_time(repeats: int = 2000) -> float:
    """Seconds per request of the proxy's own work (warm: the tools of a request are made
    once per distinct definition, as a framework sends the same ones every turn)."""

    def once() -> None:
        request = parse_request(json.loads(json.dumps(BODY)))
        text_messages(request)
        verdict = Judge(request.tools, request.tool_choice).read(Completion(REPLY))
        json.dumps(completion_body(verdict, model="m", usage=Usage(10, 5)))

    once()
    started = time.perf_counter()
    for _ in range(repeats):
        once()
    return (time.perf_counter() - started) / repeats


def cold_time(repeats: int = 200) -> float:
    """The same with the tools made anew each time (every request with new definitions)."""
    from textreact.serve import request as made

    total = 0.0
    for _ in range(repeats):
        made._tool.cache_clear()
        started = time.perf_counter()
        request = parse_request(json.loads(json.dumps(BODY)))
        text_messages(request)
        verdict = Judge(request.tools, request.tool_choice).read(Completion(REPLY))
        json.dumps(completion_body(verdict, model="m", usage=Usage(10, 5)))
        total += time.perf_counter() - started
    return total / repeats


async def _timed(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> float:
    started = time.perf_counter()
    reply = await client.post(url + "/chat/completions", json=body)
    reply.raise_for_status()
    return time.perf_counter() - started


def _upstream(port: int) -> None:
    """A loopback upstream of its own process that answers every chat request with REPLY
    after the body's `delay` seconds (0 without one) without blocking (as a batching server
    such as vLLM does), over keep-alive connections. The proxy passes `delay` on as it passes
    every field it does not handle, so one upstream serves both measures."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def chat(request: Any) -> JSONResponse:
        body = json.loads(await request.body())
        await asyncio.sleep(float(body.get("delay", 0)))
        return JSONResponse(chat_completion(REPLY))

    async def health(request: Any) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    app = Starlette(routes=[
        Route("/v1/chat/completions", chat, methods=["POST"]), Route("/health", health),
    ])  # fmt: skip
    # h11, whatever else is installed: the same upstream before and after a change to the proxy
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", http="h11")


def _free_port() -> int:
    with socket.socket() as probe:  # uvicorn's workers need a fixed port
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclasses.dataclass(frozen=True)
class Served:
    """The upstream's and the proxy's URLs, and the proxy's process (its CPU time is read)."""

    upstream: str
    url: str
    pid: int


@contextlib.contextmanager
def _processes(workers: int) -> Iterator[Served]:
    """The upstream and the proxy, each in processes of their own, so that neither shares
    this process's interpreter lock with the clients."""
    up_port, port = _free_port(), _free_port()
    upstream = multiprocessing.get_context("spawn").Process(target=_upstream, args=(up_port,))
    upstream.start()
    base = f"http://127.0.0.1:{up_port}/v1"
    config = ServeConfig(base, constrain="off", max_retries=0)
    options = uvicorn_options(config)  # as `textreact serve` runs: its protocol and bounds
    protocol = f"{options['http'].__module__}:{options['http'].__qualname__}"
    command = [sys.executable, "-m", "uvicorn", "textreact.serve.cli:app_from_environment",
               "--factory", "--port", str(port), "--workers", str(workers),
               "--log-level", "warning", "--http", protocol,
               "--timeout-keep-alive", str(int(options["timeout_keep_alive"])),
               "--limit-concurrency", str(options["limit_concurrency"])]  # fmt: skip
    with handed_over(config) as variables:
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        proxy = subprocess.Popen(command, env={**os.environ, **variables, "PYTHONPATH": path})
        url = f"http://127.0.0.1:{port}/v1"
        try:
            _wait_for(base)
            _wait_for(url)
            yield Served(base, url, proxy.pid)
        finally:
            proxy.terminate()
            proxy.wait(30)
            upstream.terminate()
            upstream.join(30)


def _wait_for(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url.removesuffix("/v1") + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"the proxy at {url} did not start")


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) a process has used; 0 where /proc cannot tell."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _many(url: str, count: int, body: dict[str, Any]) -> tuple[list[float], float]:
    """`count` clients at once, each on a connection of its own (none kept alive, so no
    request meets a connection the server is just closing)."""
    limits = httpx.Limits(max_connections=count, max_keepalive_connections=0)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        await _timed(client, url, body)  # the server's caches warm
        started = time.perf_counter()
        times = await asyncio.gather(*(_timed(client, url, body) for _ in range(count)))
        return list(times), time.perf_counter() - started


async def _sequential(url: str, body: dict[str, Any], requests: int) -> float:
    async with httpx.AsyncClient(timeout=60) as client:
        for _ in range(10):
            await _timed(client, url, body)
        return statistics.median([await _timed(client, url, body) for _ in range(requests)])


DIRECT = {"model": "m", "messages": HISTORY}


def http_time(served: Served, requests: int) -> tuple[float, float, float]:
    """Median seconds per request through the proxy and directly, one at a time, to an
    upstream that answers at once; and the proxy's CPU seconds per request."""
    cpu = _cpu_seconds(served.pid)
    through = asyncio.run(_sequential(served.url, BODY, requests))
    cpu = (_cpu_seconds(served.pid) - cpu) / (requests + 10)
    direct = asyncio.run(_sequential(served.upstream, DIRECT, requests))
    return through, direct, cpu


def concurrency(
    served: Served, count: int, delay: float
) -> tuple[tuple[list[float], float], tuple[list[float], float]]:
    """(each time, the wall time) of `count` clients at once, directly and through the proxy."""
    direct = asyncio.run(_many(served.upstream, count, {**DIRECT, "delay": delay}))
    return direct, asyncio.run(_many(served.url, count, {**BODY, "delay": delay}))


def stream_time(deltas: int) -> float:
    """CPU seconds to feed a Final Answer of `deltas` one-word deltas to a Committer, the
    whole reply so far at each, as a streamed request does."""
    committer = Committer(Judge(request_tools([WEATHER, CLOCK])))
    text = "Thought: I know it.\nFinal Answer:"
    started = time.process_time()
    for index in range(deltas):
        text += ("\n" if index % 12 == 11 else " ") + f"word{index % 89}"
        committer.feed(text)
    return time.process_time() - started


def render_time(messages: int) -> float:
    """Seconds to check and render a request of `messages` user messages in a row (joined)."""
    said = [{"role": "user", "content": f"part {i} " * 20} for i in range(messages)]
    body = {"model": "m", "tools": TOOLS, "messages": said}
    started = time.perf_counter()
    text_messages(parse_request(body))
    return time.perf_counter() - started


def grammar_time(properties: int) -> float:
    """Seconds to make the grammar of one tool of `properties` properties whose names make
    one rule name (made by `Tool.from_schema`: serve takes at most MAX_SCHEMAS, a library
    user's tool any number)."""
    from textreact.constrain import tools_grammar
    from textreact.tools import Tool

    names = {f"ключ{'я' * (i % 7)}{i}": {"type": "string"} for i in range(properties)}
    tool = Tool.from_schema("f", "d", {"type": "object", "properties": names})
    started = time.perf_counter()
    tools_grammar([tool])
    return time.perf_counter() - started


def _growth(measure: Any, small: int) -> tuple[float, float]:
    measure(small)
    return min(measure(small) for _ in range(3)), min(measure(4 * small) for _ in range(3))


def main(argv: list[str] | None = None) -> None:
    quick = "--quick" in (sys.argv[1:] if argv is None else argv)
    stream_time(100)  # the parser compiles its patterns on its first parse
    counts = (500, 2000) if quick else (2000, 8000, 32000)
    times = {deltas: stream_time(deltas) for deltas in counts}
    print("a streamed Final Answer, one word a delta: CPU seconds to read it as it grows")
    for deltas, seconds in times.items():
        print(f"  {deltas:>6} deltas: {seconds:.3f} s ({seconds / deltas * 1e6:.1f} us a delta)")
    first, last = counts[0], counts[-1]
    ratio = (times[last] / last) / (times[first] / first)
    print(f"  time a delta at {last:,} / at {first:,}: {ratio:.2f}   target ~1 (linear)")
    print("growth: 4x the input, time ratio (target ~4, linear)")
    for what, measure, small in (
        ("user messages in a row", render_time, 200 if quick else 1000),
        ("properties of one tool's grammar", grammar_time, 100 if quick else 1500),
    ):
        before, after = _growth(measure, small)
        print(f"  {what}: {small} -> {4 * small}: {before * 1000:.1f} ms -> "
              f"{after * 1000:.1f} ms ({after / before:.1f}x)")  # fmt: skip
    warm, cold = own_time(200 if quick else 2000), cold_time(20 if quick else 200)
    print("proxy's own work per request, in process (3 tools, 6 messages, a reply to repair)")
    print(f"  warm (tools made once):  {warm * 1000:.3f} ms")
    print(f"  cold (tools made anew):  {cold * 1000:.3f} ms")
    print(f"load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for workers in (1,) if quick else (1, 2):
        with _processes(workers) as served:
            if workers == 1:
                through, direct, cpu = http_time(served, 60 if quick else 400)
                print("one request at a time over loopback HTTP, upstream answering at once")
                print(f"  through the proxy: {through * 1000:.2f} ms   direct: "
                      f"{direct * 1000:.2f} ms (medians)")  # fmt: skip
                print(f"  proxy's own time: {(through - direct) * 1000:.2f} ms a request "
                      f"(target <= 1 ms); its CPU: {cpu * 1000:.2f} ms a request")  # fmt: skip
            count = 64
            (direct_times, direct_wall), (times_, wall) = concurrency(served, count, 0.2)
            print(f"{count} concurrent clients, upstream taking 0.2 s a reply, --workers {workers}")
            print(f"  through the proxy: median {statistics.median(times_):.3f} s, max "
                  f"{max(times_):.3f} s each; all in {wall:.3f} s")  # fmt: skip
            print(f"  directly:          median {statistics.median(direct_times):.3f} "
                  f"s, max {max(direct_times):.3f} s each; all in {direct_wall:.3f} s")  # fmt: skip
            print(f"  ratio, through / direct (wall): {wall / direct_wall:.2f}x   target <= 1.2x")


if __name__ == "__main__":
    main()
