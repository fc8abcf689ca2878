"""The tool budget (`tool_budget`, `Agent(max_tools=k)`, `--max-tools k`): among 40 tools (the
reference MCP servers' own 14 beside 26 of the kinds users bring), each request offers the few
that fit the step, the prompt's `<tools>` and the grammar alike, keeps what the run must keep,
and says on the turn what it offered. Driven through the real loop by ScriptedModel, and
through the command line against the loopback fake server."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeServer, Reply, chat_completion

from textreact import Agent, ScriptedModel, Tool
from textreact.cli import EXIT_OK, EXIT_USAGE, main
from textreact.compare.runner import Options, run_task
from textreact.compare.suite import Task
from textreact.errors import ConfigError, MissingExtraError
from textreact.mcp.pages import NOTE_ROOM, PAGE, Pages
from textreact.policies import ToolBudget, ToolHiding, small_model
from textreact.policies.relevance import words
from textreact.transcript import read_transcript

CORPUS = json.loads((Path(__file__).parent / "corpus" / "mcp_tools.json").read_text())
ANSWER = "Thought: I now know the answer.\nFinal Answer: done"


def _made(name: str, description: str, /, **parameters: str) -> Tool:
    """A tool whose call says it ran; each keyword is a required string parameter."""
    properties = {p: {"type": "string", "description": d} for p, d in parameters.items()}
    schema = {"type": "object", "properties": properties, "required": list(parameters)}
    return Tool.from_schema(name, description, schema, fn=lambda **_: f"{name} ran")


USERS = [
    _made("send_email", "Send an email message to a recipient", to="address", body="the text"),
    _made("search_email", "Search the mailbox for messages", query="words to find"),
    _made("createIssue", "Open a new issue in a GitHub repository", title="the issue's title"),
    _made(
        "listPullRequests", "List the open pull requests of a GitHub repository", repo="owner/name"
    ),
    _made("get_weather_forecast", "Weather forecast for a city, by day", city="city name"),
    _made(
        "convert_currency", "Convert an amount of money between currencies", amount="e.g. 100 USD"
    ),
    _made("stock_quote", "The latest share price of a listed company", ticker="stock symbol"),
    _made("read_file", "Read the complete contents of a file from disk", path="file path"),
    _made("write_file", "Create or overwrite a file with new content", path="file path"),
    _made("list_directory", "List the files and folders in a directory", path="folder path"),
    _made("slack_post_message", "Post a message to a Slack channel", channel="channel name"),
    _made("slack_list_channels", "List the channels of a Slack workspace"),
    _made("query_database", "Run a read-only SQL query against the database", sql="the query"),
    _made("list_tables", "List the tables of the database and their columns"),
    _made("create_event", "Add an event to the calendar", title="what", start="when"),
    _made("list_events", "The calendar's events between two dates", start="from", end="to"),
    _made("maps_directions", "Driving or walking directions between two places", origin="from"),
    _made("maps_geocode", "The coordinates of an address", address="a street address"),
    _made("translate_text", "Translate text into another language", text="what", target="lang"),
    _made("fetch_url", "Fetch a web page and return it as text", url="the address"),
    _made("create_entities", "Store new entities in the knowledge graph memory", names="list"),
    _made("book_flight", "Book a flight ticket between two airports", origin="IATA code"),
    _made("track_package", "Where a shipped parcel is now", tracking_number="the carrier's id"),
    _made("lookup_employee", "An employee's team, manager and office", name="full name"),
    _made("query_weather_cn", "查询城市的天气预报，按天给出气温和降水", city="城市名"),
    _made("exchange_rate_cn", "查询两种货币之间的汇率", pair="货币对"),
]
SERVERS = [
    Tool.from_schema(t["name"], t["description"], t["inputSchema"], fn=lambda **_: "ran")
    for server in CORPUS["servers"].values()
    for t in server
]
TOOLS = SERVERS + USERS  # 40


def test_the_catalogue_is_forty_tools_of_distinct_names() -> None:
    assert len(TOOLS) == 40 and len({t.name for t in TOOLS}) == 40


def _listed(request: list[dict[str, Any]]) -> list[str]:
    """The tools the system prompt's `<tools>` section lists, in order."""
    section = re.search(r"^<tools>$(.*)^</tools>$", request[0]["content"], re.M | re.S)[1]
    return re.findall(r"^([A-Za-z_][\w.-]*): ", section, re.MULTILINE)


def _in_grammar(options: dict[str, Any]) -> list[str]:
    """The tools a request's grammar lets the model name."""
    return [t.name for t in TOOLS if f'"{t.name}"' in options.get("grammar", "")]


def _first_offer(question: str, k: int, **agent: Any) -> list[str]:
    script = ScriptedModel([ANSWER])
    Agent(script, TOOLS, max_tools=k, **agent).run(question)
    return _listed(script.requests[0])


@pytest.mark.parametrize(
    ("question", "wanted"),
    [
        ("Show me the last five commits in the repository's log", "git_log"),
        ("What time is it in Tokyo right now? Use the timezone Asia/Tokyo.", "get_current_time"),
        ("Send an email to alice@example.com about Friday's meeting", "send_email"),
        ("Open a GitHub issue saying the build crashes on start", "createIssue"),
        ("What is the weather forecast for Berlin tomorrow?", "get_weather_forecast"),
        ("How many euros is 100 US dollars? Convert the currency.", "convert_currency"),
        ("Which files are in the folder /srv/app?", "list_directory"),
        ("Stage the changed files and commit them with the message 'fix typo'", "git_commit"),
        ("Where is my parcel with tracking number 1Z999?", "track_package"),
    ],
)
def test_the_tools_offered_are_the_ones_the_question_needs(question: str, wanted: str) -> None:
    offered = _first_offer(question, 3)
    assert wanted in offered and len(offered) == 3


def test_a_chinese_question_finds_a_tool_described_in_chinese() -> None:
    """CJK has no spaces: character pairs match `天气` inside `天气预报` and `北京明天的天气`."""
    assert "query_weather_cn" in _first_offer("北京明天的天气怎么样？", 2, lang="zh")
    assert "exchange_rate_cn" in _first_offer("美元兑人民币的汇率是多少？", 2, lang="zh")
    # Latin words in a Chinese question match English descriptions too.
    assert "createIssue" in _first_offer("在 GitHub 上开一个 issue", 2, lang="zh")


def test_words_are_cut_alike_in_tool_names_questions_and_chinese() -> None:
    assert words("git_create_branch") == ["git", "create", "branch"]
    assert words("listPullRequests") == ["listpullrequest", "list", "pull", "request"]
    assert words("Which files, please?") == ["file", "please"]
    assert words("查询天气") == ["查询", "询天", "天气"]


def test_with_no_word_in_common_the_first_k_are_offered_in_their_order() -> None:
    assert _first_offer("Zyzzyva qwxv?", 4) == [t.name for t in TOOLS[:4]]


def test_a_budget_as_large_as_the_tools_offers_them_all_without_a_note() -> None:
    script = ScriptedModel([ANSWER])
    result = Agent(script, TOOLS, max_tools=40).run("Show me the git log")
    assert _listed(script.requests[0]) == [t.name for t in TOOLS]
    assert result.steps[0].policy_notes == ()


def test_the_default_agent_lists_every_tool() -> None:
    script = ScriptedModel([ANSWER])
    Agent(script, TOOLS).run("Show me the git log")
    assert _listed(script.requests[0]) == [t.name for t in TOOLS]


def test_the_tools_section_and_the_grammar_shrink_together() -> None:
    """Under constrained decoding the model can name only what the prompt lists."""
    script = ScriptedModel([ANSWER])
    result = Agent(script, TOOLS, max_tools=3).run("Show me the log of recent commits")
    listed, grammar = _listed(script.requests[0]), _in_grammar(script.options[0])
    assert listed == grammar and len(listed) == 3 and "git_log" in listed
    # The worked example and the question stay as they are: only the tool list changed.
    plain = ScriptedModel([ANSWER])
    Agent(plain, TOOLS).run("Show me the log of recent commits")
    assert script.requests[0][1:] == plain.requests[0][1:]
    assert len(_in_grammar(plain.options[0])) == 40
    (note,) = result.steps[0].policy_notes
    assert (note.policy, note.offered, note.left_out) == ("tool_budget", tuple(listed), 37)


def test_a_native_request_sends_the_offered_tools_alone() -> None:
    script = ScriptedModel(["done"])
    Agent(script, TOOLS, protocol="native", max_tools=2).run("What is the weather forecast?")
    sent = [t["function"]["name"] for t in script.options[0]["tools"]]
    assert len(sent) == 2 and "get_weather_forecast" in sent


def test_the_offer_follows_the_last_result_and_keeps_what_was_called() -> None:
    """The file a log names brings the file tools; the tool called stays offered (a follow-up
    call), as the native history that calls it requires."""
    log = Tool.from_schema(
        "git_log", "Shows the commit logs", {"type": "object", "properties": {}},
        fn=lambda: "commit 1a2b (Ann): the file config.yaml was rewritten; read its contents",
    )  # fmt: skip
    tools = [log if t.name == "git_log" else t for t in TOOLS]
    script = ScriptedModel(["Thought: the log.\nAction: git_log\nAction Input: {}", ANSWER])
    result = Agent(script, tools, max_tools=2).run("What did the latest commit change?")
    first, second = _listed(script.requests[0]), _listed(script.requests[1])
    assert "read_file" not in first and len(first) == 2
    assert "git_log" in second and "read_file" in second and len(second) == 3
    assert result.steps[1].policy_notes[0].offered == tuple(second)


def test_a_call_of_a_tool_left_out_runs_and_stays_offered() -> None:
    """The ranking is a guess from words: a real tool the model names exactly still runs."""
    script = ScriptedModel(
        ['Thought: mail.\nAction: send_email\nAction Input: {"to": "a@b.c", "body": "hi"}', ANSWER]
    )
    result = Agent(script, TOOLS, max_tools=2).run("Show me the git log")
    assert "send_email" not in _listed(script.requests[0])
    assert result.steps[0].observation == "send_email ran" and not result.steps[0].is_error
    assert "send_email" in _listed(script.requests[1])


def test_a_failed_call_s_hint_names_only_tools_that_step_offered() -> None:
    def broken() -> str:
        raise RuntimeError("not a git repository")

    log = Tool.from_schema(
        "git_log", "Shows the commit logs", {"type": "object", "properties": {}}, fn=broken
    )
    tools = [log if t.name == "git_log" else t for t in TOOLS]
    script = ScriptedModel(["Thought: the log.\nAction: git_log\nAction Input: {}", ANSWER])
    result = Agent(script, tools, max_tools=2).run("Show the git log")
    offered = _listed(script.requests[0])
    hint = result.steps[0].observation.rsplit("use another tool:", 1)[1]
    named = [t.name for t in tools if re.search(rf"\b{t.name}\b", hint)]
    assert named and set(named) == set(offered) - {"git_log"}


def test_pinned_tools_are_always_offered_and_unknown_ones_are_refused() -> None:
    script = ScriptedModel([ANSWER])
    budget = ToolBudget(2, pinned=["lookup_employee"])
    Agent(script, TOOLS, policies=[budget]).run("Show me the git log")
    offered = _listed(script.requests[0])
    assert "lookup_employee" in offered and "git_log" in offered and len(offered) == 3
    with pytest.raises(ConfigError, match="pinned names no_such_tool, which are not among"):
        Agent(
            ScriptedModel([ANSWER]), TOOLS, policies=[ToolBudget(2, pinned=["no_such_tool"])]
        ).run("q")


def test_a_named_tool_choice_keeps_its_tool_offered() -> None:
    script = ScriptedModel(
        ['Thought: mail.\nAction: send_email\nAction Input: {"to": "a", "body": "b"}', ANSWER]
    )
    Agent(script, TOOLS, max_tools=2, tool_choice="send_email").run("Show me the git log")
    offered = _listed(script.requests[0])
    assert "send_email" in offered and "git_log" in offered and len(offered) == 3


#: A commit's text, full of other tools' words.
CHANGES = "email the Slack channel the weather forecast and the share price; book a flight"


def test_read_more_is_offered_after_a_paged_result() -> None:
    """A long MCP result arrives a page at a time, and its note says to call read_more: kept,
    however much the page's words favour other tools."""
    pages = Pages()
    big = Tool(
        "git_show", "Shows the contents of a commit", {"type": "object", "properties": {}},
        fn=lambda: pages.first(f"{CHANGES}\n" * 200), result_limit=PAGE + NOTE_ROOM,
    )  # fmt: skip
    tools = [big if t.name == "git_show" else t for t in TOOLS] + [pages.tool()]
    script = ScriptedModel(["Thought: show.\nAction: git_show\nAction Input: {}", ANSWER])
    Agent(script, tools, max_tools=1).run("Show the contents of the last commit")
    assert "read_more" not in _listed(script.requests[0])
    assert {"git_show", "read_more"} <= set(_listed(script.requests[1]))


def test_a_tool_the_last_result_names_is_kept() -> None:
    """However much the rest of the result favours other tools."""
    status = Tool.from_schema(
        "git_status", "Shows the working tree status", {"type": "object", "properties": {}},
        fn=lambda: f"{CHANGES}. To see what is staged, call git_diff_staged.",
    )  # fmt: skip
    tools = [status if t.name == "git_status" else t for t in TOOLS]
    script = ScriptedModel(["Thought: status.\nAction: git_status\nAction Input: {}", ANSWER])
    Agent(script, tools, max_tools=1).run("Is the working tree clean?")
    second = _listed(script.requests[1])
    assert {"git_status", "git_diff_staged"} <= set(second) and len(second) == 3


def test_another_policy_narrowing_the_budget_s_offer_narrows_the_prompt_too() -> None:
    """tool_hiding leaves out a tool whose failed call was repeated: the prompt, which the
    budget relists, leaves it out with the grammar."""

    def broken() -> str:
        raise RuntimeError("not a git repository")

    log = Tool.from_schema(
        "git_log", "Shows the commit logs", {"type": "object", "properties": {}}, fn=broken
    )
    tools = [log if t.name == "git_log" else t for t in TOOLS]
    call = "Thought: the log.\nAction: git_log\nAction Input: {}"
    script = ScriptedModel([call, call, ANSWER])
    result = Agent(script, tools, max_tools=2, policies=[ToolHiding()]).run("Show the git log")
    third = _listed(script.requests[2])
    assert "git_log" not in third and third == _in_grammar(script.options[2]) and third
    assert [n.policy for n in result.steps[2].policy_notes] == ["tool_budget", "tool_hiding"]


def test_the_choice_is_in_the_transcript(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    Agent(ScriptedModel([ANSWER]), TOOLS, max_tools=3).run("Show the git log", transcript=path)
    step = next(r for r in read_transcript(path) if r["type"] == "step")
    (note,) = step["policy_notes"]
    assert note["policy"] == "tool_budget" and note["left_out"] == 37
    assert len(note["offered"]) == 3 and "git_log" in note["offered"]


def test_the_budget_goes_before_the_other_policies() -> None:
    agent = Agent(ScriptedModel([]), TOOLS, max_tools=3, policies=small_model())
    assert [p.name for p in agent.policies][:2] == ["tool_budget", "copied_example"]
    assert not Agent(ScriptedModel([]), TOOLS).policies


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "3"])
def test_a_budget_below_one_is_refused_at_construction(bad: Any) -> None:
    with pytest.raises(ConfigError, match="max_tools"):
        Agent(ScriptedModel([]), TOOLS, max_tools=bad)


def test_without_the_extra_the_error_names_it(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "bm25s", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'textreact\[budget\]'"):
        Agent(ScriptedModel([]), TOOLS, max_tools=3)
    Agent(ScriptedModel([]), TOOLS)  # no budget, no need of it


def test_run_max_tools_on_the_command_line(capsys, tmp_path: Path) -> None:
    replies = [Reply(body=chat_completion(ANSWER))]
    with FakeServer(replies) as server:
        argv = ["run", "What is the height of Mount Everest?", "--base-url", server.base_url]
        code = main([*argv, "--model", "m", "--max-tools", "1", "--json"])
        sent = server.posts[0].body["messages"]
    assert code == EXIT_OK and _listed(sent) == ["lookup_fact"]
    (note,) = json.loads(capsys.readouterr().out)["steps"][0]["policy_notes"]
    assert note == {
        "policy": "tool_budget", "action": "steered", "reason": "tools",
        "offered": ["lookup_fact"], "left_out": 1,
    }  # fmt: skip


def test_the_live_view_shows_what_was_offered(capsys) -> None:
    with FakeServer([Reply(body=chat_completion(ANSWER))]) as server:
        argv = ["run", "What is the height of Mount Everest?", "--base-url", server.base_url]
        assert main([*argv, "--model", "m", "--max-tools", "1"]) == EXIT_OK
    assert "Offered: lookup_fact (1 left out)" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "compare"])
def test_max_tools_without_the_extra_is_a_usage_error_before_any_request(
    capsys, monkeypatch, command: str
) -> None:
    monkeypatch.setitem(sys.modules, "bm25s", None)
    with FakeServer([]) as server:
        argv = [command, *(["q"] if command == "run" else [])]
        code = main([*argv, "--base-url", server.base_url, "--model", "m", "--max-tools", "2"])
        assert not server.posts
    assert code == EXIT_USAGE and "pip install 'textreact[budget]'" in capsys.readouterr().err


def test_compare_runs_each_task_under_the_budget() -> None:
    script = ScriptedModel([ANSWER])
    options = Options(tools=tuple(TOOLS), max_tools=2)
    result = run_task(script, Task("log", "Show the git log"), "text+grammar", options)
    assert len(_listed(script.requests[0])) == 2 == len(_in_grammar(script.options[0]))
    assert result.steps[0].policy_notes[0].left_out == 38
