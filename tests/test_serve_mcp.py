"""`textreact serve --mcp`: requests without tools answered by textreact's own loop with real
MCP servers' tools (PyPI's mcp-server-time, and tests/mcp_servers/faults.py for a tool that may
destroy), through the official openai SDK, in front of the loopback fake upstream scripted in
the text protocol; requests with tools handled as without --mcp; a server that cannot start
is a startup error; the flags."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from serve_support import WEATHER, client, closing_clients, streamed, text

from textreact.cli import EXIT_USAGE, build_parser, main
from textreact.mcp import ServerSpec
from textreact.serve import ServeConfig, ServerTools, create_app, serving
from textreact.serve.cli import server_tools
from textreact.serve.connections import uvicorn_options

FAULTS = str(Path(__file__).parent / "mcp_servers" / "faults.py")
TIME = ServerSpec(name="time", command=sys.executable, args=("-m", "mcp_server_time"))
FAULTS_SPEC = ServerSpec(name="faults", command=sys.executable, args=(FAULTS,))
TOKYO = [{"role": "user", "content": "What time is it in Tokyo?"}]

close_clients = pytest.fixture(autouse=True)(closing_clients)


def call(tool: str, arguments: dict, thought: str = "I will look it up.") -> str:
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {json.dumps(arguments)}"


def answer(words: str, thought: str = "I have it now.") -> str:
    return f"Thought: {thought}\nFinal Answer: {words}"


@pytest.fixture(scope="module")
def served():
    """(the fake upstream, the proxy's URL): time's tools, and of faults' only `wipe` (which
    may destroy, so it is refused) and `peek` (read-only); each test scripts its replies."""
    tools = ServerTools(
        [TIME, FAULTS_SPEC], allow=["time/*", "faults/wipe", "faults/peek"], timeout=10
    )
    with FakeServer() as upstream:
        config = ServeConfig(upstream.base_url, constrain="off", max_retries=0)
        app = create_app(config, mcp=tools)
        with serving(app, options=uvicorn_options(config)) as url:
            yield upstream, url
    assert not tools.is_open  # closed at shutdown


def script(upstream: FakeServer, *replies: Reply) -> int:
    """Add `replies` to the upstream's script; the index its next request will have."""
    start = len(upstream.posts)
    upstream.add(*replies)
    return start


def test_a_plain_chat_request_is_answered_with_the_tools_result(served) -> None:
    upstream, url = served
    start = script(
        upstream,
        text(call("get_current_time", {"timezone": "Asia/Tokyo"})),
        text(answer("It is morning in Tokyo.")),
    )
    reply = client(url).chat.completions.create(model="my-model", messages=TOKYO)
    message = reply.choices[0].message
    assert message.content == "It is morning in Tokyo."
    assert reply.choices[0].finish_reason == "stop" and message.tool_calls is None
    reasoning = message.reasoning_content
    assert reasoning.startswith("Thought: I will look it up.\nAction: get_current_time\n")
    assert 'Action Input: {"timezone": "Asia/Tokyo"}' in reasoning
    observation = reasoning.split("Observation: ", 1)[1]
    assert '"timezone": "Asia/Tokyo"' in observation and '"datetime": "20' in observation
    assert reasoning.endswith("Thought: I have it now.")
    assert reply.model == "my-model"  # what the client asked, not the upstream's name
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (22, 14)
    first, second = upstream.posts[start:]
    prompt = first.body["messages"][0]["content"]
    assert "get_current_time: Get current time in a specific timezone" in prompt
    assert "peek: Reads only." in prompt and "\nwipe:" not in prompt  # refused: left out
    assert "echo" not in prompt  # not allowed by --mcp-allow
    assert first.body["messages"][-1] == TOKYO[0] and first.body["model"] == "my-model"
    assert second.body["messages"][-1]["content"].startswith("Observation: {")


def test_the_clients_system_message_and_earlier_turns_open_the_run(served) -> None:
    upstream, url = served
    start = script(upstream, text(answer("Still Tokyo.")))
    conversation = [
        {"role": "system", "content": "Answer in one short sentence."},
        {"role": "user", "content": "Which city is the capital of Japan?"},
        {"role": "assistant", "content": "Tokyo."},
        {"role": "user", "content": "And now?"},
    ]
    reply = client(url).chat.completions.create(model="m", messages=conversation, temperature=0.3)
    assert reply.choices[0].message.content == "Still Tokyo."
    sent = upstream.posts[start].body
    system = sent["messages"][0]["content"]
    assert "get_current_time" in system and system.endswith("Answer in one short sentence.")
    assert sent["messages"][-3:] == [
        {"role": "user", "content": "Which city is the capital of Japan?"},
        {"role": "assistant", "content": "Final Answer: Tokyo."},
        {"role": "user", "content": "And now?"},
    ]
    assert sent["temperature"] == 0.3 and "\nObservation:" in sent["stop"]


def test_a_streamed_answer_sends_each_step_as_reasoning_then_the_content(served) -> None:
    upstream, url = served
    noon = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
    script(upstream, text(call("convert_time", noon)), text(answer("It is 21:00 in Tokyo.")))
    chunks = list(
        client(url).chat.completions.create(
            model="m", messages=TOKYO, stream=True, stream_options={"include_usage": True}
        )
    )
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    sent = [
        ("reasoning", reasoning) if (reasoning := d.model_extra.get("reasoning_content")) else
        ("content", d.content)
        for d in deltas if d.content or d.model_extra.get("reasoning_content")
    ]  # fmt: skip
    assert [kind for kind, _ in sent] == ["reasoning", "reasoning", "content"]  # a delta a step
    (_, first), (_, second), (_, content) = sent
    assert first.startswith("Thought: I will look it up.\nAction: convert_time\n")
    assert '"time_difference": "+9.0h"' in first  # the server's real answer
    assert second == "\n\nThought: I have it now." and content == "It is 21:00 in Tokyo."
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].usage.completion_tokens == 14 and chunks[0].model == "m"


def test_requests_at_once_share_the_servers_sessions(served) -> None:
    import asyncio

    import openai

    upstream, url = served
    zones = ["Asia/Tokyo", "Europe/Paris", "America/Lima", "Africa/Cairo"]
    for zone in zones:  # each answer ends one run, whichever run took the calls before it
        script(upstream, text(call("get_current_time", {"timezone": zone})), text(answer(zone)))

    async def ask_all() -> list:
        async with openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0) as sdk:
            asked = [sdk.chat.completions.create(model="m", messages=TOKYO) for _ in zones]
            return await asyncio.gather(*asked)

    replies = asyncio.run(ask_all())
    observed = [
        re.search(r'"timezone": "([^"]+)"', part)[1]
        for reply in replies
        for part in reply.choices[0].message.reasoning_content.split("Observation: ")[1:]
    ]
    assert sorted(observed) == sorted(zones)  # every call ran, each on its own result
    assert sorted(r.choices[0].message.content for r in replies) == sorted(zones)


def test_a_tool_that_may_destroy_is_refused_and_never_runs(served) -> None:
    upstream, url = served
    script(upstream, text(call("wipe", {})), text(answer("I could not wipe it.")))
    reply = client(url).chat.completions.create(model="m", messages=[
        {"role": "user", "content": "Wipe everything."}
    ])  # fmt: skip
    reasoning = reply.choices[0].message.reasoning_content
    assert 'Observation: Error: Unknown tool "wipe"' in reasoning
    assert reply.choices[0].message.content == "I could not wipe it."


@pytest.mark.parametrize(("policy", "offered"), [("refuse", False), ("allow", True)])
def test_a_tool_that_may_destroy_is_offered_only_when_allowed(policy, offered) -> None:
    tools = ServerTools([FAULTS_SPEC], allow=["faults/wipe", "faults/peek"], writes=policy)
    tools.open()
    try:
        names = [t.name for t in tools.offered()]
    finally:
        tools.close()
    assert ("wipe" in names) is offered and "peek" in names and not tools.is_open


def test_a_request_with_its_own_tools_is_one_turn_as_without_mcp(served) -> None:
    upstream, url = served
    start = script(upstream, text(call("get_weather", {"city": "Paris"})))
    reply = client(url).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Weather in Paris?"}], tools=[WEATHER]
    )
    (made,) = reply.choices[0].message.tool_calls
    assert made.function.name == "get_weather" and json.loads(made.function.arguments) == {
        "city": "Paris"
    }
    assert len(upstream.posts) == start + 1
    prompt = upstream.posts[start].body["messages"][0]["content"]
    assert "get_weather" in prompt and "get_current_time" not in prompt


def test_a_stream_with_its_own_tools_is_one_turn_too(served) -> None:
    upstream, url = served
    script(upstream, streamed(call("get_weather", {"city": "Oslo"})))
    chunks = list(
        client(url).chat.completions.create(model="m", messages=TOKYO, tools=[WEATHER], stream=True)
    )
    calls = [
        c.choices[0].delta.tool_calls for c in chunks if c.choices and c.choices[0].delta.tool_calls
    ]
    assert calls[0][0].function.name == "get_weather"


def test_an_upstream_that_refuses_the_key_is_the_same_http_error(served) -> None:
    import openai

    upstream, url = served
    refused = {"error": {"message": "bad key", "type": "invalid_request_error"}}
    script(upstream, Reply(status=401, body=refused), Reply(status=401, body=refused))
    with pytest.raises(openai.AuthenticationError):
        client(url).chat.completions.create(model="m", messages=TOKYO)
    with pytest.raises(openai.AuthenticationError):  # before the stream begins: a status
        list(client(url).chat.completions.create(model="m", messages=TOKYO, stream=True))


def test_health_counts_the_mcp_tools(served) -> None:
    import httpx

    _, url = served
    health = httpx.get(url.removesuffix("/v1") + "/health").json()
    assert (
        health["mcp_tools"] == 5
    )  # get_current_time, convert_time, peek, read_more, read_resource


# -- the command line ---------------------------------------------------------------------------


def test_the_flags_name_the_servers_as_run_reads_them(tmp_path) -> None:
    config = tmp_path / "mcp.json"
    servers = {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}}
    config.write_text(json.dumps({"mcpServers": servers}))
    argv = ["serve", "--mcp", str(config), "--mcp-server", "uvx mcp-server-git"]
    args = build_parser().parse_args([*argv, "--mcp-allow", "time/*"])
    tools = server_tools(args, {})
    assert [s.name for s in tools.servers] == ["time", "mcp-server-git"]
    assert tools.allow == ("time/*",) and tools.writes == "refuse"  # unless allowed
    assert str(config) in tools.source and not tools.is_open
    assert server_tools(build_parser().parse_args(["serve"]), {}) is None
    allowed = build_parser().parse_args([*argv, "--mcp-writes", "allow"])
    assert server_tools(allowed, {}).writes == "allow"


def test_a_server_that_cannot_start_is_a_startup_error_naming_it_and_the_config(
    tmp_path, capsys
) -> None:
    config = tmp_path / "broken.json"
    broken = {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}
    config.write_text(json.dumps({"mcpServers": {"broken": broken}}))
    argv = ["serve", "--upstream", "http://127.0.0.1:9/v1", "--mcp", str(config), "--port", "0"]
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("textreact: MCP server 'broken'")
    assert f"--mcp {config}" in err


@pytest.mark.parametrize(
    ("content", "said"),
    [("{not json", "is not valid JSON"), ('{"servers": {}}', "mcpServers")],
)
def test_a_malformed_config_is_a_startup_error_naming_the_file(
    tmp_path, capsys, content, said
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(content)
    assert main(["serve", "--upstream", "http://127.0.0.1:9/v1", "--mcp", str(config)]) == 2
    err = capsys.readouterr().err
    assert said in err and str(config) in err


def test_mcp_needs_one_worker(capsys) -> None:
    argv = ["serve", "--upstream", "http://h/v1", "--workers", "2", "--mcp-server", "x"]
    assert main(argv) == EXIT_USAGE
    assert "--mcp needs one worker" in capsys.readouterr().err
