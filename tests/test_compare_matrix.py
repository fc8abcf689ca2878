"""The model matrix of `textreact compare`: model specs and their usage errors, the three
protocols (text, text+grammar, native) through loopback fake servers that look like llama.cpp
or like a server that takes no grammar, several endpoints served one at a time into one table,
and the matrix in the terminal, JSON, Markdown and a chart, written as runs end."""

from __future__ import annotations

import contextlib
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply, chat_completion, error_body
from test_compare import _InterruptAt

from textreact.cli import EXIT_MODEL, EXIT_USAGE, build_parser, main
from textreact.compare import compare_models, matrix, report
from textreact.compare.models import ModelSpec, check_specs, gguf_spec, parse_model_spec
from textreact.compare.runner import first_call_valid, run_compare
from textreact.compare.suite import Task
from textreact.errors import ConfigError, ModelError
from textreact.models.openai_compat import OpenAICompatModel
from textreact.models.scripted import ScriptedModel

LLAMA_PROPS = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}
CALC = Task("calc-mul", "What is 17 * 23?", answer=391, tags=("calculator",))
HELLO = Task("no-tool-hi", "Say hi.", pattern="(?i)hi", tags=("no-tool",))
TEXT_CALL = 'Thought: I will compute.\nAction: calculator\nAction Input: {"expression": "17*23"}'
PROTOCOLS = ("text", "text+grammar", "native")


def _native_call(name: str, arguments: dict) -> Reply:
    body = chat_completion(None, finish_reason="tool_calls")
    call = {"id": "c1", "type": "function", "function": {"name": name}}
    call["function"]["arguments"] = json.dumps(arguments)
    body["choices"][0]["message"]["tool_calls"] = [call]
    return Reply(body=body)


def _replies(*protocols: str, answer: str = "391") -> list[Reply]:
    """CALC through each protocol in turn: one call, then the answer."""
    text = [
        Reply(body=chat_completion(TEXT_CALL)),
        Reply(body=chat_completion(f"Final Answer: {answer}")),
    ]
    native = [
        _native_call("calculator", {"expression": "17*23"}),
        Reply(body=chat_completion(answer)),
    ]
    return [r for p in protocols for r in (native if p == "native" else text)]


def _suite(tmp_path: Path, *tasks: Task) -> Path:
    path = tmp_path / "suite.jsonl"
    lines = [
        json.dumps({"id": t.id, "question": t.question, "answer": t.answer, "pattern": t.pattern,
                    "tags": list(t.tags)})
        for t in tasks
    ]  # fmt: skip
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _args(*argv: str):
    return build_parser().parse_args(["compare", *argv])


# --- model specs --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("qwen=http://127.0.0.1:8080/v1", ModelSpec("qwen", base_url="http://127.0.0.1:8080/v1")),
        (
            "gpt=https://api.example.com/v1,model=gpt-4o-mini,key_env=EXAMPLE_KEY",
            ModelSpec(
                "gpt", "https://api.example.com/v1", model="gpt-4o-mini", key_env="EXAMPLE_KEY"
            ),
        ),
        (
            "qwen2.5:3b = http://localhost:11434/v1",
            ModelSpec("qwen2.5:3b", "http://localhost:11434/v1"),
        ),
        ("small=models/small.gguf", ModelSpec("small", gguf=Path("models/small.gguf"))),
        ("smol", ModelSpec("smol")),
        ("smol=", ModelSpec("smol")),
    ],
)
def test_a_model_spec_names_an_endpoint_a_gguf_file_or_the_embedded_model(text, spec) -> None:
    assert parse_model_spec(text) == spec


def test_an_endpoint_is_asked_for_model_or_else_for_its_name() -> None:
    assert parse_model_spec("a=http://h/v1").served_model == "a"
    assert parse_model_spec("a=http://h/v1,model=llama3").served_model == "llama3"
    assert gguf_spec("/models/Qwen2.5-0.5B.Q4.gguf") == ModelSpec(
        "Qwen2.5-0.5B.Q4", gguf=Path("/models/Qwen2.5-0.5B.Q4.gguf")
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("=http://h/v1", "NAME"),
        ("my model=http://h/v1", "NAME"),
        ("---=http://h/v1", "letter or a digit"),
        ("a=http://h/v1,temperature=0", "'temperature=0' is not one of model=..., key_env=..."),
        ("a=http://h/v1,model", "'model' is not one of"),
        ("a=http://h/v1,model=x,model=y", "model= is given twice"),
        ("a=http://h/v1,model=", "model= needs a value"),
        ("a=http://h/v1,key_env=MY-KEY", "not an environment variable's name"),
        ("a=ftp://h/v1", "must start with http:// or https://"),
        ("a=local.gguf,model=x", "only go with a base URL"),
        ("a,key_env=K", "only go with a base URL"),
    ],
)
def test_a_malformed_model_spec_says_what_is_wrong_and_the_form(text: str, why: str) -> None:
    with pytest.raises(ConfigError, match="expected NAME=BASE_URL") as caught:
        parse_model_spec(text)
    assert why in str(caught.value)


def test_a_malformed_spec_never_shows_the_credentials_in_its_url() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_model_spec("a=https://user:s3cret@h/v1,colour=red")
    assert "s3cret" not in str(caught.value) and "h/v1" in str(caught.value)


def test_two_models_of_one_name_or_a_missing_gguf_file_are_refused(tmp_path: Path) -> None:
    present = tmp_path / "m.gguf"
    present.write_bytes(b"GGUF")
    assert check_specs([ModelSpec("a", "http://h/v1"), gguf_spec(str(present))])
    with pytest.raises(ConfigError, match="two models are named a"):
        check_specs([ModelSpec("a", "http://h/v1"), ModelSpec("a", "http://g/v1")])
    with pytest.raises(ConfigError, match="two models are named m"):
        check_specs([gguf_spec(str(present)), gguf_spec(str(tmp_path / "other" / "m.gguf"))])
    with pytest.raises(ConfigError, match="no GGUF file at"):
        check_specs([ModelSpec("b", gguf=tmp_path / "absent.gguf")])


def _usage(capsys, tmp_path: Path, *flags: str) -> tuple[int, str, list[FakeServer]]:
    suite = _suite(tmp_path, CALC)
    with FakeServer(props=LLAMA_PROPS) as one, FakeServer() as two:
        argv = [
            "compare", "--suite", str(suite),
            *(f.format(one=one.base_url, two=two.base_url) for f in flags),
        ]  # fmt: skip
        code = main(argv)
    return code, capsys.readouterr().err, [one, two]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--model-spec", "=http://h/v1"], "NAME"),
        (["--model-spec", "a={one},colour=red"], "colour=red"),
        (["--model-spec", "a={one},model=x,model=y"], "twice"),
        (["--model-spec", "a=ftp://h/v1"], "http://"),
        (["--model-spec", "a={one}", "--model-spec", "a={two}"], "two models are named a"),
        (["--model-spec", "a={one}", "--base-url", "{two}"], "--base-url names the one model"),
        (["--model-spec", "a={one}", "--model", "m"], "--model names the one model"),
        (["--model-spec", "a={one}", "--gguf", "/nowhere/x.gguf"], "no GGUF file"),
        (["--model-spec", "a={one},key_env=TEXTREACT_TEST_UNSET_KEY"], "not set"),
        (["--model-spec", "a=http://h:99999/v1"], "not a valid URL"),
        (
            ["--model-spec", "a={one}", "--protocols", "text+grammar", "--constrain", "off"],
            "--constrain off",
        ),
        (["--model-spec", "a={one}", "--protocols", "text,text"], "twice"),
    ],
)
def test_bad_model_specs_are_usage_errors_before_any_request(capsys, tmp_path, flags, said) -> None:
    code, err, servers = _usage(capsys, tmp_path, *flags)
    assert code == EXIT_USAGE, err
    assert all(server.requests == [] for server in servers)
    assert said in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


# --- the three protocols -------------------------------------------------------------------


def test_only_text_plus_grammar_sends_the_grammar_to_a_server_that_takes_one() -> None:
    with FakeServer(_replies(*PROTOCOLS), props=LLAMA_PROPS) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        result = run_compare(model, [CALC], protocols=PROTOCOLS)
        bodies = [post.body for post in server.posts]
    assert ["grammar" in body for body in bodies] == [False, False, True, True, False, False]
    assert all(o.success for o in result.outcomes)
    summary = report.summarise(result, "text+grammar")
    assert summary["constrained"] == "constrained" and summary["constrained_runs"] == 1
    assert summary["constrained_turns"] == 2
    assert report.summarise(result, "text")["constrained_turns"] == 0
    assert "every run was decoded under the tools' grammar" in report.table(result)


def test_a_server_that_takes_no_grammar_is_reported_unconstrained_with_the_reason() -> None:
    with FakeServer(_replies("text", "text+grammar")) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        result = run_compare(model, [CALC], protocols=["text", "text+grammar"])
        bodies = [post.body for post in server.posts]
    assert not any("grammar" in body for body in bodies)
    summary = report.summarise(result, "text+grammar")
    assert summary["constrained"] == "unconstrained" and summary["success_rate"] == 1.0
    assert "does not say it takes a grammar" in summary["constrain_note"]
    assert "text+grammar: not constrained" in report.table(result)
    assert result.meta["constrain"] == "auto"


def test_a_grammar_refused_midway_leaves_the_row_partly_constrained() -> None:
    other = Task("calc-again", "What is 17 * 23 again?", answer=391)
    refusal = Reply(400, error_body("failed to parse grammar", param="grammar"))
    replies = [*_replies("text+grammar"), refusal, *_replies("text+grammar")]
    with FakeServer(replies, props=LLAMA_PROPS) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        result = run_compare(model, [CALC, other], protocols=["text+grammar"])
    summary = report.summarise(result, "text+grammar")
    assert summary["constrained"] == "partly" and summary["constrained_runs"] == 1
    assert (
        "refused the grammar" in summary["constrain_note"]
        and "1 of 2 runs" in summary["constrain_note"]
    )


@pytest.mark.parametrize(
    ("constrain", "verdict", "why"),
    [("off", "unconstrained", "constrain mode is off"), ("on", "constrained", None)],
)
def test_the_constrain_mode_decides_the_text_plus_grammar_row(constrain, verdict, why) -> None:
    with FakeServer(_replies("text+grammar")) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0, constrain=constrain)
        result = run_compare(model, [CALC], protocols=["text+grammar"])
    summary = report.summarise(result, "text+grammar")
    assert summary["constrained"] == verdict
    assert (
        (why in summary["constrain_note"]) if why else "(1 of 1 runs)" in summary["constrain_note"]
    )


def test_a_client_without_grammars_is_named_as_the_reason() -> None:
    result = run_compare(ScriptedModel(["Final Answer: 391"]), [CALC], protocols=["text+grammar"])
    assert (
        "the model client sends no grammar"
        in report.summarise(result, "text+grammar")["constrain_note"]
    )


# --- valid first calls ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "valid"),
    [
        (TEXT_CALL, True),
        ("Action: calculator\nAction Input: {}", False),  # its required argument missing
        ('Action: abacus\nAction Input: {"expression": "17*23"}', False),  # no such tool
        ("Final Answer: 391", False),  # no call at all
        ("Action: calculator\nAction Input: 17*23", True),  # a plain string for its one parameter
    ],
)
def test_the_first_call_is_valid_when_it_names_an_offered_tool_with_good_arguments(
    first, valid
) -> None:
    result = run_compare(
        ScriptedModel([first, "Final Answer: 391", "Final Answer: 391"]), [CALC], protocols=["text"]
    )
    [outcome] = result.outcomes
    assert outcome.measures["first_call_valid"] is valid
    assert first_call_valid(outcome.result) is valid
    assert report.summarise(result, "text")["valid_call_rate"] == (1.0 if valid else 0.0)


def test_tasks_that_need_no_tool_are_left_out_of_the_valid_call_rate() -> None:
    model = ScriptedModel([TEXT_CALL, "Final Answer: 391", "Final Answer: hi"])
    result = run_compare(model, [CALC, HELLO], protocols=["text"])
    summary = report.summarise(result, "text")
    assert summary["calls_expected"] == 1 and summary["valid_call_rate"] == 1.0
    assert summary["success_rate"] == 1.0


# --- several models, one at a time, into one matrix ------------------------------------------


def test_two_endpoints_make_one_table_of_model_by_protocol(capsys, tmp_path: Path) -> None:
    suite = _suite(tmp_path, CALC)
    with (
        FakeServer(_replies(*PROTOCOLS), props=LLAMA_PROPS) as llama,
        FakeServer(_replies(*PROTOCOLS, answer="390")) as plain,
    ):
        code = main([
            "compare", "--suite", str(suite),
            "--model-spec", f"llama={llama.base_url}",
            "--model-spec", f"plain={plain.base_url},model=plain-7b",
            "--json", str(tmp_path / "m.json"), "--markdown", str(tmp_path / "m.md"),
        ])  # fmt: skip
        sent = {"llama": [p.body for p in llama.posts], "plain": [p.body for p in plain.posts]}
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == [
        "model", "protocol", "success", "valid", "calls", "prompt", "tok/task",
        "completion", "tok/task", "seconds/task", "constrained",
    ]  # fmt: skip
    rows = [line.split() for line in lines[1:7]]
    assert [(r[0], r[1]) for r in rows] == [(m, p) for m in ("llama", "plain") for p in PROTOCOLS]
    assert [r[2] for r in rows] == ["100%"] * 3 + ["0%"] * 3  # plain's answers are wrong
    assert [r[3] for r in rows] == ["100%"] * 6  # and its calls are valid
    assert rows[1][-1] == "yes" and rows[4][-1] == "no"
    assert "plain: text+grammar: not constrained" in out and "does not say" in out
    assert {b["model"] for b in sent["plain"]} == {"plain-7b"}
    assert {b["model"] for b in sent["llama"]} == {"llama"}
    assert "6/6" in err and "llama" in err


def _two_models(tmp_path: Path, *flags: str, answers=("391", "391")):
    """Run CALC through every protocol on two fake endpoints via compare_models; the log shows
    when each server was up."""
    log: list[str] = []

    def opener(name: str, answer: str):
        @contextlib.contextmanager
        def open_one() -> Iterator[OpenAICompatModel]:
            with FakeServer(_replies(*PROTOCOLS, answer=answer), props=LLAMA_PROPS) as server:
                log.append(f"up {name}")
                with OpenAICompatModel(f"{name}-served", server.base_url, max_retries=0) as model:
                    yield model
                log.append(f"down {name}")

        return open_one

    args = _args("--suite", str(_suite(tmp_path, CALC)), *flags)
    openers = [(n, opener(n, a)) for n, a in zip(("a", "b"), answers, strict=True)]
    return compare_models(args, openers), log


def test_models_are_served_one_at_a_time_in_order(tmp_path: Path, capsys) -> None:
    code, log = _two_models(tmp_path)
    assert code == 0
    assert log == ["up a", "down a", "up b", "down b"]


def test_the_matrix_json_holds_rows_and_each_models_own_document(tmp_path: Path, capsys) -> None:
    path = tmp_path / "m.json"
    _two_models(tmp_path, "--json", str(path), answers=("391", "12"))
    document = json.loads(path.read_text("utf-8"))
    assert set(document) == {"meta", "matrix", "models", "not_started", "pending"}
    assert document["meta"]["models"] == ["a", "b"] and document["meta"]["partial"] is False
    assert document["meta"]["protocols"] == list(PROTOCOLS) and document["meta"]["tasks"] == 1
    assert [(r["model"], r["protocol"]) for r in document["matrix"]] == [
        (m, p) for m in "ab" for p in PROTOCOLS
    ]
    row = document["matrix"][1]
    assert row["constrained"] == "constrained" and row["valid_call_rate"] == 1.0
    assert {"success_rate", "mean_prompt_tokens", "mean_completion_tokens", "mean_seconds"} <= set(
        row
    )
    assert [r["success_rate"] for r in document["matrix"]] == [1.0] * 3 + [0.0] * 3
    one = document["models"]["b"]  # the one-model document, as a one-model run writes it
    assert set(one) == {"meta", "summary", "runs"} and one["meta"]["model"] == "b-served"
    assert [run["protocol"] for run in one["runs"]] == list(PROTOCOLS)
    assert document["not_started"] == {} and document["pending"] == []


def test_the_matrix_markdown_is_one_table_with_notes_and_failures(tmp_path: Path, capsys) -> None:
    path = tmp_path / "m.md"
    _two_models(tmp_path, "--markdown", str(path), answers=("391", "12"))
    text = path.read_text("utf-8")
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table[0] == (
        "| model | protocol | success | valid calls | prompt tok/task | completion tok/task "
        "| seconds/task | constrained |"
    )
    assert table[1] == "|---|---|---|---|---|---|---|---|" and len(table) == 2 + 6
    assert table[2].startswith("| a | text | 100% | 100% |")
    assert "- a: text+grammar: every run" in text and "- b: native: native tool calls" in text
    assert "**a / native** failed: none" in text and "**b / text+grammar** failed: calc-mul" in text


def test_transcripts_of_several_models_go_in_a_folder_each(tmp_path: Path, capsys) -> None:
    _two_models(tmp_path, "--transcripts", str(tmp_path / "runs"))
    found = sorted(
        str(p.relative_to(tmp_path / "runs")) for p in (tmp_path / "runs").rglob("*.json")
    )
    assert found == sorted(f"{m}/calc-mul.{p}.0.json" for m in "ab" for p in PROTOCOLS)


@pytest.mark.parametrize(("answers", "code"), [(("391", "391"), 0), (("391", "12"), 1)])
def test_fail_under_looks_at_every_model_and_protocol(tmp_path, capsys, answers, code) -> None:
    assert _two_models(tmp_path, "--fail-under", "0.5", answers=answers)[0] == code


def test_a_model_that_cannot_start_is_reported_and_the_others_run(tmp_path: Path, capsys) -> None:
    @contextlib.contextmanager
    def broken() -> Iterator[None]:
        raise ModelError("the server did not come up")
        yield  # pragma: no cover

    path = tmp_path / "m.json"
    with FakeServer(_replies(*PROTOCOLS), props=LLAMA_PROPS) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        args = _args("--suite", str(_suite(tmp_path, CALC)), "--json", str(path))
        code = compare_models(
            args, [("gone", broken), ("here", lambda: contextlib.nullcontext(model))]
        )
    out, err = capsys.readouterr()
    assert code == EXIT_MODEL
    document = json.loads(path.read_text("utf-8"))
    assert document["not_started"] == {"gone": "the server did not come up"}
    assert [r["model"] for r in document["matrix"]] == ["here"] * 3
    assert "gone: not started: the server did not come up" in out
    assert "gone: could not be started" in err
    with pytest.raises(ModelError, match="did not come up"):  # one model alone: as before
        compare_models(args, [(None, broken)])


def test_an_interrupt_in_the_second_model_leaves_the_first_whole_on_disk(tmp_path: Path) -> None:
    servers = [FakeServer(_replies(*PROTOCOLS)) for _ in range(2)]
    path = tmp_path / "m.json"
    args = _args(
        "--suite",
        str(_suite(tmp_path, CALC)),
        "--json",
        str(path),
        "--markdown",
        str(tmp_path / "m.md"),
    )
    with servers[0], servers[1]:
        models = [OpenAICompatModel("fake-model", s.base_url, max_retries=0) for s in servers]
        openers = [
            (n, lambda m=m: contextlib.nullcontext(m)) for n, m in zip("ab", models, strict=True)
        ]
        with pytest.raises(KeyboardInterrupt):
            compare_models(args, openers, err=_InterruptAt("4/6"))
    document = json.loads(path.read_text("utf-8"))
    assert document["meta"]["partial"] is True
    assert [len(document["models"][m]["runs"]) for m in "ab"] == [3, 1]
    assert "b: partial: 1 of 3 runs finished" in (tmp_path / "m.md").read_text("utf-8")


def test_a_partial_matrix_names_the_models_not_run_yet() -> None:
    result = run_compare(ScriptedModel(["Final Answer: 391"]), [CALC], protocols=["text"])
    partial = matrix.Matrix(reports=(("a", result),), protocols=("text",), models=("a", "b", "c"))
    assert partial.pending == ("b", "c")
    assert "partial: not run yet: b, c" in matrix.table(partial)
    assert matrix.to_json(partial)["pending"] == ["b", "c"]


def test_one_model_keeps_the_one_model_table_with_a_column_per_protocol(tmp_path, capsys) -> None:
    suite = _suite(tmp_path, CALC)
    with FakeServer(_replies(*PROTOCOLS), props=LLAMA_PROPS) as server:
        code = main(["compare", "--suite", str(suite), "--model-spec", f"only={server.base_url}"])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == list(PROTOCOLS)
    labels = [label for label, key, _ in report._ROWS if key is not None]
    assert [line[: len(label)] for line, label in zip(lines[1:], labels, strict=False)] == labels


def test_constrain_off_drops_text_plus_grammar_from_the_default_protocols(tmp_path, capsys) -> None:
    suite = _suite(tmp_path, CALC)
    with FakeServer(_replies("text", "native")) as server:
        argv = ["compare", "--suite", str(suite), "--base-url", server.base_url, "--model", "m"]
        code = main([*argv, "--constrain", "off", "--json", str(tmp_path / "r.json")])
    assert code == 0
    assert json.loads((tmp_path / "r.json").read_text("utf-8"))["meta"]["protocols"] == [
        "text",
        "native",
    ]


def test_key_env_sends_that_variables_key_to_that_endpoint_only(
    tmp_path, capsys, monkeypatch
) -> None:
    monkeypatch.setenv("TEXTREACT_TEST_KEY_A", "key-for-a")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    suite = _suite(tmp_path, CALC)
    with FakeServer(_replies("text")) as a, FakeServer(_replies("text")) as b:
        code = main([
            "compare", "--suite", str(suite), "--protocols", "text",
            "--model-spec", f"a={a.base_url},key_env=TEXTREACT_TEST_KEY_A",
            "--model-spec", f"b={b.base_url}",
        ])  # fmt: skip
        keys = [{p.headers["authorization"] for p in s.posts} for s in (a, b)]
    assert code == 0
    assert keys[0] == {"Bearer key-for-a"} and keys[1] != {"Bearer key-for-a"}


def test_the_matrix_chart_is_a_png_or_names_the_extra(tmp_path: Path, capsys) -> None:
    if importlib.util.find_spec("matplotlib") is None:
        with pytest.raises(ConfigError, match=r"textreact\[chart\]"):
            _two_models(tmp_path, "--chart", str(tmp_path / "m.png"))
        return
    _two_models(tmp_path, "--chart", str(tmp_path / "m.png"))
    assert (tmp_path / "m.png").read_bytes().startswith(b"\x89PNG")
