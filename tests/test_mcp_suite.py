"""bench/mcptasks, the MCP suite: its tasks load, name only the tools it offers, and their
expected answers are what the two real servers say (`mcp-server-time`, `mcp-server-git` over
the repository the suite makes), so a run's figures measure the model, not the suite."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from textreact.compare.suite import load_suite, score
from textreact.loading import load_object
from textreact.tools import ToolBox

SUITE = Path(__file__).parent.parent / "bench" / "mcptasks"


@pytest.fixture(scope="module")
def box() -> Iterator[ToolBox]:
    """The suite's tools (its `TOOLS` are its connection's); the servers are closed after this
    module, so no thread of theirs outlives its tests."""
    connection = load_object(f"{SUITE / 'tools.py'}:CONNECTION", "connection", "x.py:NAME")
    yield ToolBox(connection.tools)
    connection.close()


def test_the_suite_offers_only_the_tools_that_read(box: ToolBox) -> None:
    names = {t.name for t in box.tools}
    assert {"git_log", "git_show", "convert_time", "read_more"} <= names
    assert not names & {"git_commit", "git_add", "git_reset", "git_checkout"}
    tasks = load_suite(SUITE / "tasks.jsonl")
    assert len(tasks) >= 12 and all(set(t.calls) <= names for t in tasks)


def test_the_expected_answers_are_what_the_servers_say(box: ToolBox) -> None:
    tasks = {t.id: t for t in load_suite(SUITE / "tasks.jsonl")}
    repo = "/tmp/textreact-mcp-bench/shop"

    def said(tool: str, **arguments: object) -> str:
        result = box.call(tool, arguments)
        assert not result.is_error, result.text
        return result.text

    log = said("git_log", repo_path=repo, max_count=20)
    assert log.count("Commit: ") == 5 and score(tasks["git-count"], "5")[0]
    newest = said("git_log", repo_path=repo, max_count=1)  # a copied log is no count
    assert not score(tasks["git-count"], " ".join(newest.split()))[0]
    assert score(tasks["git-last-message"], log.split("Message: ")[1].splitlines()[0])[0]
    assert score(tasks["git-first-commit"], log.split("Message: ")[-1].splitlines()[0])[0]
    assert score(tasks["git-unstaged"], said("git_status", repo_path=repo))[0]
    assert score(tasks["git-branches"], said("git_branch", repo_path=repo, branch_type="local"))[0]
    assert score(
        tasks["git-discount-rate"], said("git_show", repo_path=repo, revision="discounts")
    )[0]
    lowered = next(c for c in log.split("\n\n\n") if "Lower SKU-2" in c).split()[1]
    assert "SKU-2,11.00" in said("git_show", repo_path=repo, revision=lowered)
    converted = json.loads(said("convert_time", source_timezone="Asia/Tokyo", time="09:00",
                                target_timezone="Asia/Kolkata"))  # fmt: skip
    assert score(tasks["time-tokyo-to-kolkata"], converted["target"]["datetime"][11:16])[0]
    shanghai = json.loads(said("convert_time", source_timezone="UTC", time="14:00",
                               target_timezone="Asia/Shanghai"))  # fmt: skip
    assert score(tasks["time-utc-to-shanghai"], shanghai["target"]["datetime"][11:16])[0]
    tokyo = json.loads(said("get_current_time", timezone="Asia/Tokyo"))
    assert tokyo["is_dst"] is False and score(tasks["time-tokyo-dst"], "no")[0]
    assert score(tasks["zh-tokyo-dst"], "否")[0]
    kolkata = json.loads(said("get_current_time", timezone="Asia/Kolkata"))
    assert score(tasks["time-kolkata-offset"], kolkata["datetime"][-6:])[0]
