"""The native tool-calling loop, driven through the real OpenAI SDK against the loopback fake
server: message shapes, several calls in one turn, truncation, step limit, and the ways a server
can fail to support tools."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fakeserver import FakeServer, Reply, chat_completion, error_body

from textreact.compare.runner import capability
from textreact.models.openai_compat import OpenAICompatModel
from textreact.native import NativeAgent, call_written_as_text
from textreact.observation import observe
from textreact.policies import ClosedBook
from textreact.steps import Action, Usage
from textreact.tools import ToolBox, builtin_tools


def tool_calls(*calls: tuple[str, Any], finish_reason: str = "tool_calls") -> Reply:
    """A reply whose assistant message asks for `calls` ((name, arguments) pairs)."""
    body = chat_completion(None, finish_reason=finish_reason)
    body["choices"][0]["message"]["tool_calls"] = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(args),
            },
        }
        for i, (name, args) in enumerate(calls)
    ]
    return Reply(body=body)


def text(content: str, finish_reason: str = "stop") -> Reply:
    return Reply(body=chat_completion(content, finish_reason=finish_reason))


def run(replies: list[Reply], question: str = "What is 17 * 23?", **options: Any):
    with FakeServer(replies) as server:
        model = OpenAICompatModel("fake-model", server.base_url, max_retries=0)
        result = NativeAgent(model, **options).run(question)
        assert server.unscripted == 0
        return result, [post.body for post in server.posts]


def test_a_call_is_answered_with_a_tool_message_carrying_its_id() -> None:
    result, bodies = run([tool_calls(("calculator", {"expression": "17*23"})), text("391")])
    assert (result.answer, result.stop_reason) == ("391", "final_answer")
    assert [t.tool for t in result.steps] == ["calculator", None]
    assert result.steps[0].observation == "391"
    assert [s["function"]["name"] for s in bodies[0]["tools"]] == ["calculator", "lookup_fact"]
    assistant, answer = bodies[1]["messages"][-2:]
    assert assistant["tool_calls"][0]["id"] == "call_0"
    assert answer == {"role": "tool", "tool_call_id": "call_0", "content": "391"}
    assert result.usage == Usage(22, 14)


def test_several_calls_of_one_turn_run_in_order_and_share_the_model_usage() -> None:
    calls = tool_calls(
        ("lookup_fact", {"query": "population of Taipei"}),
        ("calculator", {"expression": "2 + 2"}),
    )
    result, bodies = run([calls, text("done")])
    first, second = result.steps[:2]
    assert [first.tool, second.tool] == ["lookup_fact", "calculator"]
    assert "2602000" in first.observation and second.observation == "4"
    assert (first.usage, second.usage) == (Usage(11, 7), Usage())
    replies = bodies[1]["messages"][-2:]
    assert [m["tool_call_id"] for m in replies] == ["call_0", "call_1"]


def test_tool_errors_come_back_exactly_as_in_the_text_protocol() -> None:
    bad = '{"expresion": "1 +"}'
    result, bodies = run([tool_calls(("calculator", bad)), text("sorry")])
    expected = observe(ToolBox(builtin_tools()).call("calculator", bad), others=["lookup_fact"])
    assert expected.startswith("Error:")
    assert result.steps[0].observation == expected
    assert bodies[1]["messages"][-1]["content"] == expected
    assert result.steps[0].is_error


def test_an_unknown_tool_is_a_tool_error_not_a_crash() -> None:
    result, _ = run([tool_calls(("search_web", {"q": "x"})), text("no idea")])
    assert result.steps[0].result.error_kind == "unknown_tool"
    assert result.stop_reason == "final_answer"


def test_a_reply_cut_by_the_length_limit_is_never_an_answer() -> None:
    """Cut twice, the run ends "truncated" with no further request; with the closed_book
    policy the question is asked alone once (over loopback: no tools, the question alone), and
    that reply cut off too is no answer either."""
    cut = [text("The answer is 3", "length"), text("The answer is 39", "length")]
    result, bodies = run(cut)
    assert (result.answer, result.stop_reason, len(bodies)) == (None, "truncated", 2)
    assert bodies[1]["messages"][-1]["role"] == "user"
    asked = [*cut, text("The answer is 391 or", "length")]
    result, bodies = run(asked, policies=[ClosedBook()])
    assert (result.answer, result.stop_reason) == (None, "truncated")
    assert bodies[2]["messages"][-1] == {"role": "user", "content": "What is 17 * 23?"}
    assert "tools" not in bodies[2]


def test_calls_cut_by_the_length_limit_are_not_run() -> None:
    cut = tool_calls(("calculator", '{"expression": "17*'), finish_reason="length")
    result, _ = run([cut, text("391")])
    assert result.steps[0].note == "truncated" and result.steps[0].result is None
    assert result.answer == "391"


def test_the_step_limit_stops_the_run_and_asks_once_for_a_best_effort_answer() -> None:
    replies = [tool_calls(("calculator", {"expression": f"{i} + 1"})) for i in range(2)]
    result, bodies = run([*replies, text("about 391")], max_steps=2)
    assert (result.stop_reason, result.best_effort) == ("max_steps", True)
    assert result.answer == "about 391"
    assert "Do not call any more tools" in bodies[2]["messages"][-1]["content"]


def test_without_best_effort_the_step_limit_ends_the_run_with_no_answer() -> None:
    replies = [tool_calls(("calculator", {"expression": "1 + 1"}))]
    result, _ = run(replies, max_steps=1, best_effort=False)
    assert (result.stop_reason, result.answer) == ("max_steps", None)
    assert isinstance(result.steps[0].step, Action)


def test_a_repeated_call_is_answered_from_the_earlier_result() -> None:
    call = ("calculator", {"expression": "17*23"})
    result, _ = run([tool_calls(call), tool_calls(call), text("391")])
    assert result.steps[1].note == "repeated_call"
    assert "already called calculator" in result.steps[1].observation


def test_a_server_that_rejects_tools_is_reported_as_unsupported() -> None:
    refusal = Reply(400, error_body("registry.ollama.ai/library/gemma:2b does not support tools"))
    result, _ = run([refusal])
    assert result.stop_reason == "model_error"
    assert capability(result) == "rejected"


def test_a_call_written_as_text_runs_as_the_call_it_is_and_is_flagged() -> None:
    written = 'Sure.\n```json\n{"name": "calculator", "arguments": {"expression": "17*23"}}\n```'
    result, bodies = run([text(written), text("391")])
    first = result.steps[0]
    assert (first.note, first.tool, first.observation) == ("call_as_text", "calculator", "391")
    assert capability(result) == "as_text" and result.answer == "391"
    assistant, tool = bodies[1]["messages"][-2:]
    (call,) = assistant["tool_calls"]
    assert call["function"]["name"] == "calculator" and tool["tool_call_id"] == call["id"]
    assert json.loads(call["function"]["arguments"]) == {"expression": "17*23"}


def test_a_plain_answer_without_calls_is_no_call() -> None:
    result, _ = run([text("391")])
    assert capability(result) == "no_call"
    assert capability(run([tool_calls(("calculator", "{}")), text("x")])[0]) == "supported"


def test_empty_replies_are_format_errors_up_to_the_limit() -> None:
    result, _ = run([text(""), text("")], max_format_errors=2)
    assert result.stop_reason == "format_errors"
    assert result.steps[0].is_error


@pytest.mark.parametrize(
    ("content", "found"),
    [
        ('{"name": "calculator", "arguments": {"expression": "1+1"}}', True),
        ('<tool_call>\n{"name": "lookup_fact", "parameters": {"query": "x"}}\n</tool_call>', True),
        ('I would call {"function": "calculator"} here', True),
        ('{"name": "weather", "arguments": {}}', False),
        ("The answer is {not json}", False),
        (None, False),
    ],
)
def test_call_written_as_text(content: str | None, found: bool) -> None:
    assert (call_written_as_text(content, ("calculator", "lookup_fact")) is not None) is found


def test_anthropic_tool_use_is_answered_with_tool_result_blocks() -> None:
    pytest.importorskip("anthropic", reason="the anthropic extra is not installed")
    from fakeserver import anthropic_message

    from textreact.models.anthropic import AnthropicModel

    use = anthropic_message("", stop_reason="tool_use")
    use["content"] = [
        {"type": "text", "text": "Let me compute."},
        {"type": "tool_use", "id": "tu_1", "name": "calculator", "input": {"expression": "1/0"}},
    ]
    with FakeServer([Reply(body=use), Reply(body=anthropic_message("It is undefined."))]) as srv:
        model = AnthropicModel("fake-claude", base_url=srv.url, max_retries=0)
        result = NativeAgent(model).run("What is 1/0?")
        sent = [post.body for post in srv.posts]
    assert result.answer == "It is undefined." and result.steps[0].is_error
    assert [t["name"] for t in sent[0]["tools"]] == ["calculator", "lookup_fact"]
    assistant, answer = sent[1]["messages"][-2:]
    assert assistant["content"][1] == {
        "type": "tool_use", "id": "tu_1", "name": "calculator", "input": {"expression": "1/0"}
    }  # fmt: skip
    [block] = answer["content"]
    assert block["tool_use_id"] == "tu_1" and block["is_error"] is True
    assert block["content"] == result.steps[0].observation


def test_calls_written_as_text_get_ids_of_their_own_and_a_cut_one_is_no_native_support() -> None:
    written = '{"name": "calculator", "arguments": {"expression": "17*23"}}'
    _, bodies = run([text(written), text(written), text("391")])
    ids = [m["tool_calls"][0]["id"] for m in bodies[2]["messages"] if m.get("tool_calls")]
    assert len(ids) == 2 and len(set(ids)) == 2
    assert all(m.get("content") in (None, "") for m in bodies[2]["messages"] if m.get("tool_calls"))
    cut = text(written + "\nand then I will", "length")
    result, _ = run([cut, cut])
    assert result.stop_reason == "truncated" and capability(result) == "as_text"
