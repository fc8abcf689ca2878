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

Beside the proxy, two floors are measured the same way, in processes of their own: a TCP
relay that reads no HTTP (what one more process on the path costs on this machine) and a bare
pass-through on the proxy's stack (uvicorn with its protocol, Starlette, httpx2's client; no
work of its own). The proxy's time over the pass-through's is its own work; the pass-through's
over the relay's is the stack's. The targets, sequential and concurrent, take turns (rounds of
requests), so that a change in the machine's load falls on all of them alike.

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
from textreact.serve.convert import earlier_calls, parse_request, text_messages  # noqa: E402
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


def _work() -> None:
    """The proxy's work on one request, as `serve.app` does it: the body read and checked, the
    conversation rendered, the earlier calls taken in (a repeated call is answered from
    them), the reply judged and the response written."""
    request = parse_request(json.loads(json.dumps(BODY)))
    text_messages(request)
    judge = Judge(request.tools, request.tool_choice, earlier=earlier_calls(request))
    verdict = judge.read(Completion(REPLY))
    json.dumps(completion_body(verdict, model="m", usage=Usage(10, 5)))


def own_time(repeats: int = 2000) -> float:
    """Seconds per request of the proxy's own work (warm: the tools of a request are made
    once per distinct definition, as a framework sends the same ones every turn)."""
    _work()
    started = time.perf_counter()
    for _ in range(repeats):
        _work()
    return (time.perf_counter() - started) / repeats


def cold_time(repeats: int = 200) -> float:
    """The same with the tools made anew each time (every request with new definitions)."""
    from textreact.serve import request as made

    total = 0.0
    for _ in range(repeats):
        made._tool.cache_clear()
        started = time.perf_counter()
        _work()
        total += time.perf_counter() - started
    return total / repeats


async def _timed(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> float:
    started = time.perf_counter()
    reply = await client.post(url + "/chat/completions", json=body)
    reply.raise_for_status()
    return time.perf_counter() - started


def _run_app(chat: Any, port: int, **options: Any) -> None:
    """A Starlette app of `chat` (POST /v1/chat/completions) and a health check, on uvicorn at
    `port` with `options`: the upstream and the bare pass-through are both made so."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def health(request: Any) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    app = Starlette(routes=[
        Route("/v1/chat/completions", chat, methods=["POST"]), Route("/health", health),
    ])  # fmt: skip
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", **options)


def _upstream(port: int) -> None:
    """A loopback upstream of its own process that answers every chat request with REPLY
    after the body's `delay` seconds (0 without one) without blocking (as a batching server
    such as vLLM does), over keep-alive connections. The proxy passes `delay` on as it passes
    every field it does not handle, so one upstream serves both measures."""
    from starlette.responses import JSONResponse

    async def chat(request: Any) -> JSONResponse:
        body = json.loads(await request.body())
        await asyncio.sleep(float(body.get("delay", 0)))
        return JSONResponse(chat_completion(REPLY))

    # h11, whatever else is installed: the same upstream before and after a change to the proxy
    _run_app(chat, port, http="h11")


def _free_ports(count: int) -> list[int]:
    """`count` distinct free ports (uvicorn's workers need a fixed one): each probe is held
    until all are bound, so no two can be the same."""
    with contextlib.ExitStack() as probes:
        ports = []
        for _ in range(count):
            probe = probes.enter_context(socket.socket())
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])
        return ports


def _relay(port: int, upstream_port: int) -> None:
    """A floor: a TCP relay that copies each connection's bytes to the upstream and back and
    reads no HTTP at all, what any proxy in its own process costs on this machine (the
    sends and the waking of one more process each way)."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()

    async def connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        except OSError:
            writer.close()  # the client sees the connection close, not a wait
            return
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def serve() -> None:
        server = await asyncio.start_server(connect, "127.0.0.1", port)
        await server.serve_forever()

    asyncio.run(serve())


def _bare(port: int, upstream_port: int) -> None:
    """A floor: a pass-through on the proxy's own stack (uvicorn with its protocol and
    bounds, Starlette, httpx2's client with the proxy's connection limits) that sends each
    request's body to the upstream and its reply back and does nothing else, what the stack
    costs before the proxy's work."""
    from starlette.responses import Response

    from textreact.serve.transport import _LIMITS

    upstream = f"http://127.0.0.1:{upstream_port}/v1"
    limits = httpx.Limits(max_connections=_LIMITS[0], max_keepalive_connections=_LIMITS[1])
    client = httpx.AsyncClient(timeout=60, limits=limits)

    async def chat(request: Any) -> Response:
        reply = await client.post(
            upstream + "/chat/completions",
            content=await request.body(),
            headers={"Content-Type": "application/json"},
        )
        return Response(reply.content, reply.status_code, media_type="application/json")

    _run_app(chat, port, **uvicorn_options(ServeConfig(upstream)))


@dataclasses.dataclass(frozen=True)
class Served:
    """The upstream's and the proxy's URLs, and the proxy's process (its CPU time is read);
    with `floors`, the URL and process of each floor (`_relay`, `_bare`) by name."""

    upstream: str
    url: str
    pid: int
    floors: dict[str, tuple[str, int]] = dataclasses.field(default_factory=dict)

    def targets(self) -> dict[str, tuple[str, dict[str, Any], int]]:
        """What the bench asks, by name: (URL, body, the process in between, 0 for none),
        directly ("direct"), through the proxy ("proxy"), and through each floor."""
        found = {"direct": (self.upstream, DIRECT, 0), "proxy": (self.url, BODY, self.pid)}
        found.update({name: (url, BODY, pid) for name, (url, pid) in self.floors.items()})
        return found


#: The floor the proxy's own work is measured over.
BARE = "a bare pass-through on the same stack"
#: The floors, by the name the bench prints; each runs as `floor(port, upstream_port)`.
FLOORS = {BARE: _bare, "a TCP relay, no HTTP read": _relay}


def _stopped(process: multiprocessing.process.BaseProcess) -> None:
    process.terminate()
    process.join(30)
    if process.is_alive():
        process.kill()


def _popen_stopped(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()


@contextlib.contextmanager
def _processes(workers: int, *, floors: bool = False) -> Iterator[Served]:
    """The upstream and the proxy (and with `floors`, each floor), each in processes of their
    own, so that none shares this process's interpreter lock with the clients; each is
    stopped on the way out, whatever fails on the way in."""
    spawn = multiprocessing.get_context("spawn")
    named = FLOORS if floors else {}
    up_port, port, *floor_ports = _free_ports(2 + len(named))
    base = f"http://127.0.0.1:{up_port}/v1"
    config = ServeConfig(base, constrain="off", max_retries=0)
    options = uvicorn_options(config)  # as `textreact serve` runs: its protocol and bounds
    protocol = f"{options['http'].__module__}:{options['http'].__qualname__}"
    command = [sys.executable, "-m", "uvicorn", "textreact.serve.cli:app_from_environment",
               "--factory", "--port", str(port), "--workers", str(workers),
               "--log-level", "warning", "--http", protocol,
               "--timeout-keep-alive", str(int(options["timeout_keep_alive"])),
               "--limit-concurrency", str(options["limit_concurrency"])]  # fmt: skip
    with contextlib.ExitStack() as stack:
        started: dict[str, tuple[str, int]] = {}
        for target, args, name in [
            (_upstream, (up_port,), None),
            *((run, (floor_port, up_port), name) for (name, run), floor_port in zip(
                named.items(), floor_ports, strict=True)),
        ]:  # fmt: skip
            process = spawn.Process(target=target, args=args, daemon=True)
            process.start()
            stack.callback(_stopped, process)
            if name is not None:
                started[name] = (f"http://127.0.0.1:{args[0]}/v1", process.pid or 0)
        variables = stack.enter_context(handed_over(config))
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        proxy = subprocess.Popen(command, env={**os.environ, **variables, "PYTHONPATH": path})
        stack.callback(_popen_stopped, proxy)
        url = f"http://127.0.0.1:{port}/v1"
        for waited in (base, url, *(floor_url for floor_url, _ in started.values())):
            _wait_for(waited)
        yield Served(base, url, proxy.pid, started)


def _wait_for(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url.removesuffix("/v1") + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"the server at {url} did not start")


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


#: Requests to each target in a row, before the next target's turn.
_ROUND = 20


async def _rounds(
    targets: dict[str, tuple[str, dict[str, Any]]], requests: int
) -> dict[str, float]:
    """Median seconds per request to each target (URL, body), one request at a time, after
    10 to warm each; the targets take turns, _ROUND requests each, so that a change in the
    machine's load falls on all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in targets}
    async with httpx.AsyncClient(timeout=60) as client:
        for url, body in targets.values():
            for _ in range(10):
                await _timed(client, url, body)
        for _ in range(_rounds_of(requests)):
            for name, (url, body) in targets.items():
                times[name] += [await _timed(client, url, body) for _ in range(_ROUND)]
    return {name: statistics.median(taken) for name, taken in times.items()}


def _rounds_of(requests: int) -> int:
    return max(1, requests // _ROUND)


DIRECT = {"model": "m", "messages": HISTORY}


def http_time(served: Served, requests: int) -> dict[str, tuple[float, float]]:
    """Per target, the median seconds a request, one at a time, to an upstream that answers at
    once, and the CPU seconds a request of the process in between (0 for "direct"): asked
    directly, through the proxy ("proxy"), and through each of `served.floors`."""
    targets = served.targets()
    before = {name: _cpu_seconds(pid) for name, (_, _, pid) in targets.items() if pid}
    medians = asyncio.run(
        _rounds({name: (url, body) for name, (url, body, _) in targets.items()}, requests)
    )
    sent = _rounds_of(requests) * _ROUND + 10
    return {
        name: (medians[name], (_cpu_seconds(pid) - before[name]) / sent if pid else 0.0)
        for name, (_, _, pid) in targets.items()
    }


def concurrency(
    served: Served, count: int, delay: float, rounds: int
) -> dict[str, tuple[list[float], float]]:
    """Per target, each client's time and the wall time of `count` clients at once: directly
    ("direct"), through the proxy ("proxy"), and through each of `served.floors`. The targets
    take turns for `rounds` rounds, and the round with the median wall time is kept for each."""
    targets = served.targets()
    runs: dict[str, list[tuple[list[float], float]]] = {name: [] for name in targets}
    for _ in range(rounds):
        for name, (url, body, _) in targets.items():
            runs[name].append(asyncio.run(_many(url, count, {**body, "delay": delay})))
    return {
        name: sorted(taken, key=lambda run: run[1])[rounds // 2] for name, taken in runs.items()
    }


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
        with _processes(workers, floors=workers == 1) as served:
            if workers == 1:
                print_http_time(http_time(served, 60 if quick else 400))
            print_concurrency(concurrency(served, 64, 0.2, 1 if quick else 3), 64, workers)


def _label(name: str) -> str:
    """How a target of `http_time` and `concurrency` is printed."""
    return {"direct": "directly", "proxy": "through the proxy"}.get(name, "through " + name)


def print_http_time(times: dict[str, tuple[float, float]]) -> None:
    """`http_time`'s figures: each target's median and own time over asking directly, its
    CPU a request, and the proxy's time and CPU over the bare pass-through's (its work)."""
    direct = times["direct"][0]
    print("one request at a time over loopback HTTP, upstream answering at once (medians)")
    for name, (through, cpu) in times.items():
        if name == "direct":
            print(f"  {_label(name):<46} {direct * 1000:6.2f} ms")
            continue
        target = " (target <= 1 ms)" if name == "proxy" else ""
        own = (through - direct) * 1000
        print(f"  {_label(name):<46} {through * 1000:6.2f} ms   own time {own:.2f} ms{target}, "
              f"CPU {cpu * 1000:.2f} ms a request")  # fmt: skip
    if BARE in times:
        (proxy, proxy_cpu), (bare, bare_cpu) = times["proxy"], times[BARE]
        work, work_cpu = (proxy - bare) * 1000, (proxy_cpu - bare_cpu) * 1000
        print(f"  the proxy's own time over the bare pass-through's (its work): {work:.2f} ms; "
              f"CPU {work_cpu:.2f} ms")  # fmt: skip


def print_concurrency(runs: dict[str, tuple[list[float], float]], count: int, workers: int) -> None:
    """`concurrency`'s figures: each target's times, and its wall time over the direct one's."""
    print(f"{count} concurrent clients, upstream taking 0.2 s a reply, --workers {workers}")
    direct_wall = runs["direct"][1]
    for name, (times, wall) in runs.items():
        ratio = "" if name == "direct" else f"; {wall / direct_wall:.2f}x direct"
        target = "   target <= 1.2x" if name == "proxy" else ""
        print(f"  {_label(name):<46} median {statistics.median(times):.3f} s, max "
              f"{max(times):.3f} s each; all in {wall:.3f} s{ratio}{target}")  # fmt: skip


if __name__ == "__main__":
    main()
