"""`textreact serve` on the command line: flags and environment to a ServeConfig, usage errors
before anything starts, tested in-process through `textreact.cli.main`."""

from __future__ import annotations

import pytest

from textreact.cli import EXIT_USAGE, build_parser, main
from textreact.serve.cli import config_from
from textreact.serve.config import ServeConfig


def _args(*argv: str):
    return build_parser().parse_args(["serve", *argv])


def test_flags_and_environment_make_the_config() -> None:
    env = {"TEXTREACT_UPSTREAM": "http://127.0.0.1:8080/v1", "TEXTREACT_UPSTREAM_API_KEY": "sk-e"}
    config = config_from(_args("--upstream-native", "auto", "--show-thoughts"), env)
    assert config.upstream == "http://127.0.0.1:8080/v1"
    assert config.upstream_api_key == "sk-e"
    assert (config.native, config.show_thoughts, config.constrain) == ("auto", True, "auto")
    flagged = config_from(_args("--upstream", "http://h/v1", "--upstream-api-key", "sk-f"), env)
    assert (flagged.upstream, flagged.upstream_api_key) == ("http://h/v1", "sk-f")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--upstream", "ftp://nowhere"], "http(s) base URL"),
        (["--upstream", "http://h/v1", "--workers", "0"], "--workers"),
        (["--upstream", "http://h/v1", "--port", "70000"], "--port"),
        (["--upstream", "http://h/v1", "--gguf", "m.gguf"], "--gguf"),
        (["--workers", "2"], "--workers N needs --upstream"),
        (["--upstream", "http://h/v1", "--timeout", "0"], "seconds"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(argv, said, capsys, monkeypatch) -> None:
    monkeypatch.delenv("TEXTREACT_UPSTREAM", raising=False)
    assert main(["serve", *argv]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1


def test_the_default_timeout_with_retries_ends_before_an_sdk_client_gives_up() -> None:
    import openai

    config = config_from(_args("--upstream", "http://h/v1"), {})
    assert config.timeout == ServeConfig("http://h/v1").timeout
    assert config.timeout * (config.max_retries + 1) <= openai.DEFAULT_TIMEOUT.read
