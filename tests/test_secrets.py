"""Secrets are never shown: API keys echoed by a server anywhere in its error body, and
credentials written into a base URL, in every place a URL or a server's text is printed."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeServer, Reply, chat_completion

from textreact.cli import EXIT_MODEL, EXIT_OK, EXIT_USAGE, main
from textreact.errors import ModelError
from textreact.models.faults import server_message
from textreact.models.openai_compat import OpenAICompatModel
from textreact.redact import BLANK, blank_data, blank_text, cut, public_url, split_userinfo

KEY = "sk-live-" + "0123456789abcdef" * 4  # 72 characters: longer than any cut at 40-60


class _Fault(Exception):
    """An SDK-like exception carrying a parsed body, as the openai SDK's errors do."""

    def __init__(self, body: object) -> None:
        super().__init__(f"Error code: 400 - {body!r}")
        self.body = body


@pytest.mark.parametrize(
    "body",
    [
        {"detail": "x" * 280 + KEY},  # the key straddles the old 300-character cut
        {"error": {"message": "bad", "echo": {"authorization": "Bearer " + KEY}}},
        [{"header": KEY}, "y" * 500],
        {KEY: "the key as a field name"},
        {"message": "z" * 390 + f" key={KEY}"},  # the message field itself, longer than the cut
    ],
)
def test_server_message_blanks_the_key_before_cutting(body: object) -> None:
    text = server_message(_Fault(body), KEY, limit=300)
    assert KEY[:12] not in text and "0123456789abcdef" not in text
    assert BLANK in text or len(text) < 400


def test_server_message_blanks_a_key_in_the_exceptions_own_text() -> None:
    text = server_message(_Fault("not a mapping: " + KEY), KEY)
    assert KEY not in text and BLANK in text


def test_server_message_blanks_extra_secrets_and_url_credentials() -> None:
    body = {"seen": "https://bob:hunter2@proxy.example/v1", "password": "s3cr3t-word"}
    text = server_message(_Fault(body), None, secrets=["s3cr3t-word"])
    assert "hunter2" not in text and "bob" not in text and "s3cr3t-word" not in text
    assert "proxy.example" in text


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:key@host.example/v1", "https://***@host.example/v1"),
        ("http://only-user@127.0.0.1:8080/v1", "http://***@127.0.0.1:8080/v1"),
        ("https://u:p%40ss@word@host/v1?x=1", "https://***@host/v1?x=***"),  # the last @ ends it
        ("https://h.example/v1?api_key=sk-1&v=2", "https://h.example/v1?api_key=***&v=***"),
        ("https://h.example/v1?sk-bare#frag", "https://h.example/v1?***#frag"),
        ("https://host.example/v1/a@b", "https://host.example/v1/a@b"),  # @ in the path stays
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
    ],
)
def test_public_url_blanks_userinfo_and_query_values(url: str, shown: str) -> None:
    assert public_url(url) == shown


def test_split_userinfo_moves_credentials_out_of_the_url() -> None:
    assert split_userinfo("https://me:k%2Fy@h.example:8443/v1") == (
        "https://h.example:8443/v1",
        ("me", "k/y"),
    )
    assert split_userinfo("http://127.0.0.1:1/v1") == ("http://127.0.0.1:1/v1", None)


def test_blank_text_and_data_find_urls_and_secrets_anywhere() -> None:
    text = "failed at https://a:b@h/v1 and again at http://c:d@e:1/x with sk-1"
    assert blank_text(text, ["sk-1"]) == (
        "failed at https://***@h/v1 and again at http://***@e:1/x with ***"
    )
    data = {"k": ["sk-1", {"sk-1": 2}], "n": 3}
    assert blank_data(data, ["sk-1", None, ""]) == {"k": ["***", {"***": 2}], "n": 3}
    assert cut("abcdef", 3) == "abc... (3 more characters)" and cut("abc", 3) == "abc"


def test_an_echoed_key_outside_message_never_reaches_the_cli_error(capsys) -> None:
    body = {"error": {"type": "auth", "echo": "x" * 290 + KEY}}  # no `message` field
    with FakeServer([Reply(401, body)]) as server:
        argv = ["run", "q", "--base-url", server.base_url, "--model", "m", "--api-key", KEY]
        code = main(argv)
    err = capsys.readouterr().err
    assert code == EXIT_MODEL
    assert "0123456789abcdef" not in err and "sk-live" not in err


def test_credentials_in_the_base_url_are_sent_as_basic_auth_and_never_printed(capsys) -> None:
    with FakeServer([Reply(body=chat_completion("Final Answer: 4"))]) as server:
        url = server.base_url.replace("http://", "http://bob:hunter2@")
        assert main(["run", "q", "--base-url", url, "--model", "m", "--json"]) == EXIT_OK
    out, err = capsys.readouterr()
    assert json.loads(out)["answer"] == "4"
    assert server.posts[0].headers["authorization"].startswith("Basic ")  # as httpx would send
    assert "hunter2" not in out + err


@pytest.mark.parametrize("fault", ["refused", "500", "timeout"])
def test_credentials_in_the_base_url_never_appear_in_errors(capsys, fault: str) -> None:
    replies = {"500": [Reply(500, {"error": {"message": "boom"}}, {"x-should-retry": "false"})]}
    with FakeServer(replies.get(fault, [Reply(body=chat_completion("x"), delay=5)])) as server:
        url = server.base_url if fault != "refused" else "http://127.0.0.1:9/v1"
        url = url.replace("http://", "http://bob:hunter2@")
        argv = ["run", "q", "--base-url", url, "--model", "m", "--timeout", "0.5"]
        code = main(argv)
    err = capsys.readouterr().err
    assert code == EXIT_MODEL
    assert "hunter2" not in err and "bob" not in err and "127.0.0.1" in err


def test_a_malformed_url_with_credentials_is_refused_without_showing_them(capsys) -> None:
    code = main(["run", "q", "--base-url", "ftp://bob:hunter2@host/v1", "--model", "m"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and "hunter2" not in err and "ftp" in err


def test_the_library_error_hides_url_credentials_too() -> None:
    url = "http://bob:hunter2@127.0.0.1:9/v1"
    with (
        OpenAICompatModel("m", url, max_retries=0, timeout=2) as model,
        pytest.raises(ModelError) as caught,
    ):
        model.complete([{"role": "user", "content": "q"}])
    assert "hunter2" not in str(caught.value) and "127.0.0.1:9" in str(caught.value)


def test_blanking_reads_a_long_run_of_dotted_words_once() -> None:
    """`a.a.a...` made the scheme scan start again at every word: quadratic, so half a million
    of them (an echoed error body) would have taken minutes; read once, it is a blink."""
    text = "a." * 500_000 + " https://user:key@host/"
    assert blank_text(text).endswith(" https://***@host/")
