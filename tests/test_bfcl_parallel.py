"""BFCL's `parallel` and `parallel_multiple` categories: the scorer of several calls (BFCL's
`parallel_function_checker_no_order`) checked on every entry of both files, and a parallel entry
run through the runner and `textreact compare`: the text protocols write several calls only
with parallel calls on, native makes them either way."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeServer, Reply, chat_completion
from test_bfcl import SIMPLE, _wrong, reference_call, shared

from textreact.cli import main
from textreact.compare.bfcl import Entry, category, check_calls, load_bfcl
from textreact.compare.runner import Options, run_compare
from textreact.constrain import matches
from textreact.errors import ConfigError
from textreact.models.openai_compat import OpenAICompatModel
from textreact.models.scripted import ScriptedModel

FILES = ["BFCL_v4_parallel.json", "BFCL_v4_parallel_multiple.json"]
ROOT = Path(__file__).resolve().parents[1]


def reference_calls(entry: Entry) -> list[tuple[str, dict[str, Any]]]:
    """A right call for each expected call, in the answer file's order. An answer may name a
    parameter the schema lacks (parallel_multiple_26 lists `type`, a key of an array's items):
    a call with it is BFCL's `unexpected_param`, so the right call leaves it out, as "" among
    its answers allows."""
    calls = []
    for expected in entry.ground_truth:
        name, arguments = reference_call(dataclasses.replace(entry, ground_truth=(expected,)))
        [(_, possible)] = expected.items()
        schema = next(f for f in entry.functions if f["name"] == name)["parameters"]
        known = schema.get("properties", {})
        kept = {k: v for k, v in arguments.items() if k in known or "" not in possible[k]}
        calls.append((name, kept))
    return calls


# the scorer


@pytest.mark.parametrize(
    ("entry_id", "expected"),
    [
        ("parallel_multiple_12", "parallel_multiple"),
        ("parallel_12", "parallel"),
        ("live_parallel_multiple_3-2-0", "live_parallel_multiple"),
        ("live_parallel_4-1-0", "live_parallel"),
        ("live_multiple_7-3-1", "live_multiple"),
        ("multiple_40", "multiple"),
        ("simple_python_9", "simple"),
    ],
)
def test_a_category_is_its_longest_name_that_prefixes_the_id(entry_id: str, expected: str) -> None:
    assert category(entry_id) == expected


#: Where one call fits two expected calls, BFCL's greedy matching depends on the order: in
#: parallel_178 the first expected call takes Microsoft or Apple on 2022-01-01, so a reply that
#: asks for Apple's first leaves Apple's own expected call nothing to match.
ORDER_DEPENDENT = {"parallel_178"}


@pytest.mark.parametrize("name", FILES)
def test_every_right_set_of_calls_passes_in_any_order(name: str) -> None:
    entries = load_bfcl(shared(name))
    assert len(entries) == 200 and min(len(e.ground_truth) for e in entries) >= 2
    for entry in entries:
        calls = reference_calls(entry)
        assert check_calls(entry, calls).valid, entry.id
        if entry.id in ORDER_DEPENDENT:
            continue
        for order in itertools.islice(itertools.permutations(calls), 1, 50):
            check = check_calls(entry, order)
            assert check.valid, (entry.id, check)


def test_matching_is_greedy_as_bfcls_own_checker_is() -> None:
    [entry] = [e for e in load_bfcl(shared(FILES[0])) if e.id in ORDER_DEPENDENT]
    calls = reference_calls(entry)
    assert check_calls(entry, calls).valid
    check = check_calls(entry, [calls[2], calls[1], calls[0], calls[3]])
    assert (check.valid, check.error_type) == (False, "cannot_find_match")
    assert "expected call 3" in check.error


@pytest.mark.parametrize("name", FILES)
def test_one_call_missing_or_one_extra_is_the_wrong_count(name: str) -> None:
    for entry in load_bfcl(shared(name)):
        calls = reference_calls(entry)
        for wrong in (calls[:-1], calls[1:], [*calls, calls[0]], []):
            assert check_calls(entry, wrong).error_type == "wrong_count", entry.id


@pytest.mark.parametrize("name", FILES)
def test_a_wrong_value_in_any_one_call_fails_the_entry(name: str) -> None:
    failed = 0
    for entry in load_bfcl(shared(name)):
        calls = reference_calls(entry)
        for i, (function, arguments) in enumerate(calls):
            [(_, possible)] = entry.ground_truth[i].items()
            for param, value in arguments.items():
                wrong = _wrong(value, possible[param])
                if wrong is None:
                    continue
                changed = [*calls[:i], (function, {**arguments, param: wrong}), *calls[i + 1 :]]
                check = check_calls(entry, changed)
                assert (check.valid, check.error_type) == (False, "cannot_find_match"), entry.id
                failed += 1
                break
    assert failed > 300  # most calls have a value that is easy to make wrong


#: `parallel_0` of BFCL v4: the same function twice, with other values.
PARALLEL = Entry(
    id="parallel_0",
    messages=(
        {
            "role": "user",
            "content": "Play songs from the artists Taylor Swift and Maroon 5, with a play time "
            "of 20 minutes and 15 minutes respectively, on Spotify.",
        },
    ),
    functions=(
        {
            "name": "spotify.play",
            "description": "Play specific tracks from a given artist for a specific time duration.",
            "parameters": {
                "type": "dict",
                "properties": {
                    "artist": {"type": "string", "description": "The artist."},
                    "duration": {"type": "integer", "description": "Minutes to play."},
                },
                "required": ["artist", "duration"],
            },
        },
    ),
    ground_truth=(
        {"spotify.play": {"artist": ["Taylor Swift"], "duration": [20]}},
        {"spotify.play": {"artist": ["Maroon 5"], "duration": [15]}},
    ),
)
SWIFT = ("spotify.play", {"artist": "Taylor Swift", "duration": 20})
MAROON = ("spotify.play", {"artist": "Maroon 5", "duration": 15})


def test_each_expected_call_is_matched_by_a_call_of_its_own() -> None:
    assert check_calls(PARALLEL, [MAROON, SWIFT]).valid
    twice = check_calls(PARALLEL, [SWIFT, SWIFT])  # each passes for the first expected call
    assert (twice.valid, twice.error_type) == (False, "cannot_find_match")
    assert "expected call 2 (spotify.play)" in twice.error and "call 2:" in twice.error
    renamed = check_calls(PARALLEL, [SWIFT, ("spotify_play", MAROON[1])])
    assert "wrong_func_name" not in renamed.error_type and not renamed.valid


def test_a_one_call_entry_answered_with_two_calls_is_the_wrong_count() -> None:
    right = ("geometry.area", {"base": 10, "height": 5.5})
    assert check_calls(SIMPLE, [right]).valid
    assert check_calls(SIMPLE, [right, right]).error_type == "wrong_count"  # as BFCL's simple


# the runner: a parallel entry through each protocol


def _pairs(*calls: tuple[str, dict[str, Any]], thought: str = "Both at once.") -> str:
    lines = [f"Thought: {thought}"]
    for name, arguments in calls:
        lines += [f"Action: {name}", f"Action Input: {json.dumps(arguments)}"]
    return "\n".join(lines)


TWO = _pairs(MAROON, SWIFT)


@pytest.mark.parametrize("protocol", ["text", "text+grammar"])
def test_the_text_protocols_score_a_parallel_entry_right_only_with_parallel_calls(
    protocol: str,
) -> None:
    several, one = ScriptedModel([TWO]), ScriptedModel([TWO])
    on = run_compare(
        several, [PARALLEL], protocols=[protocol], options=Options(parallel_calls=True)
    )
    off = run_compare(one, [PARALLEL], protocols=[protocol])
    [right], [short] = on.outcomes, off.outcomes
    assert right.success and right.check.valid
    assert right.calls == ({"tool": MAROON[0], "arguments": MAROON[1]},
                           {"tool": SWIFT[0], "arguments": SWIFT[1]})  # fmt: skip
    assert right.measures["tool_calls"] == 2 and len(several.requests) == 1
    assert not short.success and short.check.error_type == "wrong_count"
    assert short.calls == ({"tool": MAROON[0], "arguments": MAROON[1]},)  # the second discarded
    assert "several tools at once" in several.requests[0][0]["content"]
    assert "several tools at once" not in one.requests[0][0]["content"]
    grammars = several.options[0].get("grammar"), one.options[0].get("grammar")
    if protocol == "text":
        assert grammars == (None, None)
    else:  # the grammar sent lets the reply make both calls, or only one
        assert matches(grammars[0], TWO) and not matches(grammars[1], TWO)
    assert on.meta["parallel_calls"] is True and off.meta["parallel_calls"] is False


WRONG_VALUE = ("spotify.play", {"artist": "Maroon 5", "duration": 20})


@pytest.mark.parametrize(
    ("reply", "error_type", "second"),
    [
        (_pairs(MAROON, SWIFT, WRONG_VALUE), "wrong_count", SWIFT[1]),  # one call too many
        (_pairs(MAROON) + "\nAction: spotify.play", "cannot_find_match", None),  # no input
        (_pairs(MAROON, WRONG_VALUE), "cannot_find_match", WRONG_VALUE[1]),
    ],
    ids=["extra", "written wrong", "wrong value"],
)
def test_a_parallel_reply_with_one_call_wrong_fails(
    reply: str, error_type: str, second: dict[str, Any] | None
) -> None:
    """A call written wrong among them counts as a call, one that matches nothing."""
    options = Options(parallel_calls=True)
    [outcome] = run_compare(
        ScriptedModel([reply]), [PARALLEL], protocols=["text"], options=options
    ).outcomes
    assert (outcome.success, outcome.check.error_type) == (False, error_type)
    assert outcome.calls[:2] == (
        {"tool": "spotify.play", "arguments": MAROON[1]},
        {"tool": "spotify.play", "arguments": second},
    )


def _tool_calls(*calls: tuple[str, dict[str, Any]]) -> Reply:
    body = chat_completion(None, finish_reason="tool_calls")
    body["choices"][0]["message"]["tool_calls"] = [
        {"id": f"c{i}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(arguments)}}
        for i, (name, arguments) in enumerate(calls, 1)
    ]  # fmt: skip
    return Reply(body=body)


@pytest.mark.parametrize("parallel_calls", [False, True])
def test_native_makes_both_calls_either_way(parallel_calls: bool) -> None:
    """Through the openai SDK over loopback: the two tool_calls come back under the API-safe
    name, are scored under BFCL's, and pass in the model's order."""
    api = "spotify_play"
    with FakeServer([_tool_calls((api, MAROON[1]), (api, SWIFT[1]))]) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        options = Options(parallel_calls=parallel_calls)
        [outcome] = run_compare(model, [PARALLEL], protocols=["native"], options=options).outcomes
        assert len(server.posts) == 1
    assert outcome.success and outcome.check.valid
    assert [c["tool"] for c in outcome.calls] == ["spotify.play", "spotify.play"]
    assert [c["arguments"] for c in outcome.calls] == [MAROON[1], SWIFT[1]]


# textreact compare


def _files(tmp_path: Path) -> Path:
    question = {"id": PARALLEL.id, "question": [list(PARALLEL.messages)],
                "function": list(PARALLEL.functions)}  # fmt: skip
    answer = {"id": PARALLEL.id, "ground_truth": list(PARALLEL.ground_truth)}
    path = tmp_path / "BFCL_v4_parallel.json"
    path.write_text(json.dumps(question) + "\n", encoding="utf-8")
    (tmp_path / f"possible_answer_{path.name}").write_text(json.dumps(answer) + "\n", "utf-8")
    return path


def test_compare_scores_a_parallel_file_and_records_parallel_calls(tmp_path: Path, capsys) -> None:
    report = tmp_path / "report.json"
    native = _tool_calls(("spotify_play", SWIFT[1]), ("spotify_play", MAROON[1]))
    replies = [Reply(body=chat_completion(TWO)), native]
    with FakeServer(replies) as server:
        code = main([
            "compare", "--base-url", server.base_url, "--model", "m", "--constrain", "off",
            "--suite", f"bfcl:{_files(tmp_path)}", "--protocols", "text,native",
            "--parallel-calls", "--json", str(report),
        ])  # fmt: skip
        system = server.posts[0].body["messages"][0]["content"]
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "parallel calls: a reply of the text protocols may make several calls" in out
    document = json.loads(report.read_text("utf-8"))
    assert document["meta"]["parallel_calls"] is True
    assert {p: s["success_rate"] for p, s in document["summary"].items()} == {
        "text": 1.0,
        "native": 1.0,
    }
    assert [len(run["calls"]) for run in document["runs"]] == [2, 2]
    assert document["runs"][0]["calls"][1] == {"tool": "spotify.play", "arguments": SWIFT[1]}
    assert "several tools at once" in system


def test_parallel_calls_with_a_one_call_protocol_is_refused_before_any_request(
    tmp_path: Path, capsys
) -> None:
    with FakeServer() as server:
        code = main([
            "compare", "--base-url", server.base_url, "--model", "m", "--constrain", "off",
            "--suite", f"bfcl:{_files(tmp_path)}", "--protocols", "text,own",
            "--parallel-calls",
        ])  # fmt: skip
        assert server.posts == []
    assert code == 2
    assert "own reads one call" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="own-first reads one call"):
        run_compare(
            ScriptedModel([]), [PARALLEL], protocols=["own-first"],
            options=Options(parallel_calls=True),
        )  # fmt: skip


def test_help_says_the_parallel_files_need_parallel_calls(capsys) -> None:
    assert main(["compare", "--help"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "--parallel-calls" in said and "parallel_multiple files need it" in said


# the model matrix's bench


def _bench(*flags: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    script = ROOT / "bench" / "matrix_bench.py"
    return subprocess.run(
        [sys.executable, str(script), *flags], capture_output=True, text=True, env=env, timeout=120
    )


def test_the_matrix_bench_takes_parallel_calls_and_refuses_what_it_cannot_measure() -> None:
    """Before any model starts: its flags parse (the bench is out of CI's quick runs, so this is
    what keeps it importable), parallel calls with a one-call protocol and an unknown file are
    refused."""
    helped = _bench("--help")
    assert helped.returncode == 0, helped.stderr
    said = " ".join(helped.stdout.split())
    assert "--parallel-calls" in said and "parallel_multiple" in said
    refused = _bench("--only", "text+grammar,own", "--parallel-calls", "--models", "none")
    assert refused.returncode == 2 and "own reads one call" in refused.stderr
    unknown = _bench("--files", "paralel", "--models", "none")
    assert unknown.returncode == 2 and "--files paralel" in unknown.stderr
