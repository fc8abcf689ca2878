"""The command line, in-process through `main(argv)`, against a loopback fake server; one smoke
test runs the installed console script."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys

import pytest
from fakeserver import FakeServer, Reply, chat_completion
from test_local_model import needs_model

from textreact.cli import EXIT_MODEL, EXIT_NO_ANSWER, EXIT_OK, EXIT_USAGE, main

CALL = 'Thought: multiply\nAction: calculator\nAction Input: {"expression": "15 * 37"}'
ANSWER = "Thought: I now know the answer.\nFinal Answer: 555"


def test_run_against_an_openai_compatible_server_prints_the_answer(capsys):
    replies = [Reply(body=chat_completion(CALL)), Reply(body=chat_completion(ANSWER))]
    with FakeServer(replies) as server:
        code = main(["run", "What is 15*37?", "--base-url", server.base_url, "--model", "m"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK
    assert out.strip() == "555"
    assert "Action: calculator" in err and "Observation: 555" in err and "final_answer" in err
    second = server.posts[1].body
    assert second["model"] == "m"
    assert second["messages"][-1] == {"role": "user", "content": "Observation: 555"}
    assert "\nObservation:" in second["stop"]


def test_run_json_prints_one_object_with_the_documented_fields(capsys, tmp_path):
    replies = [Reply(body=chat_completion(CALL)), Reply(body=chat_completion(ANSWER))]
    transcript = tmp_path / "t.jsonl"
    with FakeServer(replies) as server:
        argv = ["run", "q", "--base-url", server.base_url, "--model", "m", "--json"]
        code = main([*argv, "--transcript", str(transcript)])
    data = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK
    assert data["answer"] == "555" and data["stop_reason"] == "final_answer"
    step = data["steps"][0]
    assert {"thought", "tool", "input", "observation", "is_error"} <= set(step)
    assert step["tool"] == "calculator" and step["input"] == {"expression": "15 * 37"}
    assert data["usage"]["prompt_tokens"] == 22
    lines = transcript.read_text().splitlines()
    assert json.loads(lines[-1])["stop_reason"] == "final_answer"


def test_run_reads_the_environment(capsys, monkeypatch):
    replies = [Reply(body=chat_completion(ANSWER))]
    with FakeServer(replies) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("TEXTREACT_MODEL", "env-model")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
        code = main(["run", "q"])
    assert code == EXIT_OK
    request = server.posts[0]
    assert request.body["model"] == "env-model"
    assert request.headers.get("authorization") == "Bearer sk-env"


def test_run_without_an_answer_exits_1(capsys):
    replies = [Reply(body=chat_completion("I will look it up.")) for _ in range(3)]
    with FakeServer(replies) as server:
        code = main(["run", "q", "--base-url", server.base_url, "--model", "m"])
    assert code == EXIT_NO_ANSWER


def test_base_url_without_model_is_a_usage_error(capsys, monkeypatch):
    monkeypatch.delenv("TEXTREACT_MODEL", raising=False)
    code = main(["run", "q", "--base-url", "http://127.0.0.1:9/v1"])
    assert code == EXIT_USAGE
    assert "--model" in capsys.readouterr().err


def test_unreachable_server_is_a_model_error(capsys):
    code = main(
        ["run", "q", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--timeout", "2"]
    )
    assert code == EXIT_MODEL
    assert "cannot reach" in capsys.readouterr().err


def test_parse_reads_stdin_and_prints_the_step(capsys, monkeypatch):
    stdin = io.TextIOWrapper(io.BytesIO((CALL + "\nObservation: 999").encode()))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["parse"]) == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert data["kind"] == "action" and data["tool"] == "calculator"
    assert data["input"] == {"expression": "15 * 37"}
    assert data["discarded_text"].lstrip().startswith("Observation")


def test_parse_reads_a_file(capsys, tmp_path):
    path = tmp_path / "c.txt"
    path.write_text(ANSWER, encoding="utf-8")
    assert main(["parse", str(path)]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["answer"] == "555"


def test_parse_of_a_missing_file_is_a_usage_error(capsys, tmp_path):
    assert main(["parse", str(tmp_path / "nope.txt")]) == EXIT_USAGE
    assert "nope.txt" in capsys.readouterr().err


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_prompt_prints_the_opening_messages(capsys, lang):
    assert main(["prompt", "Q?", "--lang", lang]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("### system\n") and "<tools>" in out and out.rstrip().endswith("Q?")


def test_console_script_smoke():
    exe = shutil.which("textreact")
    if exe is None:
        pytest.skip("the textreact console script is not installed (pip install -e '.[test]')")
    done = subprocess.run(
        [exe, "parse"], input=ANSWER, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kind"] == "final"


def test_fuzz_passes_our_parser_and_fails_a_naive_one(capsys):
    assert main(["fuzz", "--examples", "10", "--family", "canonical", "chinese"]) == EXIT_OK
    assert "all 2 families passed" in capsys.readouterr().out
    code = main(
        ["fuzz", "--parser", "naive_parser:parse", "--examples", "10", "--family", "chinese"]
    )
    assert code == EXIT_NO_ANSWER
    out = capsys.readouterr().out
    assert "chinese" in out and "行动" in out


def test_fuzz_with_a_bad_parser_spec_is_a_usage_error(capsys):
    assert main(["fuzz", "--parser", "no_such_module_xyz:parse"]) == EXIT_USAGE
    assert "no_such_module_xyz" in capsys.readouterr().err


def test_run_on_the_embedded_model_end_to_end(capsys, monkeypatch):
    """The main job for real: SmolLM2 in llama.cpp's server. Structure, not arithmetic."""
    for name in ("OPENAI_BASE_URL", "TEXTREACT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    argv = ["run", "What is 15 * 37?", "--json", "--max-steps", "2", "--max-tokens", "96"]
    code = main([*argv, "--timeout", "600"])
    data = json.loads(capsys.readouterr().out)
    assert code in (EXIT_OK, EXIT_NO_ANSWER)
    assert data["stop_reason"] in {"final_answer", "max_steps", "truncated", "format_errors"}
    assert data["steps"] and data["usage"]["completion_tokens"] > 0
    first = data["steps"][0]
    assert first["text"].strip() and first["kind"] in {"action", "final", "error"}
    assert (data["answer"] is not None) == (code == EXIT_OK)


for _mark in needs_model:  # marked local_model; skipped with the reason when the model is absent
    test_run_on_the_embedded_model_end_to_end = _mark(test_run_on_the_embedded_model_end_to_end)


def test_usage_errors_return_2_instead_of_exiting(capsys):
    assert main(["run"]) == EXIT_USAGE
    assert main(["no-such-command"]) == EXIT_USAGE
    assert main(["--help"]) == EXIT_OK


def test_gguf_and_base_url_together_is_a_usage_error(capsys, tmp_path):
    code = main(["run", "q", "--base-url", "http://127.0.0.1:9/v1", "--gguf", str(tmp_path)])
    assert code == EXIT_USAGE and "--gguf" in capsys.readouterr().err


def test_parse_takes_broken_utf8(capsys, tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(b"Final Answer: caf\xe9")
    assert main(["parse", str(path)]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["answer"] == "caf\ufffd"


def test_a_model_failure_at_the_best_effort_request_is_reported(capsys):
    call = 'Action: calculator\nAction Input: {"expression": "1+1"}'
    replies = [Reply(body=chat_completion(call)), Reply(400, {"error": {"message": "boom"}})]
    with FakeServer(replies) as server:
        argv = ["run", "q", "--base-url", server.base_url, "--model", "m", "--max-steps", "1"]
        code = main(argv)
    assert code == EXIT_NO_ANSWER
    assert "boom" in capsys.readouterr().err


LOOK = 'Thought: t\nAction: lookup_fact\nAction Input: {"query": "colour of clear sky"}'
ECHO = "Thought: I now know the answer.\nFinal Answer: colour of clear sky"


def test_a_closed_book_answer_is_shown_with_what_the_engine_asked(capsys):
    """With the policies on (`--policies small`), the answer that ends the run came from a
    request without tools or history: the step shows what the engine asked, so the two
    answers in a row read as what they are, and --json says where the answer came from."""
    replies = [Reply(body=chat_completion(text)) for text in (LOOK, ECHO, ECHO, "Blue")]
    with FakeServer(replies) as server:
        question = "What is the colour of a clear sky?"
        argv = ["run", question, "--base-url", server.base_url, "--model", "m"]
        code = main([*argv, "--policies", "small"])
        plain = server.posts[-1].body
    out, err = capsys.readouterr()
    assert code == EXIT_OK and out.strip() == "Blue"
    assert "Asked: Answer the question in a few words from what you know." in err
    assert "grammar" not in plain and "stop" not in plain and len(plain["messages"]) == 2
    replies = [Reply(body=chat_completion(text)) for text in (LOOK, ECHO, ECHO, "Blue")]
    with FakeServer(replies) as server:
        argv = ["run", question, "--base-url", server.base_url, "--model", "m", "--json"]
        assert main([*argv, "--policies", "echo"]) == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert (data["answer"], data["answer_source"]) == ("Blue", "closed_book")
    assert data["steps"][1]["policy_notes"] == [
        {"policy": "echo", "action": "sent_back", "reason": "echo"}
    ]


def test_without_policies_the_run_takes_the_model_s_answer_as_it_is(capsys):
    """The default (`--policies none`): no answer is sent back, and nothing is asked alone."""
    replies = [Reply(body=chat_completion(text)) for text in (LOOK, ECHO)]
    with FakeServer(replies) as server:
        question = "What is the colour of a clear sky?"
        code = main(["run", question, "--base-url", server.base_url, "--model", "m"])
        posts = len(server.posts)
    out, err = capsys.readouterr()
    assert code == EXIT_OK and out.strip() == "colour of clear sky"
    assert posts == 2 and "Asked:" not in err


def test_an_unknown_policy_is_a_usage_error(capsys):
    argv = ["run", "q", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    code = main([*argv, "--policies", "echo,nonesuch"])
    assert code == EXIT_USAGE
    assert "unknown policy nonesuch" in capsys.readouterr().err


# --- what is printed can always be printed -------------------------------------------------


def _run_answering(answer: str, *argv: str) -> int:
    with FakeServer([Reply(body=chat_completion(f"Final Answer: {answer}"))]) as server:
        return main(["run", "q", "--base-url", server.base_url, "--model", "m", *argv])


def test_a_lone_surrogate_in_the_answer_is_printed_escaped(capsys) -> None:
    assert _run_answering("caf\ud800 ok") == EXIT_OK
    out, err = capsys.readouterr()
    assert out.strip() == "caf\\ud800 ok"
    assert "caf\\ud800 ok" in err  # the live view on stderr too


def test_an_escape_sequence_from_the_model_never_reaches_the_terminal(capsys) -> None:
    assert _run_answering("ok\x1b[2J\x1b]0;pwned\x07") == EXIT_OK
    err = capsys.readouterr().err
    assert "\x1b" not in err.replace("\x1b[1m", "").replace("\x1b[0m", "")
    assert "ok\\x1b[2J\\x1b]0;pwned\\x07" in err


def test_a_lone_surrogate_keeps_json_valid_and_round_trips(capsys) -> None:
    assert _run_answering("x\udcff y 台北", "--json") == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert data["answer"] == "x\udcff y 台北"


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_an_ascii_only_stdout_gets_escapes_not_a_crash(monkeypatch, capsys, json_flag) -> None:
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="ascii"))
    code = _run_answering("café 台北", *json_flag)
    sys.stdout.flush()
    text = raw.getvalue().decode("ascii")
    assert code == EXIT_OK
    if json_flag:
        assert json.loads(text)["answer"] == "café 台北"
    else:
        assert text.strip() == "caf\\xe9 \\u53f0\\u5317"


def test_parse_output_stays_valid_json_with_a_surrogate(capsys, tmp_path) -> None:
    path = tmp_path / "c.txt"
    path.write_text("Final Answer: \ud83d alone", encoding="utf-8", errors="surrogatepass")
    assert main(["parse", str(path)]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["kind"] == "final"


# --- bad input is one line, exit 2, and nothing is sent ------------------------------------


def _refused(capsys, argv: list[str], env: dict[str, str] | None = None, monkeypatch=None):
    """Run `argv` against a server that has no replies; the error line, after checking that
    nothing was sent and that it is one line without a traceback."""
    with FakeServer() as server:
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value.replace("SERVER", server.base_url))
        argv = [a.replace("SERVER", server.base_url) for a in argv]
        code = main(argv)
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert server.requests == []
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    return err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-2", "soon"])
def test_a_timeout_that_is_not_a_finite_positive_number_is_a_usage_error(capsys, value):
    argv = ["run", "q", "--base-url", "SERVER", "--model", "m", "--timeout", value]
    assert "--timeout" in _refused(capsys, argv)


@pytest.mark.parametrize(
    "url",
    [
        "localhost:11434/v1",  # no scheme
        "127.0.0.1:8080",
        "ftp://127.0.0.1/v1",
        "http://",  # no host
        "http://local host/v1",  # a space
        " http://127.0.0.1:8080/v1",
        "http://127.0.0.1:99999/v1",  # port out of range
        "http://127.0.0.1:0/v1",
        "http://127.0.0.1:port/v1",
        "http://[::1/v1",  # a broken IPv6 host
        "http://127.0.0.1:8080/v1\n",
        "http://caf\udce9.example/v1",  # bytes that were not UTF-8
    ],
)
def test_a_malformed_base_url_is_a_usage_error(capsys, url: str) -> None:
    err = _refused(capsys, ["run", "q", "--base-url", url, "--model", "m"])
    assert "--base-url" in err and "http" in err


def test_a_malformed_base_url_from_the_environment_names_the_variable(capsys, monkeypatch):
    err = _refused(
        capsys, ["run", "q", "--model", "m"], {"OPENAI_BASE_URL": "localhost:1/v1"}, monkeypatch
    )
    assert "OPENAI_BASE_URL" in err


@pytest.mark.parametrize("question", ["caf\udce9", "\udcff\udcfe", "ok \udc80 then"])
def test_a_question_that_is_not_utf8_is_a_usage_error(capsys, question: str) -> None:
    err = _refused(capsys, ["run", question, "--base-url", "SERVER", "--model", "m"])
    assert "UTF-8" in err


@pytest.mark.parametrize("question", ["", "   \n"])
def test_an_empty_question_is_a_usage_error(capsys, question: str) -> None:
    assert "empty" in _refused(capsys, ["run", question, "--base-url", "SERVER", "--model", "m"])


def test_an_unwritable_transcript_is_refused_before_any_request(capsys, tmp_path) -> None:
    argv = ["run", "q", "--base-url", "SERVER", "--model", "m", "--transcript", str(tmp_path)]
    assert "folder" in _refused(capsys, argv)


def test_argparse_errors_are_one_line_too(capsys) -> None:
    assert main(["run", "q", "--max-steps", "many"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--max-steps" in err and "--help" in err


# --- a question from standard input or a file ----------------------------------------------


def _asked(argv_question: str, monkeypatch=None, stdin: bytes | None = None) -> str:
    """The question the server was sent (the last user message of the first request)."""
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    with FakeServer([Reply(body=chat_completion("Final Answer: ok"))]) as server:
        code = main(["run", argv_question, "--base-url", server.base_url, "--model", "m"])
    assert code == EXIT_OK
    return server.posts[0].body["messages"][-1]["content"]


def test_a_dash_reads_the_question_from_stdin(capsys, monkeypatch) -> None:
    long = "How much is " + " + ".join(["1"] * 60_000) + "?"  # ~240 KB, past one argument
    assert _asked("-", monkeypatch, long.encode() + b"\n") == long


def test_an_at_file_reads_the_question_from_a_file(capsys, tmp_path) -> None:
    path = tmp_path / "q.txt"
    path.write_text("\ufeff台北的人口是多少？\n", encoding="utf-8")  # a BOM is dropped
    assert _asked(f"@{path}") == "台北的人口是多少？"


def test_a_double_at_is_a_literal_at(capsys) -> None:
    assert _asked("@@alice what is 2+2?") == "@alice what is 2+2?"


def test_a_missing_question_file_says_how_to_ask_with_an_at(capsys, tmp_path) -> None:
    argv = ["run", f"@{tmp_path / 'nope.txt'}", "--base-url", "SERVER", "--model", "m"]
    err = _refused(capsys, argv)
    assert "nope.txt" in err and "@@" in err


@pytest.mark.parametrize("raw", [b"caf\xe9?", b"\xff\xfe", b""])
def test_stdin_that_is_not_utf8_or_empty_is_a_usage_error(capsys, monkeypatch, raw) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
    err = _refused(capsys, ["run", "-", "--base-url", "SERVER", "--model", "m"])
    assert "standard input" in err


def test_a_question_file_that_is_not_utf8_names_the_byte(capsys, tmp_path) -> None:
    path = tmp_path / "q.txt"
    path.write_bytes(b"What is \x80?")
    err = _refused(capsys, ["run", f"@{path}", "--base-url", "SERVER", "--model", "m"])
    assert "0x80" in err and "offset 8" in err


def test_help_says_how_to_pass_a_long_question(capsys) -> None:
    assert main(["run", "--help"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "standard input" in out and "@FILE" in out


# --- the environment's proxy, the documented exit codes --------------------------------------


def test_the_environments_proxy_is_used_and_no_proxy_respected(capsys, monkeypatch) -> None:
    with FakeServer([Reply(body=chat_completion("Final Answer: via proxy"))]) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        code = main(["run", "q", "--base-url", "http://api.example.invalid/v1", "--model", "m"])
    assert code == EXIT_OK and capsys.readouterr().out.strip() == "via proxy"
    assert proxy.posts[0].path == "http://api.example.invalid/v1/chat/completions"
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert _run_answering("direct") == EXIT_OK


def test_the_docs_document_the_exit_codes_the_cli_returns() -> None:
    """docs/protocol.md has the table of every code; the README's run section names the codes
    as the table does, and links to it."""
    from pathlib import Path

    from textreact import cli

    root = Path(__file__).parent.parent
    protocol = (root / "docs" / "protocol.md").read_text(encoding="utf-8")
    table = protocol.split("**Exit codes:**", 1)[1].split("\n\n")[1]
    rows = {
        cells[1].strip(" `"): cells[2].strip()
        for cells in (line.split("|") for line in table.splitlines()[2:])
    }
    for code, meaning in [
        (cli.EXIT_OK, "answer was found"),
        (cli.EXIT_NO_ANSWER, "without an answer"),
        (cli.EXIT_USAGE, "usage"),
        (cli.EXIT_MODEL, "model"),
        (cli.EXIT_INTERRUPTED, "interrupted"),
    ]:
        assert meaning in rows[str(code)]
    readme = (root / "README.md").read_text(encoding="utf-8")
    line = next(chunk for chunk in readme.split("\n\n") if "Exit codes:" in chunk)
    line = line.split("Exit codes:", 1)[1]
    named = [part.split("`")[1] for part in line.split(", ")]
    assert named and set(named) <= set(rows)
    assert "(docs/protocol.md#textreact-run-input-deadlines-credentials-output)" in line


def test_run_protocol_native_shows_live_steps_and_writes_a_transcript(capsys, tmp_path):
    body = chat_completion(None, finish_reason="tool_calls")
    body["choices"][0]["message"]["tool_calls"] = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "calculator", "arguments": '{"expression": "15*37"}'},
        }
    ]
    replies = [Reply(body=body), Reply(body=chat_completion("555"))]
    transcript = tmp_path / "native.jsonl"
    with FakeServer(replies) as server:
        argv = ["run", "What is 15*37?", "--base-url", server.base_url, "--model", "m"]
        code = main([*argv, "--protocol", "native", "--transcript", str(transcript)])
        sent = server.posts[1].body
    out, err = capsys.readouterr()
    assert code == EXIT_OK and out.strip() == "555"
    assert "Action: calculator" in err and "Observation: 555" in err
    assert sent["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": "555"}
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert [r["type"] for r in records] == ["start", "step", "step", "stop"]
    assert records[0]["protocol"] == "native" and records[1]["call_id"] == "c1"


@pytest.mark.parametrize(
    ("flags", "sends_grammar"),
    [([], False), (["--constrain", "on"], True), (["--constrain", "off"], False)],
)
def test_run_constrain_decides_whether_the_grammar_is_sent(capsys, flags, sends_grammar):
    with FakeServer([Reply(body=chat_completion(ANSWER))]) as server:
        code = main(["run", "q", "--base-url", server.base_url, "--model", "m", *flags])
        body = server.posts[0].body
    assert code == EXIT_OK
    assert ("grammar" in body) is sends_grammar


def test_run_tool_choice_required_refuses_an_answer_from_memory(capsys):
    replies = [
        Reply(body=chat_completion("Final Answer: 555")),
        Reply(body=chat_completion(CALL)),
        Reply(body=chat_completion(ANSWER)),
    ]
    with FakeServer(replies) as server:
        argv = ["run", "What is 15*37?", "--base-url", server.base_url, "--model", "m"]
        code = main([*argv, "--tool-choice", "required", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK and data["answer"] == "555"
    assert data["steps"][0]["kind"] == "error" and data["steps"][1]["tool"] == "calculator"


def test_run_tool_choice_naming_no_tool_is_a_usage_error(capsys):
    code = main(["run", "q", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                 "--tool-choice", "search"])  # fmt: skip
    assert code == 2 and "tool_choice" in capsys.readouterr().err
