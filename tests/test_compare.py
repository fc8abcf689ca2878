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

from textreact.cli import EXIT_USAGE, main
from textreact.compare import add_compare_arguments, compare_command, report
from textreact.compare.runner import Options, run_compare
from textreact.compare.suite import (
    Task,
    builtin_suite,
    is_correct,
    load_suite,
    numbers_in,
    parse_suite,
    score,
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


def _script(*protocols: str) -> list[Reply]:
    """One task through each protocol in turn (default: text then native): each makes one call
    and answers right."""
    replies = {
        "text": [
            Reply(body=chat_completion(TEXT_CALL)),
            Reply(body=chat_completion("Final Answer: 17 * 23 = 391")),
        ],
        "native": [
            _tool_call("calculator", {"expression": "17*23"}),
            Reply(body=chat_completion("17 * 23 = 391")),
        ],
    }
    replies["text+grammar"] = replies["text"]
    return [reply for p in protocols or ("text", "native") for reply in replies[p]]


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
    with FakeServer(_script("text", "text+grammar", "native")) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        code = compare_command(args, model)
    out, err = capsys.readouterr()
    document = json.loads((tmp_path / "r.json").read_text("utf-8"))
    assert document["meta"]["model"] == "fake-model"
    assert list(document["summary"]) == ["text", "text+grammar", "native"]
    assert document["summary"]["native"]["success_rate"] == 1.0
    assert "native" in out and "3/3" in err
    assert (tmp_path / "r.md").read_text("utf-8").startswith("|")
    assert len(list((tmp_path / "runs").iterdir())) == 3
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
        result = run_compare(model, tasks, options=Options(max_steps=2))
    for protocol in ("text", "native"):
        summary = report.summarise(result, protocol)
        assert summary["runs"] == 2 and 0.0 <= summary["success_rate"] <= 1.0
    # SmolLM2's chat template has no tool support: llama.cpp accepts tools= and ignores them
    assert report.summarise(result, "native")["native_support"] in {"ignored", "as_text"}


# --- a failing run is a row; runaway patterns are bounded -----------------------------------


class _RaisesFirst:
    """A model whose first reply raises an error no loop expects; later replies answer 391."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, messages, *, stop=(), **options):
        from textreact.steps import Completion

        self.calls += 1
        if self.calls == 1:
            raise TypeError("a reply of a shape nobody expected")
        return Completion("Final Answer: 391")


def test_a_run_that_raises_is_a_failed_row_and_the_others_go_on() -> None:
    other = Task("again", "What is 17 * 23 again?", answer=391)
    result = run_compare(_RaisesFirst(), [TASK, other], protocols=["text"])
    first, second = result.outcomes
    assert not first.success and "TypeError" in first.note and first.result.error
    assert first.measures["stop_reason"] == "model_error"
    assert second.success and second.note is None
    assert "TypeError" in report.table(result)
    assert report.to_json(result)["runs"][0]["note"] == first.note


SLOW = "(a|aa)+$"  # backtracks exponentially on a run of a's that does not end the string
RUNAWAY = "a" * 60 + "!"


def test_a_catastrophic_pattern_fails_its_task_with_the_reason() -> None:
    task = Task("slow", "q", pattern=SLOW)
    right, why = score(task, RUNAWAY, pattern_seconds=0.05)
    assert not right and "pattern" in why and SLOW in why
    assert not is_correct(task, RUNAWAY)  # under the default limit too


@pytest.mark.parametrize(
    ("pattern", "answer", "right"),
    [
        ("(?i)canberra", "It is Canberra.", True),
        ("(?i)canberra", "Sydney", False),
        (SLOW, "aaaa", True),  # the same pattern is fine where it matches quickly
        ("(a+)+$", RUNAWAY, False),  # a nested quantifier that hangs `re`; `regex` cuts it short
        (r"\b391\b", "17 * 23 = 391", True),
    ],
)
def test_normal_patterns_score_as_before(pattern: str, answer: str, right: bool) -> None:
    assert score(Task("t", "q", pattern=pattern), answer) == (right, None)


def test_a_runaway_pattern_in_a_comparison_is_a_failed_row_not_a_hang() -> None:
    from textreact.models.scripted import ScriptedModel

    task = Task("slow", "Say a lot of a's", pattern=SLOW)
    result = run_compare(ScriptedModel([f"Final Answer: {RUNAWAY}"]), [task], protocols=["text"])
    [outcome] = result.outcomes
    assert outcome.result.stop_reason == "final_answer" and not outcome.success
    assert "pattern" in outcome.note and "pattern" in report.markdown(result)


# --- selections of no task, bad counts and bad files are usage errors -----------------------


def test_select_refuses_limits_below_one_and_tags_that_match_nothing() -> None:
    tasks = builtin_suite()
    for limit in (0, -1, True):
        with pytest.raises(ConfigError, match="limit"):
            select(tasks, limit=limit)
    with pytest.raises(ConfigError, match=r"no task has any of the tags nope; .*calculator"):
        select(tasks, tags=["nope"])
    assert len(select(tasks, limit=1)) == 1 and len(select(tasks, limit=10_000)) == len(tasks)


def _compare(capsys, *flags: str, replies=()) -> tuple[int, str, FakeServer]:
    with FakeServer(list(replies)) as server:
        argv = ["compare", "--base-url", server.base_url, "--model", "m", *flags]
        code = main(argv)
    return code, capsys.readouterr().err, server


@pytest.mark.parametrize(
    "flags",
    [
        ["--limit", "0"],
        ["--limit", "-1"],
        ["--limit", "two"],
        ["--tags", "no-such-tag"],
        ["--tags", "nope,neither"],
        ["--repeat", "0"],
        ["--concurrency", "-3"],
        ["--max-steps", "0"],
        ["--fail-under", "nan"],
        ["--fail-under", "1.5"],
        ["--protocols", "text,json"],
        ["--protocols", ","],
        ["--suite", "bfcl:whatever.json", "--tags", "x"],
    ],
)
def test_bad_compare_flags_are_usage_errors_before_any_request(capsys, flags) -> None:
    code, err, server = _compare(capsys, *flags)
    assert code == EXIT_USAGE and server.requests == []
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_suite_file_that_is_not_utf8_is_a_usage_error(capsys, tmp_path: Path) -> None:
    suite = tmp_path / "s.jsonl"
    suite.write_bytes(b'{"question": "caf\xe9?", "answer": 1}\n')
    code, err, server = _compare(capsys, "--suite", str(suite))
    assert code == EXIT_USAGE and server.requests == []
    assert "UTF-8" in err and "0xe9" in err and "s.jsonl" in err
    with pytest.raises(ConfigError, match="UTF-8"):
        load_suite(suite)


def test_a_bfcl_file_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    from textreact.compare.bfcl import load_bfcl

    questions, answers = tmp_path / "simple_q.json", tmp_path / "a.json"
    questions.write_bytes(b'{"id": "simple_0", "question": "\xff"}\n')
    answers.write_text('{"id": "simple_0", "ground_truth": []}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_bfcl(questions, answers)


# --- outputs: checked first, written as runs end ----------------------------------------------


def _suite_file(tmp_path: Path, *tasks: Task) -> Path:
    path = tmp_path / "suite.jsonl"
    lines = [json.dumps({"id": t.id, "question": t.question, "answer": t.answer}) for t in tasks]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("flag", ["--json", "--markdown", "--chart", "--transcripts"])
def test_an_unwritable_output_is_refused_before_any_request(capsys, tmp_path, flag) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    target = tmp_path if flag != "--transcripts" else blocker  # a folder / a file in the way
    suite = _suite_file(tmp_path, TASK)
    code, err, server = _compare(capsys, "--suite", str(suite), flag, str(target))
    assert code == EXIT_USAGE and server.requests == [] and flag in err
    code, err, server = _compare(capsys, "--suite", str(suite), flag, str(blocker / "out"))
    assert code == EXIT_USAGE and server.requests == []


def test_an_output_check_leaves_no_file_behind(capsys, tmp_path: Path) -> None:
    suite = _suite_file(tmp_path, TASK)
    json_path = tmp_path / "new" / "r.json"
    code, _, _ = _compare(
        capsys, "--suite", str(suite), "--json", str(json_path), "--protocols", "sideways"
    )
    assert code == EXIT_USAGE and not json_path.exists()


class _InterruptAt:
    """A progress stream that raises KeyboardInterrupt (a Ctrl-C) once `text` is printed."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.written = ""

    def write(self, text: str) -> int:
        self.written += text
        if self.text in self.written:
            raise KeyboardInterrupt
        return len(text)

    def flush(self) -> None:
        pass


def test_an_interrupted_comparison_leaves_the_finished_runs_on_disk(tmp_path: Path) -> None:
    other = Task("calc-add", "What is 2 + 2?", answer=4)
    args = _args(
        "--suite", str(_suite_file(tmp_path, TASK, other)),
        "--protocols", "text",
        "--json", str(tmp_path / "r.json"),
        "--markdown", str(tmp_path / "r.md"),
        "--transcripts", str(tmp_path / "runs"),
    )  # fmt: skip
    replies = [Reply(body=chat_completion("Final Answer: 391"))] * 2
    with FakeServer(replies) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        with pytest.raises(KeyboardInterrupt):
            compare_command(args, model, err=_InterruptAt("1/2"))
    assert [p.name for p in (tmp_path / "runs").iterdir()] == ["calc-mul.text.0.json"]
    document = json.loads((tmp_path / "r.json").read_text("utf-8"))
    assert [run["task"] for run in document["runs"]] == ["calc-mul"]
    assert document["summary"]["text"]["success_rate"] == 1.0
    assert "partial: 1 of 2 runs" in (tmp_path / "r.md").read_text("utf-8")


def test_the_report_is_rewritten_after_each_run_and_complete_at_the_end(tmp_path: Path) -> None:
    seen: list[int] = []
    path = tmp_path / "r.json"

    class Watch:
        def write(self, text: str) -> int:
            if path.exists():
                seen.append(len(json.loads(path.read_text("utf-8"))["runs"]))
            return len(text)

        def flush(self) -> None:
            pass

    other = Task("calc-add", "What is 2 + 2?", answer=4)
    suite = _suite_file(tmp_path, TASK, other)
    args = _args("--suite", str(suite), "--protocols", "text", "--json", str(path))
    replies = [Reply(body=chat_completion(f"Final Answer: {a}")) for a in ("391", "4")]
    with FakeServer(replies) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        assert compare_command(args, model, err=Watch()) == 0
    assert sorted(set(seen)) == [1, 2]  # each progress line comes after that run's write
    document = json.loads(path.read_text("utf-8"))
    assert len(document["runs"]) == 2 and document["summary"]["text"]["success_rate"] == 1.0


def test_a_lone_surrogate_in_an_answer_is_written_to_every_file(tmp_path: Path) -> None:
    from textreact.models.scripted import ScriptedModel

    result = run_compare(ScriptedModel(["Final Answer: 391 \ud800"]), [TASK], protocols=["text"])
    report.write_json(result, tmp_path / "r.json")
    report.write_text(tmp_path / "r.md", report.markdown(result))
    [transcript] = report.write_transcripts(result, tmp_path / "runs")
    assert json.loads((tmp_path / "r.json").read_text("utf-8"))["runs"][0]["answer"].endswith(
        "\ud800"
    )
    assert json.loads(transcript.read_text("utf-8"))["answer"] == "391 \ud800"
