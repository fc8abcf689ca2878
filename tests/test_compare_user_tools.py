"""`textreact compare` on a user's own tools and suite file, over loopback: `--tools` loads a
tools file, a task's `calls` and `no_call` are scored, `--tool-choice` reaches every run, and
the report says the settings its figures were measured under."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply, chat_completion

from textreact.cli import EXIT_USAGE, main
from textreact.compare.suite import Task, parse_task
from textreact.errors import ConfigError

TOOLS = '''
from textreact import tool


@tool
def get_order(order_id: str) -> dict:
    """Look up one of the customer's orders by its id (ORD-12345).

    Args:
        order_id: the order's id
    """
    return {"order_id": order_id, "status": "shipped", "total": 42.5}


TOOLS = [get_order]
'''
CALL = 'Thought: look it up.\nAction: get_order\nAction Input: {"order_id": "ORD-10001"}'


def _files(tmp_path: Path, *tasks: dict) -> tuple[Path, Path]:
    tools = tmp_path / "my_tools.py"
    tools.write_text(TOOLS, encoding="utf-8")
    suite = tmp_path / "tasks.jsonl"
    suite.write_text("\n".join(json.dumps(t) for t in tasks), encoding="utf-8")
    return tools, suite


def _compare(tmp_path: Path, replies: list[Reply], *flags: str) -> tuple[int, dict, FakeServer]:
    report = tmp_path / "report.json"
    with FakeServer(replies) as server:
        argv = ["compare", "--base-url", server.base_url, "--model", "m", "--constrain", "off"]
        code = main([*argv, "--protocols", "text", "--json", str(report), *flags])
    document = json.loads(report.read_text("utf-8")) if report.exists() else {}
    return code, document, server


def test_a_users_tools_file_runs_the_suite_and_scores_its_calls(tmp_path: Path) -> None:
    order = {
        "id": "order",
        "question": "Total of ORD-10001?",
        "answer": 42.5,
        "calls": ["get_order"],
    }
    memory = {"id": "memory", "question": "Status of ORD-10001?", "pattern": "(?i)shipped",
              "calls": ["get_order"]}  # fmt: skip
    hello = {"id": "hello", "question": "Say hi.", "pattern": "(?i)hi", "no_call": True}
    tools, suite = _files(tmp_path, order, memory, hello)
    replies = [
        Reply(body=chat_completion(CALL)),
        Reply(body=chat_completion("Final Answer: 42.5")),
        Reply(body=chat_completion("Final Answer: shipped")),  # from memory: no call
        Reply(body=chat_completion("Final Answer: hi there")),
    ]
    code, document, server = _compare(
        tmp_path, replies, "--suite", str(suite), "--tools", f"{tools}:TOOLS"
    )
    runs = {r["task"]: r for r in document["runs"]}
    assert [runs[t]["success"] for t in ("order", "memory", "hello")] == [True, False, True]
    assert document["meta"]["tools"] == ["get_order"]
    assert document["meta"]["tool_choice"] == "auto" and document["meta"]["policies"] == "none"
    assert "get_order" in json.dumps(server.posts[0].body) and code in (0, 1)


def test_the_tool_choice_reaches_every_run(tmp_path: Path) -> None:
    order = {"id": "order", "question": "Total of ORD-10001?", "answer": 42.5}
    tools, suite = _files(tmp_path, order)
    replies = [Reply(body=chat_completion(CALL)), Reply(body=chat_completion("Final Answer: 42.5"))]
    flags = ("--suite", str(suite), "--tools", f"{tools}:TOOLS", "--tool-choice", "required")
    _, document, _ = _compare(tmp_path, replies, *flags)
    assert document["meta"]["tool_choice"] == "required"
    assert document["runs"][0]["success"] is True


@pytest.mark.parametrize(
    "flags",
    [
        ["--tools", "no_such_file.py:TOOLS"],
        ["--tools", "TOOLS"],
        ["--tools", "{tools}:NOPE"],
        ["--tools", "{tools}:TOOLS", "--tool-choice", "get_weather"],
    ],
)
def test_bad_tools_flags_are_usage_errors_before_any_request(tmp_path: Path, capsys, flags) -> None:
    tools, suite = _files(tmp_path, {"id": "a", "question": "q?", "answer": 1})
    flags = [f.format(tools=tools) for f in flags]
    code, _, server = _compare(tmp_path, [], "--suite", str(suite), *flags)
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and server.requests == [] and "Traceback" not in err


def test_a_task_calling_a_tool_the_file_lacks_is_a_usage_error(tmp_path: Path, capsys) -> None:
    tools, suite = _files(tmp_path, {"id": "a", "question": "q?", "answer": 1, "calls": ["nope"]})
    code, _, server = _compare(tmp_path, [], "--suite", str(suite), "--tools", f"{tools}:TOOLS")
    assert code == EXIT_USAGE and server.requests == []
    assert "nope" in capsys.readouterr().err


def test_calls_and_no_call_are_read_and_checked() -> None:
    task = parse_task({"question": "q", "answer": 1, "calls": ["a", "b"]}, "t:1")
    assert task.calls == ("a", "b") and not task.no_call
    assert task.calls_fit(["b", "a", "c"]) and not task.calls_fit(["a"])
    quiet = Task("q", "q", answer=1, no_call=True)
    assert quiet.calls_fit([]) and not quiet.calls_fit(["a"])
    for bad in ({"calls": "a"}, {"no_call": "yes"}, {"calls": ["a"], "no_call": True}):
        with pytest.raises(ConfigError):
            parse_task({"question": "q", "answer": 1, **bad}, "t:1")


def test_run_takes_a_users_tools_file(tmp_path: Path, capsys) -> None:
    tools, _ = _files(tmp_path, {"id": "a", "question": "q?", "answer": 1})
    replies = [Reply(body=chat_completion(CALL)), Reply(body=chat_completion("Final Answer: 42.5"))]
    with FakeServer(replies) as server:
        argv = ["run", "--base-url", server.base_url, "--model", "m", "--constrain", "off"]
        code = main([*argv, "--tools", f"{tools}:TOOLS", "--json", "Total of ORD-10001?"])
    done = json.loads(capsys.readouterr().out)
    assert code == 0 and done["answer"] == "42.5"
    assert done["steps"][0]["tool"] == "get_order" and "shipped" in done["steps"][0]["observation"]
    assert "get_order" in server.posts[0].body["messages"][0]["content"]


def test_run_refuses_a_tools_flag_that_names_no_tools(tmp_path: Path, capsys) -> None:
    tools, _ = _files(tmp_path, {"id": "a", "question": "q?", "answer": 1})
    with FakeServer([]) as server:
        argv = ["run", "--base-url", server.base_url, "--model", "m", "--tools", f"{tools}:tool"]
        code = main([*argv, "q?"])
    assert code == EXIT_USAGE and server.requests == []
    assert "list of textreact Tools" in capsys.readouterr().err


def test_a_call_that_never_ran_does_not_count_for_calls(tmp_path: Path) -> None:
    order = {"id": "order", "question": "Total of ORD-10001?", "answer": 42.5,
             "calls": ["get_order"]}  # fmt: skip
    tools, suite = _files(tmp_path, order)
    bad = 'Thought: look.\nAction: get_order\nAction Input: {"order_id": ["ORD-1", 2]}'  # refused
    replies = [Reply(body=chat_completion(bad)), Reply(body=chat_completion("Final Answer: 42.5"))]
    _, document, _ = _compare(tmp_path, replies, "--suite", str(suite), "--tools", f"{tools}:TOOLS")
    assert document["runs"][0]["success"] is False
