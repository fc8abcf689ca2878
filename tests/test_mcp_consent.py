"""Consent and the user's own input, against real MCP servers on the `mcp` SDK: which tools run
unasked (a tool is read-only only when its server says so; every other tool is a write), what a
person is shown of a server's names, the user's mistakes as one-line usage errors before any
model call, and `${VAR}` in a config. tests/mcp_servers/annotated.py holds the tools: every
combination of the hints, and names that would rewrite a terminal line; it writes each call it
receives to a file, so a test can tell which calls reached it."""

from __future__ import annotations

import ast
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply, chat_completion

from textreact import Agent, ScriptedModel
from textreact.cli import EXIT_USAGE, build_parser, main
from textreact.errors import ConfigError
from textreact.mcp import ServerSpec, connect, load_config, parse_config
from textreact.serve import ServerTools
from textreact.serve.cli import server_tools
from textreact.untrusted import visible

ANNOTATED = str(Path(__file__).parent / "mcp_servers" / "annotated.py")
sys.path.insert(0, str(Path(ANNOTATED).parent))
from annotated import HOSTILE_NAMES  # noqa: E402  (the server's own module, for its names)


def call(tool: str, arguments: dict) -> str:
    return f"Thought: I will call it.\nAction: {tool}\nAction Input: {json.dumps(arguments)}"


def answer(text: str) -> str:
    return f"Thought: I have it.\nFinal Answer: {text}"


@pytest.fixture
def calls(tmp_path) -> Path:
    """The file the annotated server writes each call it receives to."""
    return tmp_path / "calls.log"


def received(calls: Path) -> list[str]:
    """The names of the tools whose calls reached the server, in order."""
    if not calls.exists():
        return []
    return [ast.literal_eval(line) for line in calls.read_text("utf-8").splitlines()]


def spec(calls: Path) -> ServerSpec:
    return ServerSpec(name="annotated", command=sys.executable, args=(ANNOTATED, str(calls)))


def command(calls: Path) -> str:
    return f"{sys.executable} {ANNOTATED} {calls}"


class Terminal(io.StringIO):
    """A stdin that a person answers at: what they will type, one line per question."""

    def isatty(self) -> bool:
        return True


# -- class 2: what runs unasked ----------------------------------------------------------------


def test_a_tool_is_read_only_only_when_its_server_says_so(calls) -> None:
    with connect([spec(calls)], writes="allow") as connection:
        effect = {i.original: i.effect for i in connection.infos}
    assert effect["look"] == "read-only" and effect["contrary"] == "read-only"
    assert effect["save"] == "writes"  # readOnlyHint false, destructiveHint false: a write
    assert effect["erase"] == "may destroy" and effect["unmarked"] == "may destroy"


def test_the_python_api_offers_no_write_unless_told(calls) -> None:
    with connect([spec(calls)]) as connection:
        offered = [t.name for t in connection.tools]
        model = ScriptedModel([call("save", {"word": "x"}), call("look", {}), answer("done")])
        result = Agent(model, connection.tools).run("q")
    assert offered == ["look", "contrary", "getenv", "read_more"]  # the model never sees a write
    assert result.steps[0].is_error and "Unknown tool" in result.steps[0].observation
    assert received(calls) == ["look"]


def test_writes_allow_offers_every_tool_and_runs_it_unasked(calls) -> None:
    with connect([spec(calls)], writes="allow") as connection:
        model = ScriptedModel([call("save", {"word": "x"}), answer("done")])
        result = Agent(model, connection.tools).run("q")
    assert result.steps[0].observation == "save: x" and received(calls) == ["save"]


def test_a_confirm_function_is_asked_before_each_write_inside_the_tool(calls) -> None:
    asked = []

    def confirm(info, arguments):
        asked.append((info.original, info.effect, arguments))
        return arguments["word"] == "yes" or "the user said no"

    with connect([spec(calls)], writes=confirm) as connection:
        script = [call("save", {"word": "no"}), call("erase", {"word": "yes"}), call("look", {})]
        result = Agent(ScriptedModel([*script, answer("done")]), connection.tools).run("q")
    refused = result.steps[0]
    assert refused.is_error and "The call to save was not run: the user said no" in (
        refused.observation
    )
    # a refusal, as a `before_call` veto reads: not the tool's failure with a hint to fix it
    assert refused.result.error_kind == "vetoed" and "failed" not in refused.observation
    assert asked == [("save", "writes", {"word": "no"}), ("erase", "may destroy", {"word": "yes"})]
    assert received(calls) == ["erase", "look"]  # the read-only tool is not asked about


def test_the_question_is_not_bounded_by_the_tools_timeout(calls) -> None:
    """A person may take longer to answer than a call may take: the timeout starts after the
    answer, so a question answered late neither times out nor lets the call run unseen."""
    import time

    def slow_yes(info, arguments):
        time.sleep(1.5)
        return True

    with connect([spec(calls)], writes=slow_yes, timeout=0.5) as connection:
        model = ScriptedModel([call("save", {"word": "late"}), answer("done")])
        result = Agent(model, connection.tools).run("q")
    assert result.steps[0].observation == "save: late" and received(calls) == ["save"]


def test_an_unknown_writes_setting_is_refused() -> None:
    with pytest.raises(ConfigError, match="writes must be"):
        connect([ServerSpec(name="x", command="x")], writes="ask")


def test_run_asks_before_a_write_that_is_not_destructive(capsys, calls, monkeypatch) -> None:
    """Before, `save` (readOnlyHint false, destructiveHint false) ran with no question."""
    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    replies = [Reply(body=chat_completion(call("save", {"word": "w"}))),
               Reply(body=chat_completion(answer("not saved")))]  # fmt: skip
    with FakeServer(replies) as server:
        argv = ["run", "Save it.", "--mcp-server", command(calls), "--json"]
        code = main([*argv, "--base-url", server.base_url, "--model", "m"])
    captured = capsys.readouterr()
    step = json.loads(captured.out)["steps"][0]
    assert code == 0 and step["is_error"] and "was not run" in step["observation"]
    assert "annotated/save (it may change data) with" in captured.err and "[y/N]" in captured.err
    assert received(calls) == []


@pytest.mark.parametrize("flag", ["--mcp-writes", "--mcp-destructive"])
def test_run_allow_runs_writes_and_the_old_flag_still_works(capsys, calls, flag) -> None:
    replies = [Reply(body=chat_completion(call("save", {"word": "w"}))),
               Reply(body=chat_completion(answer("saved")))]  # fmt: skip
    with FakeServer(replies) as server:
        argv = ["run", "Save it.", "--mcp-server", command(calls), "--json", flag, "allow"]
        code = main([*argv, "--base-url", server.base_url, "--model", "m"])
    assert code == 0 and json.loads(capsys.readouterr().out)["steps"][0]["observation"] == (
        "save: w"
    )
    assert received(calls) == ["save"]


@pytest.mark.parametrize(("setting", "offered"), [("refuse", False), ("allow", True)])
def test_serve_offers_a_write_only_when_allowed(calls, setting, offered) -> None:
    tools = ServerTools([spec(calls)], allow=["save", "look"], writes=setting)
    tools.open()
    try:
        names = [t.name for t in tools.offered()]
    finally:
        tools.close()
    assert ("save" in names) is offered and "look" in names


def test_serve_refuses_writes_unless_the_flag_allows_them() -> None:
    parse = build_parser().parse_args
    assert server_tools(parse(["serve", "--mcp-server", "x"]), {}).writes == "refuse"
    allowed = parse(["serve", "--mcp-server", "x", "--mcp-destructive", "allow"])
    assert server_tools(allowed, {}).writes == "allow"


def test_mcp_list_shows_the_git_servers_writes_as_writes(capsys, tmp_path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True)
    server = f"{sys.executable} -m mcp_server_git --repository {repo}"
    assert main(["mcp", "list", "--mcp-server", server]) == 0
    heads = {
        line.split()[0]: line.rsplit("; ", 1)[1].rstrip("]")
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("git_") and "  [mcp_server_git; " in line
    }
    assert heads["git_add"] == heads["git_commit"] == "writes"
    assert heads["git_checkout"] == heads["git_create_branch"] == "writes"
    assert heads["git_reset"] == "may destroy"
    assert heads["git_status"] == heads["git_log"] == heads["git_diff"] == "read-only"


def test_mcp_list_json_names_each_tools_class(capsys, calls) -> None:
    assert main(["mcp", "list", "--mcp-server", command(calls), "--json"]) == 0
    rows = {r["original"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["save"]["effect"] == "writes" and rows["save"]["may_destroy"] is False
    assert rows["look"]["effect"] == "read-only" and rows["erase"]["effect"] == "may destroy"


# -- class 3: what a person reads of a server's names ------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("bidi\u202eetirw", "bidi\\u202eetirw"),
        ("iso\u2066late\u2069 mark\u200f", "iso\\u2066late\\u2069 mark\\u200f"),
        ("joiner\u2060", "joiner\\u2060"),
        ("emoji 👩\u200d💻 keeps its joiner", "emoji 👩\u200d💻 keeps its joiner"),
    ],
)
def test_bidi_controls_are_shown_not_obeyed(text, shown) -> None:
    assert visible(text) == shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("two\nlines\ttab", "two\\x0alines\\x09tab"),
        ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),  # shown, not dropped
        ("erase\x1b[2K\rcsi\x9b", "erase\\x1b[2K\\x0dcsi\\x9b"),
        ("tag\U000e0041 joined\u200d", "tag\\U000e0041 joined\\u200d"),
        ("é 台北 ✓ plain", "é 台北 ✓ plain"),
    ],
)
def test_one_line_for_a_person_shows_every_hidden_character(text, shown) -> None:
    assert visible(text, line=True) == shown


def _hidden(text: str) -> list[str]:
    return [c for c in text if not c.isprintable() and c != "\n"]


def test_mcp_list_shows_hostile_names_escaped_one_line_each(capsys, calls) -> None:
    assert main(["mcp", "list", "--mcp-server", command(calls)]) == 0
    out = capsys.readouterr().out
    assert _hidden(out) == []
    heads = [line for line in out.splitlines() if line.endswith("may destroy]")]
    for name in HOSTILE_NAMES:  # each on its own header line, escaped
        assert any(visible(name, line=True) in head for head in heads), name
    assert "(server's name: erase\\x1b[2K\\x0dtextreact: time/look is read-only)" in out


def test_the_question_shows_hostile_names_and_arguments_escaped(capsys, calls, monkeypatch):
    answers = "\n".join("n" for _ in HOSTILE_NAMES) + "\n"
    monkeypatch.setattr(sys, "stdin", Terminal(answers))
    with connect([spec(calls)], writes="allow") as connection:  # the mapped names, to script
        names = {i.original: i.name for i in connection.infos}
    mapped = [names[n] for n in HOSTILE_NAMES]
    hostile = {"word": "a\u202eb\x9b2J\u200bc"}
    replies = [Reply(body=chat_completion(call(name, hostile))) for name in mapped]
    replies.append(Reply(body=chat_completion(answer("none ran"))))
    with FakeServer(replies) as server:
        argv = ["run", "Go.", "--mcp-server", command(calls), "--json", "--max-steps", "9"]
        code = main([*argv, "--base-url", server.base_url, "--model", "m"])
    err = capsys.readouterr().err
    questions = [q for q in err.split("[y/N] ") if q.strip()]
    assert code == 0 and len(questions) == len(HOSTILE_NAMES)
    assert _hidden(err) == [] and err.count("\n") == 0  # one line each, nothing hidden
    for name in HOSTILE_NAMES:
        assert f"annotated/{visible(name, line=True)} (it may change or delete data)" in err
    assert '{"word": "a\\u202eb\\x9b2J\\u200bc"}' in err
    assert received(calls) == []


# -- class 5: the user's own input -------------------------------------------------------------


@pytest.fixture
def model():
    """A model server that records every request and has no reply to give."""
    with FakeServer([]) as server:
        yield server


def usage_error(capsys, model: FakeServer, *argv: str) -> str:
    """The one line `textreact run ...` printed, having exited 2 with no model asked."""
    code = main(["run", "q", *argv, "--base-url", model.base_url, "--model", "m"])
    err = capsys.readouterr().err.strip()
    assert code == EXIT_USAGE, err
    assert len(err.splitlines()) == 1 and err.startswith("textreact: "), err
    assert model.posts == []
    return err


def test_an_unclosed_quote_in_a_server_command_is_a_usage_error(capsys, model) -> None:
    err = usage_error(capsys, model, "--mcp-server", "uvx 'oops")
    assert "uvx 'oops" in err and "quotation" in err


@pytest.mark.parametrize("seconds", ["inf", "nan", "-1", "0"])
def test_a_timeout_that_is_no_number_of_seconds_is_a_usage_error(capsys, model, calls, seconds):
    err = usage_error(capsys, model, "--mcp-server", command(calls), "--mcp-timeout", seconds)
    assert "--mcp-timeout" in err and "finite number of seconds above 0" in err


def test_a_config_nested_too_deep_is_a_usage_error(capsys, model, tmp_path) -> None:
    config = tmp_path / "deep.json"
    config.write_text('{"mcpServers": ' + "[" * 100_000 + "]" * 100_000 + "}")
    err = usage_error(capsys, model, "--mcp", str(config))
    assert str(config) in err and "nested" in err


def test_a_cwd_that_is_not_a_string_is_refused(capsys, model, tmp_path, calls) -> None:
    config = tmp_path / "mcp.json"
    entry = {"command": sys.executable, "args": [ANNOTATED, str(calls)], "cwd": 5}
    config.write_text(json.dumps({"mcpServers": {"annotated": entry}}))
    err = usage_error(capsys, model, "--mcp", str(config))
    assert 'mcpServers.annotated: "cwd" must be a string' in err


def test_an_allow_pattern_that_leaves_no_tool_is_refused(capsys, model, calls) -> None:
    err = usage_error(
        capsys, model, "--mcp-server", command(calls), "--mcp-allow", "sav", "--mcp-allow", "x*"
    )
    assert "'sav', 'x*'" in err and "annotated/save" in err and "annotated/look" in err
    assert "\\x1b" in err and "\x1b" not in err  # the server's names, made visible


def test_refused_writes_that_leave_no_tool_are_refused_with_how_to_offer_them(calls) -> None:
    with pytest.raises(ConfigError, match=r"writes.*annotated/save.*writes='allow'"):
        connect([spec(calls)], allow=["save", "erase"])


def test_a_value_in_an_error_is_shown_short() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"mcpServers": {"a": {"command": "x", "args": "y" * 100_000}}})
    assert len(str(raised.value)) < 300


# -- class 8: ${VAR} in a config ---------------------------------------------------------------


def test_variables_are_expanded_from_the_environment_given(tmp_path) -> None:
    entry = {
        "command": "${PY}", "args": ["--x", "${env:WORD}", "a${MISSING:-b}c", "$${LITERAL}"],
        "env": {"TOKEN": "Bearer ${TOKEN}", "EMPTY": "${EMPTY:-fallback}"}, "cwd": "${HOME}/w",
    }  # fmt: skip
    remote = {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    environ = {"PY": "python3", "WORD": "w", "TOKEN": "t0k", "HOME": "/h", "HOST": "h.example",
               "EMPTY": ""}  # fmt: skip
    local, far = parse_config({"mcpServers": {"local": entry, "far": remote}}, environ=environ)
    assert local.command == "python3" and local.args == ("--x", "w", "abc", "${LITERAL}")
    assert dict(local.env) == {"TOKEN": "Bearer t0k", "EMPTY": "fallback"}
    assert local.cwd == "/h/w"
    assert far.url == "https://h.example/mcp" and dict(far.headers) == {
        "Authorization": "Bearer t0k"
    }


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "${NOT_SET_ANYWHERE}",
            r'mcpServers\.s: "env\.K" uses \$\{NOT_SET_ANYWHERE\}, which is not',
        ),
        ("${input:token}", r"\$\{input:token\} is not a variable textreact expands"),
        ("${env:}", r"\$\{env:\} is not a variable textreact expands"),
        # a nested default is not expanded: neither cut at its first brace nor passed on
        ("${workspace:-${X}}", r"\$\{workspace:-\$\{X\} is not a variable textreact expands"),
        ("${X:-${workspace}}", r"\$\{X:-\$\{workspace\} is not a variable textreact expands"),
    ],
)
def test_an_unset_or_unknown_variable_is_an_error_naming_it(value, message) -> None:
    entry = {"command": "x", "env": {"K": value}}
    with pytest.raises(ConfigError, match=message):
        parse_config({"mcpServers": {"s": entry}}, environ={"workspace": "w"})


def test_without_an_environment_a_variable_is_an_error_that_says_how_to_expand_it() -> None:
    with pytest.raises(ConfigError, match=r"environ=os\.environ"):
        parse_config({"mcpServers": {"s": {"command": "x", "args": ["${HOME}"]}}})


def test_a_configs_variables_reach_the_server(capsys, tmp_path, calls, monkeypatch):
    """The child gets the expanded value (the server's getenv tool reads its environment);
    the command line expands from the process environment, and a variable it does not set
    is a usage error naming it, before any server starts."""
    monkeypatch.setenv("TEXTREACT_TEST_CALLS", str(calls))
    monkeypatch.setenv("TEXTREACT_TEST_SECRET", "s3cret")
    config = tmp_path / "mcp.json"
    entry = {"command": sys.executable, "args": [ANNOTATED, "${TEXTREACT_TEST_CALLS}"],
             "env": {"SEEN": "${TEXTREACT_TEST_SECRET}"}}  # fmt: skip
    config.write_text(json.dumps({"mcpServers": {"annotated": entry}}))
    with connect(load_config(config, environ=os.environ), allow=["getenv"]) as connection:
        model = ScriptedModel([call("getenv", {"word": "SEEN"}), answer("ok")])
        result = Agent(model, connection.tools).run("q")
    assert result.steps[0].observation == "getenv: s3cret"
    assert received(calls) == ["getenv"]
    assert main(["mcp", "list", str(config)]) == 0 and "getenv" in capsys.readouterr().out
    entry["env"] = {"SEEN": "${TEXTREACT_TEST_UNSET}"}
    config.write_text(json.dumps({"mcpServers": {"annotated": entry}}))
    monkeypatch.delenv("TEXTREACT_TEST_UNSET", raising=False)
    assert main(["mcp", "list", str(config)]) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "${TEXTREACT_TEST_UNSET}, which is not set" in err
