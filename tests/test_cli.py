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
