"""The comparison: suite loading and scoring, both protocols through the fake server, the
summaries and every output (`textreact compare` flags included), and a small slice on the
embedded model (marked local_model)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply, chat_completion, error_body

from textreact.compare import add_compare_arguments, compare_command, report
from textreact.compare.runner import run_compare
from textreact.compare.suite import (
    Task,
    builtin_suite,
    is_correct,
    numbers_in,
    parse_suite,
    select,
)
from textreact.errors import ConfigError, MissingExtraError
from textreact.models.openai_compat import OpenAICompatModel


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("Taipei has 2,602,000 people.", [2602000]),
        ("about 2.6 million", [2600000]),
        ("台北约有260.2万人", [2602000]),
        ("-3.5e2 and 1.28 s", [-350, 1.28]),
        ("version v1.2 of item3", []),
    ],
)
def test_numbers_in(text: str, numbers: list[float]) -> None:
    assert numbers_in(text) == pytest.approx(numbers)


def test_is_correct_uses_relative_tolerance_or_the_pattern() -> None:
    task = Task("t", "q", answer=3.2037, tolerance=0.01)
    assert is_correct(task, "It is about 3.2 times.")
    assert not is_correct(task, "It is 3.3 times.")
    assert not is_correct(task, None)
    named = Task("c", "q", pattern="(?i)canberra")
    assert is_correct(named, "The capital is Canberra.") and not is_correct(named, "Sydney")


def test_parse_suite_reports_bad_lines_by_number() -> None:
    good = '{"id": "a", "question": "1+1?", "answer": 2, "tags": ["calc"]}'
    assert parse_suite(["# comment", "", good])[0] == Task("a", "1+1?", 2.0, tags=("calc",))
    with pytest.raises(ConfigError, match="suite:2: give 'answer'"):
        parse_suite([good, '{"question": "no answer"}'])
    with pytest.raises(ConfigError, match="suite:1: not valid JSON"):
        parse_suite(["{"])
    with pytest.raises(ConfigError, match="unique; repeated: a"):
        parse_suite([good, good])
    with pytest.raises(ConfigError, match="regex"):
        parse_suite(['{"question": "q", "pattern": "("}'])
    with pytest.raises(ConfigError, match="'tolerance' must be a number"):
        parse_suite(['{"question": "q", "answer": 1, "tolerance": "x"}'])
    with pytest.raises(ConfigError, match="'lang' must be one of"):
        parse_suite(['{"question": "q", "answer": 1, "lang": "fr"}'])


def test_the_builtin_suite_covers_every_kind_of_task() -> None:
    tasks = builtin_suite()
    assert len(tasks) >= 30
    tags = {tag for task in tasks for tag in task.tags}
    assert {"calculator", "fact", "multi-step", "no-tool", "zh", "not-in-table"} <= tags
    for task in tasks:  # the scorer reads each expected answer back as written by a person
        if task.answer is not None:
            assert is_correct(task, f"The answer is {task.answer:,g}."), task.id
    assert [t.id for t in select(tasks, tags=["zh"], limit=2)] == ["zh-taipei", "zh-calc"]


def test_builtin_fact_answers_agree_with_the_fact_table() -> None:
    from textreact.tools.facts import lookup_fact

    tasks = {task.id: task for task in builtin_suite()}
    for task_id, query in [
        ("fact-taipei", "population of Taipei"),
        ("fact-light", "speed of light"),
        ("fact-everest", "height of Mount Everest"),
        ("fact-gold", "atomic number of gold"),
        ("zh-taipei", "台北人口"),
    ]:
        assert is_correct(tasks[task_id], lookup_fact(query)), task_id


def _tool_call(name: str, arguments: dict) -> Reply:
    body = chat_completion(None, finish_reason="tool_calls")
    call = {"id": "c1", "type": "function", "function": {"name": name, "arguments": ""}}
    call["function"]["arguments"] = json.dumps(arguments)
    body["choices"][0]["message"]["tool_calls"] = [call]
    return Reply(body=body)


TASK = Task("calc-mul", "What is 17 * 23?", answer=391, tags=("calculator",))
TEXT_CALL = 'Thought: I will compute.\nAction: calculator\nAction Input: {"expression": "17*23"}'


def _script() -> list[Reply]:
    """Text then native, for one task: each makes one call and answers right."""
    return [
        Reply(body=chat_completion(TEXT_CALL)),
        Reply(body=chat_completion("Final Answer: 17 * 23 = 391")),
        _tool_call("calculator", {"expression": "17*23"}),
        Reply(body=chat_completion("17 * 23 = 391")),
    ]


def test_both_protocols_run_and_are_summarised_the_same_way(tmp_path: Path) -> None:
    with FakeServer(_script()) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        result = run_compare(model, [TASK])
    text, native = (report.summarise(result, p) for p in ("text", "native"))
    assert native["success_rate"] == 1.0 and native["tool_calls"] == 1
    assert native["native_support"] == "supported"
    assert native["mean_prompt_tokens"] == 22 and native["mean_steps"] == 2
    assert text["runs"] == 1 and "native_support" not in text
    document = report.to_json(result)
    assert set(document["summary"]) == {"text", "native"}
    assert [r["protocol"] for r in document["runs"]] == ["text", "native"]
    assert "success rate" in report.table(result) and "| success rate |" in report.markdown(result)
    files = report.write_transcripts(result, tmp_path / "runs")
    assert sorted(p.name for p in files) == ["calc-mul.native.0.json", "calc-mul.text.0.json"]
    saved = json.loads((tmp_path / "runs" / "calc-mul.native.0.json").read_text("utf-8"))
    assert saved["messages"][-1]["content"] == "17 * 23 = 391"


def test_a_server_that_rejects_tools_is_reported_not_crashed() -> None:
    refusal = Reply(400, error_body("the model does not support tools"))
    with FakeServer([refusal, refusal]) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        result = run_compare(model, [TASK, Task("b", "2+2?", answer=4)], protocols=["native"])
    summary = report.summarise(result, "native")
    assert summary["native_support"] == "rejected" and summary["success_rate"] == 0.0
    assert "rejected tools=" in report.table(result)


def test_repeats_report_the_spread_and_run_concurrently() -> None:
    answers = [Reply(body=chat_completion(a)) for a in ("391", "wrong", "391", "391")]
    with FakeServer(answers) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        result = run_compare(model, [TASK], protocols=["native"], repeat=4, concurrency=2)
    summary = report.summarise(result, "native")
    assert summary["runs"] == 4 and summary["success_rate"] == 0.75
    assert (summary["success_rate_min"], summary["success_rate_max"]) == (0.0, 1.0)
    assert summary["native_support"] == "ignored"
    assert [o.repeat for o in result.outcomes] == [0, 1, 2, 3]


def test_bad_protocols_and_counts_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="protocols"):
        run_compare(object(), [TASK], protocols=["json"])
    with pytest.raises(ConfigError, match="repeat"):
        run_compare(object(), [TASK], repeat=0)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_compare_arguments(parser)
    return parser.parse_args(list(argv))


def test_compare_command_writes_every_output(tmp_path: Path, capsys) -> None:
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps({"id": "calc-mul", "question": TASK.question, "answer": 391}))
    args = _args(
        "--suite", str(suite),
        "--json", str(tmp_path / "r.json"),
        "--markdown", str(tmp_path / "r.md"),
        "--transcripts", str(tmp_path / "runs"),
        "--fail-under", "0.5",
    )  # fmt: skip
    with FakeServer(_script()) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        code = compare_command(args, model)
    out, err = capsys.readouterr()
    document = json.loads((tmp_path / "r.json").read_text("utf-8"))
    assert document["meta"]["model"] == "fake-model"
    assert document["summary"]["native"]["success_rate"] == 1.0
    assert "native" in out and "2/2" in err
    assert (tmp_path / "r.md").read_text("utf-8").startswith("|")
    assert len(list((tmp_path / "runs").iterdir())) == 2
    text_rate = document["summary"]["text"]["success_rate"]
    assert code == (0 if text_rate >= 0.5 else 1)


def test_chart_draws_a_png_or_names_the_extra(tmp_path: Path) -> None:
    answers = [Reply(body=chat_completion("391"))]
    with FakeServer(answers) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        result = run_compare(model, [TASK], protocols=["native"])
    if importlib.util.find_spec("matplotlib") is None:
        with pytest.raises(MissingExtraError, match=r"textreact\[chart\]"):
            report.chart(result, tmp_path / "c.png")
        return
    report.chart(result, tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes().startswith(b"\x89PNG")


def _local_model_reason() -> str | None:
    from textreact.models import local

    if importlib.util.find_spec("xllamacpp") is None:
        return f"xllamacpp is not installed: {local.INSTALL_HINT}"
    if not local.gguf_path(local.default_cache_dir(os.environ)).is_file():
        return "the SmolLM2 GGUF is absent: run `textreact pull` to fetch the local model"
    return None


@pytest.mark.local_model
def test_a_slice_of_the_suite_on_the_embedded_model() -> None:
    reason = _local_model_reason()
    if reason:
        pytest.skip(reason)
    from textreact.models import local

    # Two tasks and two steps: on 2 CPU cores each text-protocol step of SmolLM2 takes ~10 s.
    tasks = select(builtin_suite(), tags=["calculator"], limit=2)
    gguf = local.gguf_path(local.default_cache_dir(os.environ))
    with local.local_model(gguf, max_tokens=128, timeout=600.0) as model:
        result = run_compare(model, tasks, max_steps=2)
    for protocol in ("text", "native"):
        summary = report.summarise(result, protocol)
        assert summary["runs"] == 2 and 0.0 <= summary["success_rate"] <= 1.0
    # SmolLM2's chat template has no tool support: llama.cpp accepts tools= and ignores them
    assert report.summarise(result, "native")["native_support"] in {"ignored", "as_text"}
