"""Normalising a request keeps its meaning: two results for one call are a 400, never one of
them dropped unseen; a tool's properties keep the client's order in the prompt and the grammar
(the order a model fills them in, and the one a client reads its own schema in)."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from serve_support import QUESTION, WEATHER, client, closing_clients, proxy, sent_messages, text

from textreact import grammar
from textreact.constrain import tools_grammar
from textreact.constrain.recognizer import matches
from textreact.serve.request import request_tools
from textreact.steps import Action

close_clients = pytest.fixture(autouse=True)(closing_clients)

CALL = {"id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}  # fmt: skip


def _history(*results: tuple[str, str]) -> list[dict[str, Any]]:
    calls = [{**CALL, "id": call_id} for call_id in dict.fromkeys(r[0] for r in results)]
    answers = [{"role": "tool", "tool_call_id": i, "content": c} for i, c in results]
    return [*QUESTION, {"role": "assistant", "content": None, "tool_calls": calls}, *answers]


@pytest.mark.parametrize(
    ("results", "where"),
    [
        ([("c1", "18 C"), ("c1", "19 C")], "messages[3].tool_call_id"),
        ([("c1", "18 C"), ("c2", "x"), ("c1", "")], "messages[4].tool_call_id"),
        ([("c1", ""), ("c1", "")], "messages[3].tool_call_id"),
    ],
)
def test_two_results_for_one_call_are_a_400(results, where) -> None:
    refused = pytest.raises(openai.BadRequestError)
    with proxy([text("Final Answer: no")]) as (upstream, url), refused as caught:
        client(url).chat.completions.create(model="m", messages=_history(*results), tools=[WEATHER])
    error = caught.value.body
    assert error["param"] == where and "one result per call" in error["message"]
    assert upstream.posts == []


def test_one_result_per_call_is_rendered() -> None:
    with proxy([text("Final Answer: 18 C")]) as (upstream, url):
        client(url).chat.completions.create(
            model="m", messages=_history(("c1", "18 C"), ("c2", "19 C")), tools=[WEATHER]
        )
    sent = json.dumps(sent_messages(upstream))
    assert "18 C" in sent and "19 C" in sent


def _tool(order: list[str]) -> dict[str, Any]:
    properties = {name: {"type": "string", "description": f"the {name}"} for name in order}
    parameters = {"type": "object", "properties": properties, "required": order}
    return {"type": "function", "function": {"name": "book", "description": "Book a trip.",
                                             "parameters": parameters}}  # fmt: skip


@pytest.mark.parametrize(
    "order", [["zone", "city", "arrival"], ["city", "zone", "arrival"], ["b", "a", "c", "aa"]]
)
def test_properties_keep_the_clients_order(order) -> None:
    with proxy([text("Final Answer: ok")]) as (upstream, url):
        client(url).chat.completions.create(model="m", messages=QUESTION, tools=[_tool(order)])
    system = sent_messages(upstream)[0]["content"]
    places = [system.index(f'"{name}"') for name in order]
    assert places == sorted(places), system
    rules = tools_grammar(request_tools([_tool(order)]))
    in_order = {name: "x" for name in order}
    assert matches(rules, grammar.render_step(Action("book", in_order, "I book it.")))
    by_name = dict(sorted(in_order.items()))
    assert matches(rules, grammar.render_step(Action("book", by_name, "I book it."))) == (
        list(by_name) == order
    )


def test_one_tool_in_two_orders_is_two_tools() -> None:
    first, second = request_tools([_tool(["a", "b"])]), request_tools([_tool(["b", "a"])])
    assert list(first[0].parameters["properties"]) == ["a", "b"]
    assert list(second[0].parameters["properties"]) == ["b", "a"]
