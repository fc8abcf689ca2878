"""Hostile inputs, round four: an MCP server that breaks after the handshake (an error answer
to tools/list, a tool list the SDK refuses, an exit, a death mid-run, a relisting that fails),
a result whose size is the server's choice (paging, serve's event loop, what is kept for
read_more), and credentials in a server's URL kept out of every message. The servers are
tests/mcp_servers/broken.py, on the `mcp` SDK, and PyPI's mcp-server-time; the model is a
scripted one, or the loopback fake upstream."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest
from fakeserver import FakeServer
from hypothesis import given
from hypothesis import strategies as st
from serve_support import client, closing_clients, text

from textreact import Agent, ScriptedModel
from textreact.cli import EXIT_USAGE, main
from textreact.errors import ConfigError
from textreact.mcp import Connection, ServerSpec, connect, server_from_url
from textreact.mcp.pages import Pages, split
from textreact.tools import ToolBox

SERVERS = Path(__file__).parent / "mcp_servers"
BROKEN = str(SERVERS / "broken.py")
TIME = ServerSpec(name="time", command=sys.executable, args=("-m", "mcp_server_time"))
#: What broken.py says when it answers tools/list with an error.
LOCKED = "the catalogue database is locked"
#: A port nothing listens on (discard).
NOBODY = "127.0.0.1:9"

close_clients = pytest.fixture(autouse=True)(closing_clients)


def broken(mode: str, name: str = "broken") -> ServerSpec:
    return ServerSpec(name=name, command=sys.executable, args=(BROKEN, mode))


def call(tool: str, arguments: dict) -> str:
    return f"Thought: I will call it.\nAction: {tool}\nAction Input: {json.dumps(arguments)}"


def answer(words: str) -> str:
    return f"Thought: I have it.\nFinal Answer: {words}"


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    """What the command wrote on stderr, asserted to be a single line."""
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


# -- class 1: a server's error after the handshake --------------------------------------------

#: Each way broken.py fails after the handshake, and what the error line says of it.
AFTER_HANDSHAKE = [
    ("error", LOCKED),  # tools/list answered with a JSON-RPC error
    ("schema", "tools.0.inputSchema"),  # a tool the SDK's client refuses
    ("name", "tools.0.name: Input should be a valid string"),
    ("exit", "Connection closed"),  # the process exits when asked for its tools
]


@pytest.mark.parametrize(("mode", "said"), AFTER_HANDSHAKE)
def test_mcp_list_names_a_server_that_fails_after_the_handshake(capsys, mode, said) -> None:
    code = main(["mcp", "list", "--mcp-server", f"{sys.executable} {BROKEN} {mode}"])
    err = one_line(capsys)
    assert code == EXIT_USAGE
    assert err.startswith("textreact: MCP server 'broken' (") and said in err
    assert "could not be used" in err and "Traceback" not in err


@pytest.mark.parametrize(("mode", "said"), AFTER_HANDSHAKE)
def test_run_stops_before_asking_the_model_when_a_server_fails_after_the_handshake(
    capsys, mode, said
) -> None:
    with FakeServer() as upstream:
        argv = ["run", "q", "--mcp-server", f"{sys.executable} {BROKEN} {mode}"]
        code = main([*argv, "--base-url", upstream.base_url, "--model", "m"])
    err = one_line(capsys)
    assert code == EXIT_USAGE and upstream.posts == []  # the model was never asked
    assert err.startswith("textreact: MCP server 'broken' (") and said in err


@pytest.mark.parametrize(("mode", "said"), AFTER_HANDSHAKE)
def test_serve_refuses_to_start_when_a_server_fails_after_the_handshake(capsys, mode, said) -> None:
    command = f"{sys.executable} {BROKEN} {mode}"
    argv = ["serve", "--upstream", "http://127.0.0.1:9/v1", "--mcp-server", command]
    assert main([*argv, "--port", "0"]) == EXIT_USAGE
    err = one_line(capsys)
    assert err.startswith("textreact: MCP server 'broken' (") and said in err
    assert err.endswith(f"(MCP servers from --mcp-server {command!r})")


def test_the_servers_started_before_the_broken_one_are_closed_again(capsys) -> None:
    connection = Connection([TIME, broken("error")])
    with pytest.raises(ConfigError, match=f"MCP server 'broken' .* {LOCKED}"):
        connection.open()
    assert not connection.is_open


def test_a_server_that_dies_mid_run_is_an_error_observation_and_the_others_go_on() -> None:
    with connect([broken("dies", "dies"), TIME], timeout=10) as connection:
        model = ScriptedModel(
            [call("die", {}), call("get_current_time", {"timezone": "UTC"}), answer("done")]
        )
        result = Agent(model, connection.tools).run("What time is it?")
        dead = [t for t in connection.tools if t.name == "echo"]
        again = Agent(ScriptedModel([call("echo", {"word": "x"}), answer("no")]), dead)
        later = again.run("Echo x.")
    died, timed = result.steps[:2]
    assert result.answer == "done" and died.is_error and "Connection closed" in died.observation
    assert not timed.is_error and '"timezone": "UTC"' in timed.observation
    assert later.steps[0].is_error and "Connection closed" in later.steps[0].observation


def test_a_relisting_that_fails_is_an_error_naming_the_server_not_a_traceback() -> None:
    with connect([broken("relist", "relist"), TIME], timeout=10) as connection:
        before = ToolBox(connection.tools)
        before.call("grow", {})  # says its list changed; every later listing fails
        with pytest.raises(ConfigError) as raised:
            for _ in range(200):  # the change arrives on the server's own stream, soon
                connection.tools  # noqa: B018
                threading.Event().wait(0.05)
        with pytest.raises(ConfigError, match="could not list its tools again"):
            connection.tools  # noqa: B018  (listed again at each read while it fails)
        echoed = before.call("echo", {"word": "still here"})  # the tools it gave still run
    message = str(raised.value)
    assert message.startswith("MCP server 'relist' could not list its tools again: ")
    assert LOCKED in message and "stay until it can" in message
    assert echoed.text == "echo: still here"


# -- class 4: a result's size is the server's choice ------------------------------------------


def old_split(text: str, size: int) -> list[str]:
    """The paging before it was made linear: the reference the new one must match exactly."""
    pages = []
    while len(text) > size:
        cut = text.rfind("\n", int(size * 0.75), size)
        cut = size if cut < 0 else cut + 1
        pages.append(text[:cut])
        text = text[cut:]
    return [*pages, text] if text else pages


@given(st.text(alphabet="ab\n\u00e9", max_size=400), st.integers(min_value=1, max_value=60))
def test_paging_cuts_exactly_where_it_did_before(text_: str, size: int) -> None:
    assert split(text_, size) == old_split(text_, size)


def lines(count: int, width: int = 9) -> str:
    return "".join(f"{n:0{width}d}\n" for n in range(count))  # each line `width` + 1 characters


def result_id(page: str) -> str:
    return page.rsplit('"result": "', 1)[1].split('"', 1)[0]


def test_the_oldest_results_are_dropped_at_the_cap_and_the_model_is_told_so() -> None:
    pages = Pages(page=20, kept_chars=100)
    first = result_id(pages.first(lines(6)))  # 60 characters
    second = result_id(pages.first(lines(6)))  # 120 kept together: the first is dropped
    dropped = str(pages.read(first, 2))
    assert "dropped to bound memory" in dropped and "Call the tool again" in dropped
    assert pages.read(second, 3).startswith(lines(6)[40:])  # the newest is whole
    assert "no kept result" in str(pages.read("r9-000000", 1))  # never existed: not "dropped"


def test_a_result_longer_than_the_cap_is_kept_in_part_and_says_what_was_not() -> None:
    pages = Pages(page=20, kept_chars=60)
    shown = pages.first(lines(20))  # 200 characters: 3 pages of 20 kept, 140 not
    key = result_id(shown)
    assert shown.startswith(lines(2)) and "page 1 of the 3 kept" in shown
    assert "180 more characters follow" in shown and "last 140 characters" in shown
    last = pages.read(key, 3)
    assert last.startswith(lines(6)[40:]) and "the 140 characters after it were too many" in last
    assert "call the tool again" in last
    assert "pages 1 to 3 only" in str(pages.read(key, 4))


def test_the_cap_is_a_connection_option_and_cannot_be_smaller_than_a_page() -> None:
    from textreact.mcp.pages import KEPT_CHARS

    assert Connection([TIME]).pages.kept_chars == KEPT_CHARS == 32_000_000
    with connect([broken("big", "big")], page=100, kept_chars=300) as connection:
        shown = ToolBox(connection.tools).call("big", {"chars": 2000}).text
    assert "page 1 of the 3 kept" in shown and "too many to keep" in shown
    with pytest.raises(ConfigError, match="at least a page"):
        Pages(page=100, kept_chars=99)


def test_a_huge_result_under_serve_does_not_stop_health_or_other_clients() -> None:
    """40 MB from one tool: it is made text and paged off serve's event loop, so /health
    keeps answering (each poll within a generous client timeout) the whole time."""
    import httpx

    from textreact.serve import ServeConfig, ServerTools, create_app, serving
    from textreact.serve.connections import uvicorn_options

    tools = ServerTools([broken("big", "big")], timeout=300)
    with FakeServer() as upstream:
        config = ServeConfig(upstream.base_url, constrain="off", max_retries=0)
        upstream.add(text(call("big", {"chars": 40_000_000})), text(answer("it is long")))
        with serving(create_app(config, mcp=tools), options=uvicorn_options(config)) as url:
            replies: list = []
            asked = threading.Thread(
                target=lambda: replies.append(
                    client(url).chat.completions.create(
                        model="m", messages=[{"role": "user", "content": "Go."}], timeout=300
                    )
                )
            )
            asked.start()
            polls = 0
            with httpx.Client(timeout=3.0) as http:
                while asked.is_alive():
                    assert http.get(url.removesuffix("/v1") + "/health").status_code == 200
                    polls += 1
                    asked.join(0.05)
    (reply,) = replies
    message = reply.choices[0].message
    assert message.content == "it is long" and polls > 1
    assert "too many to keep" in message.reasoning_content  # 40 MB is past the 32 MB cap


# -- class 6: credentials in a server's URL ---------------------------------------------------


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        (f"http://alice:hunter2-secret@{NOBODY}/mcp", "hunter2-secret"),
        (f"https://{NOBODY}/mcp?token=tok-0123456789", "tok-0123456789"),
    ],
)
def test_a_servers_credentials_are_blanked_in_the_startup_error(
    capsys, tmp_path, url, secret
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"remote": {"url": url}}}))
    assert main(["mcp", "list", str(config)]) == EXIT_USAGE
    err = one_line(capsys)
    assert err.startswith("textreact: MCP server 'remote' (") and NOBODY in err
    assert secret not in err and "***" in err


def test_a_password_in_a_flags_url_reaches_neither_the_servers_name_nor_a_repr(capsys) -> None:
    url = f"http://alice:hunter2-secret@{NOBODY}/mcp"
    assert main(["mcp", "list", "--mcp-server", url]) == EXIT_USAGE
    err = one_line(capsys)
    assert "hunter2" not in err and "alice" not in err and NOBODY.split(":")[0] in err
    spec = server_from_url(url)
    assert "hunter2" not in spec.name and "hunter2" not in repr(spec)
    headed = ServerSpec(
        name="remote", transport="http", url=url, headers={"Authorization": "Bearer tok-0123"}
    )
    assert "tok-0123" not in repr(headed) and "hunter2" not in repr(headed)


def test_serve_blanks_a_token_in_the_flag_it_names(capsys) -> None:
    url = f"http://{NOBODY}/mcp?token=tok-0123456789"
    argv = ["serve", "--upstream", "http://127.0.0.1:9/v1", "--mcp-server", url, "--port", "0"]
    assert main(argv) == EXIT_USAGE
    err = one_line(capsys)
    assert "tok-0123456789" not in err and f"--mcp-server 'http://{NOBODY}/mcp?token=***'" in err


class Group(Exception):
    """An exception group as a transport's task group raises one (Python 3.10 has no builtin
    ExceptionGroup; anyio's backport has the same `exceptions`)."""

    def __init__(self, *exceptions: Exception) -> None:
        super().__init__("unhandled errors in a TaskGroup")
        self.exceptions = exceptions


def test_what_a_cause_echoes_of_the_entrys_credentials_is_blanked() -> None:
    from textreact.mcp.sdk import unusable

    spec = ServerSpec(
        name="remote", transport="http", url="https://bob:pa55-word-x@mcp.example/mcp",
        headers={"Authorization": "Bearer sk-live-0123456789"},
    )  # fmt: skip
    echoed = RuntimeError("401 for bob:pa55-word-x with Authorization: Bearer sk-live-0123456789")
    message = str(unusable(spec, Group(echoed)))
    assert "pa55-word-x" not in message and "sk-live-0123456789" not in message
    assert message.startswith("MCP server 'remote' (https://***@mcp.example/mcp (http))")
    assert "RuntimeError: 401 for" in message


def test_a_command_that_holds_a_url_is_described_with_it_blanked() -> None:
    spec = ServerSpec(
        name="remote", command="npx", args=("mcp-remote", "https://u:s3cret-pw@host/mcp?k=v")
    )
    assert spec.describe() == "npx mcp-remote 'https://***@host/mcp?k=***'"


def test_a_connection_opened_again_lists_its_servers_afresh() -> None:
    """Closed and opened again, a connection keeps nothing of what its servers said before:
    each server that has resources is asked for one once, and the tools are listed anew."""
    from test_mcp_servers import FAULTS_SPEC

    connection = Connection([FAULTS_SPEC], timeout=3, writes="allow")
    with connection:
        first = [t.name for t in connection.tools]
    with connection:
        again = [t.name for t in connection.tools]
        readers = list(connection._readers)  # read_resource's servers, each asked once
    assert again == first and "read_resource" in again and readers == ["faults"]
